"""PostgreSQL away for longer than one database call waits (``TTC_DATABASE_RETRY_SECONDS``, made
2 s here; 120 s by default, the old hard cut-off after which every running study failed): the
study pauses instead of failing and, once the server is back, finishes with the plan of an
uninterrupted run. Reads meanwhile answer 503 with Retry-After. Both a clean stop and a SIGKILL
of the server, on a private PostgreSQL (the machine's shared one is never touched)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.exc import OperationalError

from service.api import events
from service.app import create_app
from service.db import TERMINAL_STATES, Database, measurement_store, study_store
from service.runners.study_runner import StudyRunner
from service.settings import Settings
from tests.service.conftest import _reset_postgres
from tests.service.private_postgres import PrivatePostgres, available, running
from tests.service.service_helpers import ServiceProcess, free_port, mid_study_spec, wait_for
from worker.spec import parse_spec

log = logging.getLogger(__name__)
RETRY_SECONDS = 2.0  # one call's wait, cut short; the outage below lasts 5 times as long
OUTAGE_SECONDS = 10.0


def test_reads_answer_503_with_retry_after_while_the_database_is_away() -> None:
    nowhere = f"postgresql+psycopg2://postgres@127.0.0.1:{free_port()}/ttc"
    app = create_app(Settings(database_url=nowhere), run_studies=False)
    client = TestClient(app, base_url="http://127.0.0.1")  # no start-up: the database is away
    for path in ("/v1/studies", "/v1/studies/3f2a9c41d0b7", "/v1/studies/3f2a9c41d0b7/trials"):
        response = client.get(path)
        assert response.status_code == 503, (path, response.text)
        assert response.headers["Retry-After"] == "5"
        assert "database is unreachable" in response.json()["detail"]
    assert client.get("/healthz").status_code == 503


def test_an_open_event_stream_outlives_an_outage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    answers = iter([
        ([(1, "state", {"state": "running"})], "running"),
        OperationalError("SELECT …", {}, Exception("server closed the connection unexpectedly")),
        ([(2, "state", {"state": "done"})], "done"),
        ([], "done"),
    ])

    def fetch(*_: object) -> tuple[list, str]:
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(events, "_fetch", fetch)
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'ttc.db'}"), run_studies=False)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        stream = client.get("/v1/studies/3f2a9c41d0b7/events")
    assert stream.status_code == 200
    assert [line for line in stream.text.splitlines() if line.startswith("id:")] == ["id: 1", "id: 2"]


def _plan(db: Database, study_id: str) -> dict[str, Any]:
    with db.read() as session:
        study = study_store.get_study(session, study_id=study_id)
        assert study.state == "done", f"study {study_id} is {study.state}: {study.error}"
        return {key: value for key, value in study.plan.items() if key != "study_id"}


@pytest.fixture(scope="module")
def private_postgres() -> Iterator[PrivatePostgres]:
    with running() as server:
        yield server


@pytest.fixture(scope="module")
def uninterrupted_plan(ray_address: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The same study run to its end with no fault (in this process, on SQLite)."""
    db = Database(f"sqlite:///{tmp_path_factory.mktemp('uninterrupted') / 'ttc.db'}")
    db.migrate()
    runner = StudyRunner(db, ray_address)
    study_id = runner.submit(parse_spec(mid_study_spec()))
    runner.run(study_id)
    plan = _plan(db, study_id)
    db.dispose()
    return plan


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.timeout(1800)  # two real studies on 2 cores: slow when the machine is loaded, never stuck
@pytest.mark.skipif(not available(), reason="needs PostgreSQL's initdb and pg_ctl (and runuser when root)")
@pytest.mark.parametrize("fault", ["stop", "kill"])
def test_a_study_outlives_a_database_outage_longer_than_a_call_waits(
    fault: str, private_postgres: PrivatePostgres, uninterrupted_plan: dict[str, Any], ray_address: str,
    tmp_path: Path,
) -> None:
    url = private_postgres.url
    _reset_postgres(url)
    db = Database(url)
    db.migrate()
    service = ServiceProcess(url, ray_address, tmp_path / "service.log",
                             TTC_DATABASE_RETRY_SECONDS=str(RETRY_SECONDS)).start()
    try:
        study_id = httpx.post(f"{service.url}/v1/studies", json=mid_study_spec()).json()["id"]

        def probe_states() -> tuple[int, int]:
            with db.read() as session:
                probes = measurement_store.list_probes(session, study_id=study_id)
            return len(probes), sum(p.finished_at is not None for p in probes)

        def mid_study() -> bool:
            probes, finished = probe_states()
            return 0 < finished < probes

        wait_for(mid_study, timeout=240, interval=0.05, what="a probe finished, another in flight",
                 progress=probe_states)
        db.dispose()
        getattr(private_postgres, fault)()
        down = time.monotonic()
        for path in (f"/v1/studies/{study_id}", "/v1/studies"):
            response = httpx.get(f"{service.url}{path}", timeout=30)
            assert response.status_code == 503 and response.headers["Retry-After"], (path, response.text)
        time.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - down)))
        private_postgres.start()
        log.info("PostgreSQL %s: away for %.1f s (one call waits %.0f s)", fault, time.monotonic() - down,
                 RETRY_SECONDS)

        def finished() -> str | None:
            with db.read() as session:
                state = study_store.get_study(session, study_id=study_id).state
            return state if state in TERMINAL_STATES else None

        end = wait_for(finished, timeout=300, interval=0.5, what="the study's end", progress=probe_states)
        assert end == "done"
        assert _plan(db, study_id) == uninterrupted_plan
        with db.read() as session:
            probes = measurement_store.list_probes(session, study_id=study_id)
            kinds = [event.kind for event in study_store.events_after(session, study_id=study_id, after=0)]
        assert all(p.state != "cancelled" and p.finished_at is not None for p in probes)
        log.info("after the outage: %d probes (attempts %s), %d resumes", len(probes),
                 [p.attempts for p in probes], kinds.count("resumed"))
    finally:
        service.stop()
        db.dispose()
