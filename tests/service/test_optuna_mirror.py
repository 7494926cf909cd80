"""Optuna agrees with the plan (issue 14 §4): after ``agree``, the study's best trial is the plan's
config and the plan is in the study's user attributes — over searches that end in each way."""

from __future__ import annotations

import math

import optuna
import pytest

from predictor.ranking import decision_values
from predictor.search import ColdStartSearch
from predictor.trial_space import TRIAL_PARAMS as PARAMS
from predictor.types import Budget, Confidence, Config, Prediction, ProbeResult, json_safe
from service.db.optuna_mirror import PLAN_ATTR, agree
from tests.predictor.test_search import LONG, SPACE, SyntheticCluster, cheap_statistics  # noqa: F401

BUDGETS = {
    "one probe": (Budget(probe_seconds=10.0, probe_max_iterations=20, max_probes=1), 0.03),
    "three probes": (Budget(probe_seconds=10.0, probe_max_iterations=20, max_probes=3), 0.03),
    "twelve probes": (Budget(probe_seconds=10.0, probe_max_iterations=20, max_probes=12), 0.03),
    "long, forked": (LONG, 0.03),
    "short job": (Budget(probe_seconds=10.0, probe_max_iterations=200, max_probes=12), 0.5),
}


def assert_agrees(study: optuna.Study, plan: dict) -> None:
    """``best_trial.params`` are the plan's config; the plan is stored whole."""
    best = study.best_trial
    assert best.params == {name: plan["config"][name] for name in PARAMS}
    assert study.user_attrs[PLAN_ATTR] == plan
    assert best.user_attrs["probe_key"] == plan["evidence"][-1]


@pytest.mark.parametrize("name", list(BUDGETS))
def test_the_best_trial_is_the_plan(name: str) -> None:
    budget, target = BUDGETS[name]
    storage = optuna.storages.InMemoryStorage()
    study = optuna.create_study(study_name="s1", storage=storage, direction="minimize")
    search = ColdStartSearch(SPACE, budget, target, optuna_study=study)
    cluster = SyntheticCluster()
    while requests := search.ask():
        for request in requests:
            search.tell(cluster.run(request, target))
    plan = search.plan("s1")
    agree(search, plan, storage, "s1")
    loaded = optuna.load_study(study_name="s1", storage=storage)
    assert_agrees(loaded, json_safe(plan.to_dict()))
    assert len(loaded.trials) == len(search.study.probes)
    for trial in loaded.trials:
        if trial.state is optuna.trial.TrialState.COMPLETE:
            assert trial.value >= loaded.best_value and not math.isnan(trial.value)
        else:
            assert trial.user_attrs["ttc_reason"]


class _KeptBaselineStudy:
    """A study whose plan kept the baseline (its interval open above: no risk-aware score) over a
    challenger with a bounded interval whose point is not 5% better."""

    def __init__(self) -> None:
        self.baseline = Config("sync", 2, 2, lr=0.1, momentum=0.9)
        challenger = Config("sync", 1, 2, lr=0.1, momentum=0.9)
        self.probes = [ProbeResult(c, 50, 1.0, [], key=f"{c.key()}@0+50")
                       for c in (self.baseline, challenger)]
        self.predictions = {self.baseline.key(): Prediction(1.0, 0.5, math.inf, 1e-3, 1e3),
                            challenger.key(): Prediction(0.98, 0.9, 1.1, 1e-3, 980)}
        self.pruned: set[str] = set()

    def views(self) -> dict[str, ProbeResult]:
        return {p.config.key(): p for p in self.probes}

    def confidence_of(self, key: str) -> Confidence:
        return Confidence("none", "test")

    def evidence_of(self, key: str) -> list[str]:
        return [p.probe_key for p in self.probes if p.config.key() == key]

    def unstable(self) -> set[str]:
        return set()

    def behind(self) -> set[str]:
        return set()

    def ahead(self) -> set[str]:
        return set()


def test_a_kept_plan_without_a_risk_aware_score_still_has_the_least_value() -> None:
    """A challenger's finite score must not undercut a plan whose score is unbounded: every value
    but the plan's is above it (the five-probe spec of the slow agreement test kept a 2-device
    baseline over a 1-device config, and Optuna's best trial was the 1-device one)."""
    study = _KeptBaselineStudy()
    values = decision_values(study, study.baseline.key())
    plan_probe, other = (p.probe_key for p in study.probes)
    assert values[plan_probe] is not None and values[other] is not None
    assert values[plan_probe] < values[other]
