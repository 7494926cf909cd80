"""A rate at the edge of the ones that train is checked on a second seed before it warms up.

On Ray, charlm's plan took the grid's largest rate (0.3): the probes' seed trained it 1,100
iterations, and seeds 1, 2 and 3 diverged at iteration 50. The sweep now probes such a rate once
more from scratch on the next seed; where it diverges there, the next best rate warms up instead.
"""

from __future__ import annotations

import math

import optuna
import pytest

from predictor.planning import plan_of
from predictor.search import SEED_CHECK_OFFSET, ColdStartSearch
from predictor.study import Study
from predictor.types import Budget, Config, ProbeRequest, ProbeResult, config_key_of
from tests.predictor.test_search import (  # noqa: F401 (cheap_statistics: test_search's autouse fixture)
    LONG,
    SPACE,
    SyntheticCluster,
    cheap_statistics,
    run_search,
)


class SeedSensitiveCluster(SyntheticCluster):
    """The synthetic job, except that on any other seed a rate of ``unstable`` or more diverges."""

    def __init__(self, unstable: float) -> None:
        super().__init__()
        self.unstable = unstable

    def run(self, request: ProbeRequest, target: float) -> ProbeResult:
        if request.seed_offset and request.config.lr >= self.unstable:
            return ProbeResult(request.config, 2, 0.01, [(0, 0.0, 1.0), (2, 0.01, math.inf)], [0.005],
                               diverged=True, key=request.key)
        return super().run(request, target)


def searched(cluster: SyntheticCluster, target: float = 0.03) -> tuple[ColdStartSearch, list[ProbeRequest]]:
    search, asked = ColdStartSearch(SPACE, LONG, target), []
    while requests := search.ask():
        asked += requests
        for request in requests:
            search.tell(cluster.run(request, target))
    return search, asked


def checks(asked: list[ProbeRequest]) -> list[ProbeRequest]:
    return [r for r in asked if r.seed_offset]


def test_a_seed_offset_is_its_own_probe_key_of_the_same_config() -> None:
    request = ProbeRequest(Config("sync", 1, 2, lr=0.3), 1.0, 20, seed_offset=SEED_CHECK_OFFSET)
    assert request.key == request.config.key() + "@seed+1" != ProbeRequest(request.config, 1.0, 20).key
    assert config_key_of(request.key) == request.config.key()
    assert ProbeRequest.from_dict(request.to_dict()) == request


def test_the_edge_rate_that_trains_on_a_second_seed_warms_up_after_one_check() -> None:
    """The synthetic job diverges at lr 0.3 (μ 0.9) on every seed, so 0.1 is the edge: checked once."""
    search, asked = searched(SyntheticCluster())
    assert [(r.config.lr, r.parent) for r in checks(asked)] == [(0.1, None)]
    assert search.study.recipe is not None and search.study.recipe.lr == 0.1
    assert checks(asked)[0].config == search.study.warmup_config  # the device the warm-up runs
    check = checks(asked)[0].key
    assert check in search.study.seed_checks and check not in search.study.lineages.segments
    assert check not in search.plan("s").evidence
    assert check in {p.probe_key for p in search.study.probes}  # its cost is the study's


def test_the_edge_rate_that_diverges_on_a_second_seed_is_dropped_for_the_next() -> None:
    search, asked = searched(SeedSensitiveCluster(unstable=0.1))
    assert [r.config.lr for r in checks(asked)] == [0.1, 0.03]  # 0.03 is the edge once 0.1 is out
    assert search.study.recipe is not None and search.study.recipe.lr == 0.03
    assert search.study.warmup_config is not None and search.study.warmup_config.lr == 0.03
    dropped = checks(asked)[0].config
    assert dropped in search.study.diverged and search.study.unstable() == {dropped.key()}
    assert dropped.key() not in search.study.predictions
    trials = {t.user_attrs["probe_key"]: t for t in search.optuna_study.get_trials()}
    assert trials[checks(asked)[0].key].state is optuna.trial.TrialState.PRUNED
    assert trials[checks(asked)[0].key].user_attrs["prune_reason"] == "diverged on a second seed"


def test_a_rate_below_the_edge_is_not_checked() -> None:
    search = ColdStartSearch(SPACE, LONG, 0.03)
    middle = Config("sync", 1, 2, batch_size=64, lr=0.1, momentum=0.9)
    assert search._at_the_edge(middle.replace(lr=0.3))  # the space's largest
    assert not search._at_the_edge(middle)  # nothing above it diverged yet
    search.study.diverged.append(middle.replace(lr=0.3))
    assert search._at_the_edge(middle)


@pytest.mark.parametrize("max_probes", [1, 3])
def test_a_check_the_budget_cannot_pay_for_is_skipped(max_probes: int) -> None:
    search = run_search(Budget(probe_seconds=10.0, probe_max_iterations=20, max_probes=max_probes))
    assert len(search.study.probes) <= max_probes and not search.study.seed_checks


def test_a_config_that_diverged_on_a_second_seed_is_never_planned_whatever_its_own_curve() -> None:
    """As on Ray: no fork (the warm-up reached the target), so the plan is chosen among the probes
    from scratch, where the faster rate's seed-0 curve still looks best."""
    study, cluster = Study(SPACE, LONG, 0.03), SyntheticCluster()
    fast, slow = (Config("sync", 1, 2, batch_size=64, lr=lr, momentum=0.5) for lr in (0.3, 0.03))
    study.baseline = fast  # kept unless a challenger wins by the margin
    for config in (fast, slow):
        study.record(cluster.run(ProbeRequest(config, 10.0, 40), 0.03))
    assert plan_of(study, "s").config == fast
    check = ProbeRequest(fast, 10.0, 40, seed_offset=SEED_CHECK_OFFSET)
    study.record_seed_check(SeedSensitiveCluster(unstable=0.3).run(check, 0.03))
    plan = plan_of(study, "s")
    assert plan.config == slow and check.key not in plan.evidence
    row = next(r for r in plan.ranking if r["config_key"] == fast.key())
    assert (row["status"], row["reason"]) == ("diverged", "its loss diverged on a second seed")
