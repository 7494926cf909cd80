"""Where step times settle, on synthetic series whose warm-up is known."""

from __future__ import annotations

import numpy as np
import pytest

from predictor.step_times import settle_index, settled, steady_mean, steady_spread

SEEDS = range(20)


def _noisy(rng: np.random.Generator, level: float, size: int, spread: float = 0.05) -> np.ndarray:
    return level * (1.0 + spread * rng.standard_normal(size))


@pytest.mark.parametrize("seed", SEEDS)
def test_a_warm_up_of_slow_steps_is_cut_where_the_steady_steps_begin(seed: int) -> None:
    rng = np.random.default_rng(seed)
    warm = int(rng.integers(3, 40))
    series = np.concatenate([_noisy(rng, 3.0, warm), _noisy(rng, 1.0, 200)])
    assert warm <= settle_index(series) <= warm + 5
    assert steady_mean(series) == pytest.approx(1.0, rel=0.02)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_warm_up_that_decays_towards_the_level_is_cut_once_it_is_within_the_noise(seed: int) -> None:
    rng = np.random.default_rng(seed)
    steps = np.arange(240)
    series = (1.0 + 4.0 * np.exp(-steps / 10.0)) * (1.0 + 0.03 * rng.standard_normal(steps.size))
    assert 15 <= settle_index(series) <= 70
    assert steady_mean(series) == pytest.approx(1.0, rel=0.02)


@pytest.mark.parametrize("seed", SEEDS)
def test_a_steady_series_keeps_almost_every_step(seed: int) -> None:
    series = _noisy(np.random.default_rng(seed), 1.0, 200)
    assert settle_index(series) <= 10


@pytest.mark.parametrize("seed", SEEDS)
def test_one_spike_in_the_steady_steps_is_not_a_level_shift(seed: int) -> None:
    rng = np.random.default_rng(seed)
    series = _noisy(rng, 1.0, 200)
    series[int(rng.integers(20, 150))] = 20.0
    assert settle_index(series) <= 10


def test_periodic_slow_steps_are_part_of_the_level_and_a_blocking_start_is_not() -> None:
    """DASO's shape: every step syncs globally during its warm-up, then one step in four."""
    period = np.tile([1.0, 1.0, 1.0, 3.0], 50)
    assert settle_index(period) <= 4
    assert settle_index(np.concatenate([np.full(16, 3.0), period])) == 16


def test_an_exact_clock_has_no_warm_up_and_no_spread() -> None:
    assert settle_index([0.5] * 64) == 0
    assert steady_spread([0.5] * 64) == 0.0


def test_at_least_a_quarter_of_the_steps_stays_settled() -> None:
    falling = np.linspace(10.0, 1.0, 100)
    assert settle_index(falling) <= 75
    assert settled(falling).size >= 25


def test_short_series_are_taken_whole() -> None:
    assert settle_index([]) == 0
    assert settle_index([5.0, 1.0, 1.0]) == 0
    assert np.isnan(steady_mean([]))
    assert np.isnan(steady_spread([1.0]))


@pytest.mark.parametrize("spread", [0.01, 0.05, 0.2])
def test_the_spread_is_the_settled_steps_coefficient_of_variation(spread: float) -> None:
    rng = np.random.default_rng(0)
    series = np.concatenate([np.full(20, 10.0), _noisy(rng, 1.0, 2000, spread)])
    assert steady_spread(series) == pytest.approx(spread, rel=0.1)
