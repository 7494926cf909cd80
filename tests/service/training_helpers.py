"""Shared by the ``ttc train`` tests: a spec whose run outlives its study, and readers of the record."""

from __future__ import annotations

from typing import Any

from predictor.types import ProbeRequest, ProbeResult
from service.db import Database, TrainingSegment, measurement_store
from tests.service.service_helpers import tiny_spec


def training_spec(target: float = 0.002, **budget: Any) -> dict[str, Any]:
    """The tiny study (3 probes of 50 iterations), with a target its probes do not reach: the run
    continues the plan's lineage in checkpoint segments of 4 probe lengths (200 iterations)."""
    spec = tiny_spec(**budget)
    spec["target"]["value"] = target
    return spec


def segments(db: Database, study_id: str) -> list[tuple[TrainingSegment, ProbeRequest, ProbeResult]]:
    """The training's committed segments in the order they arrived."""
    from sqlalchemy import select

    with db.read() as session:
        rows = list(session.scalars(select(TrainingSegment).where(TrainingSegment.study_id == study_id)
                                    .order_by(TrainingSegment.number)))
    return [(row, measurement_store.segment_request(row.request), ProbeResult.from_dict(row.result))
            for row in rows]


def check_overhead(training: dict[str, Any], plan: dict[str, Any], max_overhead: float) -> None:
    """What ``TrainingPlanner`` guarantees (its ``_replan_requests``): re-plans' forks run only within
    ``max_overhead`` × the run's cluster-seconds; the study's probes off the run are held to the
    study's own budget."""
    timeline, result = training["timeline"], training["result"]
    run, tuning = timeline["run_cluster_seconds"], result["tuning_cluster_seconds"]
    replans, study = timeline["replan_cluster_seconds"], timeline["study_tuning_cluster_seconds"]
    assert tuning == pytest_approx(replans + study)
    assert study <= plan["probes"]["cluster_seconds"] + 1e-12
    assert replans <= max_overhead * run + 1e-12, (replans, run)


def pytest_approx(value: float) -> Any:
    import pytest

    return pytest.approx(value, rel=1e-9, abs=1e-12)
