"""``ttc serve`` runs studies in an orchestrator process, the API in ``--workers`` processes
(issue 15, found 8: the API shared its process and event loop with study orchestration)."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from service.db import Database, Lease, study_store
from service.runners.scheduler import StudyScheduler
from service.settings import Settings
from tests.service.service_helpers import ServiceProcess, tiny_spec, wait_for


def _children(pid: int) -> set[int]:
    tasks = Path(f"/proc/{pid}/task")
    return {int(child) for task in tasks.iterdir() for child in (task / "children").read_text().split()}


@pytest.mark.slow
def test_studies_run_in_an_orchestrator_process_and_the_api_in_workers(
    database_url: str, ray_address: str, tmp_path: Path
) -> None:
    db = Database(database_url)
    db.migrate()
    service = ServiceProcess(database_url, ray_address, tmp_path / "service.log", "--workers", "2").start()
    try:
        study_id = httpx.post(f"{service.url}/v1/studies", json=tiny_spec()).json()["id"]

        def lease_owner() -> str | None:
            with db.read() as session:
                lease = session.get(Lease, study_id)
                return lease.owner if lease else None

        owner = wait_for(lease_owner, timeout=120, interval=0.1, what="the study leased")
        owner_pid = int(owner.split(":")[1])
        assert owner_pid != service.process.pid
        assert owner_pid in _children(service.process.pid)  # the orchestrator, a child of ttc serve
        for _ in range(20):  # both API workers answer (each on its own database pool)
            assert httpx.get(f"{service.url}/v1/studies/{study_id}").status_code == 200

        def state() -> str:
            return httpx.get(f"{service.url}/v1/studies/{study_id}").json()["state"]

        wait_for(lambda: state() == "done", timeout=300, interval=0.5, what="the study done")
    finally:
        service.stop()
        db.dispose()


def test_a_study_that_just_finished_is_not_a_lost_lease(
    db: Database, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Found 7: the heartbeat's snapshot still held a study whose thread had just released its lease."""
    scheduler = StudyScheduler(db, Settings(database_url=db.url))
    stop = threading.Event()
    snapshots = iter([{"finished": stop}])
    monkeypatch.setattr(scheduler, "_snapshot", lambda: next(snapshots, {}))
    scheduler._heartbeat()
    assert not stop.is_set() and "lost the lease" not in caplog.text


def test_a_lease_taken_by_another_stops_the_study(
    db: Database, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    scheduler = StudyScheduler(db, Settings(database_url=db.url))
    with db.transaction() as session:
        study_id = study_store.create_study(session, spec=tiny_spec()).id
        assert study_store.acquire_lease(session, study_id=study_id, owner="someone-else", seconds=60)
    stop = threading.Event()
    monkeypatch.setattr(scheduler, "_snapshot", lambda: {study_id: stop})
    scheduler._heartbeat()
    assert stop.is_set() and "lost the lease" in caplog.text
