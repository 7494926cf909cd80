"""The simulated compute seconds, vectorised over devices, are each device's own formula."""

from __future__ import annotations

import numpy as np
import pytest

from worker.simulated.calibration import ModelCost
from worker.simulated.hardware import Hardware
from worker.spec import parse_spec

COST = ModelCost(flops_per_sample=1e6, parameter_bytes=4000, layers=2, cpu_fixed_seconds=1e-4,
                 cpu_per_sample_seconds=1e-6)


@pytest.mark.parametrize("at_seconds", [0.0, 5.0])
@pytest.mark.parametrize("batches", [[16] * 8, [4, 8, 8, 16, 16, 16, 32, 0]])
def test_every_device_gets_its_batchs_time_over_its_nodes_speed_at_that_moment(
    at_seconds: float, batches: list[int]
) -> None:
    cluster = parse_spec({
        "workload": {"name": "digits-mlp"},
        "cluster": {"nodes": 4, "devices_per_node": 2, "device": {"name": "h100"}, "jitter": 0.0,
                    "node_speed": [1.0, 0.5, 1.0, 2.0],
                    "throttle": {"node": 2, "speed": 0.25, "after_seconds": 1.0}},
    }).cluster
    hardware = Hardware(cluster, COST, seed=0)
    devices = list(range(8))
    expected = [hardware.base_compute_seconds(b) / cluster.speed_of_node(d // 2, at_seconds)
                for b, d in zip(batches, devices, strict=True)]
    assert np.allclose(hardware.compute_seconds(batches, devices, at_seconds), expected, rtol=1e-12)
