"""``daso`` on Ray (Coquelin et al., J. Big Data 2022; Heat ``dp_optimizer.py``): local sync, global rarely.

Every step each device trains on its slice of the node's D·b samples and the node's gradients
are all-reduced (mean) in the **node subgroup**, so the D devices of a node hold one replica.
Every ``global_skip`` steps the node leaders start a parameter all-reduce (sum) in the **leader
subgroup** with ``async_op=True`` and carry on training; ``batches_to_wait`` = S steps later the
leader waits on the handle, merges with :func:`worker.strategies.daso.merge`,

    p ← (2S·p_local + Σ_j p_j) / (2S + N)          (S = 0: blocking plain average)

and broadcasts the result inside its node. The skip schedule is the simulated strategy's
:class:`~worker.strategies.daso.SkipSchedule`, fed at every epoch end with the mean training loss
over all devices (a world all-reduce), so every rank takes the same schedule decisions and the
leaders' collectives stay matched. Steps are counted, not timed, so the trajectory is the
simulated one; only the wall clock shows how much of the network time hid behind local steps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.utils import parameters_to_vector, vector_to_parameters

from predictor.types import Config
from worker.ray_backend.actor import WorkerContext
from worker.ray_backend.strategies.base import SteppedWorker, assign_gradients
from worker.strategies.daso import SkipSchedule, merge
from worker.workloads import Workload


@dataclass
class _Pending:
    """A global all-reduce in flight; ``sums``/``handle`` only on leaders (others just receive)."""

    sums: torch.Tensor | None
    handle: Any
    batches_to_wait: int
    merge_at: int


class DasoWorker(SteppedWorker):
    name = "daso"

    def __init__(self, context: WorkerContext, workload: Workload, config: Config, seed: int) -> None:
        super().__init__(context, workload, config, seed)
        self.schedule = SkipSchedule.from_options(config.options)
        self.leader = context.node * context.topology.devices_per_node
        self.pending: list[_Pending] = []
        self.iteration = 0
        self.epoch = 0
        self.epoch_loss = torch.zeros(2, dtype=torch.float64)  # (Σ losses, steps) on this device

    def train_step(self) -> None:
        self._local_step()
        self.iteration += 1
        self.schedule.after_local_step(self.config.nodes, self._merge_due, self._send)
        if self.sampler.epoch > self.epoch:
            self.epoch = self.sampler.epoch
            totals = self.epoch_loss.clone()
            dist.all_reduce(totals)  # the same mean loss on every rank: the same schedule everywhere
            self.schedule.end_epoch(float(totals[0] / totals[1]))
            self.epoch_loss.zero_()

    def _local_step(self) -> None:
        """Slice of the node's D·b samples, node-subgroup gradient mean, local update."""
        x, y = self.next_shard()
        params = list(self.model.parameters())
        loss = self.workload.loss_fn(self.model(x), y)
        grads = torch.autograd.grad(loss, params)
        flat = torch.cat([g.reshape(-1) for g in grads])
        dist.all_reduce(flat, group=self.context.node_group)
        flat /= self.context.topology.devices_per_node
        assign_gradients(params, flat)
        self.optimizer.step()
        self.epoch_loss += torch.tensor([float(loss.detach()), 1.0], dtype=torch.float64)

    @torch.no_grad()
    def _send(self, batches_to_wait: int) -> None:
        """Leaders start the non-blocking Σ_j p_j of this step's parameters across nodes."""
        sums, handle = None, None
        if self.context.leader_group is not None:
            sums = parameters_to_vector(self.model.parameters()).detach().clone()
            handle = dist.all_reduce(sums, group=self.context.leader_group, async_op=True)
        self.pending.append(_Pending(sums, handle, batches_to_wait, self.iteration + batches_to_wait))

    @torch.no_grad()
    def _merge_due(self) -> None:
        while self.pending and self.pending[0].merge_at <= self.iteration:
            pending = self.pending.pop(0)
            params = list(self.model.parameters())
            merged = torch.empty_like(parameters_to_vector(params))
            if pending.handle is not None:
                pending.handle.wait()
                local = parameters_to_vector(params)
                merged = merge(local, pending.sums, self.config.nodes, pending.batches_to_wait)
            dist.broadcast(merged, self.leader, group=self.context.node_group)
            vector_to_parameters(merged, params)
