"""Actor-side halves of the strategies on Ray, one module each."""

from worker.ray_backend.strategies.async_groups import AsyncGroupsWorker
from worker.ray_backend.strategies.base import SteppedWorker, WorkerStrategy
from worker.ray_backend.strategies.daso import DasoWorker
from worker.ray_backend.strategies.dbs import DbsWorker
from worker.ray_backend.strategies.hsgd import HsgdWorker
from worker.ray_backend.strategies.sync import SyncWorker

STEPPED: dict[str, type[SteppedWorker]] = {
    cls.name: cls for cls in (SyncWorker, DbsWorker, HsgdWorker, DasoWorker)
}

__all__ = [
    "STEPPED", "AsyncGroupsWorker", "DasoWorker", "DbsWorker", "HsgdWorker", "SteppedWorker", "SyncWorker",
    "WorkerStrategy",
]
