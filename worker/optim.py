"""Optimizers for every strategy: torch's SGD (momentum as in Omnivore), or LARS."""

from __future__ import annotations

from collections.abc import Iterable

import torch

from predictor.types import Config


def make_optimizer(parameters: Iterable[torch.nn.Parameter], config: Config) -> torch.optim.Optimizer:
    if config.optimizer == "sgd":
        return torch.optim.SGD(parameters, lr=config.lr, momentum=config.momentum)
    raise ValueError(f"optimizer={config.optimizer!r} is not available yet")
