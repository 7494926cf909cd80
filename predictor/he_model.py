"""Hardware efficiency: seconds per iteration of a configuration, from a probe's step timings.

This first model reads the measured step durations of the probed configuration itself (median
with a 10–90% interval); it does not yet extrapolate to configurations never probed.
"""

from __future__ import annotations

import numpy as np

from predictor.se_model import INTERVAL, Estimate
from predictor.types import ProbeResult


def seconds_per_iteration(result: ProbeResult) -> Estimate | None:
    steps = np.array(result.step_seconds, dtype=float)
    if steps.size == 0:
        return None
    low, high = np.percentile(steps, INTERVAL)
    mean = result.seconds_per_iteration if result.iterations else float(steps.mean())
    return Estimate(mean, float(min(low, mean)), float(max(high, mean)))
