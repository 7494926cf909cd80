"""Synthetic teacher–student jobs whose loss keeps improving for thousands of updates.

Built for the long-horizon evaluation (issue 11): they train in milliseconds per step on a CPU,
yet their curves have the shapes that mislead short probes on real jobs:

* ``teacher-regression`` — a tanh-MLP teacher on inputs with a power-law covariance spectrum
  (λ_i ∝ i^-1.5), labels with Gaussian noise (σ = 0.3, floor σ² = 0.09). Ill-conditioning gives
  the slow power-law tail (the weak directions are learned last); the label noise gives SGD a
  noise floor ∝ η/B (Mandt et al., JMLR 2017), so a large step is best early and stalls late.
* ``teacher-classification`` — labels drawn from a softmax teacher (its mean entropy, 0.63 nats,
  is the Bayes floor), a ReLU MLP student: cross-entropy on noisy labels, a slow and noisy tail.
* ``plateau-committee`` — a soft committee machine (Saad & Solla, Phys. Rev. E 52, 1995): a
  student of K erf units from a small initialisation learns a teacher of K units of geometrically
  decreasing strength. The loss drops fast, sits on the symmetric plateau, escapes, then learns
  the weaker units one after another (a staircase that averages to a slow later phase).

The data are the same for every seed (a seed is one run of the same job: initialisation and
sample order), so truth runs on other seeds than the probes measure the same job.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from worker.workloads.base import Workload, cross_entropy

DATA_SEED = 20261123  # fixed: the job's data never depend on the run's seed
EVAL_SIZE = 2048


def _power_law_inputs(samples: int, dims: int, decay: float, generator: torch.Generator) -> torch.Tensor:
    """Gaussian inputs whose i-th coordinate has variance i^-decay (the largest is 1)."""
    scales = torch.arange(1, dims + 1, dtype=torch.float32) ** (-decay / 2)
    return torch.randn(samples, dims, generator=generator) * scales


def _split(x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return x[EVAL_SIZE:], y[EVAL_SIZE:], x[:EVAL_SIZE], y[:EVAL_SIZE]


def teacher_regression(seed: int = 0) -> Workload:
    """256 inputs → 64 tanh → 1, MSE on a noisy linear teacher. Default target: 0.11 (floor 0.09)."""
    del seed  # the job's data are fixed; the run's seed sets initialisation and sample order
    dims, samples, noise = 256, 32768, 0.3
    g = torch.Generator().manual_seed(DATA_SEED)
    x = _power_law_inputs(samples + EVAL_SIZE, dims, 2.0, g)
    y = x @ torch.randn(dims, 1, generator=g) + noise * torch.randn(samples + EVAL_SIZE, 1, generator=g)

    def build() -> nn.Module:
        return nn.Sequential(nn.Linear(dims, 64), nn.Tanh(), nn.Linear(64, 1))

    return Workload("teacher-regression", build, nn.functional.mse_loss, *_split(x, y), default_target=0.11)


CLASSES = 10


def softmax_teacher() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """teacher-classification's inputs, sampled labels and the teacher's logits (the Bayes-optimal
    predictor: its cross-entropy on the labels is the floor no student can beat in expectation)."""
    dims, hidden, samples = 32, 32, 32768
    g = torch.Generator().manual_seed(DATA_SEED + 1)
    x = _power_law_inputs(samples + EVAL_SIZE, dims, 1.2, g)
    inner = torch.randn(dims, hidden, generator=g)
    logits = torch.tanh(x @ inner) @ torch.randn(hidden, CLASSES, generator=g)
    y = torch.multinomial(torch.softmax(logits, 1), 1, generator=g).squeeze(1)
    return x, y, logits


def teacher_classification(seed: int = 0) -> Workload:
    """32 inputs → 64 ReLU → 10 classes, labels sampled from a tanh-MLP softmax teacher.
    Default target: 0.76, 1.2× the Bayes floor (the teacher's mean entropy, 0.633 nats), the
    ratio teacher-regression's default keeps to its floor. It was 0.36, 1.2× a floor misread as
    0.3: below the floor, so no run could reach it."""
    del seed
    x, y, _ = softmax_teacher()
    dims, classes = x.shape[1], CLASSES

    def build() -> nn.Module:
        return nn.Sequential(nn.Linear(dims, 64), nn.ReLU(), nn.Linear(64, classes))

    return Workload("teacher-classification", build, cross_entropy, *_split(x, y), default_target=0.76)


class SoftCommittee(nn.Module):
    """y = Σ_k v_k · erf(w_k·x / √(2D)): K erf units with learned output weights."""

    def __init__(self, dims: int, units: int, init: float) -> None:
        super().__init__()
        self.dims = dims
        self.w = nn.Parameter(torch.randn(units, dims) * init)  # (K, D)
        self.v = nn.Parameter(torch.full((units,), 0.1))  # (K,)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = torch.erf(x @ self.w.T / math.sqrt(2 * self.dims))  # (B, K)
        return (hidden * self.v).sum(1, keepdim=True)  # (B, 1)


def half_mse(output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return 0.5 * nn.functional.mse_loss(output, target)


def plateau_committee(seed: int = 0) -> Workload:
    """Soft committee machine from a 1e-3 initialisation. Default target: 0.008 (floor 0.005)."""
    del seed
    dims, units, samples, noise = 32, 8, 16384, 0.05
    g = torch.Generator().manual_seed(DATA_SEED + 2)
    x = _power_law_inputs(samples + EVAL_SIZE, dims, 1.5, g)
    directions = torch.linalg.qr(torch.randn(dims, dims, generator=g))[0][:units] * math.sqrt(dims)
    strengths = 2.0 * 2.0 ** (-torch.arange(units, dtype=torch.float32) / 1.2)
    y = (torch.erf(x @ directions.T / math.sqrt(2 * dims)) * strengths).sum(1, keepdim=True)
    y = y + noise * torch.randn(y.shape, generator=g)

    def build() -> nn.Module:
        return SoftCommittee(dims, units, init=1e-4)

    return Workload("plateau-committee", build, half_mse, *_split(x, y), default_target=0.008)
