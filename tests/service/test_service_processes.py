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


def _alive(pid: int) -> bool:
    """Running, not a zombie left for a reaper that may never come (PID 1 of a container)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.slow
def test_the_orchestrator_follows_a_killed_serve_process_down(tmp_path: Path, ray_address: str) -> None:
    """SIGKILL to ``ttc serve`` alone (no hook runs in it): its orchestrator sees its parent gone
    and stops, rather than running studies no API serves."""
    url = f"sqlite:///{tmp_path / 'ttc.db'}"
    service = ServiceProcess(url, ray_address, tmp_path / "service.log").start()
    try:
        orchestrators = [pid for pid in _children(service.process.pid)
                         if b"orchestrator_process" in Path(f"/proc/{pid}/cmdline").read_bytes()]
        assert len(orchestrators) == 1
        service.process.kill()  # the serve process only, not its group
        service.process.wait(10)
        wait_for(lambda: not _alive(orchestrators[0]), timeout=30, interval=0.2, what="the orchestrator gone")
    finally:
        service.stop()
