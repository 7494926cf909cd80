"""``daso`` (Coquelin et al., J. Big Data 2022, arXiv 2104.05588; Heat ``heat/optim/dp_optimizer.py``).

Distributed Asynchronous and Selective Optimization: the D devices of a node all-reduce gradients
every step over the fast intra-node link, so a node is one model replica (its D·b samples are
computed as one batch, exact without batch norm). Every ``global_skip`` steps the N replicas start
a non-blocking parameter all-reduce across nodes; ``batches_to_wait`` = S steps later each node
merges the (now stale) sum with its own, newer parameters, weighting its own copy by 2S:

    p ← (2S·p_local + Σ_j p_j) / (2S + N)          (S = 0: a blocking plain average)

The first ``warmup_epochs`` and last ``cooldown_epochs`` (when ``total_epochs`` or
``total_iterations`` is given) sync
globally and blocking every step; in between, the skip schedule follows the epoch loss: on a
plateau (no relative improvement ≥ ``stability_level`` for 3 epochs) the skips are halved, and a
plateau with skips already at 1 resets them to ``max_global_skips``; the epoch loss is the mean
over every replica's local steps, so every node takes the same decisions and the leaders'
collectives stay matched. Steps are counted, not timed, so the trajectory is the same on every
backend; only the clock shows how much of the network time hid behind the S local steps (the
simulated backend keeps one clock per node, and a node waits for a global sum only at its merge).
The evaluated ``model`` is node 0's replica, what rank 0 of a real job would report.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from predictor.daso_defaults import COOLDOWN_EPOCHS, MAX_GLOBAL_SKIPS, STABILITY_LEVEL, WARMUP_EPOCHS
from worker.strategies.base import Strategy
from worker.strategies.cluster import Cluster, PendingSum


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

    The constructor takes the knobs; the fields it does not take are where the schedule stands.
    ``global_skip == 0`` means a blocking global sync every step.
    """

    max_global_skips: int = MAX_GLOBAL_SKIPS
    warmup_epochs: int = WARMUP_EPOCHS
    cooldown_epochs: int = COOLDOWN_EPOCHS
    stability_level: float = STABILITY_LEVEL
    total_epochs: int | None = None
    global_skip: int = field(default=0, init=False)
    batches_to_wait: int = field(default=0, init=False)
    epoch: int = field(default=0, init=False)
    steps_since_sync: int = field(default=0, init=False)
    plateau: Plateau = field(init=False)

    @classmethod
    def from_options(cls, options: dict[str, Any], epoch_iterations: float | None = None) -> SkipSchedule:
        """The schedule a config's ``options`` ask for, Heat's defaults for what they leave out.

        ``total_iterations`` (how long the run is planned to be: a plan sets it from its predicted
        iterations) is converted to epochs with ``epoch_iterations``, so the cooldown — Heat's
        last ``cooldown_epochs`` of blocking syncs — triggers in a run to a target, whose length
        in epochs nobody states up front.
        """
        total = options.get("total_epochs")
        if total is None and options.get("total_iterations") is not None and epoch_iterations:
            total = math.ceil(float(options["total_iterations"]) / epoch_iterations)
        return cls(
            max_global_skips=int(options.get("max_global_skips", MAX_GLOBAL_SKIPS)),
            warmup_epochs=int(options.get("warmup_epochs", WARMUP_EPOCHS)),
            cooldown_epochs=int(options.get("cooldown_epochs", COOLDOWN_EPOCHS)),
            stability_level=float(options.get("stability_level", STABILITY_LEVEL)),
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

    def state(self) -> dict[str, Any]:
        """Where the schedule stands (its knobs come from the config's options)."""
        state = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if not f.init}
        return state | {"plateau": dataclasses.asdict(self.plateau)}

    def load_state(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, Plateau(**value) if name == "plateau" else int(value))

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
class PendingSync:
    """A global parameter all-reduce in flight, merged at local step ``merge_at``."""

    total: PendingSum
    batches_to_wait: int
    merge_at: int


class DasoStrategy(Strategy):
    name = "daso"

    def __init__(self, cluster: Cluster, seed: int) -> None:
        super().__init__(cluster, seed)
        epoch = self.workload.train_size / self.config.global_batch
        self.schedule = SkipSchedule.from_options(self.config.options, epoch)
        self.pending: list[PendingSync] = []
        self.epoch = 0
        self.epoch_loss = torch.zeros(2, dtype=torch.float64)  # (Σ replica losses, count) this epoch

    def _replica_ids(self) -> list[int]:
        return self.cluster.replicas(self.config.nodes)  # one replica per node

    def step(self) -> None:
        self._local_steps()
        self.iteration += 1
        self.schedule.after_local_step(self.config.nodes, self._merge_due, self._send)
        if self.sampler.epoch > self.epoch:
            self.epoch = self.sampler.epoch
            totals = self.cluster.sum_over_replicas(self.epoch_loss)
            self.schedule.end_epoch(float(totals[0] / totals[1]))
            self.epoch_loss.zero_()

    def _local_steps(self) -> None:
        """Every node: its D·b of the step's samples, intra-node gradient all-reduce, local update."""
        index = self.sampler.next(self.config.global_batch)
        per_node = self.config.devices_per_node * self.config.batch_size
        for node, model in self.models.items():
            local = self.cluster.gradient(model, index[node * per_node : (node + 1) * per_node], replica=node)
            self.optimizers[node].step()
            self.epoch_loss += torch.tensor([local.loss, 1.0], dtype=torch.float64)

    @torch.no_grad()
    def _send(self, batches_to_wait: int) -> None:
        """Start the global all-reduce of every node's parameters across the node leaders."""
        flats = {node: parameters_to_vector(m.parameters()).detach() for node, m in self.models.items()}
        total = self.cluster.start_sum(flats)
        self.pending.append(PendingSync(total, batches_to_wait, self.iteration + batches_to_wait))

    @torch.no_grad()
    def _merge_due(self) -> None:
        while self.pending and self.pending[0].merge_at <= self.iteration:
            sync = self.pending.pop(0)
            total = sync.total.wait()
            for model in self.models.values():
                local = parameters_to_vector(model.parameters())
                vector_to_parameters(merge(local, total, self.config.nodes, sync.batches_to_wait),
                                     model.parameters())

    def _state(self) -> dict[str, Any]:
        return {
            "schedule": self.schedule.state(),
            "pending": [{"total": p.total.state(), "batches_to_wait": p.batches_to_wait,
                         "merge_at": p.merge_at} for p in self.pending],
            "epoch": self.epoch,
            "epoch_loss": self.epoch_loss.clone(),
        }

    def _load_state(self, state: dict[str, Any]) -> None:
        self.schedule.load_state(state["schedule"])
        self.pending = [
            PendingSync(self.cluster.restore_sum(p["total"]), int(p["batches_to_wait"]), int(p["merge_at"]))
            for p in state["pending"]
        ]
        self.epoch = int(state["epoch"])
        self.epoch_loss = state["epoch_loss"].clone()
