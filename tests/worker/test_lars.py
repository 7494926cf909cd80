"""LARS (You et al. 2017) against a hand computation."""

from __future__ import annotations

import pytest
import torch

from predictor.types import Config
from worker.optim import LARS, make_optimizer


def test_lars_step_matches_hand_computation() -> None:
    weight = torch.nn.Parameter(torch.tensor([[3.0, 4.0]]))  # ‖w‖ = 5
    bias = torch.nn.Parameter(torch.tensor([1.0]))
    weight.grad = torch.tensor([[0.6, 0.8]])  # ‖∇L‖ = 1
    bias.grad = torch.tensor([0.5])
    optimizer = make_optimizer(
        [weight, bias], Config("sync", 1, 1, lr=2.0, momentum=0.9, optimizer="lars",
                               options={"weight_decay": 0.1, "trust_coefficient": 0.001}),
    )
    assert isinstance(optimizer, LARS)
    optimizer.step()
    trust = 0.001 * 5 / (1 + 0.1 * 5)  # η‖w‖/(‖∇L‖ + β‖w‖)
    w0, g0 = torch.tensor([[3.0, 4.0]]), torch.tensor([[0.6, 0.8]])
    expected = w0 - 2.0 * trust * (g0 + 0.1 * w0)
    torch.testing.assert_close(weight.detach(), expected)
    torch.testing.assert_close(bias.detach(), torch.tensor([1.0 - 2.0 * 0.5]))  # excluded: plain SGD
    # second step: momentum carries the first update
    velocity = w0 - expected
    weight.grad = torch.tensor([[0.6, 0.8]])
    w = weight.detach().clone()
    optimizer.step()
    trust2 = 0.001 * float(w.norm()) / (1 + 0.1 * float(w.norm()))
    torch.testing.assert_close(weight.detach(), w - (0.9 * velocity + 2.0 * trust2 * (weight.grad + 0.1 * w)))


def test_lars_rejects_bad_arguments() -> None:
    with pytest.raises(ValueError, match="trust_coefficient"):
        LARS([torch.nn.Parameter(torch.ones(2, 2))], lr=1.0, trust_coefficient=0.0)
