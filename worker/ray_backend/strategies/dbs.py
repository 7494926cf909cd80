"""``dbs`` on Ray (Ye et al., arXiv 2007.11831): per-actor batch sizes from measured speed.

Every replica draws the same B indices per step and takes its own contiguous slice of size b_i.
Each actor times its own forward+backward (not the all-reduce, which waits for the slowest);
after every rebalance period the actors all-gather those seconds and all compute the same new
shares with the simulated strategy's formula, r_i ← (r_i/t_i)/Σ_j(r_j/t_j). The gradient is the
share-weighted sum Σ_i (b_i/B)·∇L_i — the mean over all B samples, as on the simulated backend.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch
import torch.distributed as dist

from predictor.types import Config
from worker.ray_backend.actor import WorkerContext
from worker.ray_backend.strategies.base import SteppedWorker, assign_gradients
from worker.strategies.dbs import integer_batches, rebalance_shares
from worker.workloads import Workload


class DbsWorker(SteppedWorker):
    name = "dbs"

    def __init__(self, context: WorkerContext, workload: Workload, config: Config, seed: int) -> None:
        super().__init__(context, workload, config, seed)
        default_period = math.ceil(workload.train_size / config.global_batch)
        self.rebalance_every = int(config.options.get("rebalance_every", default_period))
        if self.rebalance_every < 1:
            raise ValueError(f"options.rebalance_every={self.rebalance_every!r} must be >= 1")
        world = context.world_size
        self.shares = np.full(world, 1.0 / world)
        self.batches = integer_batches(self.shares, config.global_batch)
        self.measured = 0.0
        self.steps = 0

    def train_step(self) -> None:
        total = self.config.global_batch
        x, y = self.shard(self.sampler.next(total), self.batches)
        params = list(self.model.parameters())
        start = time.perf_counter()
        loss = self.workload.loss_fn(self.model(x), y) * (self.batches[self.context.rank] / total)
        grads = torch.autograd.grad(loss, params)
        self.measured += time.perf_counter() - start
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat)  # Σ_i (b_i/B)·∇L_i
        assign_gradients(params, flat)
        self.optimizer.step()
        self.steps += 1
        if self.steps % self.rebalance_every == 0:
            self._rebalance()

    def _rebalance(self) -> None:
        seconds = torch.zeros(self.context.world_size, dtype=torch.float64)
        seconds[self.context.rank] = max(self.measured, 1e-9)
        dist.all_reduce(seconds)  # every rank learns every rank's compute seconds
        self.shares = rebalance_shares(self.shares, seconds.numpy())
        self.batches = integer_batches(self.shares, self.config.global_batch)
        self.measured = 0.0
