"""Value of information and the plan's confidence: pure functions, checked on their definitions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from predictor.confidence import MAX_EXTRAPOLATION, MAX_HINDCAST_MISS, assess
from predictor.reference_curve import Hindcast
from predictor.regime import Regime, RegimeReading
from predictor.types import Prediction
from predictor.value import expected_improvement

STEADY = RegimeReading(Regime.STEADY, 0.1, 0.07, 0.001)


def prediction(point: float, span: float, iterations: float = 1000, evidence: float = 500) -> Prediction:
    return Prediction(point, point / math.sqrt(span), point * math.sqrt(span), 1e-3, iterations, evidence)


def test_expected_improvement_matches_a_monte_carlo_of_its_lognormal() -> None:
    candidate = prediction(1.0, span=4.0)
    sigma = math.log(4.0) / (2 * 1.2816)
    draws = np.exp(np.random.default_rng(0).normal(0.0, sigma, 200_000))
    for incumbent in (0.5, 1.0, 2.0):
        monte_carlo = float(np.mean(np.maximum(incumbent - draws, 0.0)))
        assert expected_improvement(incumbent, candidate) == pytest.approx(monte_carlo, rel=0.02, abs=1e-4)


def test_a_certainly_slower_candidate_is_worth_nothing_and_an_unknown_one_everything() -> None:
    assert expected_improvement(1.0, prediction(10.0, span=1.01)) == pytest.approx(0.0, abs=1e-12)
    assert expected_improvement(1.0, None) == math.inf


def test_a_measured_plan_is_confident() -> None:
    assert assess(prediction(1.0, 1.1), reached=True, regime=STEADY).level == "high"


def test_past_the_stated_multiple_no_number_is_given() -> None:
    far = prediction(1.0, 1.5, iterations=MAX_EXTRAPOLATION * 600, evidence=500)
    confidence = assess(far, reached=False, regime=STEADY)
    assert confidence.level == "none" and not confidence.supported
    assert "extrapolate" in confidence.reason


def test_a_curve_out_of_its_slow_regime_is_not_extrapolated_far() -> None:
    transient = RegimeReading(Regime.TRANSIENT, 0.5, 0.05, 0.001)
    assert assess(prediction(1.0, 1.5, iterations=5000), False, transient).level == "none"
    assert assess(prediction(1.0, 1.5, iterations=600), False, transient).level == "low"


def test_a_confident_plan_spans_at_most_three_fold() -> None:
    for span in (1.2, 2.0, 2.9, 3.5, 30.0):
        level = assess(prediction(1.0, span), reached=False, regime=STEADY).level
        assert (level in ("high", "medium")) == (span <= 3.0)


def test_an_interval_the_evidence_does_not_bound_above_gives_no_number() -> None:
    """A point an unbounded interval surrounds (a fork's progress within its noise) is no number,
    however near the evidence it lies; the same point with a bounded interval keeps one."""
    near = prediction(1.0, 1.2, iterations=550, evidence=500)
    unbounded = Prediction(near.ttc_seconds, near.ttc_low, math.inf, 1e-3, 550, 500)
    confidence = assess(unbounded, reached=False, regime=STEADY)
    assert confidence.level == "none" and "no upper end" in confidence.reason
    assert assess(near, reached=False, regime=STEADY).supported


def test_an_extrapolation_that_missed_when_made_earlier_at_its_horizon_gives_no_number() -> None:
    """The same prediction with the same interval: printed when the backtest landed, withheld when
    it missed by more than MAX_HINDCAST_MISS or could not be made, with where it was made."""
    near = prediction(1.0, span=1.4, iterations=900, evidence=450)
    assert assess(near, False, STEADY, hindcast=Hindcast(150.0, 1.2)).level == "high"
    missed = assess(near, False, STEADY, hindcast=Hindcast(150.0, MAX_HINDCAST_MISS * 1.2))
    assert missed.level == "none" and "iteration 150" in missed.reason
    assert not assess(near, False, STEADY, hindcast=Hindcast(150.0, math.inf)).supported
