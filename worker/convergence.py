"""The one convergence rule shared by probes and runs (DESIGN.md §7 *Time and counts*).

The metric is evaluated on a fixed set every ``eval_every`` iterations (and at iteration 0).
The target counts as reached at the first evaluation whose loss is ≤ target *and* whose next
evaluation is also ≤ target; TTC is the cluster clock at that first evaluation. Confirming with
one more evaluation rejects single noisy dips without the lag of a moving average.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from worker.workloads import Workload

EVAL_SAMPLES = 1024
DIVERGENCE_FACTOR = 3.0


class Evaluator:
    """Mean loss of the global model on a fixed, seed-independent set of samples.

    The set (the first ``EVAL_SAMPLES`` of the split) is read once, so a dataset-backed workload
    pays its loading cost at construction, not at every evaluation.
    """

    def __init__(self, workload: Workload, metric: str) -> None:
        if metric == "train_loss":
            self.x, self.y = workload.train_batch(torch.arange(min(EVAL_SAMPLES, workload.train_size)))
        else:
            self.x, self.y = workload.eval_batch(torch.arange(min(EVAL_SAMPLES, workload.eval_size)))
        self.loss_fn = workload.loss_fn

    @torch.no_grad()
    def __call__(self, model: torch.nn.Module) -> float:
        return float(self.loss_fn(model(self.x), self.y))


@dataclass
class ConvergenceRule:
    target: float
    candidate: tuple[int, float] | None = None  # (iteration, seconds) of an unconfirmed crossing
    reached: tuple[int, float] | None = None
    initial_loss: float | None = None
    diverged: bool = False

    def observe(self, iteration: int, seconds: float, loss: float) -> bool:
        """Record one evaluation; True when training should stop (confirmed or diverged)."""
        if self.initial_loss is None:
            self.initial_loss = loss
        if not math.isfinite(loss) or loss > DIVERGENCE_FACTOR * self.initial_loss + 1.0:
            self.diverged = True
            return True
        if loss <= self.target:
            if self.candidate is not None:
                self.reached = self.candidate
                return True
            self.candidate = (iteration, seconds)
        else:
            self.candidate = None
        return False
