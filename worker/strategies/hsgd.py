"""``hsgd``: hierarchical synchronous SGD (Wang et al., IEICE Trans. Inf. E103-D(12), 2020).

One synchronous update per step, but the gradient reduction has two levels: the D devices of a
node reduce to a leader over shared memory / NVLink, only the N leaders all-reduce over the
network, and each leader broadcasts the result inside its node (``reduce="hierarchical"``).
Each node reads its data from a contiguous shard of a once-shuffled dataset, so a batch is one
sequential read rather than one seek per sample (``options.shard = "strided"`` reads global
random samples instead, for comparison). Reads are prefetched while the device computes. LARS
(``optimizer = "lars"``) is the paper's companion for the large global batches this enables.

A step's indices are node 0's D·b, then node 1's, …; device d of node n takes the d-th b of its
node's — on the simulated backend one batch of N·D·b (the two-level mean equals the flat mean).
"""

from __future__ import annotations

from typing import Any, cast, get_args

import torch

from predictor.types import Config
from worker.strategies.base import Strategy
from worker.strategies.cluster import Cluster, Read

SHARDS = get_args(Read)  # ("contiguous", "strided")


def node_shards(config: Config, train_size: int, seed: int) -> tuple[Read, list[torch.Tensor]]:
    """The read mode (``options.shard``, validated) and each node's share of a seeded permutation."""
    mode = str(config.options.get("shard", "contiguous"))
    if mode not in SHARDS:
        raise ValueError(f"options.shard={mode!r} is not one of {list(SHARDS)}")
    order = torch.randperm(train_size, generator=torch.Generator().manual_seed(seed))
    return cast(Read, mode), list(order.tensor_split(config.nodes))


class HsgdStrategy(Strategy):
    name = "hsgd"

    def __init__(self, cluster: Cluster, seed: int) -> None:
        self.shard, self.shards = node_shards(cluster.config, cluster.workload.train_size, seed)
        super().__init__(cluster, seed)
        self.positions = [0] * self.config.nodes  # node n has read shards[n] up to here

    def _indices(self) -> torch.Tensor:
        """This step's N·D·b indices, node by node."""
        count = self.config.devices_per_node * self.config.batch_size
        if self.shard == "strided":
            return self.sampler.next(count * self.config.nodes)
        parts = []
        for node, shard in enumerate(self.shards):
            start = self.positions[node]
            parts.append(shard[torch.arange(start, start + count) % len(shard)])
            self.positions[node] = (start + count) % len(shard)
        return torch.cat(parts)

    def _replica_ids(self) -> list[int]:
        return self.cluster.replicas(1, reduce="hierarchical", read=self.shard)

    def step(self) -> None:
        self.cluster.gradient(self.model, self._indices(), replica=0)
        self.optimizer.step()
        self.iteration += 1

    def _state(self) -> dict[str, Any]:
        return {"positions": list(self.positions)}

    def _load_state(self, state: dict[str, Any]) -> None:
        self.positions = [int(p) for p in state["positions"]]
