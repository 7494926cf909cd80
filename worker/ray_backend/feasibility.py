"""Can the Ray cluster hold the spec's cluster at all? Asked once, before any probe.

Without this question a spec that asks for more than the cluster has is found out the slow way:
every probe's placement group waits its whole ``start_timeout_s`` and fails, and the study ends
with "target unreachable" — a wrong answer, minutes later. The placement is one bundle per
logical node (``placement.node_bundles``: the CPUs, and GPUs, of its devices), and a bundle never
straddles machines; since all bundles are equal, the cluster can hold the spec exactly when the
bundles that fit on each alive Ray node add up to ``cluster.nodes``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import ray

from worker.ray_backend.config import CPUS_ENV, GPUS_ENV, RayBackendConfig
from worker.ray_backend.placement import RankLayout, node_bundles
from worker.spec import Spec, SpecError


class InfeasibleCluster(SpecError):
    """The Ray cluster cannot hold the spec's cluster; the message names what is missing.

    A spec error (CLI exit 2): the spec asks for what this cluster does not have.
    """


@dataclass(frozen=True)
class RayNode:
    """One alive Ray node and the resources it registered."""

    node_id: str
    cpus: float
    gpus: float

    def amount(self, resource: str) -> float:
        return {"CPU": self.cpus, "GPU": self.gpus}.get(resource, 0.0)

    def bundles_that_fit(self, bundle: dict[str, float]) -> int:
        return min(math.floor(self.amount(name) / need + 1e-9) for name, need in bundle.items() if need)


def alive_nodes() -> list[RayNode]:
    """The connected cluster's alive nodes (works through Ray Client too)."""
    return [
        RayNode(node["NodeID"], node["Resources"].get("CPU", 0.0), node["Resources"].get("GPU", 0.0))
        for node in ray.nodes()
        if node.get("Alive")
    ]


def gpus_per_worker(config: RayBackendConfig, nodes: list[RayNode], world_size: int) -> float:
    """As ``WorkerGroup`` decides: one GPU per device when asked, or by default when there are enough."""
    use_gpu = config.use_gpu
    if use_gpu is None:
        use_gpu = sum(node.gpus for node in nodes) >= world_size
    return 1.0 if use_gpu else 0.0


def shortfall(layout: RankLayout, cpus: float, gpus: float, nodes: list[RayNode]) -> str | None:
    """What the cluster lacks for ``layout`` (None when it fits), in words a user can act on."""
    bundle = node_bundles(layout, cpus, gpus)[0]
    held = _bundles_held(bundle, nodes)
    if held >= layout.nodes:
        return None
    wants = " + ".join(f"{amount:g} {name}" for name, amount in bundle.items() if amount)
    per_device = f"{cpus:g} CPU" + (f" + {gpus:g} GPU" if gpus else "")
    lines = [
        f"cluster.nodes={layout.nodes} × cluster.devices_per_node={layout.devices_per_node} needs "
        f"{layout.nodes} node bundle(s) of {wants} on one machine each "
        f"({layout.devices_per_node} device(s) × {per_device}; {CPUS_ENV}, {GPUS_ENV})",
    ]
    for name, amount in bundle.items():
        largest = max((node.amount(name) for node in nodes), default=0.0)
        if amount and largest < amount:
            lines.append(f"missing: {amount - largest:g} {name} on one machine — the largest Ray node has "
                         f"{largest:g} {name}, a node bundle needs {amount:g}")
    if len(lines) == 1:
        lines.append(f"missing: room for {layout.nodes - held} more node bundle(s) — the Ray cluster "
                     f"holds {held} of {layout.nodes}")
    described = ", ".join(f"{node.node_id[:12]} {node.cpus:g} CPU/{node.gpus:g} GPU" for node in nodes)
    lines.append(f"Ray cluster: {len(nodes)} alive node(s){': ' + described if nodes else ''}")
    return "; ".join(lines)


def check_feasible(spec: Spec, config: RayBackendConfig | None = None) -> None:
    """Raise :class:`InfeasibleCluster` when the connected Ray cluster cannot hold ``spec.cluster``."""
    config = config or RayBackendConfig.from_env()
    layout = RankLayout(spec.cluster.nodes, spec.cluster.devices_per_node)
    nodes = alive_nodes()
    gpus = gpus_per_worker(config, nodes, layout.world_size)
    missing = shortfall(layout, config.cpus_per_worker, gpus, nodes)
    if missing is not None:
        raise InfeasibleCluster(f"the Ray cluster cannot hold this spec: {missing}")


def copies_that_fit(layout: RankLayout, config: RayBackendConfig | None = None) -> int:
    """How many groups of ``layout`` the Ray cluster holds at once (at least 1)."""
    config = config or RayBackendConfig.from_env()
    nodes = alive_nodes()
    gpus = gpus_per_worker(config, nodes, layout.world_size)
    bundle = node_bundles(layout, config.cpus_per_worker, gpus)[0]
    return max(1, _bundles_held(bundle, nodes) // layout.nodes)


def _bundles_held(bundle: dict[str, float], nodes: list[RayNode]) -> int:
    """Node bundles the cluster holds at once (a bundle never straddles machines)."""
    return sum(node.bundles_that_fit(bundle) for node in nodes)
