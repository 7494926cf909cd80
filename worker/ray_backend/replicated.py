"""Runs of lock-step strategies whose every device holds a replica of the model (sync-like).

The global model is rank 0's replica: identical to every other after each iteration for ``sync``,
``dbs`` and ``hsgd``; for ``daso`` it is node 0's replica between global merges, which is what the
simulated strategy evaluates too. A step's duration is the slowest rank's (the collectives make
every rank wait for it).
"""

from __future__ import annotations

from typing import Any

import torch

from worker.ray_backend.driver import RayRun
from worker.ray_backend.strategies.base import SteppedWorker, call, install
from worker.ray_backend.worker_group import WorkerGroup


class ReplicatedRun(RayRun):
    def __init__(self, worker_class: type[SteppedWorker], *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.worker_class = worker_class
        self.group = WorkerGroup(self.topology, self.backend)

    def start(self) -> None:
        self.group.start()
        self.group.execute(install, self.worker_class, self.spec, self.config, self.spec.seed)

    def shutdown(self) -> None:
        self.group.shutdown()

    def _advance(self, steps: int) -> list[float]:
        per_rank = self.group.execute(call, "run", steps)
        return [max(seconds) for seconds in zip(*per_rank, strict=True)]

    def _read_state(self) -> dict[str, torch.Tensor]:
        return self.group.execute_single(0, call, "state")

    def _sample(self, count: int) -> torch.Tensor:
        return self.group.execute(call, "skip", count)[0]

