"""``sync``: every device computes b samples, gradients are ring all-reduced, one update (DDP).

The W·b indices of a step are drawn once; device i takes slice i. Their averaged gradient is the
gradient of the mean loss over all W·b samples (no batch norm), which is what lets the simulated
backend compute the step as one batch (DESIGN.md §5). The all-reduce overlaps the backward pass
as DDP's gradient buckets do (the cluster's cost model).
"""

from __future__ import annotations

from worker.strategies.base import Strategy


class SyncStrategy(Strategy):
    name = "sync"

    def step(self) -> None:
        index = self.sampler.next(self.config.global_batch)
        self.cluster.gradient(self.model, index, replica=0)
        self.optimizer.step()
        self.iteration += 1
