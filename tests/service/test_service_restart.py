"""A service killed with SIGKILL mid-study: the restarted one completes the study, keeping every
probe committed before the kill and re-running none of them (counted from the database)."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import optuna
import pytest

from service.db import TERMINAL_STATES, Database, measurement_store, study_store
from service.db.optuna_mirror import optuna_study_name
from tests.service.service_helpers import ServiceProcess, mid_study_spec, wait_for

log = logging.getLogger(__name__)


def _probes(db: Database, study_id: str) -> dict[str, tuple[int, int, str, object]]:
    with db.read() as session:
        rows = measurement_store.list_probes(session, study_id=study_id)
        return {p.key: (p.id, p.attempts, p.state, p.finished_at) for p in rows}


@pytest.mark.slow
def test_sigkill_mid_study_then_restart_completes_without_rerunning(
    database_url: str, ray_address: str, tmp_path: Path
) -> None:
    db = Database(database_url)
    db.migrate()
    spec = mid_study_spec()
    first = ServiceProcess(database_url, ray_address, tmp_path / "service.log").start()
    second = ServiceProcess(database_url, ray_address, tmp_path / "service.log")
    try:
        study_id = httpx.post(f"{first.url}/v1/studies", json=spec).json()["id"]

        def mid_study() -> dict | None:
            probes = _probes(db, study_id)
            finished = [p for p in probes.values() if p[3] is not None]
            return probes if len(finished) >= 2 and len(finished) < len(probes) else None

        before = wait_for(mid_study, timeout=240, interval=0.05, what="a probe finished, another in flight")
        first.kill()
        committed = {key: row for key, row in _probes(db, study_id).items() if row[3] is not None}
        in_flight = sorted(key for key in _probes(db, study_id) if key not in committed)

        second.start()
        with db.read() as session:
            assert study_store.get_study(session, study_id=study_id).state == "running"  # nobody finished it

        def finished() -> str | None:
            with db.read() as session:
                state = study_store.get_study(session, study_id=study_id).state
            return state if state in TERMINAL_STATES else None

        assert wait_for(finished, timeout=300, interval=0.5, what="the resumed study's end") == "done"
        after = _probes(db, study_id)
        for key, row in committed.items():
            assert after[key] == row, f"probe {key} changed after the restart: {row} → {after[key]}"
        retried = {key: after[key][1] for key in in_flight}
        assert all(after[key][3] is not None for key in in_flight)
        trials = optuna.load_study(study_name=optuna_study_name(study_id), storage=database_url).trials
        assert len(trials) == len(after) and all(t.state.is_finished() for t in trials)
        log.info(
            "SIGKILL figures (%s): probes seen before kill %d, committed before kill %d, in flight %d "
            "(attempts after resume %s), probes at the end %d, committed rows unchanged %d/%d, "
            "optuna trials %d",
            database_url.split(":")[0], len(before), len(committed), len(in_flight), retried, len(after),
            sum(after[k] == r for k, r in committed.items()), len(committed), len(trials),
        )
    finally:
        first.stop()
        second.stop()
        db.dispose()
