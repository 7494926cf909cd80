"""Every built-in workload builds, trains a few steps with falling loss, and is seed-deterministic."""

from __future__ import annotations

import pytest
import torch

from worker.workloads import BUILTIN, build_workload
from worker.workloads.teacher import softmax_teacher


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_workload_trains(name: str) -> None:
    workload = build_workload(0, name=name)
    torch.manual_seed(0)
    model = workload.build_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    x, y = workload.train_batch(torch.arange(64))
    losses = []
    for _ in range(15):
        optimizer.zero_grad()
        loss = workload.loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0]
    assert workload.default_target > 0
    assert len(workload.eval_x) > 0 and len(workload.train_x) > len(workload.eval_x)


def test_split_is_deterministic_in_seed() -> None:
    a, b, c = (build_workload(s, name="digits-mlp") for s in (0, 0, 1))
    assert torch.equal(a.train_x, b.train_x)
    assert not torch.equal(a.train_x, c.train_x)


def test_teacher_classification_default_target_is_above_its_bayes_floor() -> None:
    """The teacher's own logits are the best predictor of labels sampled from it: a default target
    below their cross-entropy can be reached by no run (it was 0.36 against a floor of 0.63)."""
    x, y, logits = softmax_teacher()
    floor = float(torch.nn.functional.cross_entropy(logits, y))
    assert floor < build_workload(0, "teacher-classification").default_target < 1.5 * floor
