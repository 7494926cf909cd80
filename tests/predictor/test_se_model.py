"""SE model: curve fits recover known parameters, intervals cover, noise scale is recovered."""

from __future__ import annotations

import math

import numpy as np
import pytest

from predictor.loss_curves import FAMILIES, CurveParams
from predictor.noise_scale import noise_scale, steps_ratio, total_momentum
from predictor.se_model import extrapolate, iterations_to_target
from predictor.types import Config, ProbeResult

TRUE = {"optimus": (0.002, 0.5, 0.1), "power": (2.0, 0.6, 0.1)}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_fit_recovers_known_params(family: str) -> None:
    rng = np.random.default_rng(0)
    chosen = FAMILIES[family]
    k = np.arange(10, 400, 10, dtype=float)
    losses = chosen.loss(k, *TRUE[family]) * np.exp(rng.normal(0, 0.005, k.size))
    fitted = chosen.fit(k, losses)
    assert np.allclose(fitted, TRUE[family], rtol=0.2)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_interval_covers_the_truth_on_synthetic_curves(family: str) -> None:
    chosen = FAMILIES[family]
    truth_params = TRUE[family]
    target = float(chosen.loss(np.array([2000.0]), *truth_params)[0])
    truth = chosen.solve(CurveParams(*truth_params), target)
    covered = 0
    trials = 20
    for seed in range(trials):
        rng = np.random.default_rng(seed)
        k = np.arange(20, 600, 20, dtype=float)
        losses = chosen.loss(k, *truth_params) * np.exp(rng.normal(0, 0.01, k.size))
        estimate = extrapolate(k, losses, target, family=family, seed=seed)
        assert estimate is not None and estimate.low <= estimate.value <= estimate.high
        covered += estimate.low <= truth <= estimate.high
    assert covered / trials >= 0.6


def test_reached_probe_is_its_own_answer_and_floor_above_target_is_unreachable() -> None:
    config = Config("sync", 1, 1)
    curve = [(k, 0.0, 1.0 / (0.01 * k + 1) + 0.5) for k in range(0, 200, 10)]
    assert math.isinf(iterations_to_target(ProbeResult(config, 200, 1.0, curve), 0.4, family="optimus").value)
    reached = ProbeResult(config, 60, 1.0, curve[:7], reached_iteration=50, reached_seconds=0.8)
    assert iterations_to_target(reached, 0.4).value == 50


def test_noise_scale_recovered_from_gradient_norms() -> None:
    # E|G_B|² = |G|² + tr(Σ)/B (McCandlish et al., eq. A.1): B_noise = tr(Σ)/|G|² = 4 / 0.02 = 200.
    grad_sq, trace = 0.02, 4.0
    results = [
        ProbeResult(Config("sync", 4, 4, batch_size=b), 10, 1.0, [], grad_sq_small=grad_sq + trace / b,
                    grad_sq_big=grad_sq + trace / (16 * b), batch_small=b, batch_big=16 * b)
        for b in (16, 32, 64)
    ]
    assert noise_scale(results) == pytest.approx(200.0, rel=1e-6)
    assert float(steps_ratio(100.0, 200.0, 200.0)) == pytest.approx(2.0 / 3.0)


def test_asynchrony_adds_implicit_momentum() -> None:
    assert np.allclose(total_momentum(0.0, [1, 2, 4]), [0.0, 0.5, 0.75])
