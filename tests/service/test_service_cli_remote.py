"""``ttc tune SPEC --server URL``: same plan and exit codes as the local mode."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.service.service_helpers import ServiceProcess, free_port, tiny_spec


def _tune(spec: dict, tmp_path: Path, server: str, *extra: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return subprocess.run(
        [sys.executable, "-c", "from service.cli.main import main; main()",
         "tune", str(path), "--server", server, *extra], capture_output=True, text=True, timeout=300,
    )


def test_bad_spec_exits_2_and_unreachable_server_exits_4(tmp_path: Path) -> None:
    spec = tiny_spec()
    spec["cluster"]["nodes"] = 0
    assert _tune(spec, tmp_path, "http://127.0.0.1:1").returncode == 2
    down = _tune(tiny_spec(), tmp_path, f"http://127.0.0.1:{free_port()}")
    assert down.returncode == 4 and "cannot reach" in down.stderr


@pytest.mark.slow
def test_tune_on_a_server_prints_the_plan(tmp_path: Path, ray_address: str) -> None:
    service = ServiceProcess(f"sqlite:///{tmp_path / 'ttc.db'}", ray_address, tmp_path / "service.log",
                             TTC_MAX_STUDY_PROBES="5").start()
    try:
        done = _tune(tiny_spec(), tmp_path, service.url, "--json")
        assert done.returncode == 0, done.stderr
        plan = json.loads(done.stdout)
        assert plan["probes"]["count"] == 3 and plan["config"]["nodes"] == 1
        too_big = _tune(tiny_spec(max_probes=6), tmp_path, service.url)  # the server's own limit: 422
        assert too_big.returncode == 2 and "max_probes" in too_big.stderr
        unreachable = tiny_spec()
        unreachable["search"].update(learning_rates=[50.0, 100.0], strategies=["sync"])  # all diverge
        assert _tune(unreachable, tmp_path, service.url).returncode == 3
    finally:
        service.stop()
