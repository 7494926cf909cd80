"""Real (tensor) reductions used by the strategies, written level by level as a cluster runs them."""

from __future__ import annotations

import torch


def flat_mean(per_device: torch.Tensor) -> torch.Tensor:
    """All-reduce-mean over every device at once. ``per_device``: (N, D, ...) → (...)."""
    return per_device.flatten(0, 1).mean(0)


def hierarchical_mean(per_device: torch.Tensor) -> torch.Tensor:
    """HSGD's two-level reduction of ``per_device`` (N nodes, D devices, ...) → (...).

    1. reduce (sum) inside each node to its leader;  2. all-reduce (sum) across the N leaders;
    3. divide by N·D and broadcast back. Equal to :func:`flat_mean` up to float rounding.
    """
    nodes, devices = per_device.shape[:2]
    node_sums = per_device.sum(1)  # (N, ...) one per leader
    return node_sums.sum(0) / (nodes * devices)
