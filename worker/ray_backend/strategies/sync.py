"""``sync`` on Ray: PyTorch DDP inside each device actor (bucketed ring all-reduce of gradients).

DDP averages gradients over the W replicas; each replica's loss is the mean over its b samples,
so the update equals the simulated backend's single step on W·b samples (no batch norm).
"""

from __future__ import annotations

from torch.nn.parallel import DistributedDataParallel

from predictor.types import Config
from worker.ray_backend.actor import WorkerContext
from worker.ray_backend.strategies.base import SteppedWorker
from worker.workloads import Workload


class SyncWorker(SteppedWorker):
    name = "sync"

    def __init__(self, context: WorkerContext, workload: Workload, config: Config, seed: int) -> None:
        super().__init__(context, workload, config, seed)
        device_ids = [context.device.index] if context.device.type == "cuda" else None
        self.replica = DistributedDataParallel(self.model, device_ids=device_ids)

    def train_step(self) -> None:
        x, y = self.next_shard()
        self.optimizer.zero_grad(set_to_none=True)
        self.workload.loss_fn(self.replica(x), y).backward()
        self.optimizer.step()
