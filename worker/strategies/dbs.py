"""``dbs``: dynamic batch size (Ye et al., arXiv 2007.11831).

Synchronous data parallelism where worker i computes a batch b_i proportional to its measured
speed, so fast and slow workers finish together; the global batch B stays fixed. After every
rebalance period (default one epoch), from each worker's measured compute seconds t_i:

    r_i ← (r_i / t_i) / Σ_j (r_j / t_j),     b_i = r_i·B rounded by largest remainder

Worker i takes the next b_i of the step's B indices; gradients weighted by share b_i/B sum to the
mean over all B samples (one batch on the simulated backend, exact without batch norm). Every
device learns every device's compute seconds with the gradient reduction, so all of them compute
the same shares.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from worker.strategies.base import Strategy
from worker.strategies.cluster import Cluster


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

    def __init__(self, cluster: Cluster, seed: int) -> None:
        super().__init__(cluster, seed)
        config = self.config
        default_period = math.ceil(self.workload.train_size / config.global_batch)  # one epoch
        self.rebalance_every = int(config.options.get("rebalance_every", default_period))
        if self.rebalance_every < 1:
            raise ValueError(f"options.rebalance_every={self.rebalance_every!r} must be >= 1")
        self.shares = np.full(config.devices, 1.0 / config.devices)
        self.batches = integer_batches(self.shares, config.global_batch)
        self.measured = np.zeros(config.devices)

    def step(self) -> None:
        index = self.sampler.next(self.config.global_batch)
        measured = self.cluster.gradient(self.model, index, replica=0, sizes=self.batches)
        self.optimizer.step()
        self.measured += measured.compute_seconds
        self.iteration += 1
        if self.iteration % self.rebalance_every == 0:
            self.shares = rebalance_shares(self.shares, self.measured)
            self.batches = integer_batches(self.shares, self.config.global_batch)
            self.measured[:] = 0.0

    def _state(self) -> dict[str, Any]:
        return {"shares": self.shares.tolist(), "batches": list(self.batches),
                "measured": self.measured.tolist()}

    def _load_state(self, state: dict[str, Any]) -> None:
        self.shares = np.array(state["shares"], dtype=float)
        self.batches = [int(b) for b in state["batches"]]
        self.measured = np.array(state["measured"], dtype=float)
