"""``hsgd`` on Ray (Wang et al., IEICE Trans. Inf. E103-D(12), 2020): two-level gradient reduction.

Intra-node level: the node's gloo (NCCL on GPUs) **node subgroup** — ``dist.reduce`` of the
devices' gradient sums to the node leader — not shared memory between actors: co-located actors
are separate processes, and gloo over loopback needs no extra machinery while staying the same
code on a real multi-machine cluster. Inter-node level: ``dist.all_reduce`` in the **leader
subgroup** (local rank 0 of every node). The leader divides by N·D and ``dist.broadcast``\\s the
mean back inside its node, so only N ranks ever talk across nodes.

Data as in :mod:`worker.strategies.hsgd`: node n reads D·b consecutive indices of its contiguous
shard of a once-shuffled dataset (``options.shard = "strided"``: the shared sampler's draws, one
per node in node order), and device d of the node trains on slice d. A node's gradient is thus
the mean over the same D·b samples the simulated backend computes as one batch.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from predictor.types import Config
from worker.ray_backend.actor import WorkerContext
from worker.ray_backend.strategies.base import SteppedWorker, assign_gradients
from worker.strategies.hsgd import node_shards
from worker.workloads import Workload


class HsgdWorker(SteppedWorker):
    name = "hsgd"

    def __init__(self, context: WorkerContext, workload: Workload, config: Config, seed: int) -> None:
        super().__init__(context, workload, config, seed)
        self.shard_mode, shards = node_shards(config, workload.train_size, seed)
        self.node_shard = shards[context.node]
        self.position = 0
        self.leader = context.node * context.topology.devices_per_node

    def _node_indices(self) -> torch.Tensor:
        """The D·b indices this node reads this step (the simulated ``_node_batch``)."""
        count = self.config.devices_per_node * self.config.batch_size
        if self.shard_mode == "strided":
            draws = [self.sampler.next(count) for _ in range(self.config.nodes)]  # every node's, in order
            return draws[self.context.node]
        shard = self.node_shard
        index = shard[torch.arange(self.position, self.position + count) % len(shard)]
        self.position = (self.position + count) % len(shard)
        return index

    def train_step(self) -> None:
        context, config = self.context, self.config
        index = self._node_indices()
        x, y = self.shard(index, [config.batch_size] * config.devices_per_node, context.local_rank)
        params = list(self.model.parameters())
        grads = torch.autograd.grad(self.workload.loss_fn(self.model(x), y), params)
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.reduce(flat, self.leader, group=context.node_group)  # 1. node sum at the leader
        if context.leader_group is not None:
            dist.all_reduce(flat, group=context.leader_group)  # 2. sum across node leaders
            flat /= context.world_size
        dist.broadcast(flat, self.leader, group=context.node_group)  # 3. mean back inside the node
        assign_gradients(params, flat)
        self.optimizer.step()
