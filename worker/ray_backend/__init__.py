"""The real Ray backend (DESIGN.md §4): device actors, placement groups, torch.distributed."""

from worker.ray_backend.config import RayBackendConfig, collective_backend
from worker.ray_backend.placement import Topology
from worker.ray_backend.probe import ProbeFailed, run_on_ray
from worker.ray_backend.worker_group import WorkerGroup

__all__ = ["ProbeFailed", "RayBackendConfig", "Topology", "WorkerGroup", "collective_backend", "run_on_ray"]
