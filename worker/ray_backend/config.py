"""Settings of the Ray backend: resources per device actor, collective backend and timeouts.

Defaults derive from resources, as in Ray Train's ``TorchConfig``: NCCL when the actors hold
GPUs, gloo otherwise. The environment can override the per-worker CPU share so that a small
machine (or a test) can pack several device actors onto one core.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

CPUS_ENV = "TTC_RAY_CPUS_PER_WORKER"
GPUS_ENV = "TTC_RAY_USE_GPU"
TIMEOUT_ENV = "TTC_RAY_COLLECTIVE_TIMEOUT_S"
START_TIMEOUT_ENV = "TTC_RAY_START_TIMEOUT_S"
REUSE_ENV = "TTC_RAY_REUSE_ACTORS"
SETTINGS_ENV = (CPUS_ENV, GPUS_ENV, TIMEOUT_ENV, START_TIMEOUT_ENV, REUSE_ENV)  # travel with every probe


@dataclass(frozen=True)
class RayBackendConfig:
    """How each device actor is sized and how long a collective may block.

    ``cpus_per_worker`` is the Ray CPU share of one device actor and sets its torch thread count
    (at least one thread). ``use_gpu`` None means: one GPU per actor when the cluster has enough.
    ``collective_timeout_s`` bounds every ``torch.distributed`` call, so a dead peer becomes an
    error instead of a hang. ``start_timeout_s`` bounds placing and starting the actors (process
    start-up and imports, slow on a loaded machine), kept apart from the collective timeout; set
    it with ``TTC_RAY_START_TIMEOUT_S`` (a cluster that can never hold the spec is refused before
    any probe instead, see ``feasibility``).
    ``shutdown_grace_s`` is how long actors get to leave their process groups before ``ray.kill``.
    ``reuse_actors``: a study's probes of one allocation run on the device actors an earlier probe
    started (``probe_host``); ``TTC_RAY_REUSE_ACTORS=0`` gives every probe fresh processes, for
    user code that leaves state behind in its process.
    """

    cpus_per_worker: float = 1.0
    use_gpu: bool | None = None
    collective_timeout_s: float = 60.0
    start_timeout_s: float = 300.0
    shutdown_grace_s: float = 5.0
    retries: int = 1
    reuse_actors: bool = True

    def __post_init__(self) -> None:
        errors = []
        if not self.cpus_per_worker > 0:
            errors.append(f"cpus_per_worker={self.cpus_per_worker!r} must be > 0")
        if not self.start_timeout_s > 0:
            errors.append(f"start_timeout_s={self.start_timeout_s!r} must be > 0")
        if not self.collective_timeout_s > 0:
            errors.append(f"collective_timeout_s={self.collective_timeout_s!r} must be > 0")
        if self.shutdown_grace_s < 0:
            errors.append(f"shutdown_grace_s={self.shutdown_grace_s!r} must be >= 0")
        if self.retries < 0:
            errors.append(f"retries={self.retries!r} must be >= 0")
        if errors:
            raise ValueError("invalid RayBackendConfig: " + "; ".join(errors))

    @classmethod
    def from_env(cls) -> RayBackendConfig:
        """Read overrides from ``TTC_RAY_*`` settings (used by probes launched as Ray tasks)."""
        gpu, reuse = os.environ.get(GPUS_ENV), os.environ.get(REUSE_ENV)
        return cls(
            cpus_per_worker=_number(CPUS_ENV, cls.cpus_per_worker),
            use_gpu=None if gpu is None else _yes(gpu),
            collective_timeout_s=_number(TIMEOUT_ENV, cls.collective_timeout_s),
            start_timeout_s=_number(START_TIMEOUT_ENV, cls.start_timeout_s),
            reuse_actors=cls.reuse_actors if reuse is None else _yes(reuse),
        )

    @property
    def threads_per_worker(self) -> int:
        """torch threads of one CPU actor: its whole-CPU share, never fewer than one."""
        return max(1, int(self.cpus_per_worker))


def _yes(raw: str) -> bool:
    return raw.strip().lower() in ("1", "true", "yes")


def _number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return float(raw)
    except ValueError:
        raise ValueError(f"setting {name}={raw!r} is not a number") from None


def collective_backend(cuda_available: bool) -> str:
    """NCCL when the actor sees a CUDA device, gloo otherwise (chosen inside each actor)."""
    return "nccl" if cuda_available else "gloo"
