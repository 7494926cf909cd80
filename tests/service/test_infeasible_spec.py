"""A ``backend: ray`` spec the Ray cluster cannot hold: refused before any probe, as a bad spec.

On the session's local Ray (2 CPUs), 1 node × 3 devices at 1 CPU each cannot be placed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from service.app import create_app
from service.cli import main as cli
from service.settings import Settings
from tests.service.service_helpers import local_client

SPEC = {"workload": {"name": "digits-mlp"}, "target": {"value": 0.5},
        "cluster": {"backend": "ray", "nodes": 1, "devices_per_node": 3, "device": {"name": "cpu"}},
        "budget": {"max_probes": 2, "probe_max_iterations": 20}}
MISSING = "missing: 1 CPU on one machine — the largest Ray node has 2 CPU, a node bundle needs 3"


@pytest.fixture(autouse=True)
def one_cpu_per_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTC_RAY_CPUS_PER_WORKER", "1")
    monkeypatch.setenv("TTC_RAY_USE_GPU", "0")


def test_ttc_tune_exits_2_naming_what_is_missing_and_records_no_study(
    ray_local: None, database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TTC_DATABASE_URL", database_url)
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SPEC))
    result = CliRunner().invoke(cli.app, ["tune", str(spec)])
    assert result.exit_code == cli.EXIT_BAD_INPUT, result.output
    assert MISSING in " ".join(result.stderr.split())
    listed = CliRunner().invoke(cli.app, ["studies", "list", "--json"])
    assert '"count": 0' in listed.stdout


def test_predict_answers_422_naming_the_cluster(ray_address: str, database_url: str) -> None:
    """The predict process joins the session's 2-CPU Ray: a 3-device cluster cannot fit there."""
    with local_client(create_app(Settings(database_url=database_url, ray_address=ray_address),
                                 run_studies=False)) as client:
        config = {"strategy": "sync", "nodes": 1, "devices_per_node": 3}
        response = client.post("/v1/predict", json={"spec": SPEC, "configs": [config]})
    assert response.status_code == 422
    (error,) = response.json()["detail"]
    assert error["loc"] == ["body", "spec", "cluster"] and MISSING in error["msg"]
