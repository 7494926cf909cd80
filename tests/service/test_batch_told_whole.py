"""A study tells its search a batch only once all of the batch has run (``StudyRunner._collect``):
a refit while the batch's other probes run slows their measured steps where the study's process
shares the machine with the device actors. Each result is still committed the moment it arrives,
and each probe's predicted TTC is recorded once its batch has been told."""

from __future__ import annotations

import threading

import pytest

from predictor import ColdStartSearch, ProbeResult
from predictor.types import json_safe
from service.db import Database, measurement_store, study_store
from service.runners.study_runner import StudyCancelled, StudyRunner
from tests.service.service_helpers import mid_study_spec
from worker.spec import parse_spec


def test_the_search_is_told_a_batch_once_each_of_its_results_is_committed(
        db: Database, ray_address: str, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = StudyRunner(db, ray_address)
    study_id = runner.submit(parse_spec(mid_study_spec()))
    in_flight_at_tell: list[int] = []
    tell = ColdStartSearch.tell

    def watched_tell(search: ColdStartSearch, result: ProbeResult) -> None:
        with db.read() as session:
            probes = measurement_store.list_probes(session, study_id=study_id)
            in_flight_at_tell.append(sum(p.finished_at is None for p in probes))
        tell(search, result)

    monkeypatch.setattr(ColdStartSearch, "tell", watched_tell)
    runner.run(study_id)

    with db.read() as session:
        probes = measurement_store.list_probes(session, study_id=study_id)
        events = study_store.events_after(session, study_id=study_id)
        batches = [e for e in events if e.kind == "probes_predicted"]
        predicted = {p.key: json_safe(p.predicted_ttc) for p in probes}  # inf: a config past reach
    assert len(in_flight_at_tell) == len(probes) > len(batches) > 1  # a batch held several probes
    assert in_flight_at_tell == [0] * len(probes)
    recorded = {row["key"]: row["predicted_ttc"] for e in batches for row in e.data["probes"]}
    assert recorded == predicted and any(ttc is not None for ttc in predicted.values())


def test_a_study_stopped_before_its_batch_was_told_records_the_predictions_on_resume(
        db: Database, ray_address: str) -> None:
    stop = threading.Event()
    arrived: list[ProbeResult] = []

    def stop_at_the_second(result: ProbeResult) -> None:  # the first result of a batch of two
        arrived.append(result)
        if len(arrived) == 2:
            stop.set()

    runner = StudyRunner(db, ray_address, on_probe=stop_at_the_second)
    study_id = runner.submit(parse_spec(mid_study_spec()))
    with pytest.raises(StudyCancelled):
        runner.run(study_id, stop)
    with db.read() as session:
        told = {row["key"] for e in study_store.events_after(session, study_id=study_id)
                if e.kind == "probes_predicted" for row in e.data["probes"]}
    assert arrived[1].probe_key not in told  # committed, not yet told

    StudyRunner(db, ray_address).run(study_id)
    with db.read() as session:
        finished = set(measurement_store.finished_probes(session, study_id=study_id))
        recorded = {row["key"] for e in study_store.events_after(session, study_id=study_id)
                    if e.kind == "probes_predicted" for row in e.data["probes"]}
    assert arrived[1].probe_key in finished and finished <= recorded
