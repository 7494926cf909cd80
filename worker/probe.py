"""Run one configuration of a spec on its backend: a probe (short) or a run (to target)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from predictor.types import Config, ProbeResult
from worker.convergence import Evaluator
from worker.simulated.run import simulated_run
from worker.spec import Spec
from worker.training import train
from worker.training_run import TrainingRun
from worker.workloads import Workload, load_workload

if TYPE_CHECKING:
    from worker.ray_backend.group_pool import GroupPool

T = TypeVar("T")


def workload_for(spec: Spec) -> Workload:
    """The spec's workload, built once per process (the registry keeps it)."""
    return load_workload(spec.seed, spec.workload.name, spec.workload.factory)


def target_value(spec: Spec) -> float:
    return spec.target.value if spec.target.value is not None else workload_for(spec).default_target


def on_backend(spec: Spec, config: Config, max_iterations: int, train_run: Callable[[TrainingRun], T],
               origin_seconds: float = 0.0, pool: GroupPool | None = None) -> T:
    """``train_run`` on ``config``'s training run on the spec's backend (simulated, or Ray actors,
    from ``pool`` where given). ``origin_seconds``: the lineage's seconds at the run's zero, which
    times a simulated cluster's faults (``cluster.throttle``) on the run's clock; a real cluster
    keeps its own time."""
    if spec.cluster.backend == "ray":
        from worker.ray_backend import run_on_ray  # Ray and its actors only when asked for

        return run_on_ray(spec, config, max_iterations, train_run, pool=pool)
    if spec.cluster.backend != "simulated":
        raise ValueError(f"cluster.backend={spec.cluster.backend!r} is not available in this build")
    return train_run(simulated_run(spec, config, origin_seconds))


def run_config(spec: Spec, config: Config, max_seconds: float, max_iterations: int) -> ProbeResult:
    """Train ``config`` from scratch on the spec's cluster under the shared convergence rule."""
    evaluator = Evaluator(workload_for(spec), spec.target.metric)

    def train_run(run: TrainingRun) -> ProbeResult:
        return train(run, evaluator, target_value(spec), spec.target.eval_every, max_seconds, max_iterations)

    return on_backend(spec, config, max_iterations, train_run)
