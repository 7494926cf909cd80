"""Where a workload's samples come from: tensors held in memory, or a ``torch.utils.data.Dataset``.

Strategies and the evaluator never index tensors themselves; they ask the workload for the
samples at some indices (``Workload.train_batch``), and the source answers. Tensors answer by
fancy indexing (one copy, no Python loop); a map-style ``Dataset`` answers item by item and its
``collate`` (``torch.utils.data.default_collate`` unless the workload gives one) stacks the items —
the same contract as a ``DataLoader``, so a dataset that already feeds one works here unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sized
from typing import Any, Protocol

import torch
from torch.utils.data import Dataset, IterableDataset, default_collate

Collate = Callable[[list[Any]], Any]


class SampleSource(Protocol):
    """Samples by index: ``batch(index)`` → ``(inputs, targets)``, each with ``len(index)`` rows."""

    def __len__(self) -> int: ...

    def batch(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...


class TensorSource:
    """Inputs and targets in memory, one sample per row along dim 0."""

    def __init__(self, field: str, inputs: torch.Tensor, targets: torch.Tensor) -> None:
        for name, value in ((f"{field}_x", inputs), (f"{field}_y", targets)):
            if not isinstance(value, torch.Tensor) or value.dim() == 0:
                raise ValueError(f"{name} must be a tensor with one sample per row, got {_describe(value)}")
        if inputs.shape[0] != targets.shape[0]:
            raise ValueError(
                f"{field}_x has {inputs.shape[0]} rows but {field}_y has {targets.shape[0]}; "
                "inputs and targets must have one row per sample"
            )
        if inputs.shape[0] == 0:
            raise ValueError(f"{field}_x has no rows; the {field} split needs at least one sample")
        self.inputs, self.targets = inputs, targets

    def __len__(self) -> int:
        return int(self.inputs.shape[0])

    def batch(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.inputs[index], self.targets[index]


class DatasetSource:
    """A map-style ``Dataset`` whose item ``i`` is one ``(input, target)`` sample."""

    def __init__(self, field: str, dataset: Dataset, collate: Collate | None) -> None:
        if isinstance(dataset, IterableDataset) or not isinstance(dataset, Sized):
            raise ValueError(
                f"{field}_dataset must be a map-style Dataset with __len__ and __getitem__ "
                f"(sampling needs random access), got {_describe(dataset)}"
            )
        if len(dataset) == 0:
            raise ValueError(f"{field}_dataset is empty; the {field} split needs at least one sample")
        self.field = field
        self.dataset = dataset
        self.collate = collate or default_collate

    def __len__(self) -> int:
        return len(self.dataset)  # type: ignore[arg-type]  # Sized, checked above

    def batch(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        collated = self.collate([self.dataset[i] for i in index.tolist()])
        if (
            not isinstance(collated, (tuple, list))
            or len(collated) != 2
            or not all(isinstance(part, torch.Tensor) for part in collated)
        ):
            raise ValueError(
                f"collate of {self.field}_dataset must give (inputs, targets) tensors, "
                f"got {_describe(collated)}; items must be (input, target) pairs or the workload "
                "must pass a collate that builds them"
            )
        return collated[0], collated[1]


def _describe(value: object) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)}"
    if isinstance(value, (tuple, list)):
        kinds = ", ".join(type(v).__name__ for v in value[:4]) + (", …" if len(value) > 4 else "")
        return f"a {type(value).__name__} of {len(value)} ({kinds})"
    return type(value).__name__
