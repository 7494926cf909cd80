"""The learning-curve ensemble: each family's own curve recovered, the open end only where earned."""

from __future__ import annotations

import math

import numpy as np
import pytest

from predictor.curve_ensemble import CrossingForecast, forecast_crossing
from predictor.curve_families import FAMILIES

K_SCALE = 3000.0  # the truths' parameters are in x = k/K_SCALE
EVIDENCE_END = 1000.0
CROSSING = 3.0 * EVIDENCE_END  # the evidence ends at a third of the crossing
TRUTHS = {  # θ in scaled units, x = k/K_SCALE and the loss itself (the curves start near 1–3)
    "pow3": [0.5, 1.0, 0.6],
    "pow4": [0.5, math.log(3.0), math.log(0.3), 0.8],
    "log_power": [2.0, -1.0, 1.2],
    "weibull": [0.5, 2.0, math.log(1.5), 0.5],
    "mmf": [0.5, 2.0, math.log(2.0), 0.8],
    "janoschek": [0.5, 2.0, math.log(1.5), 0.6],
    "exp4": [0.5, 2.0, 0.4, 0.5],
    "ilog2": [0.3, 1.5, math.log(0.01)],
    "vap": [math.log(0.6), 0.002, -0.3],
    "loglog_linear": [0.0, 0.5],
    "hill3": [0.5, 2.0, math.log(0.5), 0.8],
}


def _curve(name: str, k: np.ndarray) -> np.ndarray:
    return FAMILIES[name](k / K_SCALE, np.array(TRUTHS[name]))


def _evidence(name: str, noise: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, float]:
    k = np.linspace(10.0, EVIDENCE_END, 200)
    rng = np.random.default_rng(seed)
    losses = _curve(name, k) * (1.0 + noise * rng.standard_normal(len(k)))
    return k, losses, float(_curve(name, np.array([CROSSING]))[0])


def test_every_family_of_domhan_et_al_is_there():
    assert set(FAMILIES) == set(TRUTHS)
    assert len(FAMILIES) == 11


@pytest.mark.parametrize("name", sorted(TRUTHS))
def test_noise_free_curve_of_each_family_is_recovered(name):
    """Noise-free, the true family fits exactly and predicts its tail: the crossing within 2%."""
    k, losses, target = _evidence(name, noise=0.0)
    forecast = forecast_crossing(k, losses, target)
    assert forecast is not None
    assert forecast.p50 == pytest.approx(CROSSING, rel=0.02)
    assert forecast.p90 / forecast.p10 < 1.1
    assert not forecast.levelled_above


def test_levelled_curve_above_the_target_is_open_ended():
    k = np.linspace(10.0, 2000.0, 200)
    rng = np.random.default_rng(1)
    losses = 0.5 + 1.0 * np.exp(-k / 100.0) + 0.005 * rng.standard_normal(len(k))
    forecast = forecast_crossing(k, losses, target=0.4)
    assert forecast is not None and forecast.levelled_above
    assert forecast.p90 == math.inf


def test_still_falling_curve_whose_fit_floors_lie_above_the_target_keeps_p90_finite():
    """A power law with floor 0.5, the target 0.3 below it: still falling, so never open."""
    k = np.linspace(10.0, 1000.0, 200)
    rng = np.random.default_rng(2)
    losses = _curve("pow3", k) * (1.0 + 0.01 * rng.standard_normal(len(k)))
    forecast = forecast_crossing(k, losses, target=0.3)
    assert forecast is not None and not forecast.levelled_above
    assert math.isfinite(forecast.p90)


def test_forecast_reports_noise_slope_and_weights():
    k, losses, target = _evidence("pow3", noise=0.01)
    forecast = forecast_crossing(k, losses, target)
    assert isinstance(forecast, CrossingForecast)
    assert forecast.noise == pytest.approx(0.01 * float(np.mean(losses)), rel=0.3)
    assert forecast.slope < 0.0
    assert sum(forecast.family_weights.values()) == pytest.approx(1.0)
    assert forecast.weights.sum() == pytest.approx(1.0)
    assert forecast.p10 <= forecast.p50 <= forecast.p90


def test_too_few_points_give_none_and_bad_input_names_the_field():
    assert forecast_crossing([1, 2, 3], [1.0, 0.9, 0.8], 0.5) is None
    with pytest.raises(ValueError, match="target"):
        forecast_crossing([1, 2, 3], [1.0, 0.9, 0.8], -1.0)
    with pytest.raises(ValueError, match="holdout"):
        forecast_crossing([1, 2, 3], [1.0, 0.9, 0.8], 0.5, holdout=0.9)
