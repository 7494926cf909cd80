"""The driver half of a Ray probe: looks like a simulated ``Strategy`` to ``worker.training.train``.

``train`` calls ``step()`` once per iteration and reads ``model`` at every evaluation. Calling
the actors once per iteration would add a Ray round trip to every step, so ``step()`` runs the
actors up to the next evaluation in one call and then hands out the measured step durations one
by one. ``clock`` is the sum of measured step seconds — wall-clock training time, without the
evaluations, which the simulated backend does not count either.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque

import torch

from predictor.types import Config
from worker.ray_backend.config import RayBackendConfig
from worker.ray_backend.placement import Topology
from worker.spec import Spec
from worker.workloads import Workload


class RayRun(ABC):
    """One strategy on fresh actors. Pure constructor; ``start()`` then steps; ``shutdown()``."""

    def __init__(
        self,
        spec: Spec,
        config: Config,
        workload: Workload,
        backend: RayBackendConfig,
        max_iterations: int,
    ) -> None:
        self.spec = spec
        self.config = config
        self.workload = workload
        self.backend = backend
        self.topology = Topology(config.nodes, config.devices_per_node)
        self.eval_every = spec.target.eval_every
        self.max_iterations = max_iterations
        self.iteration = 0
        self.clock = 0.0
        self._pending: deque[float] = deque()
        self._model = workload.build_model()
        self._model_iteration = -1

    @abstractmethod
    def start(self) -> None:
        """Create the actors (and any server) and build the replicas."""

    @abstractmethod
    def shutdown(self) -> None:
        """Release every actor and process group, also after a failure."""

    @abstractmethod
    def _advance(self, steps: int) -> list[float]:
        """Run ``steps`` iterations on the cluster; the wall seconds of each."""

    @abstractmethod
    def _read_state(self) -> dict[str, torch.Tensor]:
        """The global model's parameters now."""

    @abstractmethod
    def _sample(self, count: int) -> torch.Tensor:
        """Draw ``count`` indices from the run's sampler (as the simulated strategy would)."""

    def step(self) -> None:
        if not self._pending:
            to_eval = self.eval_every - self.iteration % self.eval_every
            self._pending.extend(self._advance(max(1, min(to_eval, self.max_iterations - self.iteration))))
        self.clock += self._pending.popleft()
        self.iteration += 1

    @property
    def model(self) -> torch.nn.Module:
        """The global model at the current iteration (read from the cluster when it changed)."""
        assert not self._pending, "the model is only read between chunks (at evaluations)"
        if self._model_iteration != self.iteration:
            self._model.load_state_dict(self._read_state())
            self._model_iteration = self.iteration
        return self._model

    def gradient_noise_sample(self) -> tuple[float, int, float, int]:
        """(|G_small|², B_small, |G_big|², B_big): the simulated strategy's estimator, same draws."""
        model = self.model
        big, small = self.config.global_batch, self.config.batch_size
        index = self._sample(big)
        x, y = self.workload.train_x[index], self.workload.train_y[index]
        norms = []
        for count in (small, big):
            loss = self.workload.loss_fn(model(x[:count]), y[:count])
            grads = torch.autograd.grad(loss, list(model.parameters()))
            norms.append(float(sum(g.pow(2).sum() for g in grads)))
        return norms[0], small, norms[1], big
