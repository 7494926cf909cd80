"""``ttc run --server``: runs measured here are recorded by the service (POST /v1/runs)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from predictor.types import Config, Plan, Prediction
from service.app import create_app
from service.cli import main as cli
from service.client import runs as client_runs
from service.db import Database, study_store
from service.runners import run_configs
from service.settings import Settings
from tests.service.service_helpers import LOCAL_URL, free_port, local_client

SPEC = Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml"
CONFIG = Config("sync", 2, 2, batch_size=32, lr=0.1)
MEASURED = {"label": "plan", "config": CONFIG.to_dict(), "reached": True, "ttc_seconds": 0.5,
            "iterations": 120, "final_loss": 0.002, "seconds_per_iteration": 0.004, "wall_seconds": 3.0,
            "predicted_ttc_seconds": 0.45}


@pytest.fixture
def study_id(db: Database) -> str:
    with db.transaction() as session:
        return study_store.create_study(session, spec={"workload": {"name": "digits-mlp"}}).id


def test_a_run_is_recorded_linked_to_its_study_or_unlinked(database_url: str, study_id: str) -> None:
    with local_client(create_app(Settings(database_url=database_url), run_studies=False)) as client:
        linked = client.post("/v1/runs", json={"study_id": study_id, "result": MEASURED})
        unlinked = client.post("/v1/runs", json={"study_id": "elsewhere", "result": MEASURED})
        runs = client.get(f"/dashboard/api/studies/{study_id}").json()["runs"]
    assert linked.status_code == 201 and linked.json()["study_id"] == study_id
    assert unlinked.status_code == 201 and unlinked.json()["study_id"] is None
    assert runs == [{"label": "plan", "key": CONFIG.key(), "predicted_ttc": 0.45, "measured_ttc": 0.5,
                     "reached": True}]


@pytest.mark.parametrize(("change", "field", "words"), [
    ({"config": {**CONFIG.to_dict(), "strategy": "nope"}}, "strategy", "Input should be 'sync'"),
    ({"config": {"nodes": 1}}, "strategy", "Field required"),
    ({"config": {**CONFIG.to_dict(), "strategy": "async_groups", "groups": 3}}, "config",
     "groups=3 must divide the 4 devices"),
    ({"label": "plan\u0000"}, "label", "should match pattern"),
    ({"iterations": -1}, "iterations", "greater than or equal to 0"),
    ({"surprise": 1}, "surprise", "Extra inputs are not permitted"),
])
def test_a_bad_run_is_refused_naming_the_field(database_url: str, change: dict, field: str,
                                               words: str) -> None:
    with local_client(create_app(Settings(database_url=database_url), run_studies=False)) as client:
        response = client.post("/v1/runs", json={"result": {**MEASURED, **change}})
    assert response.status_code == 422
    errors = response.json()["detail"]
    assert any(error["loc"][-1] == field and words in error["msg"] for error in errors), errors


def test_recording_needs_the_token_when_one_is_set(database_url: str) -> None:
    settings = Settings(database_url=database_url, api_token="s3cret")
    with local_client(create_app(settings, run_studies=False)) as client:
        assert client.post("/v1/runs", json={"result": MEASURED}).status_code == 401
        headers = {"Authorization": "Bearer s3cret"}
        assert client.post("/v1/runs", json={"result": MEASURED}, headers=headers).status_code == 201


def test_ttc_run_server_records_on_the_service_not_locally(
    database_url: str, study_id: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI trains (stubbed here) and posts through the real app; its own database stays untouched."""
    service = create_app(Settings(database_url=database_url, api_token="s3cret"), run_studies=False)
    local = tmp_path / "local.db"
    monkeypatch.setenv("TTC_DATABASE_URL", f"sqlite:///{local}")
    monkeypatch.setenv("TTC_API_TOKEN", "s3cret")
    monkeypatch.setattr(run_configs, "execute_configs", lambda spec, targets, *rest: [
        {**MEASURED, "label": t.label, "config": t.config.to_dict()} for t in targets])
    monkeypatch.setattr(client_runs, "_client", lambda server, token: TestClient(
        service, base_url=server, headers={"Authorization": f"Bearer {token}"} if token else {}))
    plan = Plan(study_id, CONFIG, Prediction(0.45, 0.3, 0.6, 0.004, 112.0), CONFIG, 0.45, 3, 0.2)
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan.to_dict()))
    with local_client(service) as client:
        result = CliRunner().invoke(cli.app, ["run", str(SPEC), "--config", str(plan_path), "--json",
                                              "--server", LOCAL_URL])
        assert result.exit_code == 0, result.output
        runs = client.get(f"/dashboard/api/studies/{study_id}").json()["runs"]
    assert json.loads(result.stdout)["ttc_seconds"] == 0.5
    assert runs == [{"label": "plan", "key": CONFIG.key(), "predicted_ttc": 0.45, "measured_ttc": 0.5,
                     "reached": True}]
    assert not local.exists()


def test_an_unreachable_service_is_reported_before_training(monkeypatch: pytest.MonkeyPatch) -> None:
    def train(*args: object) -> None:
        raise AssertionError("trained although the service cannot record the result")

    monkeypatch.setattr(run_configs, "execute_configs", train)
    result = CliRunner().invoke(cli.app, ["run", str(SPEC), "--config", json.dumps(CONFIG.to_dict()),
                                          "--server", f"http://127.0.0.1:{free_port()}"])
    assert result.exit_code == cli.EXIT_SERVICE, result.output
    assert "cannot reach" in result.stderr
