"""The strategy contract on the simulated cluster.

Call order: construct (pure: builds the model, optimizer and sampler), then ``step()`` once per
iteration — one update of the global model — which also advances ``clock``, the cluster's
simulated seconds. ``model`` is always the global model, for evaluation.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import torch

from predictor.types import Config
from worker.data import EpochSampler
from worker.optim import make_optimizer
from worker.simulated.hardware import Hardware
from worker.workloads import Workload


class Strategy(ABC):
    name: ClassVar[str]

    def __init__(self, config: Config, workload: Workload, hardware: Hardware, seed: int) -> None:
        cluster = hardware.cluster
        if config.nodes > cluster.nodes or config.devices_per_node > cluster.devices_per_node:
            raise ValueError(
                f"config uses {config.nodes}x{config.devices_per_node} devices but the cluster "
                f"has {cluster.nodes}x{cluster.devices_per_node}"
            )
        self.config = config
        self.workload = workload
        self.hardware = hardware
        torch.manual_seed(seed)
        self.model = workload.build_model()
        self.optimizer = make_optimizer(self.model.parameters(), config)
        self.sampler = EpochSampler(workload.train_size, seed)
        self.clock = 0.0
        self.iteration = 0
        self.devices = [
            node * cluster.devices_per_node + local
            for node in range(config.nodes)
            for local in range(config.devices_per_node)
        ]

    @abstractmethod
    def step(self) -> None:
        """Run one iteration: real gradients and update, simulated seconds added to ``clock``."""

    def batch(self, count: int) -> tuple[torch.Tensor, torch.Tensor]:
        index = self.sampler.next(count)
        return self.workload.train_x[index], self.workload.train_y[index]

    def gradient_noise_sample(self) -> tuple[float, int, float, int]:
        """(|G_small|², B_small, |G_big|², B_big) at the current global model.

        A real probe gets these for free: each worker's local gradient (batch b) and the
        averaged one (the global batch) — McCandlish et al.'s two-batch estimator. Not timed.
        """
        big = self.config.global_batch
        small = self.config.batch_size
        x, y = self.batch(big)
        norms = []
        for count in (small, big):
            grads = torch.autograd.grad(
                self.workload.loss_fn(self.model(x[:count]), y[:count]), list(self.model.parameters())
            )
            norms.append(float(sum(g.pow(2).sum() for g in grads)))
        return norms[0], small, norms[1], big
