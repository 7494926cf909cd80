"""How far the evidence supports a prediction, said in words (issue 11: fail loudly).

A point prediction is only as good as the curve it extrapolates. The plan's confidence is read
from four facts: whether the target was reached in a probe (then the prediction is a
measurement), how far the prediction extrapolates past the iterations measured on its lineage,
whether the extrapolation held still when the evidence doubled (predictor.reference_curve.drift:
a transient's end can look like a power law, but its extrapolation grows with every doubling),
whether the same extrapolation made earlier on the curve, over the same multiple of its
evidence, landed on what was measured since (predictor.reference_curve.hindcast), and how wide
its 80% interval is. Past MAX_EXTRAPOLATION× the evidence, after a drift beyond MAX_DRIFT or a
hindcast miss beyond MAX_HINDCAST_MISS, with an 80% interval the evidence does not bound above,
or from a curve that is not in its slow regime, no number is given at all.
"""

from __future__ import annotations

import math

from predictor.reference_curve import Hindcast
from predictor.regime import Regime, RegimeReading
from predictor.types import Confidence, Prediction

MAX_EXTRAPOLATION = 25.0  # the stated multiple of the evidence past which no number is printed
CONFIDENT_SPAN = 3.0  # a confident plan's 80% interval spans at most this factor (high/low)
HIGH_SPAN = 1.5
HIGH_EXTRAPOLATION = 5.0
MAX_DRIFT = 1.5  # the extrapolation may move at most this factor when its evidence doubles
MAX_HINDCAST_MISS = 1.5  # the earlier extrapolation may miss by at most this factor (drift's tolerance)


def extrapolation_holds(drift: float, hindcast: Hindcast) -> bool:
    """The extrapolation held still when its evidence doubled and the same one made earlier landed
    on what was measured since: what ``assess`` asks of a curve before it prints a number."""
    return drift <= MAX_DRIFT and hindcast.miss <= MAX_HINDCAST_MISS


def interval_span(prediction: Prediction) -> float:
    if not (prediction.ttc_low > 0 and math.isfinite(prediction.ttc_high)):
        return math.inf
    return prediction.ttc_high / prediction.ttc_low


def assess(prediction: Prediction | None, reached: bool, regime: RegimeReading | None,
           drift: float = 1.0, hindcast: Hindcast | None = None) -> Confidence:
    """The confidence of ``prediction`` given whether it was measured, its curve's regime, how
    far its extrapolation moved when the evidence doubled (``drift``) and how far the same
    extrapolation made earlier missed (``hindcast``)."""
    if prediction is None or not math.isfinite(prediction.ttc_seconds):
        return Confidence("none", "no probe's curve supports a prediction of the iterations to the target")
    if reached:
        return Confidence("high", "measured: a probe of this config reached the target")
    extrapolation, span = prediction.extrapolation, interval_span(prediction)
    evidence = f"{prediction.evidence_iterations:.0f} measured iterations"
    if extrapolation > MAX_EXTRAPOLATION:
        return Confidence("none", f"would extrapolate {extrapolation:.0f}× past the {evidence} "
                                  f"(more than {MAX_EXTRAPOLATION:.0f}×)")
    if drift > MAX_DRIFT:
        moved = (f"moved ×{drift:.3g} when the evidence doubled (more than ×{MAX_DRIFT})"
                 if math.isfinite(drift) else "has no counterpart on the first half of the evidence")
        return Confidence("none", f"the extrapolation {moved}: the curve has not settled; {evidence}")
    if hindcast is not None and hindcast.miss > MAX_HINDCAST_MISS:
        missed = (f"missed the loss measured since by ×{hindcast.miss:.3g} (more than ×{MAX_HINDCAST_MISS})"
                  if math.isfinite(hindcast.miss) else "has too few points there to be tried")
        return Confidence("none", f"the same extrapolation made at iteration {hindcast.made_at:.0f}, "
                                  f"over the same multiple of its evidence, {missed}; {evidence}")
    if not math.isfinite(prediction.ttc_high):
        return Confidence("none", f"its 80% interval has no upper end (the probes' progress is within "
                                  f"their noise, or they may never reach); {evidence}")
    if regime is not None and regime.regime is not Regime.STEADY:
        level = "none" if extrapolation > CONFIDENT_SPAN else "low"
        return Confidence(level, f"the curve is {regime.describe()}; "
                                 f"extrapolates {extrapolation:.1f}× past the {evidence}")
    where = f"extrapolates {extrapolation:.1f}× past the {evidence}; 80% interval spans ×{span:.2g}"
    if span <= HIGH_SPAN and extrapolation <= HIGH_EXTRAPOLATION:
        return Confidence("high", where)
    if span <= CONFIDENT_SPAN:
        return Confidence("medium", where)
    return Confidence("low", where)
