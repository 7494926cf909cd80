"""Which config a study's plan names (issue 11).

The best risk-aware score (predictor.ttc_model.conservative) wins, but a challenger must beat the
baseline by CHANGE_MARGIN on its point and on its score. When no prediction is bounded above, the
points are the noise speaking: on ``regression`` a 50-iteration fork of g = 2 that ended within
the loss's noise of the warm-up's continuation got a point prediction (its interval open above)
while the recipe itself got none, became the plan, and ran 2.3–2.9× slower than that recipe. So
the plan leaves the config its evidence is about (the warm-up's recipe) only for a bounded
prediction; the budget may still be sized by such a point (``best``), which errs small.
"""

from __future__ import annotations

import math

from predictor.ttc_model import conservative
from predictor.types import Prediction

CHANGE_MARGIN = 0.05


def best(predictions: dict[str, Prediction], baseline: str | None) -> str | None:
    """The best risk-aware score (else the best point), unless the baseline is within 5%."""
    scored = [(conservative(p), key) for key, p in predictions.items()]
    scored = [(t, key) for t, key in scored if math.isfinite(t)] or [
        (p.ttc_seconds, key) for key, p in predictions.items() if math.isfinite(p.ttc_seconds)
    ]
    if not scored:
        return None
    _, best_key = min(scored)
    if baseline is None or baseline not in predictions or baseline == best_key:
        return best_key
    challenger, incumbent = predictions[best_key], predictions[baseline]
    wins = challenger.ttc_seconds <= (1 - CHANGE_MARGIN) * incumbent.ttc_seconds and (
        not math.isfinite(conservative(incumbent))
        or conservative(challenger) <= (1 - CHANGE_MARGIN) * conservative(incumbent)
    )
    return best_key if wins or not math.isfinite(incumbent.ttc_seconds) else baseline


def planned(predictions: dict[str, Prediction], baseline: str | None, evidence: str | None) -> str | None:
    """``best``, except that with no prediction bounded above the plan stays on ``evidence``
    (the warm-up's recipe) when it was measured."""
    bounded = any(math.isfinite(conservative(p)) for p in predictions.values())
    if not bounded and evidence in predictions:
        return evidence
    return best(predictions, baseline)
