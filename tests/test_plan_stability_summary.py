"""plan_stability's summary (benchmarks/plan_stability.py) is the same whether the scenarios ran in
one invocation or in several merged: a plan changes with the seed when its config or warm-up does."""

from __future__ import annotations

from benchmarks.plan_stability import summarise


def row(scenario: str, seed: int, config: str, warmup: int | None, regret: float) -> dict[str, object]:
    return {"scenario": scenario, "study_seed": seed, "config": config, "warmup": warmup, "regret": regret}


def test_a_plan_changes_with_the_seed_when_its_config_or_its_warm_up_does() -> None:
    rows = [row("a", 0, "x", None, 1.0), row("a", 5, "x", None, 1.0),
            row("b", 0, "y", 400, 1.0), row("b", 5, "y", 800, 1.2),
            row("c", 0, "z", None, 1.0), row("c", 5, "w", None, 2.0)]
    summary = summarise(rows)
    assert summary["scenarios"] == 3 and summary["study_seeds"] == [0, 5]
    assert summary["plans_that_change_with_the_seed"] == 2
    assert summary["median_regret"] == 1.0 and summary["worst_regret"] == 2.0
