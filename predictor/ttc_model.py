"""Time to convergence = seconds/iteration × iterations (DESIGN.md §1), with its interval."""

from __future__ import annotations

import math

from predictor.he_model import seconds_per_iteration
from predictor.se_model import iterations_to_target
from predictor.types import Prediction, ProbeResult


def predict_ttc(result: ProbeResult, target: float) -> Prediction | None:
    """Predicted TTC of the probed config; None when the probe says nothing usable."""
    speed = seconds_per_iteration(result)
    iterations = iterations_to_target(result, target)
    if speed is None or iterations is None:
        return None
    if result.reached_seconds is not None:
        # The probe itself crossed the target: its measured time is the estimate.
        ttc = result.reached_seconds
        low = speed.low * iterations.low
        high = max(speed.high * iterations.high, ttc)
        return Prediction(ttc, min(low, ttc), high, speed.value, iterations.value)
    ttc = speed.value * iterations.value
    return Prediction(
        ttc_seconds=ttc,
        ttc_low=speed.low * iterations.low,
        ttc_high=speed.high * iterations.high if math.isfinite(iterations.high) else math.inf,
        seconds_per_iteration=speed.value,
        iterations=iterations.value,
    )
