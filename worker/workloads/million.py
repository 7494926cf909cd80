"""A synthetic job with a million training samples, for plans on thousands of simulated devices.

One step of 4,096 devices × b samples reads 4,096·b samples: a data set of a few thousand rows
(the other built-ins) would be walked through several times per step, which no real job on such a
cluster does. ``million-regression`` has 2^20 training samples, generated in one call from a
fixed seed (about a second and 68 MiB: 16 float32 inputs and one target per sample).
"""

from __future__ import annotations

import torch
from torch import nn

from worker.workloads.base import Workload
from worker.workloads.teacher import DATA_SEED, EVAL_SIZE, _power_law_inputs, _split

TRAIN_SIZE = 2**20
DIMS = 16
NOISE = 0.3  # label noise: the loss floor is NOISE² = 0.09


def million_regression(seed: int = 0) -> Workload:
    """16 inputs (power-law covariance, λ_i ∝ i^-1) → 32 tanh → 1, MSE on a noisy linear teacher.
    Default target: 0.11 (floor 0.09), as teacher-regression's."""
    del seed  # the job's data are fixed; the run's seed sets initialisation and sample order
    g = torch.Generator().manual_seed(DATA_SEED + 3)
    x = _power_law_inputs(TRAIN_SIZE + EVAL_SIZE, DIMS, 1.0, g)
    y = x @ torch.randn(DIMS, 1, generator=g) + NOISE * torch.randn(TRAIN_SIZE + EVAL_SIZE, 1, generator=g)

    def build() -> nn.Module:
        return nn.Sequential(nn.Linear(DIMS, 32), nn.Tanh(), nn.Linear(32, 1))

    return Workload("million-regression", build, nn.functional.mse_loss, *_split(x, y), default_target=0.11)
