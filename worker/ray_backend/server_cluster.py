"""The cluster a parameter-server strategy (``async_groups``) sees in the Ray driver.

The strategy's global model and optimizer live in the driver process, which is Omnivore's
server; the groups' replicas are device actors behind a
:class:`~worker.ray_backend.parameter_server.RayParameterServer`. The driver itself holds no
device replica, so the replica collectives are not available here.
"""

from __future__ import annotations

from typing import Any

import torch

from predictor.types import Config
from worker.ray_backend.parameter_server import RayParameterServer
from worker.ray_backend.worker_group import WorkerGroup
from worker.strategies.cluster import Cluster, GradientStep, PendingSum
from worker.workloads import Workload

NO_REPLICA = "the Ray driver holds no device replica, only a parameter-server strategy's global model"


class ServerCluster(Cluster):
    def __init__(self, config: Config, workload: Workload, workers: WorkerGroup) -> None:
        self.config, self.workload, self.workers = config, workload, workers
        self.device = torch.device("cpu")
        self.server: RayParameterServer | None = None

    def parameter_server(self, groups: int) -> RayParameterServer:
        self.server = RayParameterServer(self.workers, groups)
        return self.server

    @property
    def clock(self) -> float:
        return 0.0 if self.server is None else self.server.clock

    def checkpoint(self) -> dict[str, Any]:
        return {"backend": "ray-server", "server": None if self.server is None else self.server.state()}

    def restore(self, state: dict[str, Any]) -> None:
        if state.get("backend") != "ray-server":
            raise ValueError(f"checkpoint backend={state.get('backend')!r} cannot resume on 'ray-server'")
        if (state["server"] is None) != (self.server is None):
            raise ValueError("checkpoint and run disagree on having a parameter server")
        if self.server is not None:
            self.server.load_state(state["server"])

    def replicas(self, count: int, **_: Any) -> list[int]:
        raise NotImplementedError(NO_REPLICA)

    def gradient(self, model: torch.nn.Module, index: torch.Tensor, **_: Any) -> GradientStep:
        raise NotImplementedError(NO_REPLICA)

    def start_sum(self, tensors: dict[int, torch.Tensor]) -> PendingSum:
        raise NotImplementedError(NO_REPLICA)

    def restore_sum(self, state: dict[str, Any]) -> PendingSum:
        raise NotImplementedError(NO_REPLICA)

    def sum_over_replicas(self, value: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(NO_REPLICA)
