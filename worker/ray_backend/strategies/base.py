"""The actor-side half of a strategy on Ray: one instance per device actor.

Call order: construct on every actor at once (it may create subgroups and wrap the model in
DDP, both collective), then — for lock-step strategies — ``run(steps)`` on every actor at once,
which returns each step's wall seconds on this actor (``async_groups`` instead serves a
parameter server until told to stop). ``state()`` reads the replica's parameters; ``skip(count)`` draws
``count`` indices from the sampler (every replica draws, so they stay in step).

Data: every replica holds the same seeded :class:`~worker.data.EpochSampler`; of the W·b
indices of a step, rank i trains on slice i — exactly the samples the simulated backend puts
into its single W·b batch, which is what makes the two backends comparable step for step.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from typing import ClassVar

import torch

from predictor.types import Config
from worker.data import EpochSampler
from worker.optim import make_optimizer
from worker.ray_backend.actor import WorkerContext
from worker.workloads import Workload


class WorkerStrategy:
    """The replica every strategy starts from: same seeded init, optimizer and sampler everywhere."""

    name: ClassVar[str]

    def __init__(self, context: WorkerContext, workload: Workload, config: Config, seed: int) -> None:
        self.context = context
        self.workload = workload
        self.config = config
        torch.manual_seed(seed)
        self.model = workload.build_model().to(context.device)
        self.optimizer = make_optimizer(self.model.parameters(), config)
        self.sampler = EpochSampler(workload.train_size, seed)

    def shard(
        self, index: torch.Tensor, sizes: list[int], position: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Slice ``position`` (default: this rank) of a step's indices when slice r has ``sizes[r]``."""
        position = self.context.rank if position is None else position
        start = sum(sizes[:position])
        mine = index[start : start + sizes[position]]
        device = self.context.device
        return self.workload.train_x[mine].to(device), self.workload.train_y[mine].to(device)

    def next_shard(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Slice ``rank`` of the next W·b indices (equal per-device batches)."""
        world = self.context.world_size
        return self.shard(self.sampler.next(self.config.batch_size * world), [self.config.batch_size] * world)

    def state(self) -> dict[str, torch.Tensor]:
        return {name: value.detach().cpu().clone() for name, value in self.model.state_dict().items()}

    def skip(self, count: int) -> torch.Tensor:
        return self.sampler.next(count)


class SteppedWorker(WorkerStrategy, ABC):
    """A strategy whose replicas advance in lock step, one ``train_step`` per iteration."""

    @abstractmethod
    def train_step(self) -> None:
        """One iteration of this strategy on this replica (collectives included)."""

    def run(self, steps: int) -> list[float]:
        """Run ``steps`` iterations back to back; wall seconds of each, measured on this actor."""
        seconds = []
        for _ in range(steps):
            start = time.perf_counter()
            self.train_step()
            if self.context.device.type == "cuda":
                torch.cuda.synchronize()
            seconds.append(time.perf_counter() - start)
        return seconds


def assign_gradients(params: list[torch.nn.Parameter], flat: torch.Tensor) -> None:
    """Set each parameter's ``.grad`` to its slice of a flat, reduced gradient vector."""
    offset = 0
    for param in params:
        param.grad = flat[offset : offset + param.numel()].view_as(param)
        offset += param.numel()


def install(
    context: WorkerContext, cls: type[WorkerStrategy], spec: object, config: Config, seed: int
) -> None:
    """Build this actor's replica of ``cls`` (shipped to every actor at once)."""
    from worker.probe import workload_for  # the probe module owns the per-process workload cache

    context.state["strategy"] = cls(context, workload_for(spec), config, seed)


def call(context: WorkerContext, method: str, *args: object) -> object:
    """Call a method of this actor's installed replica."""
    return getattr(context.state["strategy"], method)(*args)
