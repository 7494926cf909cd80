"""Forks of the warm-up's own recipe whose progress is within the noise: read on the warm-up's
curve, carried to their global batch by the gradient noise scale (predictor.ttc_model)."""

from __future__ import annotations

import copy

import pytest

from predictor.reference_curve import ReferenceCurve, continued_remaining, fork_rate
from predictor.types import ProbeResult
from tests.predictor.test_reference_curve import CONFIG, WARMUP, fork
from tests.predictor.test_speed_first import TARGET, model_of


def with_noise_scale_64(result: ProbeResult) -> ProbeResult:
    """``result`` with gradient norms that put the noise scale at 64 (|G|² = 1, tr Σ = 64 from
    batches 16 and 32)."""
    result.grad_sq_small, result.grad_sq_big, result.batch_small, result.batch_big = 5.0, 3.0, 16, 32
    return result


def stalled(**change: object) -> ProbeResult:
    """A fork whose loss does not move in its 50 iterations: its own reading is noise."""
    result = copy.copy(fork(1.0))
    result.config = CONFIG.replace(**change)
    result.curve = [(k, t, result.curve[0][2]) for k, t, _ in result.curve]
    return with_noise_scale_64(result)


def test_a_larger_batch_of_the_recipe_is_read_on_the_reference_carried_by_the_noise_scale(
    reference: ReferenceCurve,
) -> None:
    continued, larger = stalled(), stalled(batch_size=CONFIG.batch_size * 2)
    model = model_of(reference, continued, larger)
    assert model.b_noise == pytest.approx(64.0)
    assert model.on_reference == {CONFIG.key(), larger.config.key()}
    rest = continued_remaining(reference, WARMUP, TARGET)
    assert model.steps(CONFIG).value == pytest.approx(rest.value)
    # global batch 32 → 64 at B_noise = 64 and the recipe's unchanged step: r = (1 + 1)/(1 + 2) = 2/3
    # (S ∝ 1 + B_noise/B at a step retuned per batch), 1/(2 − r) = 3/4 of the steps at this one
    assert model.steps(larger.config).value == pytest.approx(rest.value * 3 / 4)
    # its interval still admits no gain at all (McCandlish et al.'s bound: the steps unchanged)
    assert model.steps(larger.config).high >= rest.high * 0.999


def test_another_recipe_a_smaller_batch_or_a_diverged_fork_is_not_read_on_the_reference(
    reference: ReferenceCurve,
) -> None:
    """A smaller batch at the same rate raises SGD's loss floor, which the steps ratio misses."""
    diverged = stalled(batch_size=CONFIG.batch_size * 2)
    diverged.diverged = True
    smaller = stalled(devices_per_node=1)
    model = model_of(reference, stalled(), stalled(lr=CONFIG.lr * 2), smaller, diverged)
    assert model.on_reference == {CONFIG.key()}


def test_a_fork_whose_own_progress_is_resolved_keeps_its_own_reading(reference: ReferenceCurve) -> None:
    model = model_of(reference, fork(2.0))
    assert model.on_reference == set()
    assert model.steps(CONFIG) is not None


def larger_batch(rate: float, noise: float, seed: int) -> ProbeResult:
    """A fork of the recipe at twice its batch, ``rate`` times the reference's pace, read through
    ``noise`` on every evaluation."""
    result = copy.copy(fork(rate, noise=noise, seed=seed))
    result.config = CONFIG.replace(batch_size=CONFIG.batch_size * 2)
    return with_noise_scale_64(result)


def test_a_fork_read_through_noise_wider_than_its_carry_is_read_on_the_reference(
    reference: ReferenceCurve,
) -> None:
    """Its rate's 80% interval (0.81-7.8×) spans the warm-up's pace and the fastest the carries
    allow (1.5× here): the point it reads (4.2×) is noise, and the carry stands in for it."""
    noisy = larger_batch(2.0, noise=0.1, seed=1)
    model = model_of(reference, stalled(), noisy)
    assert noisy.config.key() in model.on_reference
    assert model.steps(noisy.config).value == pytest.approx(
        continued_remaining(reference, WARMUP, TARGET).value * 3 / 4)


def test_a_larger_batch_read_without_gain_keeps_its_own_reading(reference: ReferenceCurve) -> None:
    """Read at the warm-up's pace, its interval excludes the carry's fastest: the measured lack of
    gain stands rather than the noise scale's promise (beside a control read at its own pace)."""
    flat = larger_batch(1.0, noise=0.0, seed=1)
    model = model_of(reference, fork(1.0), flat)
    assert flat.config.key() not in model.on_reference
    assert model.steps(flat.config).value > continued_remaining(reference, WARMUP, TARGET).value * 3 / 4


def test_a_control_that_misses_its_own_pace_widens_every_fork_beside_it(reference: ReferenceCurve) -> None:
    """The warm-up continued runs at pace 1 by construction. Read at −2× (its loss rose), it shows
    error at the fork point that the level noise does not model; the larger batch beside it, read
    tightly at the warm-up's pace, then spans every rate the carries allow and is read on the
    reference."""
    rose = fork(-2.0)
    flat = larger_batch(1.0, noise=0.0, seed=1)
    model = model_of(reference, rose, flat)
    control = fork_rate(reference, rose, TARGET)
    assert control is not None and control.rate_high < 1.0
    assert model._control_offset() > 0
    assert flat.config.key() in model.on_reference


def test_a_control_read_at_its_own_pace_widens_nothing(reference: ReferenceCurve) -> None:
    flat = larger_batch(1.0, noise=0.0, seed=1)
    model = model_of(reference, fork(1.0), flat)
    assert model._control_offset() == 0.0
    assert flat.config.key() not in model.on_reference
