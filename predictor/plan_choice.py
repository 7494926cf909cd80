"""Which config a study's plan names (issue 11).

The best risk-aware score (predictor.ttc_model.conservative) wins, but a challenger must beat the
baseline's score by CHANGE_MARGIN (its point, where the baseline's score is unbounded). The score
alone, not the point as well: the baseline is held to the same risk as every other config. A
baseline that won on its point alone kept a plan on an optimistic extrapolation: on a 16-device
cluster a 6-iteration timing fork of the baseline, read on the warm-up's curve with the noise
scale's full gain at an unscaled rate, had a point 3% below one device's at batch 64 and an upper
end 5.6× that config's, and the plan ran it 5.8× slower than the best fixed config.

When no prediction is bounded above, points are all there is, and a fork's point can be the noise
speaking: on ``regression`` a 50-iteration g = 2 fork that ended within the loss's noise of the
warm-up's continuation got a point (its interval open above), became the plan, and ran 2.3–2.9×
slower than the recipe. So with nothing bounded, only the two configs every plan is measured
against compete: the baseline and the warm-up's recipe (staying on the recipe alone left the
throttled scenario on one of its four nodes), and, once candidates fork from the warm-up, the forks
of the warm-up's own recipe (on another allocation, at a batch no smaller) whose progress is within
the noise: each is read as the warm-up continued, carried to its global batch by the noise scale,
at its measured speed (predictor.ttc_model), so the reference's uncertainty is common to all of
them and cancels in their comparison. The budget may still be sized by any point (``best``), which
errs small.
"""

from __future__ import annotations

import math
from collections.abc import Collection

from predictor.ttc_model import conservative
from predictor.types import Prediction

CHANGE_MARGIN = 0.05


def best(predictions: dict[str, Prediction], baseline: str | None) -> str | None:
    """The best risk-aware score (else the best point), unless the baseline is within 5% of it."""
    scored = [(conservative(p), key) for key, p in predictions.items()]
    scored = [(t, key) for t, key in scored if math.isfinite(t)] or [
        (p.ttc_seconds, key) for key, p in predictions.items() if math.isfinite(p.ttc_seconds)
    ]
    if not scored:
        return None
    value, best_key = min(scored)
    if baseline is None or baseline not in predictions or baseline == best_key:
        return best_key
    bar = conservative(predictions[baseline])
    if not math.isfinite(bar):  # the baseline's interval is open above: points compare
        value, bar = predictions[best_key].ttc_seconds, predictions[baseline].ttc_seconds
    return best_key if not math.isfinite(bar) or value <= (1 - CHANGE_MARGIN) * bar else baseline


def bounded(predictions: dict[str, Prediction]) -> bool:
    """Some prediction has a finite risk-aware score (its 80% interval is bounded above)."""
    return any(math.isfinite(conservative(p)) for p in predictions.values())


def planned(predictions: dict[str, Prediction], baseline: str | None,
            incumbents: Collection[str]) -> str | None:
    """``best``; with no prediction bounded above, ``best`` among the baseline and the
    ``incumbents`` alone (when any was measured)."""
    if not bounded(predictions):
        kept = {key: predictions[key] for key in (baseline, *incumbents) if key in predictions}
        if kept:
            return best(kept, baseline)
    return best(predictions, baseline)
