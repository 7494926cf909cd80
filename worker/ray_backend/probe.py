"""Probes and runs on the Ray backend: real distributed training, wall-clock seconds.

The same ``train`` loop, evaluator and convergence rule as on the simulated backend; only the
strategy object differs (a :class:`~worker.ray_backend.driver.RayRun` driving device actors).

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

import ray

from predictor.types import Config, ProbeResult
from worker.convergence import Evaluator
from worker.ray_backend.async_run import AsyncGroupsRun
from worker.ray_backend.config import RayBackendConfig
from worker.ray_backend.driver import RayRun
from worker.ray_backend.replicated import ReplicatedRun
from worker.ray_backend.strategies import STEPPED
from worker.spec import Spec
from worker.training import train

log = logging.getLogger(__name__)


class ProbeFailed(RuntimeError):
    """A probe failed on the cluster on every attempt; the message says why."""


def make_run(spec: Spec, config: Config, backend: RayBackendConfig, max_iterations: int) -> RayRun:
    from worker.probe import workload_for

    workload = workload_for(spec)
    if config.strategy == "async_groups":
        return AsyncGroupsRun(spec, config, workload, backend, max_iterations)
    if config.strategy not in STEPPED:
        have = sorted([*STEPPED, "async_groups"])
        raise ValueError(f"strategy={config.strategy!r} is not implemented on Ray; have {have}")
    return ReplicatedRun(STEPPED[config.strategy], spec, config, workload, backend, max_iterations)


def ensure_connected() -> None:
    """Join ``RAY_ADDRESS`` (or start a local Ray) unless this process is already connected."""
    from worker.launcher import ensure_ray

    ensure_ray()


def run_on_ray(
    spec: Spec,
    config: Config,
    max_seconds: float,
    max_iterations: int,
    backend: RayBackendConfig | None = None,
) -> ProbeResult:
    """Train ``config`` on device actors under the shared convergence rule, retrying once."""
    from worker.probe import target_value, workload_for

    backend = backend or RayBackendConfig.from_env()
    ensure_connected()
    evaluator = Evaluator(workload_for(spec), spec.target.metric)
    reasons = []
    for attempt in range(1 + backend.retries):
        run = make_run(spec, config, backend, max_iterations)
        try:
            run.start()
            target, eval_every = target_value(spec), spec.target.eval_every
            return train(run, evaluator, target, eval_every, max_seconds, max_iterations)
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
        cause = exc.cause if exc.cause is not None else exc
        first = str(cause).strip().splitlines()[0] if str(cause).strip() else ""
        return f"a device actor failed: {type(cause).__name__}: {first}"[:500]
    return f"{type(exc).__name__}: {exc}"[:500]
