"""The strategy contract: one algorithm, written once against a :class:`Cluster`, on every backend.

Call order: construct with a cluster and a seed (pure: builds the replicas, optimizers and the
sampler, communicates only to create the backend's process groups); then the
:class:`~worker.training_run.TrainingRun` calls — ``step()`` once per iteration, ``checkpoint()``,
``restore()``, ``model_state()``, ``warm_start()``.

Every process builds its replicas from the same seed, so they start identical; every process
holds the same seeded :class:`~worker.data.EpochSampler` and draws the same indices, and the
cluster hands each device its slice of them — what makes the backends agree step for step.
Subclasses keep their own state in ``_state``/``_load_state`` so that checkpoints stay exact.
"""

from __future__ import annotations

import copy
from abc import abstractmethod
from typing import Any, ClassVar

import torch

from worker.data import EpochSampler
from worker.optim import make_optimizer
from worker.strategies.cluster import Cluster
from worker.training_run import TrainingRun

CHECKPOINT_VERSION = 1


class Strategy(TrainingRun):
    name: ClassVar[str]
    uses_parameter_server: ClassVar[bool] = False  # its replicas live behind a ParameterServer

    def __init__(self, cluster: Cluster, seed: int) -> None:
        self.cluster = cluster
        self.config = cluster.config
        self.workload = cluster.workload
        torch.manual_seed(seed)
        model = self.workload.build_model().to(cluster.device)
        local = self._replica_ids()
        self.models = {r: model if i == 0 else copy.deepcopy(model) for i, r in enumerate(local)}
        self.optimizers = self._fresh_optimizers()
        self.sampler = EpochSampler(self.workload.train_size, seed)
        self.iteration = 0

    def _replica_ids(self) -> list[int]:
        """The model replicas this process keeps; one replica over every device by default."""
        return self.cluster.replicas(1)

    def _fresh_optimizers(self) -> dict[int, torch.optim.Optimizer]:
        return {r: make_optimizer(m.parameters(), self.config) for r, m in self.models.items()}

    @abstractmethod
    def step(self) -> None:
        """One iteration: real gradients and update, the cluster's seconds on ``clock``."""

    @property
    def model(self) -> torch.nn.Module:
        """The global model as evaluated: the first replica (node 0's for DASO, as rank 0 reports)."""
        return self.models[min(self.models)]

    @property
    def optimizer(self) -> torch.optim.Optimizer:
        return self.optimizers[min(self.optimizers)]

    @property
    def clock(self) -> float:
        return self.cluster.clock

    def gradient_noise_sample(self) -> tuple[float, int, float, int]:
        """(|G_small|², B_small, |G_big|², B_big) at the current global model.

        A real probe gets these for free: each worker's local gradient (batch b) and the
        averaged one (the global batch) — McCandlish et al.'s two-batch estimator. Not timed.
        """
        big, small = self.config.global_batch, self.config.batch_size
        x, y = self.workload.train_batch(self.sampler.next(big))
        x, y = x.to(self.cluster.device), y.to(self.cluster.device)
        params = list(self.model.parameters())
        norms = []
        for count in (small, big):
            grads = torch.autograd.grad(self.workload.loss_fn(self.model(x[:count]), y[:count]), params)
            norms.append(float(sum(g.pow(2).sum() for g in grads)))
        return norms[0], small, norms[1], big

    # -- state ---------------------------------------------------------------------------------
    def model_state(self) -> dict[str, torch.Tensor]:
        return {key: value.detach().cpu().clone() for key, value in self.model.state_dict().items()}

    def warm_start(self, model_state: dict[str, torch.Tensor]) -> None:
        self._require_fresh("warm_start")
        for model in self.models.values():
            model.load_state_dict(model_state)
        self.optimizers = self._fresh_optimizers()

    def checkpoint(self) -> dict[str, Any]:
        return _copied({
            "version": CHECKPOINT_VERSION,
            "config": self.config.key(),
            "iteration": self.iteration,
            "models": {r: m.state_dict() for r, m in self.models.items()},
            "optimizers": {r: o.state_dict() for r, o in self.optimizers.items()},
            "sampler": self.sampler.state(),
            "torch_rng": torch.get_rng_state(),
            "cluster": self.cluster.checkpoint(),
            "strategy": self._state(),
        })

    def restore(self, state: dict[str, Any]) -> None:
        self._require_fresh("restore")
        if state.get("version") != CHECKPOINT_VERSION:
            raise ValueError(f"checkpoint version={state.get('version')!r}; expected {CHECKPOINT_VERSION}")
        if state["config"] != self.config.key():
            raise ValueError(f"checkpoint config={state['config']!r} is not this run's {self.config.key()!r}")
        if set(state["models"]) != set(self.models):
            raise ValueError(f"checkpoint replicas={sorted(state['models'])} are not {sorted(self.models)}")
        for r, model in self.models.items():
            model.load_state_dict(state["models"][r])
            self.optimizers[r].load_state_dict(state["optimizers"][r])
        self.sampler.load_state(state["sampler"])
        torch.set_rng_state(state["torch_rng"])
        self.cluster.restore(state["cluster"])
        self.iteration = int(state["iteration"])
        self._load_state(state["strategy"])

    def _state(self) -> dict[str, Any]:
        """The subclass's own state (schedules, shares, pending syncs)."""
        return {}

    def _load_state(self, state: dict[str, Any]) -> None:
        """Inverse of ``_state``."""

    def _require_fresh(self, what: str) -> None:
        if self.iteration:
            raise RuntimeError(f"{what} needs a freshly built {self.name} strategy; this one is at "
                               f"iteration {self.iteration}")


def _copied(value: Any) -> Any:
    """A deep copy with every tensor on the CPU: the checkpoint must not follow the live run."""
    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", copy=True)
    if isinstance(value, dict):
        return {key: _copied(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_copied(item) for item in value)
    return value
