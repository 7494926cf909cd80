"""The backtest of the forecast's clock (predictor.clock_bias): no bias on a family's own curve,
early on a curve that slows past its midpoint, nothing read off a flat one; the warp moves only
what lies past the evidence, and only later for a positive bias."""

from __future__ import annotations

import math

import numpy as np
import pytest

from predictor.clock_bias import BIAS_RANGE, clock_bias, warped
from predictor.curve_ensemble import fit_ensemble
from predictor.forecast import OFF_FAMILY

K = np.arange(20, 4001, 20, dtype=float)


def bias_of(clean: np.ndarray, target: float, seed: int) -> float:
    losses = clean * np.exp(np.random.default_rng(seed).normal(0.0, 0.01, K.size))
    model = fit_ensemble(K, losses, target, calibration=OFF_FAMILY)
    assert model is not None
    return clock_bias(K, losses, target, float(model.fitted(K[-1:])[0]), model.noise, OFF_FAMILY, True)


@pytest.mark.parametrize("seed", [0, 1])
def test_a_family_s_own_curve_shows_no_bias(seed: int) -> None:
    assert abs(bias_of(0.1 + 2.0 * (1 + K / 50) ** -0.7, 0.15, seed)) < 0.1


@pytest.mark.parametrize("seed", [0, 1])
def test_a_curve_that_slows_past_its_midpoint_reads_the_method_as_early(seed: int) -> None:
    knee = 1200.0  # a power law of slope 0.7 that turns to 0.25: the first half sees mostly the fast one
    slowing = 0.3 * np.exp(np.where(knee > K, -0.7, -0.25) * np.log(K / knee))
    assert bias_of(slowing, 0.1, seed) > 0.3


def test_a_flat_curve_reads_nothing() -> None:
    assert bias_of(np.full(K.size, 0.5), 0.4, 0) == 0.0


def test_the_warp_moves_only_what_lies_past_the_evidence_and_later_for_a_positive_bias() -> None:
    end = 100.0
    draws = np.array([[50.0, 100.0, 400.0, math.inf], [80.0, 200.0, 1600.0, 300.0]])
    rng = np.random.default_rng(0)
    assert np.array_equal(warped(draws, end, 0.0, rng), draws)
    later = warped(draws, end, BIAS_RANGE[1], rng)
    assert np.array_equal(later[draws <= end], draws[draws <= end]) and math.isinf(later[0, 3])
    past = np.isfinite(draws) & (draws > end)
    assert np.all(later[past] >= draws[past])
    assert np.all(later[past] <= end * (draws[past] / end) ** (1 + 2 * BIAS_RANGE[1]))
