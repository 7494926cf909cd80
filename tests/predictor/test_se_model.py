"""SE model: curve fits recover known parameters, intervals cover, noise scale is recovered."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from predictor.loss_curves import FAMILIES, CurveParams
from predictor.noise_scale import fixed_step_ratio, noise_scale, steps_ratio, total_momentum
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


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_interval_covers_the_truth_on_synthetic_curves(family: str) -> None:
    # Floor-free truth (the SE model reads the floor as the curve's noise floor), 1% noise,
    # extrapolated ~4× past the last probed iteration.
    chosen = FAMILIES[family]
    truth_params = TRUE[family][:2] + (0.0,)
    target = float(chosen.loss(np.array([800.0]), *truth_params)[0])
    truth = chosen.solve(CurveParams(*truth_params), target)
    covered = 0
    trials = 8
    for seed in range(trials):
        rng = np.random.default_rng(seed)
        k = np.arange(20, 220, 20, dtype=float)
        losses = chosen.loss(k, *truth_params) * np.exp(rng.normal(0, 0.01, k.size))
        estimate = extrapolate(k, losses, target, family=family, seed=seed)
        assert estimate is not None and estimate.low <= estimate.value <= estimate.high
        covered += estimate.low <= truth <= estimate.high
    assert covered / trials >= 0.6


def test_interval_contains_the_truth_on_one_noisy_curve() -> None:
    chosen = FAMILIES["power"]
    truth_params = (2.0, 0.6, 0.0)
    target = float(chosen.loss(np.array([800.0]), *truth_params)[0])
    k = np.arange(20, 220, 20, dtype=float)
    losses = chosen.loss(k, *truth_params) * np.exp(np.random.default_rng(3).normal(0, 0.01, k.size))
    estimate = extrapolate(k, losses, target)
    assert estimate is not None and estimate.low <= 800.0 <= estimate.high


def test_a_bouncing_probe_is_not_read_as_fast_convergence() -> None:
    # The slow_inter_node failure: a short curve that bounces (0.20 → 0.33 → 0.11) must not
    # extrapolate to a quick, confident crossing of a far-lower target.
    k = np.array([5.0, 10.0, 15.0, 20.0, 25.0, 30.0])
    bouncing = np.array([0.45, 0.30, 0.20, 0.33, 0.18, 0.11])
    smooth = np.array([0.45, 0.30, 0.22, 0.17, 0.14, 0.12])
    noisy, clean = extrapolate(k, bouncing, 0.01), extrapolate(k, smooth, 0.01)
    assert noisy is not None and clean is not None
    assert math.isinf(noisy.high) or noisy.high > 3 * clean.value
    assert noisy.value >= clean.value


def test_a_curve_levelling_off_above_the_target_leaves_the_interval_open_above() -> None:
    # Loss 0.1 + 0.5·(k+1)^−0.5 with 10% noise: its floor lies above the target 0.09, though not
    # significantly enough for the F-test. The capped reading (floor at the noise band) puts the
    # target at a finite iteration; the free reading, fitted to the curve itself, does not, so
    # the interval must not close above (the capped reading alone said ≤ 20,345 iterations).
    k = np.arange(50, 3201, 50, dtype=float)
    losses = (0.1 + 0.5 * (k + 1) ** -0.5) * np.exp(np.random.default_rng(1).normal(0, 0.1, k.size))
    estimate = extrapolate(k, losses, 0.09)
    assert estimate is not None and math.isfinite(estimate.value)
    assert math.isinf(estimate.high)


def test_interval_widens_with_extrapolation_distance() -> None:
    k = np.arange(2.0, 22.0, 2.0)
    losses = 0.5 * (k + 1) ** -0.8 * np.exp(np.random.default_rng(0).normal(0, 0.02, k.size))
    near = extrapolate(k, losses, float(losses[-1]) * 0.7)
    far = extrapolate(k, losses, float(losses[-1]) * 0.1)
    assert near is not None and far is not None
    assert far.high / far.value > near.high / near.value


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


def test_a_larger_batch_at_an_unchanged_step_gains_under_twice() -> None:
    """At the step tuned for the smaller batch, McCandlish et al.'s one-step model gives 1/(2 − r)
    of the steps, where retuning the step per batch gives r (``steps_ratio``)."""
    assert fixed_step_ratio(32, 32, 90.0) == pytest.approx(1.0)
    assert fixed_step_ratio(100.0, 200.0, 200.0) == pytest.approx(1 / (2 - 2 / 3))  # r = 2/3
    assert float(steps_ratio(32, 256, 1e6)) == pytest.approx(1 / 8, rel=1e-3)  # retuned: 8× fewer steps
    assert 0.5 < fixed_step_ratio(32, 256, 1e6) < 0.54  # unchanged step: under 2× fewer
    assert fixed_step_ratio(32, 256, 1e-3) == pytest.approx(1.0, rel=1e-3)  # no noise: no gain
    # a much smaller batch at the larger one's tuned step makes no progress in this model
    assert math.isinf(fixed_step_ratio(256, 8, 1000.0))


def test_a_gradient_lost_in_its_noise_puts_the_noise_scale_at_the_largest_batch_measured() -> None:
    # |G_big|² below what the noise alone gives at B_big: the |G|² estimate is negative, tr(Σ) = 4.
    trace = 4.0
    results = [ProbeResult(Config("sync", 4, 1, batch_size=16), 10, 1.0, [], grad_sq_small=trace / 16,
                           grad_sq_big=0.9 * trace / 64, batch_small=16, batch_big=64)]
    assert noise_scale(results) == 64.0
    results[0] = dataclasses.replace(results[0], grad_sq_small=0.9 * trace / 64)  # no noise seen either
    assert noise_scale(results) is None


def test_asynchrony_adds_implicit_momentum() -> None:
    assert np.allclose(total_momentum(0.0, [1, 2, 4]), [0.0, 0.5, 0.75])


def test_iterations_carry_across_learning_rate_and_momentum() -> None:
    from predictor.ttc_model import TtcModel, effective_lr

    # Two sync probes at different η_eff: an async_groups config (implicit momentum) between them
    # gets a prediction, within the donors' range, and no narrower than the donors' own.
    def probe(config: Config, rate: float) -> ProbeResult:
        curve = [(k, k * 1e-3, 1.0 / (1 + rate * k)) for k in range(0, 101, 10)]
        return ProbeResult(config, 100, 0.1, curve, [1e-3] * 10)

    slow, fast = Config("sync", 1, 4, lr=0.01, momentum=0.9), Config("sync", 1, 4, lr=0.1, momentum=0.9)
    model = TtcModel([probe(slow, 0.02), probe(fast, 0.2)], target=0.05)
    other = Config("async_groups", 1, 4, groups=2, lr=0.01, momentum=0.4)
    assert effective_lr(other) == pytest.approx(0.01 / (1 - 0.9))
    estimate = model.steps(other)
    fast_steps, slow_steps = model.steps(fast), model.steps(slow)
    assert estimate is not None and fast_steps is not None and slow_steps is not None
    assert fast_steps.value <= estimate.value <= slow_steps.value * 1.01
    assert 0.5 < model.lr_exponent(("sync", "sgd", ())) <= 1.0


def test_a_probe_levelling_off_above_the_target_is_not_rescued_by_a_neighbour() -> None:
    from predictor.ttc_model import TtcModel

    healthy, stuck = Config("sync", 1, 4, lr=0.1, momentum=0.9), Config("sync", 1, 4, lr=0.01, momentum=0.9)
    curves = [
        (healthy, [(k, k * 1e-3, 1.0 / (1 + 0.2 * k)) for k in range(0, 101, 10)]),
        (stuck, [(k, k * 1e-3, 1.0 / (0.05 * k + 1) + 0.5) for k in range(0, 101, 10)]),
    ]
    model = TtcModel([ProbeResult(c, 100, 0.1, curve, [1e-3] * 10) for c, curve in curves], target=0.05)
    assert math.isfinite(model.predict(healthy).ttc_seconds)
    assert math.isinf(model.predict(stuck).ttc_seconds)
    assert math.isfinite(model.predict(stuck.replace(lr=0.03)).ttc_seconds)  # unprobed: carried


@pytest.mark.parametrize("factor", [4, 0.25])
def test_a_carry_across_batch_sizes_spans_perfect_scaling_to_none(factor: float) -> None:
    """Whatever the noise scale says, the interval of a config carried to another global batch
    holds both ends McCandlish et al.'s model admits: steps × B_from/B_to, and steps unchanged."""
    from predictor.ttc_model import TtcModel

    donor = Config("sync", 2, 4, batch_size=32, lr=0.1, momentum=0.9)
    curve = [(k, k * 1e-3, 1.0 / (1 + 0.2 * k)) for k in range(0, 101, 10)]
    probe = ProbeResult(donor, 100, 0.1, curve, [1e-3] * 10, grad_sq_small=1.0, grad_sq_big=0.5,
                        batch_small=32, batch_big=256)
    model = TtcModel([probe], target=0.05)
    own = model.steps(donor)
    carried = model.steps(donor.replace(nodes=int(2 * factor)) if factor > 1 else donor.replace(batch_size=8))
    assert own is not None and carried is not None
    ratio = 1 / factor
    assert carried.low <= own.low * min(1.0, ratio) + 1e-9
    assert carried.high >= own.high * max(1.0, ratio) - 1e-9
