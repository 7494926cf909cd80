"""The contract of predictor.tuner, over both tuners: the cold-start search and the training planner.

Each tuner is driven to its end once on the synthetic lineage cluster (tests.predictor.test_search),
recording what it asked and what it was told; the tests read that record.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from predictor.search import ColdStartSearch
from predictor.training import TrainingPlanner
from predictor.tuner import Tuner
from predictor.types import Budget, ProbeRequest, ProbeResult
from tests.predictor.logic_only import logic_only
from tests.predictor.test_search import SPACE, SyntheticCluster

TARGET = 0.03
BUDGET = Budget(probe_seconds=10.0, probe_max_iterations=20, max_probes=40, max_overhead=0.1)


@dataclass
class Record:
    tuner: Tuner
    batches: list[list[ProbeRequest]] = field(default_factory=list)
    told: list[ProbeResult] = field(default_factory=list)
    asked_while_out: list[ProbeRequest] = field(default_factory=list)
    last_ask: list[ProbeRequest] = field(default_factory=list)


def drive(tuner: Tuner, cluster: SyntheticCluster, rounds: int = 400) -> Record:
    record = Record(tuner)
    for _ in range(rounds):
        batch = tuner.ask()
        if not batch:
            record.last_ask = tuner.ask()
            return record
        record.batches.append(batch)
        record.asked_while_out += tuner.ask()
        for request in batch:
            result = cluster.run(request, TARGET)
            tuner.tell(result)
            record.told.append(result)
    raise AssertionError(f"the tuner still asked after {rounds} batches")


def searched() -> tuple[Record, SyntheticCluster]:
    cluster = SyntheticCluster()
    return drive(ColdStartSearch(SPACE, BUDGET, TARGET), cluster), cluster


def planned() -> Record:
    search, cluster = searched()
    return drive(TrainingPlanner(search.tuner.study, max_iterations=4_000), cluster)


@pytest.fixture(scope="module", params=[searched, planned], ids=["search", "planner"])
def record(request: pytest.FixtureRequest) -> Record:
    build: Callable[[], Record | tuple[Record, SyntheticCluster]] = request.param
    with pytest.MonkeyPatch.context() as monkeypatch:
        logic_only(monkeypatch)
        built = build()
    return built[0] if isinstance(built, tuple) else built


def test_it_asks_and_is_told(record: Record) -> None:
    assert record.batches and len(record.told) == sum(len(b) for b in record.batches)


def test_nothing_is_asked_while_a_batch_is_out(record: Record) -> None:
    assert record.asked_while_out == []


def test_no_probe_is_asked_twice(record: Record) -> None:
    keys = [r.key for batch in record.batches for r in batch]
    assert len(keys) == len(set(keys))


def test_every_request_fits_the_cluster(record: Record) -> None:
    for request in (r for batch in record.batches for r in batch):
        assert request.config.nodes <= SPACE.nodes
        assert request.config.devices_per_node <= SPACE.devices_per_node
        assert request.max_iterations >= 1


def test_a_finished_tuner_stays_finished(record: Record) -> None:
    assert record.last_ask == []


def test_what_was_told_is_on_the_study_ledger(record: Record) -> None:
    """The search's probes are the study's; the planner's run and re-plans are charged on the
    same ledger (``Study.cost_of``), each told segment once."""
    study, tuner = record.tuner.study, record.tuner
    if isinstance(tuner, ColdStartSearch):
        assert study.probes == record.told
        assert study.cluster_seconds() == pytest.approx(study.cost_of(record.told))
    else:
        assert isinstance(tuner, TrainingPlanner)
        charged = tuner.run_cluster_seconds() + tuner.tuning_cluster_seconds()
        told = {id(r): r for r in (*record.told, *study.probes) if r in (*tuner.run, *tuner.tuning)}
        assert charged == pytest.approx(study.cost_of(told.values()))
        assert math.isfinite(charged) and charged > 0
