"""Issue 36, found 4–6 and 11: inputs that passed validation and then failed (or answered 500) are
a 4xx naming the field; a failed predict probe is an error with its reason; small strictness."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from service.api import predict as predict_route
from service.api.studies import check_limits
from service.cli import main as cli
from service.settings import Settings
from tests.service.service_helpers import spec_with, tiny_spec
from worker.errors import cluster_fault
from worker.spec import MAX_PROBES, Spec, parse_spec

JSON = {"Content-Type": "application/json"}


SUBNORMAL = 5e-324
VALIDATED_THEN_FAILED = [  # (field path, value): each failed inside the study before (issue 36, found 4)
    (("search", "learning_rates"), [1e-7]),  # outside Optuna's lr distribution
    (("search", "momenta"), [0.9995]),  # outside Optuna's momentum distribution
    (("cluster", "node_speed"), [SUBNORMAL]),  # non-finite seconds
    (("cluster", "network", "inter_gbps"), SUBNORMAL),
    (("cluster", "network", "intra_gbps"), SUBNORMAL),
    (("budget", "max_cluster_seconds"), SUBNORMAL),  # no probe affordable: "0 probes"
    (("budget", "deadline_seconds"), SUBNORMAL),
    (("budget", "max_probes"), MAX_PROBES + 1),  # schema-valid up to 1000, over the service's limit
]


@pytest.mark.parametrize(("path", "value"), VALIDATED_THEN_FAILED)
def test_specs_that_cannot_run_are_422_naming_the_field(api: TestClient, path: tuple[str, ...],
                                                        value: object) -> None:
    response = api.post("/v1/studies", json=spec_with(path, value))
    assert response.status_code == 422, response.text
    named = [".".join(str(p) for p in e["loc"]) + " " + e["msg"] for e in response.json()["detail"]]
    assert any(path[-1] in line for line in named), named


@pytest.mark.parametrize(("path", "value"), VALIDATED_THEN_FAILED)
def test_ttc_tune_exits_2_naming_the_field(tmp_path, path: tuple[str, ...], value: object) -> None:  # type: ignore[no-untyped-def]
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(spec_with(path, value)))  # 5.0e-324: YAML reads 5e-324 as a string
    result = CliRunner().invoke(cli.app, ["tune", str(spec)])
    assert result.exit_code == 2, result.output
    assert path[-1] in result.output


def test_negative_zero_is_zero() -> None:
    """``jitter: -0.0`` passed ``ge=0`` and made numpy's normal refuse its scale in every probe."""
    spec = parse_spec(spec_with(("cluster", "jitter"), -0.0))
    assert str(spec.cluster.jitter) == "0.0"
    assert str(parse_spec(spec_with(("search", "momenta"), [-0.0])).search.momenta[0]) == "0.0"


def test_the_smallest_accepted_rates_and_momentum_make_optuna_trials() -> None:
    import optuna

    from predictor.trial_space import record_trial
    from predictor.types import Config, ProbeRequest

    spec = parse_spec(spec_with(("search", "learning_rates"), [1e-6]))
    space = spec.search_space()
    study = optuna.create_study()
    for lr, momentum in [(1e-6, 0.999), (1e-6 / 3, 0.0), (100 * 10, 0.5)]:  # re-plan's lr/3, LARS' ×10
        config = Config("sync", 1, 2, batch_size=32, lr=lr, momentum=momentum)
        trial = record_trial(study, space, ProbeRequest(config, 1.0, 10))
        assert trial.params["lr"] == lr


def test_max_cluster_seconds_must_pay_for_the_first_probe() -> None:
    spec = tiny_spec(max_cluster_seconds=0.5)  # the first probe: probe_seconds 0.5 on the one node
    assert parse_spec(spec).budget.max_cluster_seconds == 0.5
    with pytest.raises(ValueError, match="max_cluster_seconds"):
        parse_spec(tiny_spec(max_cluster_seconds=0.49))


def test_the_schema_maximum_of_max_probes_is_the_service_limit(api: TestClient) -> None:
    budget = api.get("/openapi.json").json()["components"]["schemas"]["BudgetSpec"]
    assert budget["properties"]["max_probes"]["maximum"] == MAX_PROBES == Settings().max_study_probes
    with pytest.raises(ValueError):
        Settings(max_study_probes=MAX_PROBES + 1)  # a service may lower the limit, never pass the schema
    check_limits(Spec.model_validate(tiny_spec(max_probes=MAX_PROBES)), Settings())


def test_groups_that_do_not_divide_the_devices_are_422_naming_groups(api: TestClient) -> None:
    config = {"strategy": "async_groups", "nodes": 1, "devices_per_node": 1, "groups": 65535}
    response = api.post("/v1/runs", json={"result": {"config": config, "reached": False, "iterations": 1}})
    assert response.status_code == 422
    assert "groups=65535" in response.text


@pytest.mark.parametrize("path", ["/v1/studies", "/v1/predict", "/v1/runs"])
def test_a_lone_surrogate_anywhere_is_a_4xx(api: TestClient, path: str) -> None:
    """``"\\ud800"`` is valid JSON and no UTF-8: the 422 handler's echo of it was a 500."""
    config = {"strategy": "sync", "nodes": 1, "devices_per_node": 2, "options": {"k": "X"}}
    body = {"/v1/studies": tiny_spec(), "/v1/predict": {"spec": tiny_spec(), "configs": [config]},
            "/v1/runs": {"result": {"config": config, "reached": False, "iterations": 1, "error": "X"}}}[path]
    text = json.dumps(body)
    replacements = [('"digits-mlp"', '"\\ud800"'), ('"X"', '"\\udfff"'), ('"workload"', '"\\ud800"')]
    for replaced in {text.replace(old, new) for old, new in replacements} - {text}:
        response = api.post(path, content=replaced.encode(), headers=JSON)
        assert 400 <= response.status_code < 500, (path, response.status_code, response.text)


def _prediction(error: str | None) -> dict[str, Any]:
    return {"config": {"strategy": "sync", "nodes": 1, "devices_per_node": 2},
            "predicted": None, "confidence": {"level": "none", "reason": "the probe failed"},
            "probe": {"iterations": 0, "seconds": 0.0, "final_loss": None, "diverged": False, "error": error,
                      "cluster_fault": bool(error) and cluster_fault(error)}}


def test_ray_failures_are_the_clusters_fault_and_a_probes_own_errors_are_not() -> None:
    assert cluster_fault("WorkerCrashedError: The worker died unexpectedly")
    assert cluster_fault("NodeDiedError: node 1 died")
    assert not cluster_fault("ValueError: non-finite seconds")
    assert not cluster_fault("RayTaskError: an unpicklable cause")  # the probe's code raised it


@pytest.mark.parametrize(("error", "status"), [
    ("ValueError: the workload cannot take a batch of 65536", 422),
    ("WorkerCrashedError: The worker died unexpectedly while executing this task.", 503),
])
def test_predict_reports_a_failed_probe_with_its_reason(
    api: TestClient, monkeypatch: pytest.MonkeyPatch, error: str, status: int
) -> None:
    """It answered 200 with 0 iterations and no word of the failure (issue 36, found 6)."""
    monkeypatch.setattr(predict_route, "predict_config",
                        lambda spec, configs, address: [_prediction(None), _prediction(error)])
    config = {"strategy": "sync", "nodes": 1, "devices_per_node": 2}
    response = api.post("/v1/predict", json={"spec": tiny_spec(), "configs": [config, config]})
    assert response.status_code == status, response.text
    assert error.split(":")[1].strip() in response.text and "configs" in response.text


def test_the_training_body_is_strict(api: TestClient) -> None:
    study_id = api.post("/v1/studies", json=tiny_spec()).json()["id"]
    for body in ({"max_iterations": True}, {"max_iterations": "5"}, {"max_overhead": "0.1"}):
        response = api.post(f"/v1/studies/{study_id}/train", json=body)
        assert response.status_code == 422, (body, response.text)
    accepted = api.post(f"/v1/studies/{study_id}/train", json={"max_iterations": 5, "max_overhead": 1})
    assert accepted.status_code == 202, accepted.text


@pytest.mark.parametrize("query", ["offset=1_0", "limit=1_0", "offset=%2010", "offset=+1", "offset=0x1"])
def test_query_integers_are_plain_digits(api: TestClient, query: str) -> None:
    assert api.get(f"/v1/studies?{query}").status_code == 422
    assert api.get("/v1/studies?offset=10&limit=5").status_code == 200


@pytest.mark.parametrize("path", ["/", "/v1/studies", "/healthz"])
def test_head_answers_as_get_without_a_body(api: TestClient, path: str) -> None:
    got, head = api.get(path), api.head(path)
    assert head.status_code == got.status_code == 200
    assert head.content == b""
    assert head.headers["content-type"] == got.headers["content-type"]


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("DELETE", "/v1/studies", "GET, POST, HEAD"),  # two routes on one path: FastAPI named one's
    ("PUT", "/v1/studies/abc", "GET, HEAD"),
    ("GET", "/v1/studies/abc/cancel", "POST"),
])
def test_a_405_allows_every_method_of_the_path(api: TestClient, method: str, path: str, allow: str) -> None:
    response = api.request(method, path)
    assert response.status_code == 405
    assert response.headers["allow"] == allow
