"""Regret against the best config anyone found (benchmarks/best_found.py): other study seeds' plans
of the same scenario are yardsticks too, so a scenario without a grid is still scored."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.best_found import regret_found


def _row(scenario: str, study_seed: int, truths: dict[int, float | None]) -> dict[str, Any]:
    return {"scenario": scenario, "kind": "long", "probe_seed": study_seed,
            "scores": [{"seed": seed, "truth": truth} for seed, truth in truths.items()]}


def test_a_plan_is_measured_against_another_study_seeds_plan_where_there_is_no_grid() -> None:
    rows = [_row("cnn", 0, {1: 0.05, 2: 0.06}), _row("cnn", 13, {1: 0.11, 2: 0.11})]
    found = regret_found(rows, {"cnn": None})
    assert found["worst"] == pytest.approx(0.11 / 0.055)
    assert found["worst_plan"] == "cnn on study seed 13" and found["plans"] == 2
    assert found["by_plan"]["cnn on study seed 0"] == 1.0
    assert found["median"] == pytest.approx((1.0 + 0.11 / 0.055) / 2)


def test_the_grid_is_compared_on_its_own_truth_seeds() -> None:
    rows = [_row("r", 0, {1: 0.12, 2: 0.10, 3: 0.50})]  # seed 3 is not the grid's: not compared
    found = regret_found(rows, {"r": {"best_known_ttc": 0.10, "truth_seeds": [1, 2]}})
    assert found["worst"] == pytest.approx(1.1)


def test_a_plan_that_never_reached_is_counted_apart() -> None:
    rows = [_row("r", 0, {1: 0.1}), _row("r", 10, {1: None})]
    found = regret_found(rows, {"r": None})
    assert found["unreached"] == 1 and found["plans"] == 1 and found["worst"] == 1.0
