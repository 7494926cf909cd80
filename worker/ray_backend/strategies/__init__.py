"""Actor-side halves of the strategies on Ray, one module each."""

from worker.ray_backend.strategies.base import WorkerStrategy
from worker.ray_backend.strategies.sync import SyncWorker

WORKERS: dict[str, type[WorkerStrategy]] = {cls.name: cls for cls in (SyncWorker,)}

__all__ = ["WORKERS", "SyncWorker", "WorkerStrategy"]
