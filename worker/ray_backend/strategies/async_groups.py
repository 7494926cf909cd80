"""``async_groups`` on Ray (Omnivore): all-reduce inside each group, a parameter server across.

Ranks are split into g contiguous groups with their own gloo/NCCL subgroup. Each cycle the
group's leader (its first rank) pushes the group's averaged gradient to the
:class:`~worker.ray_backend.parameter_server.ParameterServer` and pulls the new model and the
indices of the next group batch; it broadcasts both inside the group, and rank i of the group
trains on slice i. No group ever waits for another, so staleness comes from the real timing.
"""

from __future__ import annotations

import ray
import torch
import torch.distributed as dist

from predictor.types import Config
from worker.ray_backend.actor import WorkerContext
from worker.ray_backend.distributed import new_groups
from worker.ray_backend.strategies.base import WorkerStrategy
from worker.workloads import Workload


class AsyncGroupsWorker(WorkerStrategy):
    name = "async_groups"

    def __init__(self, context: WorkerContext, workload: Workload, config: Config, seed: int) -> None:
        super().__init__(context, workload, config, seed)
        size = context.world_size // config.groups
        members = [list(range(g * size, (g + 1) * size)) for g in range(config.groups)]
        self.group = new_groups(context, members)
        self.leader = context.rank - context.rank % size
        self.group_rank = context.rank - self.leader
        self.group_size = size
        self.parameter_count = sum(p.numel() for p in self.model.parameters())

    def serve(self, server: ray.actor.ActorHandle) -> int:
        """Compute, reduce in the group, push and pull, until the server says stop; cycles done."""
        device = self.context.device
        gradient: torch.Tensor | None = None
        cycles = 0
        while True:
            header = torch.zeros(1, device=device)
            flat = torch.empty(self.parameter_count, device=device)
            index = torch.empty(self.config.global_batch, dtype=torch.long, device=device)
            if self.context.rank == self.leader:
                reply = ray.get(server.exchange.remote(None if gradient is None else gradient.cpu()))
                if reply is None:
                    header.fill_(1.0)
                else:
                    flat.copy_(reply[0])
                    index.copy_(reply[1])
            dist.broadcast(header, self.leader, group=self.group)
            if header.item():
                return cycles
            dist.broadcast(flat, self.leader, group=self.group)
            dist.broadcast(index, self.leader, group=self.group)
            torch.nn.utils.vector_to_parameters(flat, self.model.parameters())
            x, y = self.shard(index.cpu(), [self.config.batch_size] * self.group_size, self.group_rank)
            loss = self.workload.loss_fn(self.model(x), y)
            grads = torch.autograd.grad(loss, list(self.model.parameters()))
            gradient = torch.cat([g.reshape(-1) for g in grads])
            dist.all_reduce(gradient, group=self.group)
            gradient /= self.group_size
            cycles += 1
