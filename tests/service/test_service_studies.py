"""Studies run by the service's scheduler on the session's Ray, on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import optuna

from service.app import create_app
from service.db.optuna_mirror import optuna_study_name
from service.settings import Settings
from tests.service.service_helpers import local_client, tiny_spec


def _events(text: str) -> list[tuple[str, dict]]:
    frames = [f.splitlines() for f in text.split("\n\n") if f and not f.startswith(":")]
    return [(f[1].removeprefix("event: "), json.loads(f[2].removeprefix("data: "))) for f in frames]


def test_a_study_runs_to_its_plan_and_optuna_sees_its_trials(database_url: str, ray_address: str) -> None:
    settings = Settings(database_url=database_url, ray_address=ray_address, poll_seconds=0.2)
    with local_client(create_app(settings)) as client:
        study_id = client.post("/v1/studies", json=tiny_spec()).json()["id"]
        events = _events(client.get(f"/v1/studies/{study_id}/events").text)  # streams until the end
        states = [data["state"] for kind, data in events if kind == "state"]
        assert states == ["pending", "running", "done"]
        plan = client.get(f"/v1/studies/{study_id}/plan").json()
        trials = client.get(f"/v1/studies/{study_id}/trials").json()
        assert plan["study_id"] == study_id and plan["probes"]["count"] == trials["count"] == 3
        assert sum(kind == "probe_finished" for kind, _ in events) == 3
        assert 'ttc_probes_total{state="complete"}' in client.get("/metrics").text

    study = optuna.load_study(study_name=optuna_study_name(study_id), storage=database_url)
    assert len(study.trials) == 3
    assert {t.user_attrs["config"]["lr"] for t in study.trials} == {c["config"]["lr"] for c in trials["data"]}
    assert all(t.state.is_finished() for t in study.trials)
