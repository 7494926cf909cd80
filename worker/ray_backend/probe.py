"""Probes and runs on the Ray backend: real distributed training, wall-clock seconds.

The same ``train`` loop, evaluator and convergence rule as on the simulated backend (the caller's
``train_run``); only the training run differs (:mod:`worker.ray_backend.runs`).

Resources: the service runs these probes in its probe host actor (``probe_host``, no CPU of its
own), whose pool of started groups a probe may run on; the driver part spends its time blocked in
``ray.get``/``ray.wait``. Run as a Ray task instead (``num_cpus=1``), it asks for nothing more:
Ray lends a blocked task's CPUs back to the cluster, so the device actors' placement group can
use them. A failure on the actors (one dies, a collective times out) ends the attempt with the
reason logged; the probe is retried once on fresh actors, and every actor, process group and
placement group of the failed attempt is released first.
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
from worker.ray_backend.group_pool import GroupPool
from worker.ray_backend.placement import RankLayout
from worker.ray_backend.runs import RayRun, make_run
from worker.ray_backend.worker_group import WorkerGroup
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
    pool: GroupPool | None = None,
) -> T:
    """``train_run`` on device actors for ``config``, retried on fresh actors after a failure.
    With a ``pool`` the first attempt may run on a group an earlier probe left started, and the
    group goes back to the pool when the run succeeded; otherwise every attempt starts its own."""
    backend = backend or RayBackendConfig.from_env()
    ensure_ray()
    layout = RankLayout(config.nodes, config.devices_per_node)
    reasons = []
    for attempt in range(1 + backend.retries):
        workers: WorkerGroup | None = None
        run: RayRun | None = None
        done = False
        try:
            workers = pool.acquire(layout, backend, fresh=attempt > 0) if pool else None
            run = make_run(spec, config, backend, max_iterations, workers)
            run.start()
            result = train_run(run)
            done = True
            return result
        except (ray.exceptions.RayError, TimeoutError) as exc:
            reason = failure_reason(exc)
            reasons.append(reason)
            log.warning("probe %s attempt %d failed: %s", config.key(), attempt + 1, reason)
        finally:
            if pool is not None and workers is not None:
                pool.release(workers, reusable=done and run is not None and _cleared(run))
            elif run is not None:
                run.shutdown()
    raise ProbeFailed(f"probe {config.key()} failed on {len(reasons)} attempt(s): " + " | ".join(reasons))


def _cleared(run: RayRun) -> bool:
    """Take the finished run's strategy off its actors, which stay for the next probe; False when
    they cannot be reached (the group is then shut down, and the probe's result stands)."""
    try:
        run.shutdown()
    except ray.exceptions.RayError as exc:
        log.info("the actors of probe %s are not reused: %s", run.config.key(), failure_reason(exc))
        return False
    return True


def failure_reason(exc: BaseException) -> str:
    """One line naming what failed: a dead actor, a collective error or timeout, a task error."""
    if isinstance(exc, ray.exceptions.RayActorError):
        return f"a device actor died ({type(exc).__name__})"
    if isinstance(exc, ray.exceptions.RayTaskError):
        return f"a device actor failed: {describe_error(exc)}"
    return f"{type(exc).__name__}: {exc}"[:500]
