"""Ray's cost per call is measured apart from the steps, once per chunk up to the next evaluation."""

from __future__ import annotations

import pytest

from predictor.he_model import HeModel
from predictor.types import Config
from worker.probe import run_config
from worker.ray_backend.config import CPUS_ENV
from worker.spec import parse_spec

pytest.importorskip("ray")


def _spec(backend: str):
    return parse_spec({
        "workload": {"name": "digits-mlp"}, "target": {"value": 1e-6, "eval_every": 5},
        "cluster": {"backend": backend, "nodes": 2, "devices_per_node": 1, "device": {"name": "cpu"}},
    })


def test_a_ray_probe_counts_one_call_per_evaluation_chunk_outside_its_clock(
    ray_local: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CPUS_ENV, "0.25")
    config = Config("sync", 2, 1, batch_size=16, lr=0.1, momentum=0.9)
    real = run_config(_spec("ray"), config, 1e9, 20)
    simulated = run_config(_spec("simulated"), config, 1e9, 20)
    assert real.calls == 4 and real.call_seconds > 0.0  # iterations 0–5, 5–10, 10–15, 15–20
    assert real.seconds == pytest.approx(sum(real.step_seconds))  # the clock is the steps alone
    assert simulated.calls == 0 and simulated.call_seconds == 0.0
    assert HeModel.fit([real]).call_seconds == pytest.approx(real.call_seconds / 4)
