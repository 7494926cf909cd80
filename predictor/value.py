"""What a probe is worth: expected improvement of the plan against what the probe costs.

A study exists to shorten one run, so a probe is worth its cluster-seconds only while it can be
expected to shorten the run by more than it costs (value of information; Howard 1966). With the
incumbent plan's predicted TTC T₀ and a candidate's prediction read as lognormal (median = the
point estimate, the 80% interval its 10th and 90th percentiles), the expected improvement is

    EI = E[max(0, T₀ − T)] = T₀·Φ(d) − m·e^{σ²/2}·Φ(d − σ),   d = (ln T₀ − ln m)/σ

(the lognormal partial expectation). A candidate is probed only while EI exceeds its probe's
cost; the study stops when none does, or when its whole cost reaches ``max_overhead`` × the plan's
predicted TTC (issue 11).
"""

from __future__ import annotations

import math

from scipy.stats import norm

from predictor.se_model import Z80
from predictor.types import Prediction


def log_sigma(prediction: Prediction) -> float:
    """The lognormal σ implied by an 80% interval (inf when unbounded above)."""
    low, high = max(prediction.ttc_low, 1e-300), prediction.ttc_high
    if not math.isfinite(high):
        return math.inf
    return max(math.log(high / low) / (2 * Z80), 1e-9)


def expected_improvement(incumbent_ttc: float, candidate: Prediction | None) -> float:
    """E[max(0, T₀ − T)] for a lognormal T; inf when the candidate is unknown (worth a look)."""
    if candidate is None or not math.isfinite(incumbent_ttc):
        return math.inf
    median = candidate.ttc_seconds
    if not (median > 0 and math.isfinite(median)):
        return 0.0 if median == math.inf else incumbent_ttc
    sigma = log_sigma(candidate)
    if not math.isfinite(sigma):
        sigma = 3.0  # an unbounded interval: a very uncertain guess, not a free lunch
    d = (math.log(incumbent_ttc) - math.log(median)) / sigma
    return max(incumbent_ttc * norm.cdf(d) - median * math.exp(sigma**2 / 2) * norm.cdf(d - sigma), 0.0)
