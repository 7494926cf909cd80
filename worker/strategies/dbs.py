"""``dbs``: dynamic batch size (Ye et al., arXiv 2007.11831).

Synchronous data parallelism where worker i computes a batch b_i proportional to its measured
speed, so fast and slow workers finish together; the global batch B stays fixed. After every
rebalance period (default one epoch), from each worker's measured compute seconds t_i:

    r_i ← (r_i / t_i) / Σ_j (r_j / t_j),     b_i = r_i·B rounded by largest remainder

Gradients are weighted by share b_i/B, which makes the sum the mean over all B samples — so the
simulator computes one batch of B (exact without batch norm, DESIGN.md §5).
"""

from __future__ import annotations

import math

import numpy as np

from predictor.types import Config
from worker.simulated.hardware import Hardware
from worker.strategies.base import Strategy
from worker.workloads import Workload


def rebalance_shares(shares: np.ndarray, seconds: np.ndarray) -> np.ndarray:
    """r_i ← (r_i/t_i)/Σ_j(r_j/t_j): each worker's new share is its measured throughput share."""
    speed = shares / seconds
    return speed / speed.sum()


def integer_batches(shares: np.ndarray, total: int) -> list[int]:
    """Split ``total`` samples by ``shares`` (largest remainder), at least one sample per worker."""
    if total < len(shares):
        raise ValueError(f"global batch {total} is smaller than the {len(shares)} workers")
    exact = shares * total
    batches = np.floor(exact).astype(int)
    for i in np.argsort(-(exact - batches), kind="stable")[: total - batches.sum()]:
        batches[i] += 1
    while (batches < 1).any():  # every worker keeps computing, so its speed stays measured
        batches[np.argmax(batches)] -= 1
        batches[np.argmin(batches)] += 1
    return batches.tolist()


class DbsStrategy(Strategy):
    name = "dbs"

    def __init__(self, config: Config, workload: Workload, hardware: Hardware, seed: int) -> None:
        super().__init__(config, workload, hardware, seed)
        default_period = math.ceil(workload.train_size / config.global_batch)
        self.rebalance_every = int(config.options.get("rebalance_every", default_period))
        if self.rebalance_every < 1:
            raise ValueError(f"options.rebalance_every={self.rebalance_every!r} must be >= 1")
        self.shares = np.full(config.devices, 1.0 / config.devices)
        self.batches = integer_batches(self.shares, config.global_batch)
        self.measured = np.zeros(config.devices)

    def step(self) -> None:
        config, hardware = self.config, self.hardware
        x, y = self.batch(config.global_batch)  # worker i takes the next b_i of these samples
        self.optimizer.zero_grad(set_to_none=True)
        self.workload.loss_fn(self.model(x), y).backward()
        self.optimizer.step()
        compute = hardware.compute_seconds(self.batches, self.devices)
        self.measured += compute
        communicate = hardware.flat_allreduce_seconds(config.nodes, config.devices_per_node)
        self.clock += hardware.overlapped_seconds(float(compute.max()), communicate)
        self.iteration += 1
        if self.iteration % self.rebalance_every == 0:
            self.shares = rebalance_shares(self.shares, self.measured)
            self.batches = integer_batches(self.shares, config.global_batch)
            self.measured[:] = 0.0
