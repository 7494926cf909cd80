"""The plan when no config is predicted to reach the target (issue 11: a prediction the evidence
cannot support is reported as such, never printed as a number).

"Unreachable" needs evidence — every live curve levelled off above the target; a curve still
falling says only that the study does not know, so the best measured config is returned with
no number and ``confidence: none``. When that config was measured forked from the study's warm-up,
the plan names the warm-up too: its measurement is of the fork, not of a run from scratch.

What was measured still bounds the answer: a plan whose own run (its warm-up included) ran for
some seconds without reaching the target takes longer than that, with no extrapolation at all
(``with_measured_bound``), so a plan without a number still says how long its run is at least.
"""

from __future__ import annotations

import math
from dataclasses import replace

from predictor.confidence import assess
from predictor.plan_forecast import plan_forecast
from predictor.regime import Regime, read_view_regime
from predictor.study import Study
from predictor.types import Config, Phase, Plan, Prediction, ProbeResult


def with_measured_bound(prediction: Prediction, view: ProbeResult, warmup: Phase | None,
                        warmup_config: Config | None) -> Prediction:
    """``prediction`` with ``evidence_seconds``: how long the plan's own run was measured without
    reaching the target, on the probes' data. The run is the lineage measured when the plan names
    the warm-up ``view`` was forked from, when ``view`` ran from scratch, or when it is the
    warm-up's own recipe continued. Left unknown where the run planned is not that lineage (a run
    from scratch read off a fork) or where it reached (then its TTC is the measurement itself)."""
    continued = warmup_config is not None and view.config.key() == warmup_config.key()
    run_as_measured = warmup is not None or view.start_iteration == 0 or continued
    if view.reached_iteration is not None or not run_as_measured:
        return prediction
    return replace(prediction, evidence_seconds=view.end_seconds)


class TargetUnreachable(RuntimeError):
    """The evidence shows no configuration can reach the target (curves level off above it)."""


def plan_without_prediction(study: Study, study_id: str, views: dict[str, ProbeResult]) -> Plan:
    """Unreachable only when every live curve has levelled off above the target; otherwise the
    best measured config, with no number."""
    unstable = study.unstable()
    alive = [v for v in views.values() if not v.diverged and not v.error and v.config.key() not in unstable]
    if not alive:
        raise TargetUnreachable(f"every one of {len(study.probes)} probes diverged or failed")
    model = study.model
    levelled = [v for v in alive if model and v.config.key() in model.out_of_reach
                and read_view_regime(v).regime is Regime.FLAT]
    if len(levelled) == len(alive):
        raise TargetUnreachable(
            f"none of {len(alive)} probed configs can reach target loss {study.target}: every curve "
            "has levelled off above it")
    best = min(alive, key=lambda v: v.final_loss)
    warmup = study.warmup_of(best)
    nothing = with_measured_bound(Prediction(math.inf, 0.0, math.inf, best.steady_seconds_per_iteration,
                                             math.inf, float(best.end_iteration)), best, warmup,
                                  study.warmup_config)
    outlook = plan_forecast(best, nothing, model, study.lineages, study.fork, study.warmup_config, warmup,
                            study.target, study.prior_curves)
    plan = Plan(study_id=study_id, config=best.config, predicted=outlook.prediction if outlook else nothing,
                target=outlook.target(study.target) if outlook else None,
                baseline_config=study.baseline or best.config, baseline_predicted_ttc_seconds=math.inf,
                probe_count=len(study.probes), probe_cluster_seconds=study.cluster_seconds(),
                evidence=[best.probe_key], warmup=warmup,
                worth_tuning=not study.worth_tuning_reason,
                worth_tuning_reason=study.worth_tuning_reason, priors=len(study.priors))
    plan.confidence = assess(None, False, read_view_regime(best))
    return plan
