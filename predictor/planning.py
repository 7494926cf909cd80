"""The plan, assembled from what a study knows (predictor.study).

The plan keeps the baseline unless a challenger wins by CHANGE_MARGIN (by the risk-aware score of
predictor.ttc_model.conservative), runs from scratch when its warm-up is the slow part
(predictor.from_scratch), carries the forecast of its TTC (predictor.plan_forecast), and says how
far its prediction can be trusted. Where nothing is predicted to reach the target, the best
measured config is planned with no number (predictor.no_number).
"""

from __future__ import annotations

import math
from dataclasses import replace

from predictor.from_scratch import FROM_SCRATCH, from_scratch
from predictor.no_number import plan_without_prediction, with_measured_bound
from predictor.plan_choice import best, planned
from predictor.plan_forecast import plan_forecast
from predictor.ranking import ranking
from predictor.run_length import with_run_length
from predictor.study import Study
from predictor.types import Plan


def plan_of(study: Study, study_id: str) -> Plan:
    """The plan; raises TargetUnreachable only when the curves show the target is out of reach."""
    if study.fork is not None and not study.views():  # the budget ended before any fork ran
        study.fork = None
        study.refit()
    views = study.views()
    key = planned(study.predictions, study.baseline_key(), study.incumbents())
    if key is None:
        return plan_without_prediction(study, study_id, views)
    view, prediction = views[key], study.predictions[key]
    warmup = study.warmup_of(view)
    model, fork, recipe = study.model, study.fork, study.recipe
    scratch = (from_scratch(model, fork, recipe, view.config, prediction)
               if warmup and model and fork and recipe else None)
    if scratch is not None and best({"fork": prediction, "scratch": scratch}, "fork") == "scratch":
        prediction, warmup = scratch, None
    prediction = with_measured_bound(prediction, view, warmup, study.warmup_config)
    baseline = study.baseline or view.config
    base_prediction = study.predictions.get(baseline.key())
    confidence = study.confidence_of(key, prediction)
    if scratch is not None and warmup is None:
        confidence = replace(confidence, reason=f"{confidence.reason}; {FROM_SCRATCH}")
    config = with_run_length(view.config, prediction, warmup, confidence)
    outlook = plan_forecast(view, prediction, model, study.lineages, fork, study.warmup_config,
                            warmup, study.target, study.prior_curves)
    return Plan(
        study_id=study_id, config=config,
        predicted=outlook.prediction if outlook else prediction,
        target=outlook.target(study.target) if outlook else None,
        baseline_config=baseline,
        baseline_predicted_ttc_seconds=base_prediction.ttc_seconds if base_prediction else math.inf,
        probe_count=len(study.probes), probe_cluster_seconds=study.cluster_seconds(),
        evidence=study.evidence_of(key),
        warmup=warmup,
        worth_tuning=not study.worth_tuning_reason, worth_tuning_reason=study.worth_tuning_reason,
        confidence=confidence,
        ranking=[row.to_dict() for row in ranking(study, key)],
        priors=len(study.priors),
    )
