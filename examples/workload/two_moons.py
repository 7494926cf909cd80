"""An example of your own workload for ttc: two interleaved half-moons, classified by a small MLP.

ttc imports this module by name, calls a factory with a seed, and trains what it returns on
every configuration it probes (docs/user-guide.md §4 is the contract). Run it from this directory:

    export TTC_WORKLOAD_MODULES=two_moons
    ttc tune spec.yaml

The data is generated from the seed, so every Ray node that builds the workload gets exactly
the same samples, and nothing is downloaded. Two factories show the two ways to supply samples:
``make`` holds them as tensors in memory; ``make_from_dataset`` serves the same samples through
a ``torch.utils.data.Dataset`` — the shape a dataset that reads files on demand would take.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.utils.data import Dataset

from worker.workloads import Workload
from worker.workloads.base import cross_entropy

SAMPLES = 2048
EVAL_FRACTION = 0.25
NOISE = 0.15


def two_moons(seed: int, count: int = SAMPLES) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` points (x: (N, 2) float) on two noisy half-circles, labels (y: (N,) long) 0 or 1."""
    generator = torch.Generator().manual_seed(seed)
    angle = torch.rand(count, generator=generator) * math.pi
    label = torch.randint(0, 2, (count,), generator=generator)
    upper = torch.stack([torch.cos(angle), torch.sin(angle)], dim=1)
    lower = torch.stack([1.0 - torch.cos(angle), 0.5 - torch.sin(angle)], dim=1)
    points = torch.where(label[:, None] == 0, upper, lower)
    return points + NOISE * torch.randn(count, 2, generator=generator), label


def build_model() -> nn.Module:
    """A fresh, untrained model; ttc seeds torch before each call, so replicas start identical."""
    return nn.Sequential(nn.Linear(2, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 2))


def _split(seed: int) -> tuple[torch.Tensor, ...]:
    x, y = two_moons(seed)
    held = int(SAMPLES * EVAL_FRACTION)
    return x[held:], y[held:], x[:held], y[:held]


def make(seed: int = 0) -> Workload:
    """The factory ttc calls (``workload: {factory: "two_moons:make"}``). Target: train_loss 0.1."""
    train_x, train_y, eval_x, eval_y = _split(seed)
    return Workload("two-moons", build_model, cross_entropy, train_x, train_y, eval_x, eval_y,
                    default_target=0.1)


class Points(Dataset):
    """One ``(point, label)`` pair per item, as a file-backed dataset would return them."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.x[index], self.y[index]


def make_from_dataset(seed: int = 0) -> Workload:
    """The same workload with its samples read through ``Dataset`` objects (default collate)."""
    train_x, train_y, eval_x, eval_y = _split(seed)
    return Workload.from_datasets("two-moons-dataset", build_model, cross_entropy,
                                  train=Points(train_x, train_y), eval=Points(eval_x, eval_y),
                                  default_target=0.1)
