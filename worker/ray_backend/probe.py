"""Probes and runs on the Ray backend: real distributed training, wall-clock seconds.

The same ``train`` loop, evaluator and convergence rule as on the simulated backend (the caller's
``train_run``); only the training run differs (:mod:`worker.ray_backend.runs`).

Resources when the probe itself is a Ray task (the service launches each probe as a task with
``num_cpus=1``): the driver part asks for nothing more. It spends its time blocked in
``ray.get``/``ray.wait``, and Ray lends a blocked task's CPUs back to the cluster, so the device
actors' placement group can use them — nested actors do not deadlock even when the task's CPU
is the last one free. A failure on the actors (one dies, a collective times out) ends the
attempt with the reason logged; the probe is retried once on fresh actors, and every actor,
process group and placement group of the failed attempt is released first.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

import ray

from predictor.types import Config
from worker.errors import describe_error
from worker.ray_backend.config import RayBackendConfig
from worker.ray_backend.connect import ensure_ray
from worker.ray_backend.runs import make_run
from worker.spec import Spec
from worker.training_run import TrainingRun

log = logging.getLogger(__name__)
T = TypeVar("T")


class ProbeFailed(RuntimeError):
    """A probe failed on the cluster on every attempt; the message says why."""


def run_on_ray(
    spec: Spec,
    config: Config,
    max_iterations: int,
    train_run: Callable[[TrainingRun], T],
    backend: RayBackendConfig | None = None,
) -> T:
    """``train_run`` on fresh device actors for ``config``, retried on fresh actors after a failure."""
    backend = backend or RayBackendConfig.from_env()
    ensure_ray()
    reasons = []
    for attempt in range(1 + backend.retries):
        run = make_run(spec, config, backend, max_iterations)
        try:
            run.start()
            return train_run(run)
        except (ray.exceptions.RayError, TimeoutError) as exc:
            reason = failure_reason(exc)
            reasons.append(reason)
            log.warning("probe %s attempt %d failed: %s", config.key(), attempt + 1, reason)
        finally:
            run.shutdown()
    raise ProbeFailed(f"probe {config.key()} failed on {len(reasons)} attempt(s): " + " | ".join(reasons))


def failure_reason(exc: BaseException) -> str:
    """One line naming what failed: a dead actor, a collective error or timeout, a task error."""
    if isinstance(exc, ray.exceptions.RayActorError):
        return f"a device actor died ({type(exc).__name__})"
    if isinstance(exc, ray.exceptions.RayTaskError):
        return f"a device actor failed: {describe_error(exc)}"
    return f"{type(exc).__name__}: {exc}"[:500]
