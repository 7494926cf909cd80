"""Omnivore's parameter server on the simulated clock: an event queue of group cycles.

A group's cycle starts when it pulls: its compute plus in-group all-reduce (the cluster's cost)
ends at a simulated time, and the earliest to end pushes first — with equal speeds round robin,
so every update has staleness g−1; stragglers and heterogeneity reorder it. The server takes one
push at a time (one model transfer each), so pushes queue as g grows (contention); the group
then pulls the new model (one more transfer). The group's gradient is computed at its pull — on
the parameters it read — and kept, one row of a (g × parameters) buffer, until its push lands:
one backward and one flat copy per update, about what the real update costs (issue 3 §6).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Any

import torch

from worker.strategies.cluster import ParameterServer

# Writes a group's flat mean gradient of the model over the samples on its devices into ``out``;
# returns the cycle's simulated seconds (compute + in-group all-reduce).
Cycle = Callable[[torch.nn.Module, torch.Tensor, list[int], torch.Tensor], float]


class SimulatedParameterServer(ParameterServer):
    def __init__(self, group_devices: list[list[int]], cycle: Cycle, transfer_seconds: float) -> None:
        self.group_devices = group_devices
        self.cycle = cycle
        self.transfer_seconds = transfer_seconds  # one model between a group and the server
        self.gradients: torch.Tensor | None = None  # (g, P): each group's gradient until it lands
        self.events: list[tuple[float, int]] = []  # (when the group's push is ready, group)
        self.server_free = 0.0  # when the server can take the next push
        self.pull_at = 0.0  # when the group served last pulls the new model
        self.clock = 0.0

    def send(self, group: int, model: torch.nn.Module, index: torch.Tensor) -> None:
        if self.gradients is None:
            self.gradients = torch.empty(len(self.group_devices), sum(p.numel() for p in model.parameters()))
        seconds = self.cycle(model, index, self.group_devices[group], self.gradients[group])
        heapq.heappush(self.events, (self.pull_at + seconds, group))

    def receive(self) -> tuple[int, torch.Tensor]:
        finished, group = heapq.heappop(self.events)
        self.server_free = max(finished, self.server_free) + self.transfer_seconds  # pushes queue
        self.clock = max(self.clock, self.server_free)
        self.pull_at = self.server_free + self.transfer_seconds
        return group, self.gradients[group]

    def state(self) -> dict[str, Any]:
        return {
            "gradients": None if self.gradients is None else self.gradients.clone(),
            "events": [[finished, group] for finished, group in self.events],
            "server_free": self.server_free,
            "pull_at": self.pull_at,
            "clock": self.clock,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self.gradients = None if state["gradients"] is None else state["gradients"].clone()
        self.events = [(float(finished), int(group)) for finished, group in state["events"]]
        heapq.heapify(self.events)
        self.server_free = float(state["server_free"])
        self.pull_at = float(state["pull_at"])
        self.clock = float(state["clock"])
