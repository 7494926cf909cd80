"""forecast_eval scores ``ttc train``'s ETA at a share of the run with the ETA it had by then, never
a later one (benchmarks/forecast_eval.py)."""

from __future__ import annotations

import json
import math

import pytest

from benchmarks.forecast_eval import eta_error, eta_span, score_eta
from predictor.types import json_safe


def training(first_eta_at: int) -> dict[str, object]:
    """A 4,000-iteration run at 1 ms per iteration whose ETAs start once its tuning ended."""
    eta = [{"iteration": k, "seconds": k * 1e-3, "remaining_p10": 1.0, "remaining_p50": 2.0,
            "remaining_p90": 3.0} for k in range(first_eta_at, 4000, 500)]
    return {"reached": True, "iterations": 4000, "ttc_seconds": 4.5, "tuning_cluster_seconds": 0.5,
            "eta": eta}


def test_each_share_is_scored_with_the_last_eta_at_or_before_it() -> None:
    scored = score_eta(training(first_eta_at=500))
    assert [e["iteration"] for e in scored] == [1000, 2000, 3000]
    assert [e["truth"] for e in scored] == [3.0, 2.0, 1.0]


def test_an_etas_span_is_its_interval_over_the_runs_own_seconds() -> None:
    """The run's own seconds are 4.0 (4.5 less 0.5 of tuning); every ETA allows 1 to 3 s left."""
    run = training(first_eta_at=500)
    run["eta"][-2].update(remaining_p10=0.5, remaining_p90=0.7)  # iteration 3000, the 75% point
    assert [e["span"] for e in score_eta(run)] == [0.5, 0.5, pytest.approx(0.05)]


def test_a_share_the_run_passed_while_still_tuning_has_no_eta_and_no_error() -> None:
    """The first ETA at 3,500 iterations is the 87% point: it says nothing of the ETA at 25%."""
    scored = score_eta(training(first_eta_at=3500))
    assert [e["iteration"] for e in scored] == [None, None, None]
    assert all(e["error"] is None and "no ETA yet" in e["why"] for e in scored)


def test_an_eta_that_read_the_target_never_reached_is_infinitely_off() -> None:
    """An open p50 (the ETA read the loss levelling off above the target) on a run that reached it
    counts against the median rather than dropping out of it."""
    run = training(first_eta_at=500)
    run["eta"][1]["remaining_p50"] = run["eta"][1]["remaining_p90"] = None  # iteration 1000: the 25% point
    scored = score_eta(run)
    assert [eta_error(e) for e in scored] == [math.inf, 0.0, 1.0]


def test_an_open_p90s_span_stays_infinite_once_written_to_json() -> None:
    """A merge reads the rows back from JSON, where the infinite span was written ``null``: it still
    counts as infinitely wide, not as missing."""
    run = training(first_eta_at=500)
    run["eta"][1]["remaining_p90"] = None  # iteration 1000: the 25% point, open above
    scored = json.loads(json.dumps(json_safe(score_eta(run))))
    assert scored[0]["span"] is None
    assert [eta_span(e) for e in scored] == [math.inf, 0.5, 0.5]
