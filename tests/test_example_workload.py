"""examples/workload: the user guide's own-workload example holds the contract and tunes as documented."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from worker.workloads import Workload

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "workload"


@pytest.fixture
def two_moons(monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(EXAMPLE))
    import two_moons

    return two_moons


def test_the_factories_build_the_same_deterministic_workload(two_moons) -> None:  # type: ignore[no-untyped-def]
    tensors, again, other = two_moons.make(0), two_moons.make(0), two_moons.make(1)
    datasets = two_moons.make_from_dataset(0)
    assert isinstance(tensors, Workload) and isinstance(datasets, Workload)
    assert (tensors.train_size, tensors.eval_size) == (1536, 512)
    assert torch.equal(tensors.train_x, again.train_x) and not torch.equal(tensors.train_x, other.train_x)
    index = torch.tensor([3, 1, 4, 1, 5])
    for ours, theirs in zip(datasets.train_batch(index), tensors.train_batch(index), strict=True):
        assert torch.equal(ours, theirs)


def test_ttc_tune_runs_the_example_from_its_directory_with_a_clean_log(tmp_path: Path) -> None:
    """docs/user-guide.md §4 word for word — from the example's directory, allowlist, tune — as CI
    runs it: stdout and stderr are pipes, and ttc starts its own local Ray (whose token warning
    Ray prints on every start). The plan's lines stay whole; stderr holds ttc's one line only."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TTC_", "RAY_")) and k != "COLUMNS"}
    env |= {"TTC_WORKLOAD_MODULES": "two_moons", "TTC_DATABASE_URL": f"sqlite:///{tmp_path / 'ttc.db'}",
            "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run([sys.executable, "-c", "from service.cli.main import main; main()",
                           "tune", "spec.yaml"],
                          cwd=EXAMPLE, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Plan for study ") and any(
        line.startswith("  config     ") and line.endswith("· sgd") for line in lines), done.stdout
    study = lines[0].removeprefix("Plan for study ")
    assert done.stderr.splitlines() == [f"study {study} · recorded in sqlite:///{tmp_path}/ttc.db"]
