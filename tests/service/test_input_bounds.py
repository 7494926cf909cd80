"""Every bad input is a 4xx naming the field, on SQLite and PostgreSQL (issue 15, found 2–5, 7):
non-finite and overflowing numbers, unbounded query parameters and headers, NUL bytes, the
per-probe resource guardrails, and cancel of a finished study."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient

from tests.service.service_helpers import spec_with, tiny_spec

JSON = {"Content-Type": "application/json"}


def _post_raw(api: TestClient, path: str, text: str):  # type: ignore[no-untyped-def]
    """Python's json writes NaN/Infinity as JavaScript does; a client may send them verbatim."""
    return api.post(path, content=text.encode(), headers=JSON)


@pytest.mark.parametrize(("path", "value"), [
    (("target", "value"), float("nan")),
    (("target", "value"), float("inf")),
    (("search", "learning_rates"), [0.1, float("nan")]),
    (("cluster", "network", "latency_us"), float("inf")),
    (("cluster", "network", "inter_gbps"), float("-inf")),
    (("budget", "probe_seconds"), float("inf")),
])
def test_non_finite_numbers_are_422_naming_the_field(api: TestClient, path: tuple[str, ...], value) -> None:  # type: ignore[no-untyped-def]
    response = _post_raw(api, "/v1/studies", json.dumps(spec_with(path, value)))
    assert response.status_code == 422, response.text
    where = [tuple(str(p) for p in e["loc"][1:len(path) + 1]) for e in response.json()["detail"]]
    assert path in where
    assert api.get("/v1/studies").json()["count"] == 0


def test_an_overflowing_literal_is_infinity_and_422(api: TestClient) -> None:
    spec = tiny_spec()
    spec["target"]["value"] = 123.25  # a marker that occurs once in the JSON text
    text = json.dumps(spec).replace("123.25", "1e400")
    assert "1e400" in text
    response = _post_raw(api, "/v1/studies", text)
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "target", "value"]
    assert response.json()["detail"][0]["input"] == "Infinity"


@pytest.mark.parametrize("seed", [2**80, 2**32, -1])
def test_seeds_are_bounded(api: TestClient, seed: int) -> None:
    response = api.post("/v1/studies", json={**tiny_spec(), "seed": seed})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "seed"]


def test_predict_configs_are_bounded_and_finite(api: TestClient) -> None:
    config = {"strategy": "sync", "nodes": 1, "devices_per_node": 2, "lr": float("nan")}
    response = _post_raw(api, "/v1/predict", json.dumps({"spec": tiny_spec(), "configs": [config]}))
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "configs", 0, "lr"]
    config.update(lr=0.1, batch_size=2**70)
    response = api.post("/v1/predict", json={"spec": tiny_spec(), "configs": [config]})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["body", "configs", 0, "batch_size"]


@pytest.mark.parametrize(("path", "params", "headers"), [
    ("/v1/studies", {"offset": str(2**63)}, {}),
    ("/v1/studies", {"offset": "-1"}, {}),
    ("/v1/studies/{id}/events", {"after": str(2**63)}, {}),
    ("/v1/studies/{id}/events", {}, {"Last-Event-ID": str(2**70)}),
    ("/v1/studies/{id}/events", {}, {"Last-Event-ID": "-3"}),
])
def test_integer_parameters_and_headers_are_bounded(api: TestClient, path: str, params: dict,
                                                    headers: dict) -> None:
    study_id = api.post("/v1/studies", json=tiny_spec()).json()["id"]
    response = api.get(path.replace("{id}", study_id), params=params, headers=headers)
    assert response.status_code == 422, response.text


@pytest.mark.parametrize("path", [
    "/v1/studies/abc%00def", "/v1/studies/abc%00def/events", "/v1/studies/abc%00def/trials",
    "/v1/studies/abc%00def/plan", "/studies/abc%00def", "/dashboard/api/studies/abc%00def",
])
def test_nul_in_a_study_id_is_a_4xx(api: TestClient, path: str) -> None:
    assert api.get(path).status_code in (404, 422)
    assert api.post("/v1/studies/abc%00def/cancel").status_code in (404, 422)


def test_nul_in_a_filter_or_an_asset_path_is_a_4xx(api: TestClient) -> None:
    assert api.get("/v1/studies", params={"state": "a\x00b"}).status_code == 422
    assert api.get("/v1/studies", params={"state": "nonsense"}).status_code == 422
    assert api.get("/dashboard/static/style.css%00.js").status_code == 404
    assert api.get("/dashboard/static/style.css").status_code == 200


@pytest.mark.parametrize(("workload", "side", "batch", "expected"), [
    ("digits-mlp", 4, 65536,
     ["65536 samples per device step exceeds the 1438 training samples of workload digits-mlp"]),
    ("charlm", 8, 64, ["4096 samples per step", "over this service's limit of 1,024 MiB"]),
])
def test_a_batch_a_probe_cannot_afford_is_422_with_the_numbers(
    api: TestClient, workload: str, side: int, batch: int, expected: list[str]
) -> None:
    spec = tiny_spec()
    spec["workload"] = {"name": workload}
    spec["cluster"].update(nodes=side, devices_per_node=side)
    spec["search"]["batch_sizes"] = [8, batch]
    response = api.post("/v1/studies", json=spec)
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "search", "batch_sizes", 1]
    for phrase in expected:
        assert phrase in error["msg"]


def test_cancel_of_a_finished_study_is_409(api: TestClient) -> None:
    study_id = api.post("/v1/studies", json=tiny_spec()).json()["id"]
    assert api.post(f"/v1/studies/{study_id}/cancel").status_code == 202
    again = api.post(f"/v1/studies/{study_id}/cancel")
    assert again.status_code == 409
    assert "already finished: cancelled" in again.json()["detail"]


def test_a_misspelt_field_is_422_naming_the_field_meant(api: TestClient) -> None:
    spec = spec_with(("search", "learning_rate"), [0.1])
    response = api.post("/v1/studies", json=spec)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["body", "search", "learning_rate"]
    assert error["msg"].endswith("did you mean 'learning_rates'?")
