"""forecast_eval's rows from several study seeds (benchmarks/forecast_eval.py): a scenario's truths
share its study's centre, so coverage is also given per study seed, each centre drawn afresh."""

from __future__ import annotations

from typing import Any

import pytest

from benchmarks.forecast_eval import summarise


def _row(study_seed: int, truths: list[float]) -> dict[str, Any]:
    predicted = {"ttc_p10": 5.0, "ttc_p50": 10.0, "ttc_p90": 20.0}
    return {"scenario": "s", "kind": "short", "probe_seed": study_seed, "predicted": predicted,
            "target_position": None, "width": 4.0, "eta": [], "regret": None,
            "scores": [{"seed": k, "truth": t, "covered": 5.0 <= t <= 20.0, "error": abs(10.0 - t) / t,
                        "bound_held": None} for k, t in enumerate(truths, start=1)]}


def test_each_study_seed_is_scored_on_its_own_plans() -> None:
    summary = summarise([_row(0, [10.0, 12.0]), _row(10, [30.0, 10.0])])
    assert summary["coverage"] == pytest.approx(0.75)
    by_seed = summary["by_study_seed"]
    assert by_seed["0"]["coverage"] == 1.0 and by_seed["10"]["coverage"] == 0.5
    assert by_seed["0"]["pairs"] == by_seed["10"]["pairs"] == 2
    assert by_seed["0"]["median_abs_z"] < by_seed["10"]["median_abs_z"]


def test_one_study_seed_has_no_breakdown() -> None:
    assert summarise([_row(0, [10.0])])["by_study_seed"] is None
