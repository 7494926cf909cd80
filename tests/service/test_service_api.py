"""The REST API without Ray: routes, validation, auth, limits, SSE, metrics, health."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from predictor.types import Config, ProbeResult
from service.app import create_app
from service.db import measurement_store
from service.settings import Settings
from tests.service.service_helpers import local_client, tiny_spec


@pytest.fixture
def client(database_url: str) -> Iterator[TestClient]:
    settings = Settings(database_url=database_url, api_token="s3cret", max_cluster_devices=64)
    with local_client(create_app(settings, run_studies=False)) as test_client:
        test_client.headers["Authorization"] = "Bearer s3cret"
        yield test_client


def test_submit_list_show_and_cancel_a_study(client: TestClient) -> None:
    created = client.post("/v1/studies", json=tiny_spec())
    assert created.status_code == 202
    study_id = created.json()["id"]
    assert client.get("/v1/studies").json()["data"][0]["id"] == study_id
    shown = client.get(f"/v1/studies/{study_id}").json()
    budget = shown["spec"]["budget"]["max_probes"]
    assert (shown["state"], shown["workload"], budget) == ("pending", "digits-mlp", 3)
    assert client.get(f"/v1/studies/{study_id}/trials").json() == {"data": [], "count": 0}
    assert client.get(f"/v1/studies/{study_id}/plan").status_code == 409
    assert client.post(f"/v1/studies/{study_id}/cancel").json()["state"] == "cancelled"
    assert client.get("/v1/studies", params={"state": "cancelled"}).json()["count"] == 1


def test_a_study_shows_its_probe_counts_by_state(client: TestClient) -> None:
    study_id = client.post("/v1/studies", json=tiny_spec()).json()["id"]
    db = client.app.state.db
    with db.transaction() as session:
        for lr, diverged in ((0.1, False), (0.2, False), (9.0, True), (0.3, None)):
            config = Config("sync", 1, 2, batch_size=16, lr=lr)
            probe = measurement_store.start_probe(session, study_id=study_id, config=config)
            if diverged is not None:
                result = ProbeResult(config, 10, 0.1, [(10, 0.1, 0.5)], diverged=diverged)
                measurement_store.finish_probe(session, probe_id=probe.id, result=result, predicted_ttc=None)
    shown = client.get(f"/v1/studies/{study_id}").json()
    assert shown["probes"] == {"complete": 2, "diverged": 1, "running": 1}
    assert shown["state"] == "pending" and shown["spec"]["budget"]["max_probes"] == 3


def test_unknown_ids_are_404(client: TestClient) -> None:
    for path in ("", "/trials", "/plan", "/events"):
        assert client.get(f"/v1/studies/nope{path}").status_code == 404
    assert client.post("/v1/studies/nope/cancel").status_code == 404


def test_mutating_routes_need_the_token(client: TestClient) -> None:
    del client.headers["Authorization"]
    assert client.post("/v1/studies", json=tiny_spec()).status_code == 401
    wrong = client.post("/v1/studies", json=tiny_spec(), headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert client.get("/v1/studies").status_code == 200


def test_bad_specs_get_field_level_422(client: TestClient) -> None:
    spec = tiny_spec()
    spec["workload"] = {"factory": "os:system"}
    spec["cluster"]["nodes"] = 0
    response = client.post("/v1/studies", json=spec)
    assert response.status_code == 422
    locations = {tuple(e["loc"]) for e in response.json()["detail"]}
    assert {("body", "workload"), ("body", "cluster", "nodes")} <= locations


def test_service_limits_are_422_and_oversized_bodies_413(client: TestClient) -> None:
    spec = tiny_spec()
    spec["cluster"].update(nodes=16, devices_per_node=8)
    response = client.post("/v1/studies", json=spec)
    assert response.status_code == 422
    assert "exceeds this service's limit of 64 devices" in response.json()["detail"][0]["msg"]
    huge = client.post("/v1/studies", content=b"x" * 100_000, headers={"Content-Type": "application/json"})
    assert huge.status_code == 413


def test_event_stream_replays_from_any_id(client: TestClient) -> None:
    study_id = client.post("/v1/studies", json=tiny_spec()).json()["id"]
    client.post(f"/v1/studies/{study_id}/cancel")
    stream = client.get(f"/v1/studies/{study_id}/events")  # ends: the study is cancelled
    assert stream.headers["content-type"].startswith("text/event-stream")
    frames = [f for f in stream.text.split("\n\n") if f]
    assert [f.splitlines()[1] for f in frames] == ["event: state", "event: state"]
    first_id = int(frames[0].splitlines()[0].removeprefix("id: "))
    rest = client.get(f"/v1/studies/{study_id}/events", headers={"Last-Event-ID": str(first_id)}).text
    assert '"cancelled"' in rest and '"pending"' not in rest


def test_health_metrics_and_docs(client: TestClient) -> None:
    client.post("/v1/studies", json=tiny_spec())
    health = client.get("/healthz").json()
    assert (health["status"], health["database"]) == ("ok", "ok")
    metrics = client.get("/metrics").text
    assert 'ttc_studies{state="pending"} 1.0' in metrics
    assert 'ttc_http_request_seconds_count{method="POST",route="/v1/studies",status="202"}' in metrics
    assert "/v1/studies/{study_id}/events" in client.get("/openapi.json").json()["paths"]
    assert client.get("/docs").status_code == 200


def test_predict_gives_each_config_its_forecast_and_confidence(api: TestClient, ray_address: str) -> None:
    """A short probe's forecast is given whatever its width, with the plan's confidence rules
    beside it (issues 11 §4, 34)."""
    configs = [{"strategy": "sync", "nodes": 1, "devices_per_node": d, "lr": 0.1} for d in (1, 2)]
    response = api.post("/v1/predict", json={"spec": tiny_spec(), "configs": configs})
    assert response.status_code == 200, response.text
    for result in response.json():
        confidence, predicted = result["confidence"], result["predicted"]
        assert confidence["level"] in ("none", "low", "medium", "high") and confidence["reason"]
        assert predicted["ttc_p50"] is not None and predicted["ttc_p10"] <= predicted["ttc_p50"], result
        assert set(predicted["sources"]) == {"seed", "shape", "hardware"}
