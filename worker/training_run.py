"""What the training loop drives: one configuration training on one backend.

A simulated :class:`~worker.strategies.base.Strategy` is one, and so is a Ray run
(:mod:`worker.ray_backend.runs`), which drives the same strategy class on device actors. The
training loop (:func:`worker.training.train`), probes and runs see only this interface.

Call order: construct (a Ray run then ``start()``s its actors); optionally ``restore(checkpoint)``
or ``warm_start(model_state)`` before the first step; ``step()`` once per iteration; between steps
read ``model``, ``model_state()``, ``checkpoint()``, ``gradient_noise_sample()``.

``iteration`` counts updates of the global model and ``clock`` is the cluster's seconds since
iteration 0 (DESIGN.md §7 *Time and counts*): simulated seconds or wall seconds. ``clock`` counts
steps only; what a backend pays per call outside them (a Ray round trip to the device actors,
once per chunk of steps up to the next evaluation) is counted apart, in ``calls`` and
``call_seconds``, so the HE model can fit it as its own term. ``launch_seconds`` is what
``start()`` took (a Ray run's actors and process groups): a study's overhead, not the run's time.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

import torch

from predictor.types import Config


class TrainingRun(ABC):
    config: Config
    iteration: int
    calls: int = 0  # backend calls that ran steps (chunks); 0 where steps are local
    call_seconds: float = 0.0  # their wall seconds outside the steps themselves
    launch_seconds: float = 0.0  # wall seconds ``start()`` took; 0 where nothing is launched

    @property
    @abstractmethod
    def clock(self) -> float:
        """The cluster's seconds since iteration 0."""

    @property
    @abstractmethod
    def model(self) -> torch.nn.Module:
        """The global model as evaluated (rank 0's replica where replicas may differ)."""

    @abstractmethod
    def step(self) -> None:
        """One iteration: one update of the global model."""

    @abstractmethod
    def gradient_noise_sample(self) -> tuple[float, int, float, int]:
        """(|G_small|², B_small, |G_big|², B_big) at the global model (McCandlish et al.)."""

    @abstractmethod
    def checkpoint(self) -> dict[str, Any]:
        """Everything needed to continue exactly: restored into a freshly built run of the same
        config, the loss trajectory (and on the simulated backend the clock) continues as if
        never interrupted. Tensors, numbers, strings, lists and dicts only (``torch.save``-able,
        loadable with ``weights_only=True``); never the workload's data."""

    @abstractmethod
    def restore(self, state: dict[str, Any]) -> None:
        """Continue from ``checkpoint()``'s result; only before the first step."""

    @abstractmethod
    def model_state(self) -> dict[str, torch.Tensor]:
        """The global model's ``state_dict`` (CPU copies)."""

    @abstractmethod
    def warm_start(self, model_state: dict[str, torch.Tensor]) -> None:
        """Start this config from another run's global model: every replica loads it, optimizer
        state fresh, iteration and clock at 0. Only before the first step."""
