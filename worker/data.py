"""Epoch-ordered sampling: every worker's batch is a contiguous slice of a seeded permutation."""

from __future__ import annotations

from typing import Any

import torch


class EpochSampler:
    """Hands out sample indices from a fresh permutation each epoch (no repeats within one)."""

    def __init__(self, size: int, seed: int) -> None:
        self.size = size
        self.generator = torch.Generator().manual_seed(seed)
        self.order = torch.randperm(size, generator=self.generator)
        self.position = 0
        self.epoch = 0

    def next(self, count: int) -> torch.Tensor:
        """The next ``count`` indices; an epoch boundary reshuffles and carries on."""
        parts, needed = [], count
        while needed > 0:
            if self.position >= self.size:
                self.order = torch.randperm(self.size, generator=self.generator)
                self.position = 0
                self.epoch += 1
            take = min(needed, self.size - self.position)
            parts.append(self.order[self.position : self.position + take])
            self.position += take
            needed -= take
        return torch.cat(parts)

    def state(self) -> dict[str, Any]:
        """Where the sampler stands: resumes the same index stream (checkpoints)."""
        return {"generator": self.generator.get_state(), "order": self.order.clone(),
                "position": self.position, "epoch": self.epoch}

    def load_state(self, state: dict[str, Any]) -> None:
        if len(state["order"]) != self.size:
            raise ValueError(f"sampler state has {len(state['order'])} samples, this sampler {self.size}")
        self.generator.set_state(state["generator"])
        self.order = state["order"].clone()
        self.position = int(state["position"])
        self.epoch = int(state["epoch"])
