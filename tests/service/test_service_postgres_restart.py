"""A fault beyond the service: PostgreSQL restarted mid-study, every connection dropped. The study
completes; no committed probe is lost or changed, none is run twice (counted from the database).
The server is the test's own (tests/service/private_postgres.py): the machine's shared one on 5432
is never restarted under other users."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import optuna
import pytest

from service.db import TERMINAL_STATES, Database, measurement_store, study_store
from service.db.optuna_mirror import optuna_study_name
from tests.service.private_postgres import PrivatePostgres, running
from tests.service.service_helpers import ServiceProcess, mid_study_spec, wait_for

log = logging.getLogger(__name__)


@pytest.fixture(scope="module")
def private_postgres() -> Iterator[PrivatePostgres]:
    with running() as server:
        yield server


@pytest.mark.slow
@pytest.mark.postgres
def test_postgres_restart_mid_study_loses_and_reruns_nothing(
    private_postgres: PrivatePostgres, ray_address: str, tmp_path: Path
) -> None:
    postgres_url = private_postgres.url
    db = Database(postgres_url)
    db.migrate()
    spec = mid_study_spec()
    service = ServiceProcess(postgres_url, ray_address, tmp_path / "service.log").start()
    try:
        study_id = httpx.post(f"{service.url}/v1/studies", json=spec).json()["id"]

        def mid_study() -> dict | None:
            with db.read() as session:
                probes = {p.key: (p.id, p.attempts, p.state, p.finished_at)
                          for p in measurement_store.list_probes(session, study_id=study_id)}
            finished = [p for p in probes.values() if p[3] is not None]
            return probes if finished and len(finished) < len(probes) else None

        wait_for(mid_study, timeout=240, interval=0.05, what="a probe finished, another in flight")
        db.dispose()  # the test's own pool is dropped too; it reconnects after the restart
        private_postgres.restart()
        with db.read() as session:
            committed = {p.key: (p.id, p.attempts, p.state, p.finished_at)
                         for p in measurement_store.list_probes(session, study_id=study_id)
                         if p.finished_at is not None}

        def finished() -> str | None:
            with db.read() as session:
                state = study_store.get_study(session, study_id=study_id).state
            return state if state in TERMINAL_STATES else None

        assert wait_for(finished, timeout=300, interval=0.5, what="the study's end") == "done"
        with db.read() as session:
            after = {p.key: (p.id, p.attempts, p.state, p.finished_at)
                     for p in measurement_store.list_probes(session, study_id=study_id)}
        for key, row in committed.items():
            assert after[key] == row, f"probe {key} changed after the restart: {row} → {after[key]}"
        assert all(row[1] == 1 for row in after.values()), f"a probe ran twice: {after}"
        assert all(row[3] is not None for row in after.values())
        trials = optuna.load_study(study_name=optuna_study_name(study_id), storage=postgres_url).trials
        assert len(trials) == len(after) and all(t.state.is_finished() for t in trials)
        log.info("PostgreSQL restart: %d probes committed before it, %d at the end, none re-run",
                 len(committed), len(after))
    finally:
        service.stop()
        db.dispose()
