"""The study's ranking, explained: every config's score, and why each one that looked faster lost.

The plan is the config with the lowest risk-aware score (predictor.ttc_model.conservative), unless
it must beat the baseline by CHANGE_MARGIN and does not, or no prediction is bounded above
(predictor.plan_choice). A user looking at a
config with a lower point prediction than the plan's deserves the reason it lost (issue 11 §4),
and Optuna's tools must agree with the plan (issue 14): ``decision_values`` gives each probe the
value the choice was made on, so Optuna's best trial is the plan's latest probe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from predictor.plan_choice import CHANGE_MARGIN, bounded
from predictor.study import Study
from predictor.ttc_model import conservative
from predictor.types import Confidence, Config, Prediction, json_safe

TIE = 1e-9  # later segments and configs that did not beat the plan rank just after it
UNBOUNDED = 1e300  # the value of a plan with no risk-aware score: Optuna must still order it first


@dataclass(frozen=True)
class RankedConfig:
    config: Config
    probe_keys: list[str]
    score: float  # inf: no usable prediction
    prediction: Prediction | None
    confidence: Confidence | None
    status: str  # plan | lost | pruned | diverged | failed
    reason: str

    def to_dict(self) -> dict[str, Any]:
        prediction = self.prediction.to_dict() if self.prediction else None
        if prediction and self.confidence and not self.confidence.supported:
            prediction |= {"ttc_seconds": None, "ttc_low": None, "ttc_high": None, "iterations": None}
        return json_safe({
            "config_key": self.config.key(), "config": self.config.to_dict(), "probe_keys": self.probe_keys,
            "score": self.score, "predicted": prediction,
            "confidence": ({"level": self.confidence.level, "reason": self.confidence.reason}
                           if self.confidence else None),
            "status": self.status, "reason": self.reason,
        })


def _why_lost(prediction: Prediction, score: float, plan: Prediction, plan_score: float, kept: bool) -> str:
    if kept and (score < plan_score or (not math.isfinite(plan_score)
                                        and prediction.ttc_seconds < plan.ttc_seconds)):
        return (f"it does not beat the baseline by the {CHANGE_MARGIN:.0%} margin a change of plan needs "
                f"(point {prediction.ttc_seconds:.4g} s vs {plan.ttc_seconds:.4g} s, "
                f"score {score:.4g} vs {plan_score:.4g})")
    if prediction.ttc_seconds < plan.ttc_seconds:
        return (f"its point prediction {prediction.ttc_seconds:.4g} s beats the plan's "
                f"{plan.ttc_seconds:.4g} s, but its 80% interval reaches {prediction.ttc_high:.4g} s: "
                f"its risk-aware score {score:.4g} is worse than the plan's {plan_score:.4g}")
    if math.isclose(prediction.ttc_seconds, plan.ttc_seconds, rel_tol=1e-9):
        return f"tied with the plan at {plan.ttc_seconds:.4g} s; the plan was ranked first"
    return f"predicted slower: {prediction.ttc_seconds:.4g} s against the plan's {plan.ttc_seconds:.4g} s"


def ranking(study: Study, plan_key: str | None) -> list[RankedConfig]:
    """Every config of the current epoch (forks from the warm-up, or probes from scratch), best first."""
    views = study.views()
    plan_prediction = study.predictions.get(plan_key) if plan_key else None
    plan_score = conservative(plan_prediction) if plan_prediction else math.inf
    kept = plan_key is not None and study.baseline is not None and plan_key == study.baseline.key()
    any_bounded = bounded(study.predictions)
    unstable, behind, ahead = study.unstable(), study.behind(), study.ahead()
    rows = []
    for key, view in views.items():
        prediction = study.predictions.get(key)
        score = conservative(prediction) if prediction else math.inf
        keys = study.evidence_of(key)
        confidence = study.confidence_of(key) if prediction else None
        if view.error:
            status, reason = "failed", view.error
        elif view.diverged:
            status, reason = "diverged", "its loss diverged"
        elif key in unstable:
            status, reason = "diverged", "its loss diverged on a second seed"
        elif key == plan_key:
            status, reason = "plan", (f"kept: no challenger beat it by the {CHANGE_MARGIN:.0%} margin" if kept
                                      else "the lowest risk-aware score" if any_bounded
                                      else "no prediction is bounded above: the best point of the "
                                           "baseline and the warm-up's recipe, read on the warm-up's curve")
        elif key in behind:
            status, reason = "lost", ("its loss ended above the warm-up continued beside it, or above "
                                      "where it started, by more than the noise: a transient no "
                                      "short fork reads, so nothing bounds how long it needs")
        elif key in ahead and (prediction is None or not math.isfinite(prediction.ttc_high)):
            status, reason = "lost", ("its loss dropped below the warm-up continued, as a cooler step's "
                                      "does when it sheds the gradient noise, and it was not run long "
                                      "enough past the drop to read its own pace")
        elif prediction is None or not math.isfinite(prediction.ttc_seconds):
            status, reason = "lost", "its curve supports no prediction of reaching the target"
        elif not any_bounded and not kept and (
                plan_prediction is None or prediction.ttc_seconds < plan_prediction.ttc_seconds):
            status, reason = "lost", ("its 80% interval has no upper end: a point read from the noise "
                                      "does not move the plan")
        elif plan_prediction is None:
            status, reason = "lost", "no plan was predicted"
        else:
            status, reason = "lost", _why_lost(prediction, score, plan_prediction, plan_score, kept)
        if key in study.pruned and status == "lost":
            status = "pruned"
        rows.append(RankedConfig(view.config, keys, score, prediction, confidence, status, reason))
    order = {"plan": 0, "lost": 1, "pruned": 2, "diverged": 3, "failed": 4}
    return sorted(rows, key=lambda r: (order[r.status], r.score))


def decision_values(study: Study, plan_key: str | None) -> dict[str, float | None]:
    """Probe key → the value the plan was chosen on (None: pruned, diverged or failed).

    The plan's latest probe has the least value; every other probe is valued at its config's
    score, but never below the plan's (a config that did not beat the plan by the margin ranks
    after it), each later in the order ttc ranks them. A plan without a risk-aware score (kept
    as the baseline, its interval open above) is valued UNBOUNDED, and the rest above it.
    """
    rows = ranking(study, plan_key)
    plan_score = next((r.score for r in rows if r.status == "plan"), math.inf)
    values: dict[str, float | None] = {}
    floor = plan_score if math.isfinite(plan_score) else UNBOUNDED
    for rank, row in enumerate(rows):
        if row.status in ("diverged", "failed") or (row.status != "plan" and not math.isfinite(row.score)):
            values |= dict.fromkeys(row.probe_keys)
            continue
        value = floor if row.status == "plan" else max(row.score, floor) * (1 + TIE * (rank + 1))
        for position, key in enumerate(reversed(row.probe_keys)):  # latest probe first
            values[key] = value * (1 + TIE * position)
    for probe in study.probes:  # probes of an earlier epoch (the sweep before the warm-up)
        values.setdefault(probe.probe_key, None)
    return values
