"""The real Ray backend (DESIGN.md §4): device actors, placement groups, torch.distributed."""

from worker.ray_backend.config import RayBackendConfig, collective_backend
from worker.ray_backend.connect import ensure_ray
from worker.ray_backend.placement import RankLayout
from worker.ray_backend.probe import ProbeFailed, run_on_ray
from worker.ray_backend.runs import RayRun, ReplicaRun, ServerRun, make_run
from worker.ray_backend.worker_group import WorkerGroup

__all__ = [
    "ProbeFailed", "RankLayout", "RayBackendConfig", "RayRun", "ReplicaRun", "ServerRun", "WorkerGroup",
    "collective_backend", "ensure_ray", "make_run", "run_on_ray",
]
