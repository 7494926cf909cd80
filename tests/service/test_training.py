"""``ttc train`` in the service (issue 13): the CLI, the REST routes, the record, and a resume."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from predictor.training import CHECKPOINT_PROBES
from service.app import create_app
from service.cli.main import app
from service.db import TRAINING_TERMINAL_STATES, Database, measurement_store, study_store
from service.runners.study_runner import StudyCancelled, StudyRunner
from service.runners.training_runner import TrainingRunner
from service.settings import Settings
from tests.service.service_helpers import local_client
from tests.service.training_helpers import check_overhead, segments, training_spec
from worker.spec import parse_spec


def _training(db: Database, study_id: str) -> dict:
    with db.read() as session:
        training = study_store.get_training(session, study_id=study_id)
        plan = study_store.get_study(session, study_id=study_id).plan
        return {"state": training.state, "result": training.result, "timeline": training.timeline,
                "error": training.error, "plan": plan}


def test_cli_train_reaches_the_target_and_its_phases_make_up_the_run(
    database_url: str, ray_address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TTC_DATABASE_URL", database_url)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(training_spec()))
    ran = CliRunner().invoke(app, ["train", str(spec), "--json", "--max-overhead", "0.2"])
    assert ran.exit_code == 0, ran.output
    result = json.loads(ran.stdout)
    assert set(result) == {"reached", "ttc_seconds", "tuning_cluster_seconds", "iterations", "final_loss",
                           "phases", "eta"}
    assert result["reached"] and result["final_loss"] <= 0.002
    etas = result["eta"]  # one forecast of the time left per checkpoint the run had not yet reached at
    assert [e["iteration"] for e in etas] == sorted(e["iteration"] for e in etas)
    assert all(0 <= e["remaining_p10"] <= e["remaining_p50"] <= (e["remaining_p90"] or float("inf"))
               for e in etas)
    run = sum(p["iterations"] for p in result["phases"])  # the run's lineage, warm-up included
    assert result["iterations"] <= run <= result["iterations"] + 5  # stopped at the eval that reached it
    assert result["ttc_seconds"] >= result["tuning_cluster_seconds"] > 0
    db = Database(database_url)
    try:
        with db.read() as session:
            study_id = study_store.list_studies(session)[0][0].id
        recorded = _training(db, study_id)
        assert recorded["state"] == "done" and recorded["result"] == result
        assert recorded["plan"]["study_id"] == study_id
        check_overhead(recorded, recorded["plan"], 0.2)
        pieces = [s for s in segments(db, study_id) if s[0].role == "run"]
        assert pieces and all(r.iterations <= CHECKPOINT_PROBES * 50 for _, _, r in pieces)
        with db.read() as session:  # the final checkpoint is kept, nothing else
            assert measurement_store.state_keys(session, study_id=study_id) == [pieces[-1][0].key]
    finally:
        db.dispose()
    # the job run again: the finished run is its prior, and the warm-up's ETA printed reads it
    again = CliRunner().invoke(app, ["train", str(spec), "--max-overhead", "0.2"])
    assert again.exit_code == 0, again.output
    lines = again.output.splitlines()
    assert any(line.strip().startswith("warm-up ") and " ETA " in line for line in lines), again.output
    runs = [line for line in lines if line.strip().startswith("run ")]  # the last reached: no time left
    assert runs and " ETA " in runs[0] and " ETA " not in runs[-1], again.output


def test_cli_train_exits_3_when_the_run_stops_short(
    database_url: str, ray_address: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TTC_DATABASE_URL", database_url)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(training_spec()))
    ran = CliRunner().invoke(app, ["train", str(spec), "--max-iterations", "150"])
    assert ran.exit_code == 3, ran.output
    assert "did not reach the target" in ran.stdout and "phase 1" in ran.stdout


def test_cli_train_rejects_a_bad_overhead_with_exit_2(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(training_spec()))
    ran = CliRunner().invoke(app, ["train", str(spec), "--max-overhead", "-1"])
    assert ran.exit_code == 2 and "max_overhead" in ran.output and "--max-overhead -1" in ran.output


def test_train_routes_validate_and_say_what_is_missing(api: TestClient) -> None:
    study_id = api.post("/v1/studies", json=training_spec()).json()["id"]
    missing = api.get(f"/v1/studies/{study_id}/training")
    assert missing.status_code == 409 and "POST /v1/studies" in missing.json()["detail"]
    assert api.post("/v1/studies/nope/train").status_code == 404
    bad = api.post(f"/v1/studies/{study_id}/train", json={"max_overhead": -1, "max_iterations": 0})
    assert bad.status_code == 422
    assert {tuple(e["loc"]) for e in bad.json()["detail"]} == {("body", "max_overhead"),
                                                               ("body", "max_iterations")}
    assert api.post(f"/v1/studies/{study_id}/train", json={"bogus": 1}).status_code == 422
    del api.headers["Authorization"]
    assert api.post(f"/v1/studies/{study_id}/train").status_code == 401
    api.headers["Authorization"] = "Bearer s3cret"
    started = api.post(f"/v1/studies/{study_id}/train", json={"max_iterations": 5000})
    assert started.status_code == 202 and started.json()["state"] == "pending"
    again = api.post(f"/v1/studies/{study_id}/train")
    assert again.status_code == 409 and "already has a training" in again.json()["detail"]
    shown = api.get(f"/v1/studies/{study_id}/training").json()
    assert shown["max_iterations"] == 5000 and shown["result"] is None and shown["segments"] == 0
    assert api.post(f"/v1/studies/{study_id}/cancel").status_code == 202  # pending: both end at once
    assert api.get(f"/v1/studies/{study_id}/training").json()["state"] == "cancelled"
    assert api.post(f"/v1/studies/{study_id}/cancel").status_code == 409
    refused = api.post(f"/v1/studies/{study_id}/train")
    assert refused.status_code == 409 and "cancelled" in refused.json()["detail"]


@pytest.mark.slow
def test_rest_train_round_trip(database_url: str, ray_address: str) -> None:
    settings = Settings(database_url=database_url, ray_address=ray_address, poll_seconds=0.2)
    with local_client(create_app(settings)) as client:
        study_id = client.post("/v1/studies", json=training_spec()).json()["id"]
        started = client.post(f"/v1/studies/{study_id}/train", json={"max_overhead": 0.2})
        assert started.status_code == 202
        deadline = time.monotonic() + 240
        while (training := client.get(f"/v1/studies/{study_id}/training").json())["state"] not in \
                TRAINING_TERMINAL_STATES and time.monotonic() < deadline:
            time.sleep(0.2)
        assert training["state"] == "done", training["error"]
        result, plan = training["result"], client.get(f"/v1/studies/{study_id}/plan").json()
        assert result["reached"] and training["segments"] >= 1 and training["max_overhead"] == 0.2
        assert result["phases"][0]["reason"] in {"the study's plan", "the study's warm-up"}
        check_overhead(training, plan, 0.2)
        timeline = training["timeline"]
        assert timeline["points"] and timeline["phases"][0]["start"] == 0
        assert timeline["phases"][-1]["end"] == pytest.approx(timeline["run_cluster_seconds"])
        db = Database(database_url)
        try:
            with db.read() as session:  # closed: an open read would block the schema's teardown
                kinds = {e.kind for e in study_store.events_after(session, study_id=study_id)}
        finally:
            db.dispose()
        assert {"training", "training_segment"} <= kinds


@pytest.mark.parametrize("stop_at", ["run", pytest.param("fork", marks=pytest.mark.slow)])
def test_a_stopped_training_resumes_from_its_last_checkpoint(
    stop_at: str, database_url: str, ray_address: str
) -> None:
    """In one process: stop after two run segments (or after the first fork of a re-plan, in the
    middle of its batch), then a fresh runner (nothing in Ray's object store for it) finishes the run
    from the database, re-running no committed segment."""
    db = Database(database_url)
    db.migrate()
    try:
        stop = threading.Event()
        seen = 0

        def after(result, role, planner) -> None:  # type: ignore[no-untyped-def]
            nonlocal seen
            seen += role == stop_at
            if seen == (2 if stop_at == "run" else 1):
                stop.set()

        first = TrainingRunner(db, ray_address, on_segment=after)
        target, overhead = (0.001, None) if stop_at == "run" else (0.0005, 0.2)
        study_id = first.submit(parse_spec(training_spec(target=target)), max_iterations=5000,
                                max_overhead=overhead)
        with pytest.raises(StudyCancelled, match="stopped; it will resume"):
            first.run(study_id, stop)
        before = segments(db, study_id)
        assert _training(db, study_id)["state"] == "running"
        last = [s for s in before if s[0].role == "run"][-1]
        result = TrainingRunner(db, ray_address).run(study_id)
        after_rows = segments(db, study_id)
        assert [row.id for row, _, _ in after_rows[: len(before)]] == [row.id for row, _, _ in before]
        new = [s for s in after_rows[len(before):] if s[0].role == "run"]
        assert new[0][1].start_iteration >= last[1].start_iteration  # nothing before the checkpoint
        if stop_at == "run":
            assert new[0][1].parent == last[0].key and new[0][1].start_iteration == last[2].end_iteration
        assert result.reached and _training(db, study_id)["state"] == "done"
    finally:
        db.dispose()


@pytest.mark.slow
@pytest.mark.parametrize("max_overhead", [0.05, 0.2, 0.5])
def test_re_planning_stays_within_the_overhead_budget(
    max_overhead: float, ray_address: str, tmp_path: Path
) -> None:
    """A run long enough to re-plan (the target ~1400 iterations out, re-plans from iteration 500):
    the tuning stays within what the planner guarantees, whatever the share."""
    db = Database(f"sqlite:///{tmp_path / 'ttc.db'}")
    db.migrate()
    try:
        runner = TrainingRunner(db, ray_address)
        study_id = runner.submit(parse_spec(training_spec(target=0.0005)), max_iterations=5000,
                                 max_overhead=max_overhead)
        result = runner.run(study_id)
        recorded = _training(db, study_id)
        assert result.reached and recorded["state"] == "done"
        check_overhead(recorded, recorded["plan"], max_overhead)
        forks = [s for s in segments(db, study_id) if s[0].role == "fork"]
        assert bool(forks) == (recorded["timeline"]["replan_cluster_seconds"] > 0)
        if max_overhead >= 0.2:
            assert forks  # the share leaves room for re-plans: the bound is exercised
    finally:
        db.dispose()


@pytest.mark.slow
def test_cli_train_on_a_server(ray_address: str, tmp_path: Path) -> None:
    from tests.service.service_helpers import ServiceProcess

    url = f"sqlite:///{tmp_path / 'ttc.db'}"
    service = ServiceProcess(url, ray_address, tmp_path / "service.log").start()
    try:
        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps(training_spec()))
        ran = CliRunner().invoke(app, ["train", str(spec), "--server", service.url, "--json"])
        assert ran.exit_code == 0, ran.output
        result = json.loads(ran.stdout)
        assert result["reached"] and result["phases"]
        short = CliRunner().invoke(app, ["train", str(spec), "--server", service.url,
                                         "--max-iterations", "150"])
        assert short.exit_code == 3 and "did not reach the target" in short.stdout
    finally:
        service.stop()


def _done_study(db: Database, ray_address: str) -> tuple[StudyRunner, str]:
    """A training spec's study, tuned to the end in this process."""
    studies = StudyRunner(db, ray_address)
    study_id = studies.submit(parse_spec(training_spec()))
    studies.run(study_id)
    return studies, study_id


def test_a_study_without_its_plan_s_state_cannot_be_trained(database_url: str, ray_address: str) -> None:
    """A done study whose probe states are gone (tuned before they were kept): the training fails at
    once and says what to do, instead of training from scratch."""
    from service.runners.training_runner import TrainingFailed

    db = Database(database_url)
    db.migrate()
    try:
        studies, study_id = _done_study(db, ray_address)
        with db.transaction() as session:
            assert len(measurement_store.state_keys(session, study_id=study_id)) == 1  # the plan's tip, kept
            measurement_store.prune_states(session, study_id=study_id, keep=set())
            study_store.create_training(session, study_id=study_id, max_iterations=5000)
        with pytest.raises(TrainingFailed, match="was not kept"):
            TrainingRunner(db, ray_address, studies).run(study_id)
        training = _training(db, study_id)
        assert training["state"] == "failed" and "ttc train SPEC" in training["error"]
        assert segments(db, study_id) == []
    finally:
        db.dispose()


def test_a_study_tuned_earlier_is_trained_from_its_plan_s_state(database_url: str, ray_address: str) -> None:
    """``POST /train`` on a done study: its search is rebuilt from the committed probes (nothing
    re-probed) and the run continues the plan's lineage tip from the state kept in the database."""
    db = Database(database_url)
    db.migrate()
    try:
        studies, study_id = _done_study(db, ray_address)
        with db.transaction() as session:
            (tip,) = measurement_store.state_keys(session, study_id=study_id)
            probes = len(measurement_store.list_probes(session, study_id=study_id))
            study_store.create_training(session, study_id=study_id, max_iterations=5000)
        result = TrainingRunner(db, ray_address, studies).run(study_id)
        first = segments(db, study_id)[0]
        assert result.reached and first[1].parent == tip
        with db.read() as session:
            assert len(measurement_store.list_probes(session, study_id=study_id)) == probes
    finally:
        db.dispose()


@pytest.mark.slow
def test_cancelling_a_running_training_stops_it_and_keeps_the_study_done(
    database_url: str, ray_address: str
) -> None:
    settings = Settings(database_url=database_url, ray_address=ray_address, poll_seconds=0.2)
    with local_client(create_app(settings)) as client:
        study_id = client.post("/v1/studies", json=training_spec(target=0.00005)).json()["id"]
        client.post(f"/v1/studies/{study_id}/train", json={"max_iterations": 50_000})
        deadline = time.monotonic() + 240
        while client.get(f"/v1/studies/{study_id}/training").json()["segments"] < 2:
            assert time.monotonic() < deadline, "no run segment within 240 s"
            time.sleep(0.1)
        assert client.post(f"/v1/studies/{study_id}/cancel").status_code == 202
        while (training := client.get(f"/v1/studies/{study_id}/training").json())["state"] == "running":
            assert time.monotonic() < deadline, "the training was not cancelled"
            time.sleep(0.1)
        assert training["state"] == "cancelled" and training["error"] == "cancelled on request"
        assert client.get(f"/v1/studies/{study_id}").json()["state"] == "done"
        assert client.post(f"/v1/studies/{study_id}/cancel").status_code == 409
        segments_then = training["segments"]
        time.sleep(1.0)
        assert client.get(f"/v1/studies/{study_id}/training").json()["segments"] == segments_then
        again = client.post(f"/v1/studies/{study_id}/train", json={"max_iterations": 600})
        assert again.status_code == 202  # a cancelled training may start again: it resumes
        while (training := client.get(f"/v1/studies/{study_id}/training").json())["state"] not in \
                TRAINING_TERMINAL_STATES:
            assert time.monotonic() < deadline + 120, "the restarted training did not end"
            time.sleep(0.2)
        assert training["state"] == "unreachable" and training["segments"] >= segments_then, training["error"]
