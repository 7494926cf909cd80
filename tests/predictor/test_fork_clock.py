"""The warm-up's clock, which bounds how fast any fork may read before its reading counts as shed
gradient noise rather than progress (predictor.ttc_model.TtcModel._clock): only a continuation
clearly ahead of the reference lifts it."""

from __future__ import annotations

import math

import pytest

from predictor.reference_curve import ReferenceCurve, fork_rate
from tests.predictor.test_reference_curve import CONFIG, fork
from tests.predictor.test_speed_first import TARGET, model_of, moved


def test_a_continuation_whose_interval_holds_its_own_pace_lifts_no_clock(reference: ReferenceCurve) -> None:
    """Read through noise, the continuation's 80% interval spans its own pace (1) and far above it:
    a cooler fork (a fifth of the step) is then allowed no more than the warm-up's pace, as beside
    no continuation at all, where the interval's top would have allowed it that top."""
    cooler = moved(fork(4.0), lr=CONFIG.lr / 5)
    model = model_of(reference, fork(1.0, noise=0.1, seed=1), cooler)
    control = model._continuation_rate
    assert control is not None and control.rate_low <= 1.0 and control.rate_high > 4.0
    assert model._clock() == 1.0
    assert model.fastest_rate(cooler.config) == pytest.approx(1.0)
    assert model.shedding_noise(cooler.config, 4.0)


def test_a_continuation_clearly_ahead_lifts_the_clock_to_the_top_of_its_reading(
    reference: ReferenceCurve,
) -> None:
    model = model_of(reference, fork(2.0))
    control = model._continuation_rate
    assert control is not None and control.rate_low > 1.0
    assert model._clock() == pytest.approx(control.rate_high)


def test_a_cooler_fork_whose_reading_reaches_past_the_fastest_its_carries_allow_is_open_above(
    reference: ReferenceCurve,
) -> None:
    """A fifth of the warm-up's step, read through noise: its interval holds the warm-up's pace and
    rates its carries do not allow, so its reading may be shed noise, and nothing bounds it above."""
    cooler = moved(fork(1.0, noise=0.1, seed=1), lr=CONFIG.lr / 5)
    model = model_of(reference, cooler)
    rate = fork_rate(reference, cooler, TARGET)
    assert rate is not None and rate.rate_low <= model.fastest_rate(cooler.config) < rate.rate_high
    steps = model.steps(cooler.config)
    assert steps is not None and math.isfinite(steps.value) and steps.high == math.inf
