"""Placement groups that map device actors to nodes.

One bundle per logical node holds the resources of all its devices, so the node's actors are
packed onto one machine (a bundle never straddles machines); the bundles are spread across
machines with the soft ``SPREAD`` strategy. Soft, because on a single machine every bundle
lands on the local node — the logical nodes of a one-machine cluster are just these bundles.
"""

from __future__ import annotations

from dataclasses import dataclass

import ray
from ray.util.placement_group import PlacementGroup, placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy


@dataclass(frozen=True)
class RankLayout:
    """``nodes`` × ``devices_per_node`` device actors; rank r sits on node r // devices_per_node."""

    nodes: int
    devices_per_node: int

    def __post_init__(self) -> None:
        if self.nodes < 1 or self.devices_per_node < 1:
            raise ValueError(
                f"rank layout needs nodes >= 1 and devices_per_node >= 1, got "
                f"nodes={self.nodes}, devices_per_node={self.devices_per_node}"
            )

    @property
    def world_size(self) -> int:
        return self.nodes * self.devices_per_node

    def node_of(self, rank: int) -> int:
        return rank // self.devices_per_node

    def node_ranks(self, node: int) -> list[int]:
        return list(range(node * self.devices_per_node, (node + 1) * self.devices_per_node))

    @property
    def leader_ranks(self) -> list[int]:
        """Local rank 0 of every node: the ranks that talk across nodes in hierarchical schemes."""
        return [node * self.devices_per_node for node in range(self.nodes)]


def node_bundles(layout: RankLayout, cpus: float, gpus: float) -> list[dict[str, float]]:
    """One bundle per node with the summed resources of its device actors."""
    bundle = {"CPU": cpus * layout.devices_per_node}
    if gpus:
        bundle["GPU"] = gpus * layout.devices_per_node
    return [dict(bundle) for _ in range(layout.nodes)]


def reserve(layout: RankLayout, cpus: float, gpus: float, timeout_s: float, name: str = "") -> PlacementGroup:
    """Reserve the nodes' bundles; raise with the request when the cluster cannot hold them.
    ``name`` lets whoever outlives the creator find and remove it (see ``probe_host``)."""
    group = placement_group(node_bundles(layout, cpus, gpus), strategy="SPREAD", name=name)
    ready, _ = ray.wait([group.ready()], timeout=timeout_s)
    if not ready:
        remove_placement_group(group)
        raise TimeoutError(
            f"Ray could not reserve {layout.nodes} node bundle(s) of {layout.devices_per_node} "
            f"device(s) × {cpus} CPU / {gpus} GPU within {timeout_s:.0f}s; "
            f"cluster has {ray.cluster_resources()}"
        )
    return group


def on_node(group: PlacementGroup, node: int) -> PlacementGroupSchedulingStrategy:
    """Scheduling strategy that puts an actor into ``node``'s bundle."""
    return PlacementGroupSchedulingStrategy(placement_group=group, placement_group_bundle_index=node)
