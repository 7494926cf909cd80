"""The parameter server of ``async_groups`` on Ray (Omnivore): an asyncio Ray actor.

Groups call ``exchange`` without waiting for each other: it applies the group's gradient (if
any) to the global model with the run's optimizer, then hands back the current parameters and
the indices of the group's next batch. Calls are served one at a time under a lock — the
server's contention is real. The server keeps training going while the driver evaluates: it
timestamps every update and snapshots the model at every ``eval_every``-th version, so the
driver reads the model at exactly the iterations the simulated backend evaluates, and the
clock is uninterrupted wall time. It stops accepting updates at ``max_iterations``.

Resources: the server asks Ray for no CPU — one optimizer update per push is light next to the
groups' compute — so it never competes with the device actors' reservation.
"""

from __future__ import annotations

import asyncio
import time

import torch

from predictor.types import Config
from worker.data import EpochSampler
from worker.optim import make_optimizer
from worker.spec import Spec


class ParameterServer:
    def __init__(self, spec: Spec, config: Config, max_iterations: int) -> None:
        from worker.probe import workload_for

        torch.set_num_threads(1)
        workload = workload_for(spec)
        torch.manual_seed(spec.seed)
        self.model = workload.build_model()
        self.optimizer = make_optimizer(self.model.parameters(), config)
        self.sampler = EpochSampler(workload.train_size, spec.seed)
        self.group_batch = config.global_batch
        self.eval_every = spec.target.eval_every
        self.max_iterations = max_iterations
        self.version = 0
        self.finished = False
        self.started = time.perf_counter()
        self.update_times: list[float] = []
        self.snapshots = {0: self._state()}
        self._changed: asyncio.Condition | None = None

    @property
    def changed(self) -> asyncio.Condition:
        """Created on first use, inside the actor's event loop."""
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    def _state(self) -> dict[str, torch.Tensor]:
        return {name: value.detach().clone() for name, value in self.model.state_dict().items()}

    def begin(self) -> None:
        """Start the clock: the groups are about to make their first pull."""
        self.started = time.perf_counter()

    def _apply(self, gradient: torch.Tensor) -> None:
        offset = 0
        for param in self.model.parameters():
            count = param.numel()
            param.grad = gradient[offset : offset + count].view_as(param).clone()
            offset += count
        self.optimizer.step()
        self.version += 1
        self.update_times.append(time.perf_counter())
        if self.version % self.eval_every == 0 or self.version == self.max_iterations:
            self.snapshots[self.version] = self._state()

    async def exchange(self, gradient: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor] | None:
        """Apply ``gradient`` (None on a group's first pull); the new parameters and next batch.

        None tells the group to stop: the run is finished or ``max_iterations`` was reached.
        """
        async with self.changed:
            if self.finished or self.version >= self.max_iterations:
                return None
            if gradient is not None:
                self._apply(gradient)
                self.changed.notify_all()
            flat = torch.cat([p.detach().reshape(-1) for p in self.model.parameters()])
            return flat, self.sampler.next(self.group_batch)

    async def wait_version(self, since: int, version: int) -> list[float]:
        """Block until ``version`` updates were applied; the seconds of updates since+1 … version."""
        async with self.changed:
            await self.changed.wait_for(lambda: self.version >= version or self.finished)
        times = [self.started, *self.update_times]
        return [times[i + 1] - times[i] for i in range(since, min(version, self.version))]

    def snapshot(self, version: int) -> dict[str, torch.Tensor]:
        """The model right after update ``version`` (a multiple of ``eval_every``), handed out once."""
        return self.snapshots.pop(version)

    def sample(self, count: int) -> torch.Tensor:
        return self.sampler.next(count)

    async def finish(self) -> None:
        async with self.changed:
            self.finished = True
            self.changed.notify_all()
