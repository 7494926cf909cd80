"""The run of ``async_groups`` on Ray: device actors in g groups around a parameter server.

The groups loop on their own from ``start()`` until ``shutdown()``; the driver only watches the
server's version. An iteration is one update at the server (DESIGN.md §7), its seconds the wall
time since the previous update; the model at an evaluation is the server's snapshot at that
version. A group that fails (an actor dies, a collective times out) ends its loop with an
error, which the driver raises at its next wait instead of waiting for a version that will
never come. A loop that ends cleanly means the server stopped, so its versions are all there.
"""

from __future__ import annotations

from typing import Any

import ray
import torch

from worker.ray_backend.driver import RayRun
from worker.ray_backend.parameter_server import ParameterServer
from worker.ray_backend.strategies.async_groups import AsyncGroupsWorker
from worker.ray_backend.strategies.base import call, install
from worker.ray_backend.worker_group import WorkerGroup


class AsyncGroupsRun(RayRun):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.group = WorkerGroup(self.topology, self.backend)
        self.server: Any = None
        self.loops: list[ray.ObjectRef] = []

    def start(self) -> None:
        self.group.start()
        self.group.execute(install, AsyncGroupsWorker, self.spec, self.config, self.spec.seed)
        self.server = (
            ray.remote(ParameterServer)
            .options(name=f"{self.group.name}-server", num_cpus=0, max_restarts=0)
            .remote(self.spec, self.config, self.max_iterations)
        )
        ray.get(self.server.begin.remote())
        self.loops = self.group.execute_async(call, "serve", self.server)

    def shutdown(self) -> None:
        if self.server is not None:
            self.server.finish.remote()
            ray.wait(self.loops, num_returns=len(self.loops), timeout=self.backend.shutdown_grace_s)
            ray.kill(self.server, no_restart=True)
            self.server = None
        self.loops = []
        self.group.shutdown()

    def _advance(self, steps: int) -> list[float]:
        target = self.iteration + steps
        waiting = self.server.wait_version.remote(self.iteration, target)
        ready, _ = ray.wait([waiting, *self.loops], num_returns=1)
        if ready[0] is not waiting:
            # A loop ended first: with an error (raised here), or cleanly because the server
            # stopped at max_iterations — groups run ahead of the driver, so that is normal.
            ray.get(ready[0])
        seconds = ray.get(waiting)
        if len(seconds) < steps:
            raise RuntimeError(f"the server stopped at {self.iteration + len(seconds)} of {target} updates")
        return seconds

    def _read_state(self) -> dict[str, torch.Tensor]:
        return ray.get(self.server.snapshot.remote(self.iteration))

    def _sample(self, count: int) -> torch.Tensor:
        return ray.get(self.server.sample.remote(count))
