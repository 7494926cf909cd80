"""forecast_eval places each truth under its forecast as a z (benchmarks/forecast_eval.py): p10
and p90 at ∓1.28, each side log-normal, so calibrated forecasts' truths have median |z| 0.67. It
tells how far inside or outside the interval a truth sits, which coverage's count does not."""

from __future__ import annotations

import pytest

from benchmarks.forecast_eval import standard_score
from predictor.se_model import Z80


def test_a_truth_at_an_edge_of_the_interval_scores_z_of_that_edge() -> None:
    predicted = {"ttc_p10": 5.0, "ttc_p50": 10.0, "ttc_p90": 40.0}
    assert standard_score(predicted, 40.0) == pytest.approx(Z80)
    assert standard_score(predicted, 5.0) == pytest.approx(-Z80)
    assert standard_score(predicted, 20.0) == pytest.approx(Z80 / 2)  # halfway to p90 in log terms
    assert standard_score({**predicted, "ttc_p90": None}, 20.0) is None  # open above: no scale
    assert standard_score(predicted, None) is None  # never reached
