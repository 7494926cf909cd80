"""deploy/: each manifest checked against its published schema, and the wiring the two-node test runs.

The KubeRay ``RayCluster`` against the CRD's own OpenAPI schema (vendored in ``data/``), made
strict the way ``kubectl apply --validate=strict`` is: a field the schema does not name is an
error, not silently pruned. The core kinds (Deployment, Service, ConfigMap) through
kubernetes-validate's schemas of the latest Kubernetes release it knows.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from jsonschema import Draft7Validator

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
CRD_SCHEMA = Path(__file__).resolve().parent / "data" / "ray.io_rayclusters.v1.schema.json"


def documents(name: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all((DEPLOY / name).read_text()) if doc]


def strict(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy in which an object with named properties admits no others (unless it says so)."""
    schema = copy.deepcopy(schema)
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if ("properties" in node and "additionalProperties" not in node
                    and not node.get("x-kubernetes-preserve-unknown-fields")):
                node["additionalProperties"] = False
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return schema


def crd_errors(document: dict[str, Any]) -> list[str]:
    validator = Draft7Validator(strict(json.loads(CRD_SCHEMA.read_text())))
    return sorted(f"{'.'.join(str(p) for p in e.absolute_path)}: {e.message}"
                  for e in validator.iter_errors(document))


def test_the_raycluster_matches_kuberays_crd_schema() -> None:
    (cluster,) = documents("kubernetes/raycluster.yaml")
    assert (cluster["apiVersion"], cluster["kind"]) == ("ray.io/v1", "RayCluster")
    assert crd_errors(cluster) == []


def test_the_crd_check_catches_a_misspelled_field_and_a_wrong_type() -> None:
    (cluster,) = documents("kubernetes/raycluster.yaml")
    cluster["spec"]["headGroupSpec"]["rayStartParam"] = cluster["spec"]["headGroupSpec"].pop("rayStartParams")
    cluster["spec"]["workerGroupSpecs"][0]["replicas"] = "four"
    errors = crd_errors(cluster)
    assert any(e.startswith("spec.headGroupSpec:") and "'rayStartParam' was unexpected" in e for e in errors)
    assert any(e.startswith("spec.workerGroupSpecs.0.replicas:") for e in errors), errors


@pytest.mark.parametrize("name", ["kubernetes/service.yaml", "kubernetes/settings.yaml"])
def test_the_core_manifests_are_valid_kubernetes(name: str) -> None:
    for document in documents(name):
        kubernetes_validate.validate(document, kubernetes_validate.latest_version(), strict=True)


def test_every_ray_node_and_the_service_read_the_settings_and_the_ray_token() -> None:
    (settings,) = documents("kubernetes/settings.yaml")
    (cluster,) = documents("kubernetes/raycluster.yaml")
    deployment = next(d for d in documents("kubernetes/service.yaml") if d["kind"] == "Deployment")
    assert "TTC_WORKLOAD_MODULES" in settings["data"]
    templates = [cluster["spec"]["headGroupSpec"]["template"]]
    templates += [group["template"] for group in cluster["spec"]["workerGroupSpecs"]]
    templates.append(deployment["spec"]["template"])
    for template in templates:
        for container in template["spec"]["containers"]:
            assert {"configMapRef": {"name": settings["metadata"]["name"]}} in container["envFrom"], container
    env = {e["name"]: e for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["RAY_ADDRESS"]["value"].startswith("ray://")
    assert cluster["spec"]["authOptions"] == {"mode": "token"}
    # KubeRay keeps the token in a Secret named after the cluster, key auth_token
    assert env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": cluster["metadata"]["name"],
                                                                   "key": "auth_token"}


def test_compose_reaches_ray_through_ray_client_with_one_token_and_allowlist() -> None:
    services = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    address = services["ttc"]["environment"]["RAY_ADDRESS"]
    client_port = address.rpartition(":")[2]
    assert address == f"ray://ray-head:{client_port}"
    assert f"--ray-client-server-port={client_port}" in services["ray-head"]["command"]
    for name in ("ray-head", "ray-worker", "ttc"):
        environment = services[name]["environment"]
        assert environment["RAY_AUTH_MODE"] == "token" and "RAY_AUTH_TOKEN" in environment, name
        assert "TTC_WORKLOAD_MODULES" in environment, name
