"""``async_groups`` (Omnivore, Hadjis et al. 2016): g compute groups, sync inside, async across.

Each group all-reduces inside itself, pushes its gradient to a parameter server and pulls the new
model, without waiting for the other groups. The simulation is event-driven: the group that
finishes first has its gradient — computed on the parameters it read when it started — applied
next. With equal speeds this is round-robin, so every update has staleness g−1; stragglers and
heterogeneity change the order exactly as they would on a real cluster. The server handles one
push at a time, so pushes queue as g grows (contention).
"""

from __future__ import annotations

import torch
from torch.func import functional_call

from predictor.types import Config
from worker.simulated.hardware import Hardware
from worker.strategies.base import Strategy
from worker.workloads import Workload


class AsyncGroupsStrategy(Strategy):
    name = "async_groups"

    def __init__(self, config: Config, workload: Workload, hardware: Hardware, seed: int) -> None:
        super().__init__(config, workload, hardware, seed)
        self.group_size = config.devices // config.groups
        self.group_devices = [
            self.devices[i * self.group_size : (i + 1) * self.group_size] for i in range(config.groups)
        ]
        self.version = 0
        self.staleness: list[int] = []
        self.server_free = 0.0
        self.snapshots = [self._read() for _ in range(config.groups)]
        self.finish = [self._cycle_seconds(group, start=0.0) for group in range(config.groups)]

    def _read(self) -> tuple[int, dict[str, torch.Tensor]]:
        params = {name: p.detach().clone() for name, p in self.model.named_parameters()}
        return self.version, params

    def _spans_nodes(self, group: int) -> bool:
        per_node = self.config.devices_per_node
        devices = self.group_devices[group]
        return devices[0] // per_node != devices[-1] // per_node

    def _cycle_seconds(self, group: int, start: float) -> float:
        """When ``group`` finishes compute + in-group all-reduce, having started at ``start``."""
        devices = self.group_devices[group]
        compute = self.hardware.compute_seconds([self.config.batch_size] * len(devices), devices)
        reduce = self.hardware.ring_allreduce_seconds(len(devices), self._spans_nodes(group))
        return start + float(compute.max()) + reduce

    def step(self) -> None:
        group = min(range(self.config.groups), key=lambda g: (self.finish[g], g))
        read_version, params = self.snapshots[group]
        x, y = self.batch(self.config.global_batch)
        leaves = {name: p.requires_grad_(True) for name, p in params.items()}
        loss = self.workload.loss_fn(functional_call(self.model, leaves, (x,)), y)
        grads = torch.autograd.grad(loss, list(leaves.values()))
        self.optimizer.zero_grad(set_to_none=True)
        for param, grad in zip(self.model.parameters(), grads, strict=True):
            param.grad = grad
        self.optimizer.step()
        self.staleness.append(self.version - read_version)
        self.version += 1
        # Push queues at the server, update applies, then the group pulls the new model.
        push_start = max(self.finish[group], self.server_free)
        self.server_free = push_start + self.hardware.transfer_seconds()
        self.clock = max(self.clock, self.server_free)
        self.snapshots[group] = self._read()
        pulled = self.server_free + self.hardware.transfer_seconds()
        self.finish[group] = self._cycle_seconds(group, start=pulled)
        self.iteration += 1
