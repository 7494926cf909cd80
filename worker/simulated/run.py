"""A configuration on the spec's simulated cluster: the strategy itself is the training run."""

from __future__ import annotations

from predictor.types import Config
from worker.simulated.calibration import model_cost
from worker.simulated.cluster import SimulatedCluster
from worker.simulated.hardware import Hardware
from worker.spec import Spec
from worker.strategies import Strategy, make_strategy
from worker.workloads import load_workload


def simulated_run(spec: Spec, config: Config, origin_seconds: float = 0.0) -> Strategy:
    """``config``'s strategy on N×D virtual devices, with the spec's hardware profile and seed;
    ``origin_seconds``: where the run's clock starts on its lineage's (a fork's parent's end)."""
    workload = load_workload(spec.seed, spec.workload.name, spec.workload.factory)
    hardware = Hardware(spec.cluster, model_cost(workload), spec.seed, origin_seconds)
    return make_strategy(SimulatedCluster(config, workload, hardware), spec.seed)
