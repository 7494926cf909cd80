"""Omnivore's parameter server on Ray: the strategy in the driver, its groups on device actors.

``send`` puts the pulled parameters into Ray's object store once and starts the group's cycle on
each of its actors (:func:`group_cycle`: load the parameters, compute the actor's slice, all-reduce
in the group's subgroup); ``receive`` takes whichever group finishes first. No group waits for
another, so staleness comes from real timing.

The clock follows the simulated server's event algebra with *measured* durations, so that time
the driver spends outside ``step()`` (evaluations, checkpoints) is not charged — groups keep
computing meanwhile, as they would against a server that never pauses: a cycle ends at its pull
time plus its measured duration (driver time outside steps excluded; never less than the actors'
own seconds); the server takes one push at a time for as long as applying it and handing out
the next pull took; the clock is when the last push was served.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import ray
import torch
from torch.nn.utils import parameters_to_vector

from predictor.types import Config
from worker.ray_backend.actor import WorkerContext
from worker.ray_backend.cluster import RankCluster
from worker.ray_backend.worker_group import WorkerGroup
from worker.strategies.cluster import ParameterServer, flat_gradient
from worker.workloads import load_workload


@dataclass
class GroupWorker:
    """A device actor's share of one group: its rank cluster and the replica it computes on."""

    cluster: RankCluster
    model: torch.nn.Module
    replica: int


def install_group_worker(
    context: WorkerContext, workload_key: tuple[int, str | None, str | None], config: Config
) -> None:
    """Make this actor a member of its compute group (shipped to every actor at once)."""
    workload = load_workload(*workload_key)
    cluster = RankCluster(context, config, workload)
    (replica,) = cluster.replicas(config.groups)
    context.state["group_worker"] = GroupWorker(cluster, workload.build_model().to(context.device), replica)


def group_cycle(context: WorkerContext, params: torch.Tensor, index: torch.Tensor) -> tuple[Any, float]:
    """The group's mean gradient at ``params`` over ``index`` (leader only) and this actor's seconds."""
    worker: GroupWorker = context.state["group_worker"]
    begin = time.perf_counter()
    with torch.no_grad():
        offset = 0
        for param in worker.model.parameters():
            param.copy_(params[offset : offset + param.numel()].view_as(param))
            offset += param.numel()
    worker.cluster.gradient(worker.model, index, replica=worker.replica)
    leader = worker.cluster.partition.position == 0
    gradient = flat_gradient(worker.model.parameters()).cpu() if leader else None
    return gradient, time.perf_counter() - begin


@dataclass
class _Cycle:
    refs: list[ray.ObjectRef]  # one per actor of the group, the leader's first
    dispatched: float  # driver time (pauses excluded) of the pull
    pulled: float  # the clock's time of the pull


class RayParameterServer(ParameterServer):
    def __init__(self, workers: WorkerGroup, groups: int) -> None:
        size = workers.layout.world_size // groups
        self.workers = workers
        self.members = [list(range(g * size, (g + 1) * size)) for g in range(groups)]
        self.in_flight: dict[int, _Cycle] = {}
        self.arrived: dict[int, tuple[torch.Tensor, float]] = {}  # (gradient, clock at its end)
        self.server_free = 0.0
        self.pull_at = 0.0
        self.clock = 0.0
        self._paused = 0.0  # driver seconds spent outside steps
        self._idle_since: float | None = None
        self._serving: tuple[float, float] | None = None  # (clock at push start, driver time)

    def _now(self) -> float:
        return time.perf_counter() - self._paused

    def send(self, group: int, model: torch.nn.Module, index: torch.Tensor) -> None:
        now = self._now()
        if self._serving is not None:  # the push just applied ends here; the group pulls now
            push_start, served_since = self._serving
            self.server_free = push_start + (now - served_since)
            self.clock = max(self.clock, self.server_free)
            self.pull_at = self.server_free
            self._serving = None
        params = ray.put(parameters_to_vector(model.parameters()).detach().cpu())
        execute = self.workers.execute_single_async
        refs = [execute(rank, group_cycle, params, index) for rank in self.members[group]]
        self.in_flight[group] = _Cycle(refs, now, self.pull_at)
        self._idle_since = time.perf_counter()

    def receive(self) -> tuple[int, torch.Tensor]:
        if self._idle_since is not None:
            self._paused += time.perf_counter() - self._idle_since
            self._idle_since = None
        if self.arrived:
            group = min(self.arrived, key=lambda g: (self.arrived[g][1], g))
            gradient, finished = self.arrived.pop(group)
        else:
            leaders = {cycle.refs[0]: group for group, cycle in self.in_flight.items()}
            ready, _ = ray.wait(list(leaders), num_returns=1)
            group = leaders[ready[0]]
            gradient, finished = self._collect(group, self._now())
        self._serving = (max(finished, self.server_free), self._now())
        return group, gradient

    def _collect(self, group: int, observed: float) -> tuple[torch.Tensor, float]:
        cycle = self.in_flight.pop(group)
        gradient, seconds = ray.get(cycle.refs[0])
        ray.get(cycle.refs[1:])  # the other members' errors surface here
        return gradient, cycle.pulled + max(seconds, observed - cycle.dispatched)

    def state(self) -> dict[str, Any]:
        """Waits for every group in flight: their gradients are part of the state (and the live
        run continues from the same arrived gradients as a restored one)."""
        observed = self._now() if self._idle_since is None else self._idle_since - self._paused
        for group in list(self.in_flight):
            self.arrived[group] = self._collect(group, observed)
        return {
            "arrived": {group: [gradient.clone(), end] for group, (gradient, end) in self.arrived.items()},
            "server_free": self.server_free,
            "pull_at": self.pull_at,
            "clock": self.clock,
        }

    def load_state(self, state: dict[str, Any]) -> None:
        if self.in_flight:
            raise RuntimeError("restore needs a parameter server with no group in flight")
        arrived = state["arrived"].items()
        self.arrived = {int(g): (gradient.clone(), float(end)) for g, (gradient, end) in arrived}
        self.server_free = float(state["server_free"])
        self.pull_at = float(state["pull_at"])
        self.clock = float(state["clock"])

