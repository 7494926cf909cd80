"""``hsgd``: hierarchical synchronous SGD (Wang et al., IEICE Trans. Inf. E103-D(12), 2020).

One synchronous update per step, but the gradient reduction has two levels: the D devices of a
node reduce to a leader over shared memory / NVLink, only the N leaders all-reduce over the
network, and each leader broadcasts the result inside its node. Each node reads its data from
a contiguous shard of a once-shuffled dataset, so a batch is one sequential read rather than
one seek per sample (``options.shard = "strided"`` reads global random samples instead, for
comparison). Reads are prefetched while the device computes. LARS (``optimizer = "lars"``) is
the paper's companion for the large global batches this enables.

A node's D device batches are computed as one batch of D·b (their mean gradient is the node's
intra-node reduce, exact without batch norm); the inter-node level is reduced for real.
"""

from __future__ import annotations

import torch

from predictor.types import Config
from worker.simulated.hardware import Hardware
from worker.strategies.base import Strategy
from worker.strategies.collectives import hierarchical_mean
from worker.workloads import Workload

SHARDS = ("contiguous", "strided")


def node_shards(config: Config, train_size: int, seed: int) -> tuple[str, list[torch.Tensor]]:
    """The read mode (``options.shard``, validated) and each node's share of a seeded permutation,
    the same on every backend so Ray and the simulator read the same samples."""
    mode = str(config.options.get("shard", "contiguous"))
    if mode not in SHARDS:
        raise ValueError(f"options.shard={mode!r} is not one of {list(SHARDS)}")
    order = torch.randperm(train_size, generator=torch.Generator().manual_seed(seed))
    return mode, list(order.tensor_split(config.nodes))


class HsgdStrategy(Strategy):
    name = "hsgd"

    def __init__(self, config: Config, workload: Workload, hardware: Hardware, seed: int) -> None:
        super().__init__(config, workload, hardware, seed)
        self.shard, self.shards = node_shards(config, workload.train_size, seed)  # node n reads shards[n]
        self.positions = [0] * config.nodes
        sample = workload.train_x[0]
        self.sample_bytes = sample.numel() * sample.element_size()

    def _node_batch(self, node: int, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        if self.shard == "strided":
            index = self.sampler.next(count)
        else:
            shard = self.shards[node]
            start = self.positions[node]
            index = shard[torch.arange(start, start + count) % len(shard)]
            self.positions[node] = (start + count) % len(shard)
        return self.workload.train_x[index], self.workload.train_y[index]

    def step(self) -> None:
        config, hardware = self.config, self.hardware
        params = list(self.model.parameters())
        node_grads = []
        for node in range(config.nodes):
            x, y = self._node_batch(node, config.devices_per_node * config.batch_size)
            grads = torch.autograd.grad(self.workload.loss_fn(self.model(x), y), params)
            node_grads.append(torch.cat([g.reshape(-1) for g in grads]))
        averaged = hierarchical_mean(torch.stack(node_grads).unsqueeze(1))  # (N, 1, P) -> (P,)
        offset = 0
        for param in params:
            param.grad = averaged[offset : offset + param.numel()].view_as(param)
            offset += param.numel()
        self.optimizer.step()
        compute = hardware.compute_seconds([config.batch_size] * config.devices, self.devices)
        read = hardware.read_seconds(config.batch_size, self.sample_bytes, self.shard == "contiguous")
        busy = max(float(compute.max()), read)  # the next batch is read while this one computes
        communicate = hardware.hierarchical_allreduce_seconds(config.nodes, config.devices_per_node)
        self.clock += hardware.overlapped_seconds(busy, communicate)
        self.iteration += 1
