"""The up-front check that a Ray cluster can hold the spec's cluster, and the words it uses."""

from __future__ import annotations

import pytest

from worker.ray_backend import RayBackendConfig
from worker.ray_backend.config import START_TIMEOUT_ENV
from worker.ray_backend.feasibility import (
    InfeasibleCluster,
    RayNode,
    check_feasible,
    gpus_per_worker,
    shortfall,
)
from worker.ray_backend.placement import RankLayout
from worker.spec import SpecError, parse_spec

TWO_SMALL = [RayNode("a" * 56, 1.0, 0.0), RayNode("b" * 56, 1.0, 0.0)]


def test_the_issue_case_two_one_cpu_nodes_cannot_hold_two_by_two() -> None:
    """2×2 devices at 1 CPU each: a node bundle needs 2 CPUs on one machine; the largest has 1."""
    missing = shortfall(RankLayout(2, 2), 1.0, 0.0, TWO_SMALL)
    assert missing is not None
    assert "cluster.nodes=2 × cluster.devices_per_node=2 needs 2 node bundle(s) of 2 CPU" in missing
    assert "missing: 1 CPU on one machine — the largest Ray node has 1 CPU" in missing
    assert "2 alive node(s): aaaaaaaaaaaa 1 CPU/0 GPU, bbbbbbbbbbbb 1 CPU/0 GPU" in missing


def test_bundles_that_fit_singly_but_not_all_together_name_the_count() -> None:
    missing = shortfall(RankLayout(3, 1), 1.0, 0.0, TWO_SMALL)
    assert missing is not None
    assert "missing: room for 1 more node bundle(s) — the Ray cluster holds 2 of 3" in missing


@pytest.mark.parametrize(("layout", "cpus", "nodes"), [
    (RankLayout(2, 1), 1.0, TWO_SMALL),  # one bundle per machine
    (RankLayout(4, 1), 0.5, TWO_SMALL),  # two half-CPU bundles per machine
    (RankLayout(2, 2), 1.0, [RayNode("big", 4.0, 0.0)]),  # both logical nodes on one machine
])
def test_a_cluster_that_can_hold_the_bundles_passes(layout: RankLayout, cpus: float,
                                                    nodes: list[RayNode]) -> None:
    assert shortfall(layout, cpus, 0.0, nodes) is None


def test_gpus_are_counted_when_devices_take_them() -> None:
    nodes = [RayNode("gpu", 16.0, 2.0)]
    assert gpus_per_worker(RayBackendConfig(), nodes, world_size=2) == 1.0  # enough GPUs: used
    assert gpus_per_worker(RayBackendConfig(), nodes, world_size=4) == 0.0  # not enough: CPU actors
    assert gpus_per_worker(RayBackendConfig(use_gpu=True), nodes, world_size=4) == 1.0
    missing = shortfall(RankLayout(1, 4), 1.0, 1.0, nodes)
    assert missing is not None and "missing: 2 GPU on one machine" in missing


def test_an_empty_cluster_is_described() -> None:
    missing = shortfall(RankLayout(1, 1), 1.0, 0.0, [])
    assert missing is not None and "Ray cluster: 0 alive node(s)" in missing


def test_the_placement_timeout_is_a_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(START_TIMEOUT_ENV, "12.5")
    assert RayBackendConfig.from_env().start_timeout_s == 12.5
    monkeypatch.setenv(START_TIMEOUT_ENV, "soon")
    with pytest.raises(ValueError, match="setting TTC_RAY_START_TIMEOUT_S='soon' is not a number"):
        RayBackendConfig.from_env()


def test_the_local_ray_is_asked_before_any_probe(ray_local: None) -> None:
    """The session's Ray has 2 CPUs: 1×2 fits, 1×3 is refused as a spec error (CLI exit 2)."""
    def spec(devices: int):
        return parse_spec({"workload": {"name": "digits-mlp"},
                           "cluster": {"backend": "ray", "nodes": 1, "devices_per_node": devices}})

    check_feasible(spec(2), RayBackendConfig(cpus_per_worker=1.0, use_gpu=False))
    with pytest.raises(InfeasibleCluster, match="missing: 1 CPU on one machine") as caught:
        check_feasible(spec(3), RayBackendConfig(cpus_per_worker=1.0, use_gpu=False))
    assert isinstance(caught.value, SpecError)
