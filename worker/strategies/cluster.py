"""The collectives-and-clock interface every strategy is written against.

Heat's DASO (``heat/optim/dp_optimizer.py``) writes the algorithm once against a communicator
object; swapping the transport changes the communicator, not the optimizer (STYLE.md). Here a
strategy says *what* happens — which replica computes a gradient on which samples, which sums
travel between replicas, when a group pushes to the parameter server — and a backend decides how
and what it costs:

- simulated (:mod:`worker.simulated.cluster`): every replica lives in one process; a replica's
  W·b samples are computed as ONE batch (the mean gradient is the same without batch norm,
  DESIGN.md §5) and the simulated clock advances by the hardware profile's seconds;
- Ray (:mod:`worker.ray_backend.cluster`): each device actor holds the replica it belongs to,
  computes its own slice and reduces with ``torch.distributed``; the clock is the wall clock.

**Replicas.** A strategy splits the config's devices into ``count`` equal, contiguous replicas —
one model copy each: 1 for sync-like strategies, ``nodes`` for DASO, ``groups`` for Omnivore's
compute groups (inside the parameter server). ``replicas(count)`` returns the ones hosted here:
all of them on the simulated backend, the actor's own on Ray.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from predictor.types import Config
from worker.workloads import Workload

Reduce = Literal["ring", "hierarchical"]
Read = Literal["contiguous", "strided"]


@dataclass(frozen=True)
class GradientStep:
    """What a replica's gradient computation reports, identical on every device of the replica."""

    loss: float  # mean loss over the replica's samples
    compute_seconds: np.ndarray  # (devices of the replica,) each device's forward + backward seconds


class PendingSum(ABC):
    """A sum across replicas in flight (``async_op``): started now, waited for later."""

    @abstractmethod
    def wait(self) -> torch.Tensor:
        """The sum, on every device of the local replicas; their clocks wait for its arrival."""

    @abstractmethod
    def state(self) -> dict[str, Any]:
        """A saveable form, restored by :meth:`Cluster.restore_sum`."""


class ParameterServer(ABC):
    """Omnivore's server (Hadjis et al. 2016): groups pull the model, compute, push a gradient.

    ``send`` hands ``group`` the current parameters and its next batch; the group computes its
    mean gradient there (in-group all-reduce) while the server goes on; ``receive`` returns the
    next gradient to arrive. Arrival order — hence staleness — is the backend's: the simulated
    clock's event order, or the real one.
    """

    @abstractmethod
    def send(self, group: int, model: torch.nn.Module, index: torch.Tensor) -> None:
        """``group`` pulls ``model``'s parameters now and computes on the samples ``index``."""

    @abstractmethod
    def receive(self) -> tuple[int, torch.Tensor]:
        """(group, flat mean gradient at the parameters that group pulled), first to arrive."""


class Cluster(ABC):
    """The devices one config runs on, the job they train, their collectives and their clock."""

    config: Config
    workload: Workload
    device: torch.device

    @abstractmethod
    def replicas(self, count: int, *, reduce: Reduce = "ring", read: Read | None = None) -> list[int]:
        """Split the devices into ``count`` contiguous replicas; the ones hosted here.

        A replica all-reduces its devices' gradients by a ring, or by HSGD's two levels
        (``reduce="hierarchical"``, one replica over every node); ``read`` says how its devices
        read samples from storage (HSGD's contiguous shards or strided reads; None: not modelled).
        """

    @abstractmethod
    def gradient(
        self, model: torch.nn.Module, index: torch.Tensor, *, replica: int, sizes: list[int] | None = None
    ) -> GradientStep:
        """Set ``model``'s ``.grad`` to the mean loss gradient over the samples ``index``.

        Device i of ``replica`` computes the next ``sizes[i]`` samples (equal shares when None);
        the devices' gradients are weighted by share and all-reduced among them.
        """

    @abstractmethod
    def start_sum(self, tensors: dict[int, torch.Tensor]) -> PendingSum:
        """Start Σ over every replica of its tensor (keyed by local replica), non-blocking,
        among the replicas' leaders (DASO's global parameter all-reduce)."""

    @abstractmethod
    def restore_sum(self, state: dict[str, Any]) -> PendingSum:
        """A :class:`PendingSum` from its ``state()``."""

    @abstractmethod
    def sum_over_replicas(self, value: torch.Tensor) -> torch.Tensor:
        """Σ over every replica of ``value``, given this process's sum over its own replicas.
        Book-keeping (e.g. an epoch's loss), not charged to the clock."""

    @abstractmethod
    def parameter_server(self, groups: int) -> ParameterServer:
        """The parameter server for ``groups`` compute groups of equal size."""

    @property
    @abstractmethod
    def clock(self) -> float:
        """The cluster's seconds since the start."""

    @abstractmethod
    def checkpoint(self) -> dict[str, Any]:
        """The clock's state (and the simulated hardware's random state)."""

    @abstractmethod
    def restore(self, state: dict[str, Any]) -> None:
        """Continue from ``checkpoint()``."""


def flat_gradient(params: Iterable[torch.Tensor]) -> torch.Tensor:
    """Every parameter's ``.grad`` as one flat vector (a copy)."""
    return torch.cat([p.grad.reshape(-1) for p in params])


def assign_gradients(params: Iterable[torch.nn.Parameter], flat: torch.Tensor) -> None:
    """Set each parameter's ``.grad`` to its slice of a flat gradient vector (views, no copy)."""
    offset = 0
    for param in params:
        param.grad = flat[offset : offset + param.numel()].view_as(param)
        offset += param.numel()
