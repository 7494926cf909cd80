"""The workload contract: a model factory, in-memory data and a loss, plus a documented target."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Workload:
    """Everything a strategy needs to train one job; data lives in memory as tensors.

    ``train_x``/``train_y`` are indexed along dim 0 (one sample per row); ``eval_x``/``eval_y``
    are a held-out split. ``default_target`` is the ``train_loss`` the workload converges to in
    a few hundred to a few thousand updates at a sensible learning rate (see each factory).
    """

    name: str
    build_model: Callable[[], nn.Module]
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    train_x: torch.Tensor
    train_y: torch.Tensor
    eval_x: torch.Tensor
    eval_y: torch.Tensor
    default_target: float
    has_batch_norm: bool = False

    @property
    def train_size(self) -> int:
        return int(self.train_x.shape[0])


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross entropy over every position, for classifiers and sequence models alike."""
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
