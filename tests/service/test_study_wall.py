"""A study on Ray says where its wall time went: actors' start, training, evaluations, the rest."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from predictor.types import Config, Plan, Prediction, ProbeResult
from service.cli import main as cli
from service.runners import study_runner
from service.runners.study_wall import StudyWall

CONFIG = Config("sync", 1, 2, batch_size=64, lr=0.1, momentum=0.9)


def probe(launch: float, steps: float, calls: float, wall: float) -> ProbeResult:
    return ProbeResult(CONFIG, 100, steps, [], wall_seconds=wall, calls=2, call_seconds=calls,
                       launch_seconds=launch)


def test_the_split_accounts_for_every_second_of_the_study() -> None:
    probes = [probe(5.0, 4.0, 0.5, 6.0), probe(3.0, 2.0, 0.5, 3.0)]
    wall = StudyWall.of(2.0, 20.0, probes)
    assert (wall.actor_start, wall.training_steps, wall.ray_calls) == (8.0, 6.0, 1.0)
    assert wall.evaluations == pytest.approx(9.0 - 6.0 - 1.0)  # the probes' wall beyond steps and calls
    assert wall.other == pytest.approx(20.0 - 8.0 - 6.0 - 1.0 - 2.0)
    assert wall.total == pytest.approx(22.0)
    assert wall.text() == ("study 22 s of wall time: Ray start-up 2 s · device actors' start 8 s · "
                           "training 7 s · evaluations 2 s · scheduling and search 3 s")


class RayRunner:
    """Stands in for StudyRunner: one probe whose actors took 4 s to start, then the plan."""

    def __init__(self, db: object, ray_address: str | None, on_progress=None, on_probe=None) -> None:  # type: ignore[no-untyped-def]
        self.on_probe = on_probe

    def submit(self, spec: object, owner: str | None = None, lease_seconds: float = 30.0) -> str:
        return "s1"

    def run(self, study_id: str, stop: object = None) -> Plan:
        self.on_probe(probe(4.0, 1.0, 0.1, 1.5))
        return Plan(study_id, CONFIG, Prediction(1.5, 1.0, 2.0, 1e-3, 1500.0), CONFIG, 1.5, 1, 1.0)


def test_tune_on_ray_prints_the_split_on_stderr_and_keeps_json_clean(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "ray.yaml"
    spec.write_text(yaml.safe_dump({"workload": {"name": "digits-mlp"},
                                    "cluster": {"backend": "ray", "nodes": 1, "devices_per_node": 2}}))
    monkeypatch.setenv("TTC_DATABASE_URL", database_url)
    monkeypatch.setattr(study_runner, "StudyRunner", RayRunner)
    monkeypatch.setattr(cli, "_check_cluster", lambda spec, address: 3.0)
    result = CliRunner().invoke(cli.app, ["tune", str(spec)])
    assert result.exit_code == 0, result.output
    assert "Ray start-up 3 s · device actors' start 4 s · training 1 s" in result.stderr
    as_json = CliRunner().invoke(cli.app, ["tune", str(spec), "--json"])
    assert as_json.exit_code == 0 and "device actors' start" not in as_json.stderr
