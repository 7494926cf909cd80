"""``async_groups`` (Omnivore, Hadjis et al. 2016): g compute groups, sync inside, async across.

The global model and its optimizer live at a parameter server. Each group pulls the current
parameters and its next batch, computes the group's mean gradient there (in-group all-reduce)
and pushes it; the server applies pushes in the order they arrive, without waiting for the other
groups, and the pushing group pulls again. An iteration is one applied push (DESIGN.md §7); its
staleness is how many other updates landed since that group pulled — g−1 with equal speeds,
shaped by stragglers and heterogeneity as on a real cluster, and read by Mitliagkas et al. as
implicit momentum ≈ 1 − 1/g.

Who arrives first is the backend's: the simulated clock's event order (compute + in-group
all-reduce per cycle, pushes serialised at the server), or the real order on Ray. The groups start
at the first step, so a warm start or restore before it is what they pull.
"""

from __future__ import annotations

from typing import Any

from worker.strategies.base import Strategy
from worker.strategies.cluster import Cluster, assign_gradients


class AsyncGroupsStrategy(Strategy):
    name = "async_groups"
    uses_parameter_server = True

    def __init__(self, cluster: Cluster, seed: int) -> None:
        super().__init__(cluster, seed)
        self.server = cluster.parameter_server(self.config.groups)
        self._params = list(self.model.parameters())  # listed once: updates must stay cheap
        self.read_iteration = [0] * self.config.groups  # the update each group last pulled at
        self.staleness: list[int] = []
        self.started = False

    def _replica_ids(self) -> list[int]:
        return [0]  # the server's global model; the groups' copies belong to the parameter server

    def _pull(self, group: int) -> None:
        self.read_iteration[group] = self.iteration
        self.server.send(group, self.model, self.sampler.next(self.config.global_batch))

    def step(self) -> None:
        if not self.started:
            for group in range(self.config.groups):
                self._pull(group)
            self.started = True
        group, gradient = self.server.receive()
        assign_gradients(self._params, gradient)
        self.optimizer.step()
        self.staleness.append(self.iteration - self.read_iteration[group])
        self.iteration += 1
        self._pull(group)

    def _state(self) -> dict[str, Any]:
        return {"read_iteration": list(self.read_iteration), "staleness": list(self.staleness),
                "started": self.started}

    def _load_state(self, state: dict[str, Any]) -> None:
        self.read_iteration = [int(v) for v in state["read_iteration"]]
        self.staleness = [int(v) for v in state["staleness"]]
        self.started = bool(state["started"])
