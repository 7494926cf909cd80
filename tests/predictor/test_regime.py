"""The regime detector on synthetic curves: transients, steady power laws, plateaus, speed-ups."""

from __future__ import annotations

import numpy as np
import pytest

from predictor.regime import Regime, read_regime, went_backwards
from predictor.types import Config, ProbeResult

K = np.arange(2, 2001, 2, dtype=float)


def _read(losses: np.ndarray, until: int = 2000) -> Regime:
    keep = np.less_equal(K, until)
    return read_regime(K[keep], losses[keep]).regime


def test_an_exponential_drop_is_a_transient() -> None:
    assert _read(0.1 + 2.0 * np.exp(-K / 100)) is Regime.TRANSIENT


@pytest.mark.parametrize("p", [0.3, 0.7, 1.2])
def test_a_power_law_is_steady(p: float) -> None:
    assert _read(2.0 * (K + 1) ** -p + 0.05) is Regime.STEADY


def test_a_fast_drop_into_a_power_law_is_steady_only_once_the_drop_is_over() -> None:
    k = np.arange(2, 16001, 2, dtype=float)
    curve = 2.0 * np.exp(-k / 100) + 0.5 * (k + 1) ** -0.5
    assert read_regime(k[k <= 1000], curve[k <= 1000]).regime is Regime.TRANSIENT
    assert read_regime(k, curve).regime is Regime.STEADY


def test_a_plateau_is_flat_and_its_escape_accelerates() -> None:
    plateau = 0.3 + 0.0 * K
    assert _read(plateau) is Regime.FLAT
    escape = 0.3 - 0.25 / (1 + np.exp(-(K - 1700) / 60))  # leaves the plateau near the end
    assert _read(escape) is Regime.ACCELERATING


def test_noise_on_a_power_law_keeps_it_steady_but_pure_noise_is_flat() -> None:
    rng = np.random.default_rng(0)
    trend = 2.0 * (K + 1) ** -0.5 + 0.05
    assert _read(trend * np.exp(rng.normal(0, 0.002, K.size))) is Regime.STEADY
    assert _read(0.2 * np.exp(rng.normal(0, 0.02, K.size))) is Regime.FLAT


def test_too_few_points_says_so() -> None:
    assert read_regime(K[:3], 1.0 / K[:3]).regime is Regime.TOO_SHORT


def _segment(points: list[tuple[int, float]], start: int, parent: str | None, key: str) -> ProbeResult:
    config = Config("sync", 1, 1)
    curve = [(k, 0.001 * k, loss) for k, loss in points]
    return ProbeResult(config, points[-1][0] - start, 0.001 * (points[-1][0] - start), curve,
                       key=key, parent=parent, start_iteration=start)


def test_a_lineage_went_backwards_only_on_two_doublings_beyond_its_noise() -> None:
    """A lineage whose level jitters by ±0.01 may end doublings 0.005 higher by chance; two doublings
    0.1 higher are lost ground (the warm-up's one device is unstable there), while one 0.1 higher
    and the next back below where the lineage had been is a bump in the transient."""
    jitter = [(k, 0.5 + (0.01 if (k // 2) % 2 else -0.01)) for k in range(0, 42, 2)]
    first = _segment(jitter, 0, None, "a")
    for rise, after, backwards in ((0.005, 0.005, False), (0.1, 0.1, True), (0.1, -0.05, False)):
        second = _segment([(k, first.final_loss + rise) for k in range(42, 82, 2)], 40, "a", "b")
        third = _segment([(k, first.final_loss + after) for k in range(82, 162, 2)], 80, "b", "c")
        assert went_backwards([first, second, third]) is backwards
        assert not went_backwards([first, second])
    assert not went_backwards([first])
