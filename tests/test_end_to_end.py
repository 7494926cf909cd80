"""``ttc tune`` → plan → ``ttc run`` on a tiny simulated cluster, through Ray, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from service.cli.main import app

TINY = """
workload: {name: digits-mlp}
target: {value: 0.05, eval_every: 5}
cluster: {nodes: 2, devices_per_node: 2, device: {name: v100}}
search: {strategies: [sync, async_groups], batch_sizes: [32], learning_rates: [0.1, 0.3], momenta: [0.0, 0.9]}
budget: {probe_seconds: 1.0, max_probes: 8, probe_max_iterations: 300}
"""


@pytest.fixture
def tiny_spec(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.yaml"
    path.write_text(TINY)
    return path


def test_tune_then_run_reaches_the_target(
    tiny_spec: Path, tmp_path: Path, database_url: str, ray_local: None
) -> None:
    runner = CliRunner()
    plan_path = tmp_path / "plan.json"
    tuned = runner.invoke(app, ["tune", str(tiny_spec), "--json", "--out", str(plan_path)])
    assert tuned.exit_code == 0, tuned.output
    plan = json.loads(plan_path.read_text())
    assert plan["probes"]["count"] <= 8
    predicted = plan["predicted"]
    assert 0 < predicted["ttc_low"] <= predicted["ttc_seconds"] <= predicted["ttc_high"]
    assert plan["baseline"]["config"]["strategy"] == "sync"
    assert plan["baseline"]["config"]["momentum"] == 0.9

    ran = runner.invoke(app, ["run", str(tiny_spec), "--config", str(plan_path), "--with-baseline", "--json"])
    assert ran.exit_code == 0, ran.output
    results = json.loads(ran.output)
    assert [r["label"] for r in results] == ["plan", "baseline"]
    assert all(r["reached"] and r["ttc_seconds"] > 0 for r in results)


def test_run_accepts_a_list_of_configs(tiny_spec: Path, database_url: str, ray_local) -> None:
    configs = [
        {"strategy": "sync", "nodes": 2, "devices_per_node": 2, "lr": 0.3},
        {"strategy": "async_groups", "nodes": 2, "devices_per_node": 2, "groups": 2, "lr": 0.1,
         "momentum": 0.3},
    ]
    ran = CliRunner().invoke(app, ["run", str(tiny_spec), "--config", json.dumps(configs), "--json"])
    results = json.loads(ran.output)
    assert [r["config"]["strategy"] for r in results] == ["sync", "async_groups"]
    assert ran.exit_code == (0 if all(r["reached"] for r in results) else 3)


def test_unreachable_target_exits_3(tmp_path: Path, database_url: str, ray_local) -> None:
    spec = tmp_path / "hopeless.yaml"
    # Every learning rate diverges, so no probe supports any prediction.
    spec.write_text(TINY.replace("learning_rates: [0.1, 0.3]", "learning_rates: [80.0]")
                    .replace("max_probes: 8", "max_probes: 3"))
    result = CliRunner().invoke(app, ["tune", str(spec), "--json"])
    assert result.exit_code == 3


@pytest.mark.parametrize("command", ["tune", "run"])
def test_bad_spec_exits_2_without_traceback(command: str, tmp_path: Path, database_url: str) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("workload: {name: digits-mlp}\ncluster: {nodes: -4}\n")
    extra = ["--config", "{}"] if command == "run" else []
    done = subprocess.run(
        [sys.executable, "-c", "from service.cli.main import main; main()", command, str(spec), *extra],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 2
    assert "cluster.nodes" in done.stderr and "-4" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout


@pytest.mark.parametrize(
    "config",
    [
        '{"strategy": "sync", "nodes": 9}',  # devices_per_node missing
        '{"strategy": "sync", "nodes": 9, "devices_per_node": 2}',  # more nodes than the cluster
        "not json",
    ],
)
def test_bad_config_exits_2(config: str, tiny_spec: Path, database_url: str) -> None:
    result = CliRunner().invoke(app, ["run", str(tiny_spec), "--config", config])
    assert result.exit_code == 2
