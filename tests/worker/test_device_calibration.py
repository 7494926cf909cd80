"""benchmarks/device_calibration.py in its CPU smoke mode: every built-in workload measured on one
Ray device actor, compared with the ``cpu`` profile, written as markdown (never part of CI's
default selection: it starts device actors and times real steps)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from benchmarks import device_calibration
from worker.workloads import BUILTIN

pytest.importorskip("ray")


@pytest.mark.slow
def test_the_smoke_mode_measures_every_workload_at_three_batches_and_writes_the_table(
    ray_local: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "devices.md"
    assert device_calibration.main(["--smoke", "--out", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["profile"] == "cpu"
    rows = report["rows"]
    assert sorted({r["workload"] for r in rows}) == sorted(BUILTIN)
    assert len(rows) == 3 * len(BUILTIN)
    for row in rows:
        assert row["seconds_per_iteration"] > 0 and math.isfinite(row["seconds_per_iteration"])
        assert row["flops_per_iteration"] > 0 and row["flops_per_second"] > 0
        assert row["simulated_seconds"] > 0
    text = out.read_text()
    assert text.startswith("# Device calibration: CPU against the simulated `cpu` profile")
    assert all(f"| {name} |" in text for name in BUILTIN)
