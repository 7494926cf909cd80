"""When a re-plan switches the run to a challenger: by how much it must be ahead, and how the
gain is told (predictor.training).

The margin is CHANGE_MARGIN on the rest of the run, on both the point prediction and the
risk-aware score, the same bar a study's challenger must clear against its baseline.
"""

from __future__ import annotations

import math

from predictor.plan_choice import CHANGE_MARGIN
from predictor.ttc_model import conservative
from predictor.types import Prediction


def switch_gain(incumbent: Prediction, challenger: Prediction) -> float | None:
    """How much sooner (a share) the challenger is predicted to finish the rest of the run, or None
    unless it is ahead by CHANGE_MARGIN on the point prediction and on the risk-aware score. Where
    the incumbent's score is unbounded (its own fit's spread, not evidence against it), the
    challenger's risk-aware score must beat the incumbent's point."""
    margin, score = 1 - CHANGE_MARGIN, conservative(challenger)
    incumbent_score = conservative(incumbent)
    bar = incumbent_score if math.isfinite(incumbent_score) else incumbent.ttc_seconds
    if not (math.isfinite(score) and challenger.ttc_seconds <= margin * incumbent.ttc_seconds
            and score <= margin * bar):
        return None
    return 1 - score / bar


def sooner(gain: float) -> str:
    """A switch's gain (``switch_gain``) in words that stay true near 100%: against a continuation
    extrapolated 60-fold a challenger gains 99.8%, which "100% sooner" would round to at once."""
    if gain < 0.5:
        return f"{gain:.0%} sooner than continuing"
    return f"in {1 - gain:.2g}× the time continuing would take"
