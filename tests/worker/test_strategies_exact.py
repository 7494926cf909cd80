"""Exact checks of each strategy's paper mechanics: sync, async staleness, DASO, HSGD, DBS."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from predictor.types import Config
from worker.simulated.calibration import model_cost
from worker.simulated.hardware import Hardware
from worker.spec import parse_spec
from worker.strategies import make_strategy
from worker.strategies.collectives import flat_mean, hierarchical_mean
from worker.strategies.daso import SkipSchedule, merge
from worker.strategies.dbs import integer_batches, rebalance_shares
from worker.workloads import build_workload

WORKLOAD = build_workload(0, "digits-mlp")


def _strategy(config: Config, seed: int = 0, **cluster: object):
    spec = parse_spec({
        "workload": {"name": "digits-mlp"},
        "cluster": {"nodes": config.nodes, "devices_per_node": config.devices_per_node, **cluster},
    })
    return make_strategy(config, WORKLOAD, Hardware(spec.cluster, model_cost(WORKLOAD), seed), seed)


def test_sync_step_equals_one_big_batch_step() -> None:
    strategy = _strategy(Config("sync", 2, 2, batch_size=8, lr=0.1, momentum=0.0))
    reference = WORKLOAD.build_model()
    reference.load_state_dict(strategy.model.state_dict())
    index = strategy.sampler.order[:32]
    strategy.step()
    loss = WORKLOAD.loss_fn(reference(WORKLOAD.train_x[index]), WORKLOAD.train_y[index])
    grads = torch.autograd.grad(loss, list(reference.parameters()))
    with torch.no_grad():
        stepped = list(strategy.model.parameters())
        for param, grad, after in zip(reference.parameters(), grads, stepped, strict=True):
            torch.testing.assert_close(param - 0.1 * grad, after)


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


def test_daso_warmup_keeps_replicas_identical_and_skipping_merges_stale_sums() -> None:
    config = Config("daso", 2, 2, batch_size=8, lr=0.1, momentum=0.0, options={"warmup_epochs": 0})
    strategy = _strategy(config)
    assert (strategy.schedule.global_skip, strategy.schedule.batches_to_wait) == (4, 2)
    for _ in range(4):
        strategy.step()
    assert len(strategy.pending) == 1 and strategy.pending[0].merge_at == 6
    sent = [s.clone() for s in strategy.pending[0].sums]
    strategy.step()
    strategy.step()  # merge at step 6: (2S·p_local + Σ p_j)/(2S + N), S = 2, N = 2
    assert not strategy.pending
    blocking = _strategy(config.replace(options={"warmup_epochs": 4}))
    for _ in range(3):
        blocking.step()
    for a, b in zip(blocking.replicas[0].parameters(), blocking.replicas[1].parameters(), strict=True):
        torch.testing.assert_close(a, b)
    assert sent[0].shape == next(strategy.model.parameters()).shape


def test_hierarchical_reduce_equals_flat_reduce() -> None:
    per_device = torch.randn(3, 4, 17, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(hierarchical_mean(per_device), flat_mean(per_device))
    torch.testing.assert_close(flat_mean(per_device), per_device.reshape(12, 17).mean(0))


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
