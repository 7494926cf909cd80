"""The Ray backend of the strategy contract, inside one device actor: ``torch.distributed``, wall clock.

Each actor runs the same strategy code on the one replica it belongs to (SPMD). Of a step's
indices it takes its own slice, weights its loss by its share and sums the gradient with the
other devices of its replica — a ring all-reduce in the replica's process group, or HSGD's two
levels: ``reduce`` to the node leader in the node subgroup, ``all_reduce`` among the leaders,
``broadcast`` back inside the node, so only N ranks talk across nodes. The loss and each device's
compute seconds travel in the same all-reduce, so every device of the replica learns them.

Sums across replicas (DASO) go between the replicas' leaders with ``async_op=True``; the leader
broadcasts the arrived sum inside its replica when the strategy waits for it. The clock is this
actor's wall time spent in steps; the run's clock is the driver's (slowest rank per step).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from predictor.types import Config
from worker.ray_backend.actor import WorkerContext
from worker.ray_backend.distributed import new_groups
from worker.strategies.cluster import (
    Cluster,
    GradientStep,
    ParameterServer,
    PendingSum,
    Read,
    Reduce,
    assign_gradients,
)
from worker.workloads import Workload


@dataclass(frozen=True)
class Partition:
    """This rank's place among ``count`` equal, contiguous replicas, and their process groups."""

    count: int
    size: int  # devices per replica
    replica: int  # the replica this rank belongs to
    position: int  # this rank's place in it; 0 is the replica's leader
    group: Any  # the replica's process group (None: the whole world)
    leaders: Any  # the group of every replica's leader (None on other ranks and with one replica)

    @property
    def leader(self) -> int:
        return self.replica * self.size


def partition(context: WorkerContext, count: int) -> Partition:
    """The partition into ``count`` replicas, its groups made once per actor (on every rank alike:
    ``new_group`` is collective). One replica uses the world; one per node the node subgroups."""
    world = context.world_size
    if count < 1 or world % count:
        raise ValueError(f"replicas={count!r} must divide the {world} devices")
    cache = context.state.setdefault("partitions", {})
    if count not in cache:
        size = world // count
        members = [list(range(r * size, (r + 1) * size)) for r in range(count)]
        if count == 1:
            group, leaders = None, None
        elif size == context.layout.devices_per_node:
            group, leaders = context.node_group, context.leader_group
        else:
            group = new_groups(context, members)
            leaders = new_groups(context, [[m[0] for m in members]])
        cache[count] = Partition(count, size, context.rank // size, context.rank % size, group, leaders)
    return cache[count]


class RankSum(PendingSum):
    """A sum among the replicas' leaders in flight (leaders hold ``total`` and the work handle)."""

    def __init__(self, cluster: RankCluster, total: torch.Tensor | None, work: Any, numel: int) -> None:
        self.cluster, self.total, self.work, self.numel = cluster, total, work, numel

    def _arrive(self) -> None:
        if self.work is not None:
            self.work.wait()
            self.work = None

    def wait(self) -> torch.Tensor:
        self._arrive()
        part = self.cluster.partition
        if part.count == 1 or part.size == 1:
            return self.total
        buffer = self.total if part.position == 0 else torch.empty(self.numel, device=self.cluster.device)
        dist.broadcast(buffer, part.leader, group=part.group)
        return buffer

    def state(self) -> dict[str, Any]:
        self._arrive()  # a checkpoint holds the arrived sum (its value does not depend on when)
        return {"total": None if self.total is None else self.total.cpu(), "numel": self.numel}


class RankCluster(Cluster):
    def __init__(self, context: WorkerContext, config: Config, workload: Workload) -> None:
        if context.world_size != config.devices:
            raise ValueError(f"config uses {config.devices} devices but the worker group has "
                             f"{context.world_size}")
        self.context, self.config, self.workload = context, config, workload
        self.device = context.device
        self.elapsed = 0.0  # wall seconds of this rank's steps, added by the run loop
        self.reduce: Reduce = "ring"
        self._partition: Partition | None = None

    @property
    def partition(self) -> Partition:
        if self._partition is None:
            raise RuntimeError("no replicas yet: the strategy calls replicas(count) first")
        return self._partition

    def replicas(self, count: int, *, reduce: Reduce = "ring", read: Read | None = None) -> list[int]:
        """``read`` is not modelled: the samples are in memory (what HSGD reads differs, and
        the strategy's indices say so)."""
        if reduce == "hierarchical" and count != 1:
            raise ValueError(f"reduce='hierarchical' needs one replica over every device, not {count}")
        self._partition = partition(self.context, count)
        self.reduce = reduce
        return [self._partition.replica]

    def gradient(
        self, model: torch.nn.Module, index: torch.Tensor, *, replica: int, sizes: list[int] | None = None
    ) -> GradientStep:
        part = self.partition
        if replica != part.replica:
            raise ValueError(
                f"replica={replica!r} is not on rank {self.context.rank} (its replica: {part.replica})"
            )
        sizes = sizes or [len(index) // part.size] * part.size
        start = sum(sizes[: part.position])
        x, y = self.workload.train_batch(index[start : start + sizes[part.position]])
        x, y = x.to(self.device), y.to(self.device)
        params = list(model.parameters())
        begin = time.perf_counter()
        loss = self.workload.loss_fn(model(x), y) * (sizes[part.position] / len(index))
        grads = torch.autograd.grad(loss, params)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        seconds = torch.zeros(part.size, device=self.device)
        seconds[part.position] = time.perf_counter() - begin
        payload = torch.cat([*(g.reshape(-1) for g in grads), loss.detach().reshape(1), seconds])
        if self.reduce == "hierarchical":
            self._hierarchical_sum(payload)
        elif part.size > 1:
            dist.all_reduce(payload, group=part.group)
        count = payload.numel() - part.size - 1
        assign_gradients(params, payload[:count])
        return GradientStep(float(payload[count]), payload[count + 1 :].double().cpu().numpy())

    def _hierarchical_sum(self, payload: torch.Tensor) -> None:
        """HSGD's reduction: node sum at the leader, all-reduce among leaders, node broadcast."""
        context = self.context
        leader = context.node * context.layout.devices_per_node
        per_node = context.layout.devices_per_node > 1
        if per_node:
            dist.reduce(payload, leader, group=context.node_group)  # 1. node sum at the leader
        if context.leader_group is not None and context.layout.nodes > 1:
            dist.all_reduce(payload, group=context.leader_group)  # 2. sum across node leaders
        if per_node:
            dist.broadcast(payload, leader, group=context.node_group)  # 3. back inside the node

    def start_sum(self, tensors: dict[int, torch.Tensor]) -> PendingSum:
        part = self.partition
        (tensor,) = tensors.values()
        if part.count == 1:  # the only replica: its sum is itself, on every rank already
            return RankSum(self, tensor.detach().clone(), None, tensor.numel())
        total, work = None, None
        if part.position == 0:  # leaders talk across replicas
            total = tensor.detach().clone()
            work = dist.all_reduce(total, group=part.leaders, async_op=True)
        return RankSum(self, total, work, tensor.numel())

    def restore_sum(self, state: dict[str, Any]) -> PendingSum:
        total = state["total"]
        return RankSum(self, None if total is None else total.to(self.device), None, int(state["numel"]))

    def sum_over_replicas(self, value: torch.Tensor) -> torch.Tensor:
        total = value.to(self.device).clone()
        dist.all_reduce(total)  # every device holds its replica's value: each counted size times
        return (total / self.partition.size).cpu()

    def parameter_server(self, groups: int) -> ParameterServer:
        raise NotImplementedError("on Ray the parameter server runs in the driver (ServerCluster)")

    @property
    def clock(self) -> float:
        return self.elapsed

    def checkpoint(self) -> dict[str, Any]:
        return {"backend": "ray", "elapsed": self.elapsed}

    def restore(self, state: dict[str, Any]) -> None:
        if state.get("backend") != "ray":
            raise ValueError(f"checkpoint backend={state.get('backend')!r} cannot resume on 'ray'")
        self.elapsed = float(state["elapsed"])
