"""``sync``: every device computes b samples, gradients are ring all-reduced, one update (DDP).

W workers × b samples with averaged gradients equal one step on W·b samples for models without
batch norm, so the simulator computes a single batch of W·b (DESIGN.md §5). The all-reduce
overlaps the backward pass as DDP's gradient buckets do.
"""

from __future__ import annotations

from worker.strategies.base import Strategy


class SyncStrategy(Strategy):
    name = "sync"

    def step(self) -> None:
        config = self.config
        x, y = self.batch(config.batch_size * config.devices)
        self.optimizer.zero_grad(set_to_none=True)
        self.workload.loss_fn(self.model(x), y).backward()
        self.optimizer.step()
        compute = self.hardware.compute_seconds([config.batch_size] * config.devices, self.devices)
        communicate = self.hardware.flat_allreduce_seconds(config.nodes, config.devices_per_node)
        self.clock += self.hardware.overlapped_seconds(float(compute.max()), communicate)
        self.iteration += 1
