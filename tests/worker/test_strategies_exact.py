"""Exact checks of each strategy's paper mechanics: sync, async staleness, DASO, HSGD, DBS."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn.utils import parameters_to_vector

from predictor.types import Config
from worker.simulated.calibration import model_cost
from worker.simulated.cluster import SimulatedCluster
from worker.simulated.hardware import Hardware
from worker.simulated.run import simulated_run
from worker.spec import parse_spec
from worker.strategies.daso import SkipSchedule, merge
from worker.strategies.dbs import integer_batches, rebalance_shares
from worker.strategies.hsgd import node_shards
from worker.workloads import Workload, load_workload

WORKLOAD = load_workload(0, "digits-mlp")


def _strategy(config: Config, seed: int = 0, **cluster: object):
    spec = parse_spec({
        "workload": {"name": "digits-mlp"}, "seed": seed,
        "cluster": {"nodes": config.nodes, "devices_per_node": config.devices_per_node, **cluster},
    })
    return simulated_run(spec, config)


def _assert_one_sgd_step_on(strategy, index: torch.Tensor, lr: float) -> None:
    """``strategy.step()`` equals one plain SGD step on the samples ``index`` as one batch."""
    reference = WORKLOAD.build_model()
    reference.load_state_dict(strategy.model.state_dict())
    strategy.step()
    x, y = WORKLOAD.train_batch(index)
    grads = torch.autograd.grad(WORKLOAD.loss_fn(reference(x), y), list(reference.parameters()))
    with torch.no_grad():
        stepped = list(strategy.model.parameters())
        for param, grad, after in zip(reference.parameters(), grads, stepped, strict=True):
            torch.testing.assert_close(param - lr * grad, after)


def test_sync_step_equals_one_big_batch_step() -> None:
    strategy = _strategy(Config("sync", 2, 2, batch_size=8, lr=0.1, momentum=0.0))
    _assert_one_sgd_step_on(strategy, strategy.sampler.order[:32], lr=0.1)


def test_hsgd_two_level_mean_equals_one_step_on_the_nodes_contiguous_shards() -> None:
    """Node n reads its D·b next samples from its own shard; reduced over nodes, one flat mean."""
    config = Config("hsgd", 2, 2, batch_size=8, lr=0.1, momentum=0.0)
    strategy = _strategy(config)
    _, shards = node_shards(config, WORKLOAD.train_size, 0)
    _assert_one_sgd_step_on(strategy, torch.cat([shards[0][:16], shards[1][:16]]), lr=0.1)
    _assert_one_sgd_step_on(strategy, torch.cat([shards[0][16:32], shards[1][16:32]]), lr=0.1)


def test_async_groups_staleness_is_g_minus_one_without_jitter() -> None:
    strategy = _strategy(Config("async_groups", 2, 2, groups=4, batch_size=4, momentum=0.0), jitter=0.0)
    for _ in range(20):
        strategy.step()
    assert strategy.staleness[:4] == [0, 1, 2, 3]
    assert set(strategy.staleness[4:]) == {3}


def test_daso_merge_weights_local_copy_by_two_s() -> None:
    local, received = torch.tensor([1.0]), torch.tensor([10.0])  # Σ_j p_j over N = 4 nodes
    assert merge(local, received, nodes=4, batches_waited=2).item() == pytest.approx((4 * 1 + 10) / 8)
    assert merge(local, received, nodes=4, batches_waited=0).item() == pytest.approx(10 / 4)


def test_daso_skip_schedule_warmup_halving_and_reset() -> None:
    schedule = SkipSchedule(max_global_skips=8, warmup_epochs=2, cooldown_epochs=1, total_epochs=30)
    history = []
    for loss in [5.0, 4.0] + [3.0] * 12:
        schedule.end_epoch(loss)
        history.append((schedule.global_skip, schedule.batches_to_wait))
    # epoch 1 still warming up (blocking); from epoch 2 skip 4, wait 2; plateau after 3 bad epochs
    # halves (wait −1, at least 1) and resets the detector (its next epoch counts as improving);
    # a plateau at skip 1 resets to the maximum.
    assert history == [(0, 0)] + [(4, 2)] * 4 + [(2, 1)] * 4 + [(1, 1)] * 4 + [(8, 3)]
    for _ in range(30):
        schedule.end_epoch(3.0)
    assert (schedule.global_skip, schedule.batches_to_wait) == (0, 0)  # cooldown: blocking again


def test_daso_sends_every_skip_steps_and_merges_the_stale_sum(monkeypatch: pytest.MonkeyPatch) -> None:
    """Skip 4, wait 2: the sum of both nodes' parameters sent after step 4 is merged after step 6,
    into parameters two local steps newer, as (2S·p_local + Σ_j p_j)/(2S + N) with S = 2, N = 2."""
    config = Config("daso", 2, 2, batch_size=8, lr=0.1, momentum=0.0, options={"warmup_epochs": 0})
    strategy = _strategy(config)
    assert (strategy.schedule.global_skip, strategy.schedule.batches_to_wait) == (4, 2)
    for _ in range(3):
        strategy.step()
        assert not strategy.pending
    strategy.step()
    sent = [parameters_to_vector(m.parameters()).detach().clone() for m in strategy.models.values()]
    (sync,) = strategy.pending
    assert (sync.merge_at, sync.batches_to_wait) == (6, 2)
    merges = []

    def spy(local: torch.Tensor, total: torch.Tensor, nodes: int, waited: int) -> torch.Tensor:
        merges.append((local.clone(), total.clone(), nodes, waited))
        return merge(local, total, nodes, waited)

    monkeypatch.setattr("worker.strategies.daso.merge", spy)
    strategy.step()
    assert not merges and len(strategy.pending) == 1
    strategy.step()
    assert len(merges) == 2 and not strategy.pending  # one merge per node, at step 6
    for node, (local, total, nodes, waited) in enumerate(merges):
        assert torch.equal(total, sent[0] + sent[1])  # what was sent at step 4, stale by 2 steps
        assert (nodes, waited) == (2, 2)
        assert not torch.equal(local, sent[node])  # the local copy moved on since
        after = parameters_to_vector(strategy.models[node].parameters())
        torch.testing.assert_close(after, (4 * local + total) / 6)


def test_daso_warmup_syncs_blocking_so_replicas_stay_identical() -> None:
    config = Config("daso", 2, 2, batch_size=8, lr=0.1, momentum=0.0, options={"warmup_epochs": 4})
    strategy = _strategy(config)
    for _ in range(3):
        strategy.step()
        first, second = (parameters_to_vector(m.parameters()) for m in strategy.models.values())
        assert torch.equal(first, second)
        assert not strategy.pending


def test_hierarchical_allreduce_cheaper_than_flat_across_many_nodes() -> None:
    spec = parse_spec({"workload": {"name": "digits-mlp"}, "cluster": {"nodes": 8, "devices_per_node": 4}})
    hardware = Hardware(spec.cluster, model_cost(WORKLOAD), 0)
    assert hardware.hierarchical_allreduce_seconds(8, 4) < hardware.flat_allreduce_seconds(8, 4)
    assert hardware.hierarchical_allreduce_seconds(1, 1) == 0.0


def test_dbs_ratio_update_and_largest_remainder_rounding() -> None:
    shares = rebalance_shares(np.full(4, 0.25), np.array([1.0, 1.0, 1.0, 2.0]))
    np.testing.assert_allclose(shares, [2 / 7, 2 / 7, 2 / 7, 1 / 7])
    assert integer_batches(shares, 32) == [9, 9, 9, 5]  # 9.14, 9.14, 9.14, 4.57: remainder to 4.57
    assert integer_batches(np.array([0.5, 0.3, 0.2]), 10) == [5, 3, 2]
    assert integer_batches(np.array([0.98, 0.01, 0.01]), 4) == [2, 1, 1]  # nobody starves
    with pytest.raises(ValueError, match="smaller than"):
        integer_batches(np.full(4, 0.25), 3)


def test_dbs_shares_follow_speed_and_global_batch_is_fixed() -> None:
    config = Config("dbs", 4, 1, batch_size=16, lr=0.1, options={"rebalance_every": 2})
    strategy = _strategy(config, node_speed=[1.0, 1.0, 1.0, 0.5], jitter=0.0)
    for _ in range(6):
        strategy.step()
        assert sum(strategy.batches) == 64
    assert strategy.batches[3] < strategy.batches[0]


def test_with_batch_norm_every_device_normalises_its_own_samples() -> None:
    """Batch statistics are per device, so the simulator may not merge the devices' batches: its
    gradient is that of 4 devices each normalising their own 8 samples, averaged — not one batch's."""

    def build() -> nn.Module:
        return nn.Sequential(nn.Linear(64, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 10))

    x, y = WORKLOAD.train_batch(torch.arange(WORKLOAD.train_size))
    workload = Workload("digits-bn", build, WORKLOAD.loss_fn, x, y, x, y, 0.1, has_batch_norm=True)
    config = Config("sync", 2, 2, batch_size=8)
    spec = parse_spec({"workload": {"name": "digits-mlp"}, "cluster": {"nodes": 2, "devices_per_node": 2}})
    cluster = SimulatedCluster(config, workload, Hardware(spec.cluster, model_cost(WORKLOAD), 0))
    cluster.replicas(1)
    torch.manual_seed(0)
    model = build()
    devices = [copy.deepcopy(model) for _ in range(4)]
    index = torch.randperm(WORKLOAD.train_size, generator=torch.Generator().manual_seed(1))[:32]
    cluster.gradient(model, index, replica=0)
    per_device = []
    for device, part in zip(devices, index.split(8), strict=True):
        loss = workload.loss_fn(device(x[part]), y[part])
        per_device.append(torch.autograd.grad(loss, list(device.parameters())))
    for param, *grads in zip(model.parameters(), *per_device, strict=True):
        torch.testing.assert_close(param.grad, torch.stack(grads).mean(0))
    one_batch = copy.deepcopy(devices[0])
    merged = torch.autograd.grad(workload.loss_fn(one_batch(x[index]), y[index]), [one_batch[0].weight])
    assert not torch.allclose(model[0].weight.grad, merged[0])  # one batch would be another gradient


def test_daso_cooldown_triggers_from_a_planned_number_of_iterations() -> None:
    """A plan states its run's iterations; the schedule turns them into epochs and syncs blocking for
    the last ``cooldown_epochs`` (before, the cooldown needed ``total_epochs``, which a run to a
    target never has, so it never triggered)."""
    schedule = SkipSchedule.from_options({"warmup_epochs": 0, "cooldown_epochs": 2, "total_iterations": 100},
                                         epoch_iterations=10.0)
    assert schedule.total_epochs == 10
    skips = []
    for epoch in range(10):
        skips.append(schedule.global_skip)
        schedule.end_epoch(0.9**epoch)  # improving: no plateau halves the skips
    assert skips == [4] * 8 + [0] * 2  # the last two epochs sync blocking
    assert SkipSchedule.from_options({"total_iterations": 100}).total_epochs is None  # no epoch length
