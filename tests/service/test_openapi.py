"""The OpenAPI document says everything a route can answer (issue 15, found 6): every status,
the bearer scheme, typed plan/trial/predict bodies, a workload of exactly one of name/factory,
examples that the service accepts; and ``/docs`` works offline (found 7)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.api.schemas import PredictRequest

MUTATING = ("/v1/studies", "/v1/studies/{study_id}/cancel", "/v1/predict")
BY_ID = ("/v1/studies/{study_id}", "/v1/studies/{study_id}/trials", "/v1/studies/{study_id}/plan",
         "/v1/studies/{study_id}/events", "/v1/studies/{study_id}/cancel")


@pytest.fixture
def document(api: TestClient) -> dict[str, Any]:
    return api.get("/openapi.json").json()


def _operations(document: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    paths = document["paths"].items()
    return {(method.upper(), path): op for path, ops in paths for method, op in ops.items()}


def test_every_status_a_route_returns_is_documented(document: dict[str, Any]) -> None:
    operations = _operations(document)
    for path in MUTATING:
        responses = operations["POST", path]["responses"]
        assert {"401", "413", "422"} <= set(responses), path
        assert operations["POST", path]["security"] == [{"HTTPBearer": []}]
    for path in BY_ID:
        method = "POST" if path.endswith("cancel") else "GET"
        assert {"404", "422"} <= set(operations[method, path]["responses"]), path
    assert "409" in operations["GET", "/v1/studies/{study_id}/plan"]["responses"]
    assert "409" in operations["POST", "/v1/studies/{study_id}/cancel"]["responses"]
    assert document["components"]["securitySchemes"]["HTTPBearer"] == {
        "type": "http", "scheme": "bearer", "description": "TTC_API_TOKEN, when the service has one"}


def test_plan_trial_and_predict_bodies_are_typed(document: dict[str, Any]) -> None:
    operations = _operations(document)
    schemas = document["components"]["schemas"]

    def ok_schema(method: str, path: str) -> dict[str, Any]:
        responses = operations[method, path]["responses"]
        success = next(r for code, r in responses.items() if code.startswith("2"))
        return success["content"]["application/json"]["schema"]

    assert ok_schema("GET", "/v1/studies/{study_id}/plan") == {"$ref": "#/components/schemas/PlanPublic"}
    assert set(schemas["PlanPublic"]["required"]) >= {"study_id", "config", "predicted", "baseline", "probes"}
    assert schemas["TrialPublic"]["properties"]["config"] == {"$ref": "#/components/schemas/ConfigSpec"}
    assert ok_schema("POST", "/v1/predict")["items"] == {"$ref": "#/components/schemas/PredictResult"}
    assert schemas["PredictResult"]["properties"]["probe"] == {"$ref": "#/components/schemas/ProbeSummary"}


def test_the_workload_schema_takes_exactly_one_of_name_and_factory(
    api: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    import jsonschema

    monkeypatch.setenv("TTC_WORKLOAD_MODULES", "my.pkg")
    document = api.get("/openapi.json").text
    assert "my.pkg" not in document  # the allowlist is the service's business (issue 36): 422 tells
    workload = json.loads(document)["components"]["schemas"]["WorkloadSpec"]
    valid = [{"name": "digits-mlp"}, {"factory": "my.pkg:make"}, {"name": None, "factory": "my.pkg:make"}]
    invalid = [{}, {"name": None, "factory": None}, {"name": "digits-mlp", "factory": "my.pkg:make"},
               {"name": "no-such-workload"}, {"factory": "not a factory"}]
    for value in valid:
        jsonschema.validate(value, workload)
    for value in invalid:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(value, workload)


def test_examples_are_valid_specs_the_service_accepts(api: TestClient, document: dict[str, Any]) -> None:
    body = _operations(document)["POST", "/v1/studies"]["requestBody"]["content"]["application/json"]
    assert len(body["examples"]) >= 3
    for name, example in body["examples"].items():
        response = api.post("/v1/studies", json=example["value"])
        assert response.status_code == 202, (name, response.text)
    predict = _operations(document)["POST", "/v1/predict"]["requestBody"]["content"]["application/json"]
    for example in predict["examples"].values():
        PredictRequest.model_validate(example["value"])


def test_docs_are_served_without_the_internet(api: TestClient) -> None:
    page = api.get("/docs")
    assert page.status_code == 200
    assert not re.findall(r"https?://", page.text), "the docs page must not load anything from another host"
    assets = re.findall(r"""(?:src|href)=['"](/[^'"]+)['"]""", page.text)
    assert len(assets) >= 3
    for asset in assets:
        assert api.get(asset).status_code == 200, asset
    assert api.get("/docs/assets/LICENSE").status_code == 404
