"""The workload contract: a model factory, a loss, train and eval samples, and a documented target.

Users write factories ``fn(seed: int) -> Workload`` (docs/user-guide.md §4); the constructor
checks what a factory returns, so a mistake in user code is reported by field and value where it
is made instead of as a shape error deep inside a strategy.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn
from torch.utils.data import Dataset

from worker.workloads.sources import Collate, DatasetSource, SampleSource, TensorSource


@dataclass
class Workload:
    """Everything a strategy needs to train one job.

    Samples come either from tensors in memory — ``train_x``/``train_y`` indexed along dim 0 (one
    sample per row), ``eval_x``/``eval_y`` a held-out split — or, built with
    :meth:`from_datasets`, from map-style ``torch.utils.data.Dataset`` objects whose items are
    ``(input, target)`` pairs, stacked by ``collate``. Either way, strategies and the evaluator
    read samples only through :meth:`train_batch` and :meth:`eval_batch`.

    ``default_target`` is the ``train_loss`` the workload converges to in a few hundred to a few
    thousand updates at a sensible learning rate (see each factory). ``has_batch_norm`` tells the
    simulated cluster it may not merge workers' batches into one (batch statistics differ).
    """

    name: str
    build_model: Callable[[], nn.Module]
    loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    train_x: torch.Tensor | None
    train_y: torch.Tensor | None
    eval_x: torch.Tensor | None
    eval_y: torch.Tensor | None
    default_target: float
    has_batch_norm: bool = False
    train_dataset: Dataset | None = field(default=None, kw_only=True)
    eval_dataset: Dataset | None = field(default=None, kw_only=True)
    collate: Collate | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        errors = []
        if not isinstance(self.name, str) or not self.name:
            errors.append(f"name must be a non-empty string, got {self.name!r}")
        for attribute in ("build_model", "loss_fn"):
            if not callable(getattr(self, attribute)):
                errors.append(f"{attribute} must be callable, got {type(getattr(self, attribute)).__name__}")
        target = self.default_target
        if not isinstance(target, (int, float)) or not math.isfinite(target) or target <= 0:
            errors.append(f"default_target must be a finite number > 0, got {target!r}")
        sources: dict[str, SampleSource] = {}
        for split in ("train", "eval"):
            try:
                sources[split] = self._source(split)
            except ValueError as exc:
                errors.append(str(exc))
        if errors:
            raise ValueError(f"workload {self.name!r} is invalid: " + "; ".join(errors))
        self._train, self._eval = sources["train"], sources["eval"]

    def _source(self, split: str) -> SampleSource:
        inputs, targets = getattr(self, f"{split}_x"), getattr(self, f"{split}_y")
        dataset = getattr(self, f"{split}_dataset")
        if dataset is not None:
            if inputs is not None or targets is not None:
                raise ValueError(f"give either {split}_dataset or {split}_x/{split}_y, not both")
            return DatasetSource(split, dataset, self.collate)
        if inputs is None or targets is None:
            raise ValueError(f"the {split} split needs {split}_x and {split}_y tensors or a {split}_dataset")
        return TensorSource(split, inputs, targets)

    @classmethod
    def from_datasets(
        cls,
        name: str,
        build_model: Callable[[], nn.Module],
        loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
        train: Dataset,
        eval: Dataset,
        default_target: float,
        *,
        collate: Collate | None = None,
        has_batch_norm: bool = False,
    ) -> Workload:
        """A workload whose samples are read from datasets (items ``(input, target)``) on demand."""
        return cls(name, build_model, loss_fn, None, None, None, None, default_target, has_batch_norm,
                   train_dataset=train, eval_dataset=eval, collate=collate)

    @property
    def train_size(self) -> int:
        return len(self._train)

    @property
    def eval_size(self) -> int:
        return len(self._eval)

    def train_batch(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(inputs, targets)`` of the training samples at ``index`` (a 1-D integer tensor)."""
        return self._train.batch(index)

    def eval_batch(self, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(inputs, targets)`` of the held-out samples at ``index``."""
        return self._eval.batch(index)


def cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean cross entropy over every position, for classifiers and sequence models alike."""
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
