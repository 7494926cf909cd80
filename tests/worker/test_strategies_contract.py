"""Contract tests run over every strategy in the registry (STYLE.md §7)."""

from __future__ import annotations

import pytest
import torch

from predictor.types import Config
from worker.convergence import Evaluator
from worker.simulated.calibration import model_cost
from worker.simulated.hardware import Hardware
from worker.spec import parse_spec
from worker.strategies import REGISTRY, make_strategy
from worker.workloads import build_workload

WORKLOAD = build_workload(0, "digits-mlp")


def _spec(nodes: int = 2, devices_per_node: int = 2, **cluster: object):
    return parse_spec({
        "workload": {"name": "digits-mlp"},
        "cluster": {"nodes": nodes, "devices_per_node": devices_per_node, **cluster},
    })


def _config(name: str, **changes: object) -> Config:
    base = Config(name, 2, 2, groups=2 if name == "async_groups" else 1, batch_size=8, lr=0.1, momentum=0.5)
    return base.replace(**changes)


def _strategy(name: str, seed: int = 0, spec=None, **changes: object):
    spec = spec or _spec()
    hardware = Hardware(spec.cluster, model_cost(WORKLOAD), seed)
    return make_strategy(_config(name, **changes), WORKLOAD, hardware, seed)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_trains_and_loss_falls(name: str) -> None:
    strategy = _strategy(name)
    evaluate = Evaluator(WORKLOAD, "train_loss")
    before = evaluate(strategy.model)
    for _ in range(40):
        strategy.step()
    assert strategy.iteration == 40
    assert strategy.clock > 0
    assert evaluate(strategy.model) < 0.7 * before


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_deterministic_under_seed(name: str) -> None:
    runs = []
    for _ in range(2):
        strategy = _strategy(name, seed=3)
        for _ in range(15):
            strategy.step()
        runs.append((strategy.clock, [p.detach().clone() for p in strategy.model.parameters()]))
    assert runs[0][0] == runs[1][0]
    for a, b in zip(runs[0][1], runs[1][1], strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_respects_device_count(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec(nodes=3, devices_per_node=4)
    strategy = _strategy(name, spec=spec)  # config uses 2×2 of the 3×4 cluster
    seen: set[int] = set()
    original = strategy.hardware.compute_seconds

    def spy(batches: list[int], devices: list[int]):
        seen.update(devices)
        return original(batches, devices)

    monkeypatch.setattr(strategy.hardware, "compute_seconds", spy)
    for _ in range(5):
        strategy.step()
    assert seen == set(strategy.devices)
    assert len(strategy.devices) == 4
    assert all(device // 4 < 2 and device % 4 < 2 for device in seen)
    with pytest.raises(ValueError, match="devices but the cluster"):
        _strategy(name, spec=_spec(nodes=1, devices_per_node=2))


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_gradient_noise_sample_is_positive(name: str) -> None:
    small, batch_small, big, batch_big = _strategy(name).gradient_noise_sample()
    assert small > 0 and big > 0 and batch_small < batch_big
