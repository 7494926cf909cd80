"""A service killed with SIGKILL mid-training (issue 13): the restarted one finishes the run from its
last committed checkpoint, on SQLite and on PostgreSQL. Every segment committed before the kill is
kept as it was and none is run again; what is lost is the segment in flight, at most one checkpoint
interval (``CHECKPOINT_PROBES`` probe lengths)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import httpx
import pytest

from predictor.training import CHECKPOINT_PROBES
from service.db import TRAINING_TERMINAL_STATES, Database, measurement_store, study_store
from tests.service.service_helpers import ServiceProcess, wait_for
from tests.service.training_helpers import segments, training_spec

log = logging.getLogger(__name__)
PROBE_ITERATIONS = 50  # training_spec's probe_max_iterations


def _state(db: Database, study_id: str) -> str | None:
    with db.read() as session:
        training = study_store.get_training(session, study_id=study_id)
        return training.state if training else None


def _settled_segments(db: Database, study_id: str) -> list:
    """The segments committed once the killed service's last transaction has settled: PostgreSQL
    still commits a transaction whose COMMIT the client had sent before it died, so a read right
    after the kill can miss a segment whose state (written in the same transaction) a later read
    sees."""
    before = segments(db, study_id)
    while True:
        time.sleep(1.0)
        now = segments(db, study_id)
        if len(now) == len(before):
            return now
        before = now


@pytest.mark.slow
def test_sigkill_mid_training_resumes_from_the_last_checkpoint(
    database_url: str, ray_address: str, tmp_path: Path
) -> None:
    db = Database(database_url)
    db.migrate()
    first = ServiceProcess(database_url, ray_address, tmp_path / "service.log").start()
    second = ServiceProcess(database_url, ray_address, tmp_path / "service.log")
    try:
        study_id = httpx.post(f"{first.url}/v1/studies", json=training_spec(target=0.0002)).json()["id"]
        assert httpx.post(f"{first.url}/v1/studies/{study_id}/train",
                          json={"max_iterations": 8000}).status_code == 202

        def mid_training() -> bool:
            runs = [s for s in segments(db, study_id) if s[0].role == "run"]
            return len(runs) >= 2 and _state(db, study_id) == "running"

        wait_for(mid_training, timeout=240, interval=0.05, what="two run segments committed")
        first.kill()
        committed = _settled_segments(db, study_id)
        checkpoint = max(result.end_iteration for row, _, result in committed if row.role == "run")
        with db.read() as session:
            kept = set(measurement_store.state_keys(session, study_id=study_id))
        assert kept <= {row.key for row, _, _ in committed}  # only committed segments' states
        assert len(segments(db, study_id)) == len(committed)

        second.start()

        def finished() -> str | None:
            state = _state(db, study_id)
            return state if state in TRAINING_TERMINAL_STATES else None

        assert wait_for(finished, timeout=300, interval=0.5, what="the resumed training's end") == "done"
        after = segments(db, study_id)
        for (row, _, _), (again, _, _) in zip(committed, after, strict=False):
            assert (row.id, row.key, row.result) == (again.id, again.key, again.result)  # kept as it was
        new = after[len(committed):]
        keys = {row.key for row, _, _ in committed}
        assert new and all(request.parent in keys | {r.key for r, _, _ in new} for _, request, _ in new)
        resumed_runs = [(request, result) for row, request, result in new if row.role == "run"]
        # nothing before the last checkpoint runs again: the run goes on from there
        assert resumed_runs[0][0].start_iteration >= checkpoint
        assert all(result.iterations <= CHECKPOINT_PROBES * PROBE_ITERATIONS for _, _, result in after)
        with db.read() as session:
            training = study_store.get_training(session, study_id=study_id)
            kinds = [e.kind for e in study_store.events_after(session, study_id=study_id, limit=10_000)]
        assert training.result["reached"] and "training_resumed" in kinds
        run_iterations = sum(p["iterations"] for p in training.result["phases"])
        assert run_iterations == max(result.end_iteration for row, _, result in after if row.role == "run")
        log.info(
            "SIGKILL mid-training (%s): %d segments committed before the kill (last checkpoint at iteration "
            "%d), first resumed run segment starts at %d (re-run before the checkpoint: %d iterations; "
            "lost: the segment in flight, at most %d iterations = 1 checkpoint interval), %d segments "
            "after the restart, reached at iteration %d",
            database_url.split(":")[0], len(committed), checkpoint, resumed_runs[0][0].start_iteration,
            max(checkpoint - resumed_runs[0][0].start_iteration, 0), CHECKPOINT_PROBES * PROBE_ITERATIONS,
            len(new), training.result["iterations"],
        )
    finally:
        first.stop()
        second.stop()
        db.dispose()
