"""Epoch-ordered sampling: every worker's batch is a contiguous slice of a seeded permutation."""

from __future__ import annotations

import torch


class EpochSampler:
    """Hands out sample indices from a fresh permutation each epoch (no repeats within one)."""

    def __init__(self, size: int, seed: int) -> None:
        self.size = size
        self.generator = torch.Generator().manual_seed(seed)
        self.order = torch.randperm(size, generator=self.generator)
        self.position = 0
        self.epoch = 0

    @property
    def epochs_done(self) -> float:
        return self.epoch + self.position / self.size

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
