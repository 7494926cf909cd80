"""scikit-learn's bundled 8×8 digits (1,797 images): no download, real data, seconds to train."""

from __future__ import annotations

import torch
from sklearn.datasets import load_digits
from torch import nn

from worker.workloads.base import Workload, cross_entropy

EVAL_FRACTION = 0.2


def _split(seed: int, image: bool) -> tuple[torch.Tensor, ...]:
    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    x = (x - x.mean(0)) / (x.std(0) + 1e-3)
    if image:
        x = x.reshape(-1, 1, 8, 8)
    y = torch.tensor(digits.target, dtype=torch.long)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    n_eval = int(len(y) * EVAL_FRACTION)
    held, kept = order[:n_eval], order[n_eval:]
    return x[kept], y[kept], x[held], y[held]


def digits_mlp(seed: int = 0) -> Workload:
    """64-128-10 MLP. Default target: train_loss 0.15 (≈97% train accuracy)."""
    train_x, train_y, eval_x, eval_y = _split(seed, image=False)

    def build() -> nn.Module:
        return nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))

    return Workload("digits-mlp", build, cross_entropy, train_x, train_y, eval_x, eval_y, 0.15)


def digits_cnn(seed: int = 0) -> Workload:
    """Two 3×3 convolutions and a linear head. Default target: train_loss 0.1."""
    train_x, train_y, eval_x, eval_y = _split(seed, image=True)

    def build() -> nn.Module:
        return nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(32 * 4 * 4, 10),
        )

    return Workload("digits-cnn", build, cross_entropy, train_x, train_y, eval_x, eval_y, 0.1)
