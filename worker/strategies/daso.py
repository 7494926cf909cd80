"""``daso`` (Coquelin et al., J. Big Data 2022, arXiv 2104.05588; Heat ``heat/optim/dp_optimizer.py``).

Distributed Asynchronous and Selective Optimization: the D devices of a node all-reduce gradients
every step over the fast intra-node link, so a node is one model replica (its D·b samples are
computed as one batch, exact without batch norm). Every ``global_skip`` steps the N replicas start
a non-blocking parameter all-reduce across nodes; ``batches_to_wait`` = S steps later each node
merges the (now stale) sum with its own, newer parameters, weighting its own copy by 2S:

    p ← (2S·p_local + Σ_j p_j) / (2S + N)          (S = 0: a blocking plain average)

The first ``warmup_epochs`` and last ``cooldown_epochs`` (when ``total_epochs`` is given) sync
globally and blocking every step; in between, the skip schedule follows the epoch loss: on a
plateau (no relative improvement ≥ ``stability_level`` for 3 epochs) the skips are halved, and a
plateau with skips already at 1 resets them to ``max_global_skips``. Time: each node keeps its own
clock; a global all-reduce completes when the slowest node has joined it plus its network time,
and a node only waits for it at the merge — so the network time hides behind S local steps.
The evaluated ``model`` is node 0's replica, what rank 0 of a real job would report.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from predictor.types import Config
from worker.optim import make_optimizer
from worker.simulated.hardware import Hardware
from worker.strategies.base import Strategy
from worker.workloads import Workload


@dataclass
class Plateau:
    """Heat's ``DetectMetricPlateau`` (mode min, relative threshold): True after > patience bad epochs."""

    threshold: float
    patience: int = 2
    best: float = math.inf
    bad_epochs: int = 0

    def test(self, loss: float) -> bool:
        if loss < self.best * (1 - self.threshold):
            self.best, self.bad_epochs = loss, 0
        else:
            self.bad_epochs += 1
        if self.bad_epochs > self.patience:
            self.bad_epochs = 0
            return True
        return False

    def reset(self) -> None:
        self.best, self.bad_epochs = math.inf, 0


@dataclass
class SkipSchedule:
    """DASO's global-skip / batches-to-wait schedule, stepped once per epoch (Heat's ``epoch_loss_logic``).

    ``global_skip == 0`` means a blocking global sync every step.
    """

    max_global_skips: int = 8
    warmup_epochs: int = 4
    cooldown_epochs: int = 4
    stability_level: float = 0.05
    total_epochs: int | None = None
    global_skip: int = 0
    batches_to_wait: int = 0
    epoch: int = 0
    steps_since_sync: int = 0
    plateau: Plateau = field(init=False)

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> SkipSchedule:
        """The schedule a config's ``options`` ask for, Heat's defaults for what they leave out."""
        total = options.get("total_epochs")
        return cls(
            max_global_skips=int(options.get("max_global_skips", 8)),
            warmup_epochs=int(options.get("warmup_epochs", 4)),
            cooldown_epochs=int(options.get("cooldown_epochs", 4)),
            stability_level=float(options.get("stability_level", 0.05)),
            total_epochs=None if total is None else int(total),
        )

    def __post_init__(self) -> None:
        if self.max_global_skips < 1:
            raise ValueError(f"max_global_skips={self.max_global_skips!r} must be >= 1")
        if self.warmup_epochs < 0 or self.cooldown_epochs < 0:
            raise ValueError("warmup_epochs and cooldown_epochs must be >= 0")
        self.plateau = Plateau(self.stability_level)
        if self.warmup_epochs == 0:
            self._start_skipping()

    def _start_skipping(self) -> None:
        self.global_skip = max(1, self.max_global_skips // 2)  # Heat: 4 of at most 8
        self.batches_to_wait = max(1, self.global_skip // 2)

    def sync_due(self) -> bool:
        """Count one local step; True when a global sync starts now (every step while blocking)."""
        self.steps_since_sync += 1
        if self.global_skip == 0 or self.steps_since_sync >= self.global_skip:
            self.steps_since_sync = 0
            return True
        return False

    def after_local_step(
        self, nodes: int, merge_due: Callable[[], None], send: Callable[[int], None]
    ) -> None:
        """DASO's order after each node-local step, on every backend: merge the global averages
        now due; when a global sync is due, start it (``send(batches_to_wait)``) and merge again,
        which completes it at once when it is blocking (``batches_to_wait`` 0)."""
        if nodes > 1:
            merge_due()
            if self.sync_due():
                send(self.batches_to_wait)
                merge_due()

    def end_epoch(self, loss: float) -> None:
        """Record the epoch's mean training loss and set the skips for the next epoch."""
        self.epoch += 1
        if self.epoch < self.warmup_epochs:
            return
        if self.epoch == self.warmup_epochs:
            self._start_skipping()
        if self.total_epochs is not None and self.epoch >= self.total_epochs - self.cooldown_epochs:
            self.global_skip = self.batches_to_wait = 0
            return
        stable = self.plateau.test(loss)
        if stable and self.global_skip > 1:
            self.global_skip //= 2
            self.batches_to_wait = max(1, self.batches_to_wait - 1)
            self.plateau.reset()
        elif stable and self.global_skip == 1:
            self.global_skip = self.max_global_skips
            self.batches_to_wait = self.max_global_skips // 4 + 1
            self.plateau.reset()


def merge(local: torch.Tensor, received_sum: torch.Tensor, nodes: int, batches_waited: int) -> torch.Tensor:
    """p ← (2S·p_local + Σ_j p_j)/(2S + N); a plain average Σ_j p_j / N when S = 0."""
    if batches_waited == 0:
        return received_sum / nodes
    weight = 2.0 * batches_waited
    return (weight * local + received_sum) / (weight + nodes)


@dataclass
class _Pending:
    """A global all-reduce in flight: the sum of every node's parameters when it was sent."""

    sums: list[torch.Tensor]
    batches_to_wait: int
    merge_at: int  # local step at which nodes merge it
    done_at: float  # cluster seconds when the network has delivered it


class DasoStrategy(Strategy):
    name = "daso"

    def __init__(self, config: Config, workload: Workload, hardware: Hardware, seed: int) -> None:
        super().__init__(config, workload, hardware, seed)
        self.schedule = SkipSchedule.from_options(config.options)
        self.replicas = [self.model] + [copy.deepcopy(self.model) for _ in range(config.nodes - 1)]
        self.optimizers = [self.optimizer] + [
            make_optimizer(replica.parameters(), config) for replica in self.replicas[1:]
        ]
        self.node_clock = [0.0] * config.nodes
        self.pending: list[_Pending] = []
        self.epoch_losses: list[float] = []
        self.epoch = 0

    def _node_devices(self, node: int) -> list[int]:
        per_node = self.config.devices_per_node
        return self.devices[node * per_node : (node + 1) * per_node]

    def _local_steps(self) -> None:
        """Every node: D·b samples, intra-node gradient all-reduce (overlapped), local update."""
        config, hardware = self.config, self.hardware
        x, y = self.batch(config.global_batch)
        per_node = config.devices_per_node * config.batch_size
        local_reduce = hardware.ring_allreduce_seconds(config.devices_per_node, spans_nodes=False)
        losses = []
        for node, (replica, optimizer) in enumerate(zip(self.replicas, self.optimizers, strict=True)):
            part = slice(node * per_node, (node + 1) * per_node)
            optimizer.zero_grad(set_to_none=True)
            loss = self.workload.loss_fn(replica(x[part]), y[part])
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
            devices = self._node_devices(node)
            compute = hardware.compute_seconds([config.batch_size] * len(devices), devices)
            self.node_clock[node] += hardware.overlapped_seconds(float(compute.max()), local_reduce)
        self.epoch_losses.append(sum(losses) / len(losses))

    @torch.no_grad()
    def _send(self, batches_to_wait: int) -> None:
        """Start the global all-reduce of parameters across the node leaders."""
        hardware, nodes = self.hardware, self.config.nodes
        per_param = zip(*(replica.parameters() for replica in self.replicas), strict=True)
        sums = [torch.stack([p.detach() for p in group]).sum(0) for group in per_param]
        network = hardware.ring_allreduce_seconds(nodes, spans_nodes=True)
        network += hardware.transfer_seconds(spans_nodes=False)  # leader broadcasts inside its node
        done_at = max(self.node_clock) + network
        self.pending.append(_Pending(sums, batches_to_wait, self.iteration + batches_to_wait, done_at))

    @torch.no_grad()
    def _merge_due(self) -> None:
        nodes = self.config.nodes
        while self.pending and self.pending[0].merge_at <= self.iteration:
            pending = self.pending.pop(0)
            for node, replica in enumerate(self.replicas):
                for param, total in zip(replica.parameters(), pending.sums, strict=True):
                    param.copy_(merge(param, total, nodes, pending.batches_to_wait))
                self.node_clock[node] = max(self.node_clock[node], pending.done_at)

    def step(self) -> None:
        self._local_steps()
        self.iteration += 1
        self.schedule.after_local_step(self.config.nodes, self._merge_due, self._send)
        self.clock = max(self.node_clock)
        if self.sampler.epoch > self.epoch:
            self.epoch = self.sampler.epoch
            self.schedule.end_epoch(sum(self.epoch_losses) / len(self.epoch_losses))
            self.epoch_losses.clear()
