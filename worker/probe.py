"""Run one configuration of a spec on its backend: a probe (short) or a run (to target)."""

from __future__ import annotations

from predictor.types import Config, ProbeResult
from worker.convergence import Evaluator
from worker.simulated.calibration import model_cost
from worker.simulated.hardware import Hardware
from worker.spec import Spec
from worker.strategies import make_strategy
from worker.training import train
from worker.workloads import Workload, build_workload

_WORKLOADS: dict[tuple[str | None, str | None, int], Workload] = {}


def workload_for(spec: Spec) -> Workload:
    """Build (once per process) the spec's workload; data is deterministic in the seed."""
    key = (spec.workload.name, spec.workload.factory, spec.seed)
    if key not in _WORKLOADS:
        _WORKLOADS[key] = build_workload(spec.seed, spec.workload.name, spec.workload.factory)
    return _WORKLOADS[key]


def target_value(spec: Spec) -> float:
    return spec.target.value if spec.target.value is not None else workload_for(spec).default_target


def run_config(spec: Spec, config: Config, max_seconds: float, max_iterations: int) -> ProbeResult:
    """Train ``config`` on the spec's cluster (simulated, or Ray) under the shared convergence rule."""
    if spec.cluster.backend == "ray":
        from worker.ray_backend import run_on_ray  # Ray and its actors only when asked for

        return run_on_ray(spec, config, max_seconds, max_iterations)
    if spec.cluster.backend != "simulated":
        raise ValueError(f"cluster.backend={spec.cluster.backend!r} is not available in this build")
    workload = workload_for(spec)
    hardware = Hardware(spec.cluster, model_cost(workload), spec.seed)
    strategy = make_strategy(config, workload, hardware, spec.seed)
    evaluator = Evaluator(workload, spec.target.metric)
    return train(
        strategy, evaluator, target_value(spec), spec.target.eval_every, max_seconds, max_iterations
    )
