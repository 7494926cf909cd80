"""A study run by the local CLI holds its lease, so a ``ttc serve`` on the same database leaves it
alone (it used to claim it at once, and both drove it: "already finished; it is never re-run"),
and ends cancelled when the CLI is interrupted (it used to stay "running", for a server to run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from service.cli import main as cli
from service.db import Database, study_store
from service.runners import study_runner, training_runner
from service.runners.held_lease import HeldLease, local_owner
from service.runners.scheduler import StudyScheduler
from service.runners.study_runner import StudyRunner
from service.runners.training_runner import TrainingRunner
from service.settings import Settings
from tests.service.service_helpers import tiny_spec
from worker.spec import parse_spec


@pytest.mark.parametrize("runner", [StudyRunner, TrainingRunner])
def test_a_server_does_not_claim_a_study_the_local_cli_runs_until_the_cli_lets_go(
    db: Database, runner: type[StudyRunner] | type[TrainingRunner]
) -> None:
    owner = local_owner()
    study_id = runner(db).submit(parse_spec(tiny_spec()), owner=owner, lease_seconds=30)
    server = StudyScheduler(db, Settings(database_url=db.url))
    with HeldLease(db, study_id, owner, seconds=30):
        server._claim()
        assert server.running() == []
        assert not server._acquire(study_id)
    # the CLI stopped with the study unfinished (an error, a Ctrl-C): a server may resume it
    assert server._acquire(study_id)


def test_a_lease_taken_over_by_another_process_stops_the_local_run(db: Database) -> None:
    owner = local_owner()
    study_id = StudyRunner(db).submit(parse_spec(tiny_spec()), owner=owner, lease_seconds=0.3)
    with HeldLease(db, study_id, owner, seconds=0.3) as lease:
        with db.transaction() as session:  # as if this process stalled past its lease
            study_store.release_lease(session, study_id=study_id, owner=owner)
            assert study_store.acquire_lease(session, study_id=study_id, owner="server", seconds=30)
        assert lease.lost.wait(10)
        assert "took the study over" in lease.why_stopped(RuntimeError("stopped"))
    with db.read() as session:  # the new holder's lease is left as it is
        assert study_store.lease_expires_at(session, study_id=study_id) is not None


@pytest.mark.parametrize(("command", "runner"), [("tune", study_runner.StudyRunner),
                                                 ("train", training_runner.TrainingRunner)])
def test_an_interrupted_local_run_cancels_its_study(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, runner: type
) -> None:
    def interrupted(self: object, study_id: str, stop: object = None) -> None:
        raise KeyboardInterrupt

    monkeypatch.setenv("TTC_DATABASE_URL", db.url)
    monkeypatch.setattr(runner, "run", interrupted)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(tiny_spec()))
    result = CliRunner().invoke(cli.app, [command, str(spec)])
    assert result.exit_code == 130, result.output
    assert "interrupted" in result.stderr
    with db.read() as session:
        (study,), _ = study_store.list_studies(session)
        assert study.state == "cancelled"
        assert study_store.lease_expires_at(session, study_id=study.id) is None
        if command == "train":
            assert study_store.get_training(session, study_id=study.id).state == "cancelled"
    assert not StudyScheduler(db, Settings(database_url=db.url))._acquire(study.id)
