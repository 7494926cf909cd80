"""The learning-curve ensemble: each family's own curve recovered, the open end only where earned,
priors that sharpen, and 80% intervals that cover about 80%."""

from __future__ import annotations

import math

import numpy as np
import pytest

from predictor.curve_ensemble import CrossingForecast, fit_ensemble, forecast_crossing
from predictor.curve_families import FAMILIES

K_SCALE = 3000.0  # the truths' parameters are in x = k/K_SCALE
EVIDENCE_END = 1000.0
CROSSING = 3.0 * EVIDENCE_END  # the evidence ends at a third of the crossing
TRUTHS = {  # θ in scaled units, x = k/K_SCALE, and the loss itself (the curves start near 1–3)
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


def _curve(name: str, k: np.ndarray, theta: list[float] | None = None) -> np.ndarray:
    return FAMILIES[name](k / K_SCALE, np.array(TRUTHS[name] if theta is None else theta))


def _evidence(name: str, noise: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray, float]:
    k = np.linspace(10.0, EVIDENCE_END, 200)
    rng = np.random.default_rng(seed)
    losses = _curve(name, k) * (1.0 + noise * rng.standard_normal(len(k)))
    return k, losses, float(_curve(name, np.array([CROSSING]))[0])


def test_every_family_of_domhan_et_al_is_there():
    assert set(FAMILIES) == set(TRUTHS)


@pytest.mark.parametrize("name", sorted(TRUTHS))
def test_noise_free_curve_of_each_family_is_recovered(name):
    """Noise-free, the true family (or one equivalent to it) fits exactly and continues exactly: the
    median crossing within 6%, from evidence ending at a third of it. 6%: the median of 400 draws
    warped by the calibrated model-form error (log-sd ≈ 0.4 at this extrapolation) moves by
    1.25·0.4/√400 ≈ 2.5% from draw to draw; 6% is 2.4 of those. The interval stays wide (the warp is
    calibrated for curves no family is), but it is centred on the truth."""
    k, losses, target = _evidence(name, noise=0.0)
    forecast = forecast_crossing(k, losses, target)
    assert forecast is not None and not forecast.levelled_above
    assert forecast.p50 == pytest.approx(CROSSING, rel=0.06)
    assert forecast.p10 < CROSSING < forecast.p90


@pytest.mark.parametrize("name", sorted(TRUTHS))
def test_lightly_noisy_curve_of_each_family_is_recovered(name):
    """0.5% noise: the 80% interval holds the crossing, and the median is within 20% of it. 20%: at a
    threefold extrapolation this noise moves the fitted families' median crossing by up to 18%
    (measured over three noise seeds for every family when written; the 4-parameter families read
    the noise of a three-doubling window as curvature), within the interval's half-width (≈ 40%)."""
    k, losses, target = _evidence(name, noise=0.005, seed=1)
    forecast = forecast_crossing(k, losses, target)
    assert forecast is not None
    assert forecast.p10 <= CROSSING <= forecast.p90
    assert forecast.p50 == pytest.approx(CROSSING, rel=0.20)


def test_levelled_curve_above_the_target_is_open_ended():
    k = np.linspace(10.0, 2000.0, 200)
    rng = np.random.default_rng(1)
    losses = 0.5 + 1.0 * np.exp(-k / 100.0) + 0.005 * rng.standard_normal(len(k))
    forecast = forecast_crossing(k, losses, target=0.4)
    assert forecast is not None and forecast.levelled_above
    assert forecast.p90 == math.inf


@pytest.mark.parametrize("name", ["pow3", "mmf", "exp4", "ilog2"])
def test_still_falling_curve_whose_floor_lies_above_the_target_keeps_p90_finite(name):
    """Floors 0.3–0.5, the target 0.2 below them; the curve is still falling at its end, so the
    forecast is never open (the floors are capped below the target)."""
    k = np.linspace(10.0, 1000.0, 200)
    losses = _curve(name, k) * (1.0 + 0.01 * np.random.default_rng(2).standard_normal(len(k)))
    forecast = forecast_crossing(k, losses, target=0.2)
    assert forecast is not None and not forecast.levelled_above
    assert math.isfinite(forecast.p90)


def _prior(name: str, seed: int) -> list[tuple[float, float]]:
    """A finished run of the same workload on another seed, to twice the crossing."""
    k = np.linspace(10.0, 2 * CROSSING, 300)
    losses = _curve(name, k) * (1.0 + 0.01 * np.random.default_rng(seed).standard_normal(len(k)))
    return list(zip(k.tolist(), losses.tolist(), strict=True))


def test_a_prior_curve_of_the_same_shape_narrows_the_interval():
    """Measured over every family at 1% noise, a prior run of the same workload on another seed:
    the p90/p10 ratio is smaller for each family, in the median at most 0.9× the ratio without (0.84×
    when written: the model-form warp, which a prior member shares, sets most of the width), the
    narrower interval still holds the crossing, and the median's error shrinks (from 8% to 3%)."""
    ratios, errors_without, errors_with = [], [], []
    for name in sorted(TRUTHS):
        k, losses, target = _evidence(name, noise=0.01, seed=3)
        without = forecast_crossing(k, losses, target)
        with_prior = forecast_crossing(k, losses, target, prior_curves=[_prior(name, seed=4)])
        assert without is not None and with_prior is not None
        assert with_prior.p90 / with_prior.p10 < without.p90 / without.p10, name
        assert with_prior.p10 <= CROSSING <= with_prior.p90, name
        ratios.append((with_prior.p90 / with_prior.p10) / (without.p90 / without.p10))
        errors_without.append(abs(without.p50 / CROSSING - 1.0))
        errors_with.append(abs(with_prior.p50 / CROSSING - 1.0))
    assert float(np.median(ratios)) <= 0.9
    assert float(np.median(errors_with)) < float(np.median(errors_without))


def test_a_prior_that_stops_above_the_target_is_left_out():
    k, losses, target = _evidence("pow3", noise=0.01)
    short = [(step, loss) for step, loss in _prior("pow3", seed=4) if step <= EVIDENCE_END]
    ensemble = fit_ensemble(k, losses, target, prior_curves=[short])
    assert ensemble is not None
    assert set(ensemble.weights) <= set(FAMILIES)


def test_forecast_reports_noise_slope_and_weights():
    k, losses, target = _evidence("pow3", noise=0.01)
    forecast = forecast_crossing(k, losses, target)
    assert isinstance(forecast, CrossingForecast)
    late = k >= EVIDENCE_END / 2
    assert forecast.noise == pytest.approx(0.01 * float(np.mean(losses[late])), rel=0.3)
    assert forecast.slope < 0.0
    assert 0.0 < forecast.seed_spread < CROSSING
    assert sum(forecast.family_weights.values()) == pytest.approx(1.0)
    assert forecast.weights.sum() == pytest.approx(1.0)
    assert forecast.p10 <= forecast.p50 <= forecast.p90


def test_ensemble_draws_mean_curves_that_pass_through_the_evidence():
    k, losses, target = _evidence("mmf", noise=0.01)
    ensemble = fit_ensemble(k, losses, target)
    assert ensemble is not None
    grid = np.geomspace(EVIDENCE_END / 8, 10 * EVIDENCE_END, 50)
    curves = ensemble.curves(grid, 100)
    assert curves.shape == (100, 50)
    inside = grid <= EVIDENCE_END
    truth = _curve("mmf", grid[inside])
    assert np.all(np.abs(np.median(curves[:, inside], axis=0) / truth - 1.0) < 0.01)
    assert np.all(np.abs(ensemble.fitted(grid[inside]) / truth - 1.0) < 0.01)


def test_too_few_points_give_none_and_bad_input_names_the_field():
    assert forecast_crossing([1, 2, 3], [1.0, 0.9, 0.8], 0.5) is None
    with pytest.raises(ValueError, match="target"):
        forecast_crossing([1, 2, 3], [1.0, 0.9, 0.8], -1.0)
    with pytest.raises(ValueError, match="holdout"):
        forecast_crossing([1, 2, 3], [1.0, 0.9, 0.8], 0.5, holdout=0.9)
    with pytest.raises(ValueError, match="losses must be positive"):
        forecast_crossing(range(1, 11), [1.0] * 9 + [-0.1], 0.5)


def _coverage_case(seed: int) -> tuple[np.ndarray, np.ndarray, float, float]:
    """One synthetic run and the crossing of the same workload on another seed.

    The tests' own generator (the calibration's, benchmarks/curve_ensemble_calibration.py, draws
    other parameters and other shapes): a family taken in turn, its TRUTHS jittered, 0.3–2% noise
    correlated from one evaluation to the next as SGD's is (AR(1), ρ up to 0.6), evidence ending
    1.5–5× before the crossing. Seeds differ as MLPerf's reference runs do: each progresses on its
    own clock, a stretch with a 3% coefficient of variation, so the truth is the crossing of another
    seed's curve."""
    rng = np.random.default_rng(seed)
    name = sorted(TRUTHS)[seed % len(TRUTHS)]
    theta = [value * rng.uniform(0.85, 1.15) if value > 0 else value + rng.uniform(-0.15, 0.15)
             for value in TRUTHS[name]]
    target = float(_curve(name, np.array([CROSSING]), theta)[0])
    evidence_stretch, truth_stretch = np.exp(rng.normal(0.0, 0.03, 2))
    end = CROSSING / rng.uniform(1.5, 5.0)
    k = np.linspace(end / 150, end, 150)
    sigma, rho = rng.uniform(0.003, 0.02), rng.uniform(0.0, 0.6)
    noise = np.zeros(len(k))
    noise[0] = rng.standard_normal() * sigma
    for i in range(1, len(k)):
        noise[i] = rho * noise[i - 1] + math.sqrt(1.0 - rho**2) * sigma * rng.standard_normal()
    losses = _curve(name, k * evidence_stretch, theta) * (1.0 + noise)
    return k, losses, target, CROSSING / truth_stretch


@pytest.mark.slow
def test_p10_to_p90_covers_the_truth_on_other_seeds_70_to_90_percent_of_the_time():
    """132 seeded synthetic curves, 12 of each family (the calibration was fitted on another
    generator). 132 rather than the 40 asked for: coverage over 44 curves moves by ±5% from one
    draw of seeds to the next, enough to leave the band by chance (84.8% over 132 when written)."""
    covered = []
    for seed in range(132):
        k, losses, target, truth = _coverage_case(seed)
        forecast = forecast_crossing(k, losses, target, seed=seed)
        assert forecast is not None
        covered.append(forecast.p10 <= truth <= forecast.p90)
    assert 0.70 <= float(np.mean(covered)) <= 0.90
