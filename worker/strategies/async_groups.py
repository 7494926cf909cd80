"""``async_groups`` (Omnivore, Hadjis et al. 2016): g compute groups, sync inside, async across.

Each group all-reduces inside itself, pushes its gradient to a parameter server and pulls the new
model, without waiting for the other groups. The simulation is event-driven: the group that
finishes first has its gradient — computed on the parameters it read when it started — applied
next. With equal speeds this is round-robin, so every update has staleness g−1; stragglers and
heterogeneity change the order exactly as they would on a real cluster. The server handles one
push at a time, so pushes queue as g grows (contention).

Simulating an update must cost about what the real update costs (issue 3 §6), so the staleness
machinery is kept to two flat copies per update: each group's read is one row of a preallocated
(g × parameters) buffer, and the gradient is taken by a second instance of the model whose
parameters are views of one flat vector, loaded from that row with a single ``copy_``.
"""

from __future__ import annotations

import copy
import heapq

import torch
from torch.nn.utils import parameters_to_vector, vector_to_parameters

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
        # The global model's parameters as flat views (the optimizer updates them in place), the
        # version and values each group last read, and the model the groups compute gradients on.
        self._params = list(self.model.parameters())
        self._flat_params = [p.detach().view(-1) for p in self._params]
        self.read_version = [0] * config.groups
        self.snapshots = parameters_to_vector(self._params).detach().repeat(config.groups, 1)
        self.replica = copy.deepcopy(self.model)  # a copy, so the global RNG stream is untouched
        self._replica_flat = parameters_to_vector(self.replica.parameters()).detach()
        vector_to_parameters(self._replica_flat, self.replica.parameters())  # params become views
        self._replica_params = list(self.replica.parameters())
        # Event queue of (time the group finishes compute + in-group reduce, group): ties by group.
        self.events = [(self._cycle_seconds(group, start=0.0), group) for group in range(config.groups)]
        heapq.heapify(self.events)

    def _read(self, group: int) -> None:
        """``group`` pulls the current model: one copy into its row of the snapshot buffer."""
        torch.cat(self._flat_params, out=self.snapshots[group])
        self.read_version[group] = self.version

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
        finished, group = heapq.heappop(self.events)
        x, y = self.batch(self.config.global_batch)
        # The group's gradient, at the (possibly stale) parameters it read.
        with torch.no_grad():
            self._replica_flat.copy_(self.snapshots[group])
        self.replica.zero_grad(set_to_none=True)
        self.workload.loss_fn(self.replica(x), y).backward()
        for param, replica_param in zip(self._params, self._replica_params, strict=True):
            param.grad = replica_param.grad
        self.optimizer.step()
        self.staleness.append(self.version - self.read_version[group])
        self.version += 1
        # Push queues at the server, update applies, then the group pulls the new model.
        push_start = max(finished, self.server_free)
        self.server_free = push_start + self.hardware.transfer_seconds()
        self.clock = max(self.clock, self.server_free)
        self._read(group)
        pulled = self.server_free + self.hardware.transfer_seconds()
        heapq.heappush(self.events, (self._cycle_seconds(group, start=pulled), group))
        self.iteration += 1
