"""The plan when no config is predicted to reach the target (issue 11: a prediction the evidence
cannot support is reported as such, never printed as a number).

"Unreachable" needs evidence — every live curve levelled off above the target; a curve still
falling says only that the study does not know, so the best measured config is returned with
no number and ``confidence: none``. When that config was measured forked from the study's warm-up,
the plan names the warm-up too: its measurement is of the fork, not of a run from scratch.
"""

from __future__ import annotations

import math
from typing import Protocol

from predictor.confidence import assess
from predictor.regime import Regime, read_view_regime
from predictor.ttc_model import TtcModel
from predictor.types import Config, Phase, Plan, Prediction, ProbeResult


class Study(Protocol):
    """What of a study (predictor.search.ColdStartSearch) this plan reads."""

    probes: list[ProbeResult]
    model: TtcModel | None
    target: float
    baseline: Config | None
    worth_tuning_reason: str

    def cluster_seconds(self) -> float: ...

    def warmup_of(self, view: ProbeResult) -> Phase | None: ...


class TargetUnreachable(RuntimeError):
    """The evidence shows no configuration can reach the target (curves level off above it)."""


def plan_without_prediction(search: Study, study_id: str, views: dict[str, ProbeResult]) -> Plan:
    """Unreachable only when every live curve has levelled off above the target; otherwise the
    best measured config, with no number."""
    alive = [v for v in views.values() if not v.diverged and not v.error]
    if not alive:
        raise TargetUnreachable(f"every one of {len(search.probes)} probes diverged or failed")
    model = search.model
    levelled = [v for v in alive if model and v.config.key() in model.out_of_reach
                and read_view_regime(v).regime is Regime.FLAT]
    if len(levelled) == len(alive):
        raise TargetUnreachable(
            f"none of {len(alive)} probed configs can reach target loss {search.target}: every curve "
            "has levelled off above it")
    best = min(alive, key=lambda v: v.final_loss)
    nothing = Prediction(math.inf, 0.0, math.inf, best.steady_seconds_per_iteration, math.inf,
                         float(best.end_iteration))
    plan = Plan(study_id=study_id, config=best.config, predicted=nothing,
                baseline_config=search.baseline or best.config, baseline_predicted_ttc_seconds=math.inf,
                probe_count=len(search.probes), probe_cluster_seconds=search.cluster_seconds(),
                evidence=[best.probe_key], warmup=search.warmup_of(best),
                worth_tuning=not search.worth_tuning_reason,
                worth_tuning_reason=search.worth_tuning_reason)
    plan.confidence = assess(None, False, read_view_regime(best))
    return plan
