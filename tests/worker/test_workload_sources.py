"""A workload's samples from tensors or from a torch Dataset: same batches, same evaluation, clear errors."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import Dataset, IterableDataset, TensorDataset

from predictor.types import Config
from worker.convergence import Evaluator
from worker.probe import run_config
from worker.simulated.calibration import model_cost
from worker.spec import parse_spec
from worker.workloads import Workload, build_workload
from worker.workloads.base import cross_entropy


class Pairs(Dataset):
    """A map-style dataset that yields ``(input, target)`` pairs one by one, like a file-backed one."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y, self.reads = x, y, 0

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        self.reads += 1
        return self.x[index], self.y[index]


def digits_from_datasets(seed: int = 0) -> Workload:
    """The built-in digits MLP, its samples served by datasets instead of tensors."""
    tensors = build_workload(seed, name="digits-mlp")
    return Workload.from_datasets(
        "digits-mlp-dataset", tensors.build_model, tensors.loss_fn,
        train=Pairs(tensors.train_x, tensors.train_y), eval=Pairs(tensors.eval_x, tensors.eval_y),
        default_target=tensors.default_target,
    )


def test_a_dataset_workload_serves_the_same_batches_as_tensors() -> None:
    tensors, datasets = build_workload(0, name="digits-mlp"), digits_from_datasets(0)
    index = torch.tensor([5, 0, 17, 5, 1000])
    assert (datasets.train_size, datasets.eval_size) == (tensors.train_size, tensors.eval_size)
    for ours, theirs in zip(datasets.train_batch(index), tensors.train_batch(index), strict=True):
        assert torch.equal(ours, theirs)
    for ours, theirs in zip(datasets.eval_batch(index[:3]), tensors.eval_batch(index[:3]), strict=True):
        assert torch.equal(ours, theirs)


def test_evaluation_and_calibration_read_through_the_workload() -> None:
    tensors, datasets = build_workload(0, name="digits-mlp"), digits_from_datasets(0)
    torch.manual_seed(0)
    model = tensors.build_model()
    for metric in ("train_loss", "eval_loss"):
        assert Evaluator(datasets, metric)(model) == pytest.approx(Evaluator(tensors, metric)(model))
    cost = model_cost(datasets)
    assert cost.flops_per_sample == model_cost(tensors).flops_per_sample
    assert cost.cpu_per_sample_seconds > 0


def test_a_custom_collate_builds_the_batch() -> None:
    items = [{"features": torch.full((3,), float(i)), "label": i % 2} for i in range(10)]

    class Records(Dataset):
        def __len__(self) -> int:
            return len(items)

        def __getitem__(self, index: int) -> dict:
            return items[index]

    def collate(batch: list[dict]) -> tuple[torch.Tensor, torch.Tensor]:
        return torch.stack([b["features"] for b in batch]), torch.tensor([b["label"] for b in batch])

    workload = Workload.from_datasets("records", lambda: torch.nn.Linear(3, 2), cross_entropy,
                                      Records(), Records(), 0.5, collate=collate)
    x, y = workload.train_batch(torch.tensor([2, 3]))
    assert x.tolist() == [[2.0] * 3, [3.0] * 3] and y.tolist() == [0, 1]


def _tensors(rows: int = 4) -> dict:
    return {"train_x": torch.zeros(rows, 2), "train_y": torch.zeros(rows, dtype=torch.long),
            "eval_x": torch.zeros(2, 2), "eval_y": torch.zeros(2, dtype=torch.long)}


class Stream(IterableDataset):
    def __iter__(self):
        yield torch.zeros(2), 0


@pytest.mark.parametrize(("change", "message"), [
    ({"default_target": 0.0}, "default_target must be a finite number > 0, got 0.0"),
    ({"default_target": float("nan")}, "default_target must be a finite number > 0, got nan"),
    ({"train_y": torch.zeros(3, dtype=torch.long)}, "train_x has 4 rows but train_y has 3"),
    ({"eval_x": None}, "the eval split needs eval_x and eval_y tensors or a eval_dataset"),
    ({"train_dataset": TensorDataset(torch.zeros(2, 2))}, "give either train_dataset or train_x/train_y"),
    ({"build_model": "nn.Linear"}, "build_model must be callable, got str"),
    ({"train_x": None, "train_y": None, "train_dataset": Stream()},
     "train_dataset must be a map-style Dataset with __len__ and __getitem__"),
])
def test_a_bad_workload_is_refused_naming_the_field_and_value(change: dict, message: str) -> None:
    arguments = {"name": "bad", "build_model": lambda: torch.nn.Linear(2, 2), "loss_fn": cross_entropy,
                 **_tensors(), "default_target": 0.5, **change}
    with pytest.raises(ValueError, match="workload 'bad' is invalid") as caught:
        Workload(**arguments)
    assert message in str(caught.value)


def test_a_collate_that_returns_no_pair_is_named() -> None:
    workload = Workload.from_datasets("triples", lambda: torch.nn.Linear(2, 2), cross_entropy,
                                      TensorDataset(torch.zeros(4, 2), torch.zeros(4), torch.zeros(4)),
                                      TensorDataset(torch.zeros(2, 2), torch.zeros(2)), 0.5)
    with pytest.raises(ValueError, match=r"collate of train_dataset must give \(inputs, targets\) tensors, "
                                         r"got a list of 3 \(Tensor, Tensor, Tensor\)"):
        workload.train_batch(torch.tensor([0, 1]))


def test_a_dataset_workload_trains_to_its_target_like_the_tensor_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TTC_WORKLOAD_MODULES", __name__)
    factory = {"factory": f"{__name__}:digits_from_datasets"}
    spec = {"target": {"value": 0.5, "eval_every": 5},
            "cluster": {"nodes": 1, "devices_per_node": 2, "device": {"name": "cpu"}}}
    config = Config("sync", 1, 2, batch_size=32, lr=0.1, momentum=0.9)
    ours = run_config(parse_spec({**spec, "workload": factory}), config, 10.0, 60)
    theirs = run_config(parse_spec({**spec, "workload": {"name": "digits-mlp"}}), config, 10.0, 60)
    assert ours.reached_iteration == theirs.reached_iteration is not None
    assert [loss for _, _, loss in ours.curve] == pytest.approx([loss for _, _, loss in theirs.curve])
