"""Contract tests over every strategy and both backends (STYLE.md §7): the same checks, the same code.

The Ray cases share one started worker group of 2 device actors (2 nodes × 1 device, a quarter
CPU each), so each case costs an install and a few steps, not an actor start. Where Ray's real
timing decides something, equality is of the math, not of the bits:

- ``async_groups`` runs with g = 2 on the simulated backend, with g = 1 on Ray: there the groups'
  arrival order is real timing, so g ≥ 2 is not deterministic (``test_ray_backend`` checks g = 2
  against the simulator within a tolerance);
- ``dbs`` on Ray rebalances from measured wall seconds, so the per-device split differs from run to
  run; the share-weighted gradient is the same mean whatever the split, up to float rounding, so
  its runs agree to ``ROUNDING`` rather than bit for bit.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch

from predictor.types import Config
from worker.convergence import Evaluator
from worker.ray_backend import RankLayout, RayBackendConfig, ServerRun, WorkerGroup, make_run
from worker.simulated.run import simulated_run
from worker.spec import parse_spec
from worker.strategies import REGISTRY, Strategy
from worker.training_run import TrainingRun
from worker.workloads import load_workload

WORKLOAD = load_workload(0, "digits-mlp")
BACKENDS = ("simulated", "ray")
SMALL = RayBackendConfig(cpus_per_worker=0.25, collective_timeout_s=60.0, shutdown_grace_s=2.0)
ROUNDING = 1e-5  # relative: float32 sums of the same gradient split differently
OPTIONS = {
    "dbs": {"rebalance_every": 5},  # rebalances inside every test
    "daso": {"warmup_epochs": 0, "max_global_skips": 4},  # skip 2, merge 1 step later, from step 1
}


@pytest.fixture(scope="module")
def shared_workers(ray_local: None) -> Iterator[WorkerGroup]:
    with WorkerGroup(RankLayout(2, 1), SMALL) as workers:
        yield workers


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return request.param


def _config(name: str, backend: str, **changes: object) -> Config:
    groups = 2 if name == "async_groups" and backend == "simulated" else 1
    batch = 32 if name == "daso" else 8  # daso: 22.5 steps per epoch, so runs cross an epoch end
    base = Config(name, 2, 1, groups=groups, batch_size=batch, lr=0.1, momentum=0.5,
                  options=OPTIONS.get(name, {}))
    return base.replace(**changes)


@contextmanager
def _run(
    request: pytest.FixtureRequest, backend: str, config: Config, seed: int = 0
) -> Iterator[TrainingRun]:
    """A fresh training run of ``config``; on Ray one call per step (eval_every 1)."""
    spec = parse_spec({
        "workload": {"name": "digits-mlp"}, "seed": seed, "target": {"eval_every": 1},
        "cluster": {"backend": backend, "nodes": 2, "devices_per_node": 1},
    })
    if backend == "simulated":
        yield simulated_run(spec, config)
        return
    run = make_run(spec, config, SMALL, 10**6, workers=request.getfixturevalue("shared_workers"))
    run.start()
    try:
        yield run
    finally:
        run.shutdown()


def _losses(run: TrainingRun, steps: int) -> tuple[list[float], list[float]]:
    """The evaluated loss and the clock after each of ``steps`` steps."""
    evaluate = Evaluator(WORKLOAD, "train_loss")
    losses, clocks = [], []
    for _ in range(steps):
        run.step()
        losses.append(evaluate(run.model))
        clocks.append(run.clock)
    return losses, clocks


def _replica_states(run: TrainingRun) -> list[dict[str, torch.Tensor]]:
    """Every replica's parameters, from every process that holds one."""

    def on_actor(context) -> list[dict[str, torch.Tensor]]:  # local: shipped by value
        models = context.state["strategy"].models.values()
        return [{k: v.cpu() for k, v in m.state_dict().items()} for m in models]

    if isinstance(run, Strategy | ServerRun):
        strategy = run if isinstance(run, Strategy) else run.strategy
        return [m.state_dict() for m in strategy.models.values()]
    return [state for per_rank in run.workers.execute(on_actor) for state in per_rank]


def _bitwise(backend: str, name: str) -> bool:
    return not (backend == "ray" and name == "dbs")


def _assert_same_state(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor], bitwise: bool = True) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if bitwise:
            assert torch.equal(a[key], b[key]), key
        else:
            torch.testing.assert_close(a[key], b[key], rtol=ROUNDING, atol=ROUNDING)


def _assert_same_losses(a: list[float], b: list[float], bitwise: bool) -> None:
    if bitwise:
        assert a == b
    else:
        assert a == pytest.approx(b, rel=ROUNDING)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_trains_and_loss_falls(request: pytest.FixtureRequest, backend: str, name: str) -> None:
    with _run(request, backend, _config(name, backend)) as run:
        before = Evaluator(WORKLOAD, "train_loss")(run.model)
        losses, clocks = _losses(run, 40)
        assert run.iteration == 40
        assert clocks[-1] > clocks[0] > 0
        assert losses[-1] < 0.7 * before


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_deterministic_under_seed(request: pytest.FixtureRequest, backend: str, name: str) -> None:
    runs = []
    for _ in range(2):
        with _run(request, backend, _config(name, backend), seed=3) as run:
            losses, clocks = _losses(run, 15)
            runs.append((losses, clocks, run.model_state()))
    bitwise = _bitwise(backend, name)
    _assert_same_losses(runs[0][0], runs[1][0], bitwise)
    _assert_same_state(runs[0][2], runs[1][2], bitwise)
    if backend == "simulated":
        assert runs[0][1] == runs[1][1]


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_checkpoint_restore_continues_exactly(
    request: pytest.FixtureRequest, backend: str, name: str
) -> None:
    """Checkpoint at step 12 (DASO with a sync in flight, DBS between rebalances), save and load
    it as a file would, restore into a fresh run: steps 13–30 (DASO crosses an epoch end) match
    the uninterrupted run exactly — losses, model and, simulated, the clock."""
    config = _config(name, backend)
    with _run(request, backend, config) as run:
        _losses(run, 12)
        buffer = io.BytesIO()
        torch.save(run.checkpoint(), buffer)
        uninterrupted = _losses(run, 18)
        final = run.model_state()
    buffer.seek(0)
    state = torch.load(buffer, weights_only=True)
    with _run(request, backend, config) as resumed:
        resumed.restore(state)
        assert resumed.iteration == 12
        continued = _losses(resumed, 18)
        assert resumed.iteration == 30
        _assert_same_state(final, resumed.model_state(), _bitwise(backend, name))
    _assert_same_losses(continued[0], uninterrupted[0], _bitwise(backend, name))
    if backend == "simulated":
        assert continued[1] == uninterrupted[1]


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_warm_start_loads_every_replica(request: pytest.FixtureRequest, backend: str, name: str) -> None:
    """A sync run's global model starts another config (other strategy, batch, lr) fresh."""
    with _run(request, backend, _config("sync", backend)) as source:
        _losses(source, 10)
        model_state = source.model_state()
    config = _config(name, backend, batch_size=16, lr=0.05)
    with _run(request, backend, config) as run:
        assert any(not torch.equal(s[k], model_state[k]) for s in _replica_states(run) for k in s)
        run.warm_start(model_state)
        assert run.iteration == 0 and run.clock == 0.0
        for replica in _replica_states(run):
            _assert_same_state(replica, model_state)
        _assert_same_state(run.model_state(), model_state)
        losses, _ = _losses(run, 3)
        assert all(torch.isfinite(torch.tensor(losses)))
        with pytest.raises(RuntimeError, match="fresh"):
            run.warm_start(model_state)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_gradient_noise_sample_is_positive(request: pytest.FixtureRequest, backend: str, name: str) -> None:
    config = _config(name, backend)
    with _run(request, backend, config) as run:
        small, batch_small, big, batch_big = run.gradient_noise_sample()
    assert small > 0 and big > 0
    assert (batch_small, batch_big) == (config.batch_size, config.global_batch)  # b, one update's batch


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_simulated_uses_the_configs_devices(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def spec(nodes: int, per_node: int):
        return parse_spec({"workload": {"name": "digits-mlp"},
                           "cluster": {"nodes": nodes, "devices_per_node": per_node}})

    config = Config(name, 2, 2, groups=2 if name == "async_groups" else 1, batch_size=8,
                    options=OPTIONS.get(name, {}))
    strategy = simulated_run(spec(3, 4), config)  # config uses 2×2 of the 3×4 cluster
    hardware = strategy.cluster.hardware
    seen: set[int] = set()
    original = hardware.compute_seconds

    def spy(batches: list[int], devices: list[int], at_seconds: float = 0.0):
        seen.update(devices)
        return original(batches, devices, at_seconds)

    monkeypatch.setattr(hardware, "compute_seconds", spy)
    for _ in range(5):
        strategy.step()
    assert seen == {0, 1, 4, 5}  # nodes 0-1, local devices 0-1 of the cluster's 4 per node
    with pytest.raises(ValueError, match="devices but the cluster"):
        simulated_run(spec(1, 2), config)


def test_restore_refuses_another_config() -> None:
    spec = parse_spec({"workload": {"name": "digits-mlp"}, "cluster": {"nodes": 2}})
    source = simulated_run(spec, _config("sync", "simulated"))
    source.step()
    with pytest.raises(ValueError, match="checkpoint config="):
        simulated_run(spec, _config("sync", "simulated", lr=0.2)).restore(source.checkpoint())
