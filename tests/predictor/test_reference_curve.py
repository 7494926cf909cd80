"""Forks measured against the warm-up's reference curve: rates and remaining iterations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from predictor.confidence import MAX_HINDCAST_MISS
from predictor.reference_curve import WINDOW, ReferenceCurve, continued_remaining, fork_rate, hindcast
from predictor.types import Config, ProbeResult

WARMUP = 400
CONFIG = Config("sync", 1, 2, batch_size=16, lr=0.1)


def reference_loss(k: np.ndarray | float) -> np.ndarray:
    return 0.05 + 2.0 * (np.asarray(k, dtype=float) + 1) ** -0.5


def warmup_curve(noise: float = 0.0, seed: int = 0) -> list[tuple[int, float, float]]:
    rng = np.random.default_rng(seed)
    k = np.arange(0, WARMUP + 1, 4)
    losses = reference_loss(k) * np.exp(rng.normal(0, noise, k.size))
    return [(int(i), float(i) * 1e-3, float(loss)) for i, loss in zip(k, losses, strict=True)]


def fork(rate: float, length: int = 50, noise: float = 0.0, seed: int = 1) -> ProbeResult:
    """A fork whose loss follows the reference ``rate`` times as fast from the warm-up's end."""
    rng = np.random.default_rng(seed)
    j = np.arange(0, length + 1, 2)
    losses = reference_loss(WARMUP + rate * j) * np.exp(rng.normal(0, noise, j.size))
    curve = [(WARMUP + int(i), 0.4 + i * 1e-3, float(loss)) for i, loss in zip(j, losses, strict=True)]
    return ProbeResult(CONFIG, length, length * 1e-3, curve, [1e-3] * length, start_iteration=WARMUP,
                       start_seconds=0.4, parent="warmup")


def exact_remaining(rate: float, target: float, length: int = 50) -> float:
    goal = (2.0 / (target - 0.05)) ** 2 - 1  # K(target) of the reference
    return (goal - (WARMUP + rate * length)) / rate


@pytest.mark.parametrize("rate", [0.5, 1.0, 2.0])
def test_a_rescaled_fork_is_read_at_its_rate(rate: float) -> None:
    reference = ReferenceCurve.fit(warmup_curve())
    assert reference is not None
    measured = fork_rate(reference, fork(rate), target=0.12)
    assert measured is not None
    assert measured.rate == pytest.approx(rate, rel=0.05)
    expected = exact_remaining(rate, 0.12)
    assert measured.remaining.value == pytest.approx(expected, rel=0.05)
    assert measured.remaining.low <= expected <= measured.remaining.high


def test_with_noise_the_80pct_interval_covers_the_truth_at_least_70pct_of_the_time() -> None:
    """1% noise on every evaluation, 20 seeded warm-ups and forks: the rate's own uncertainty and
    the reference's both enter the interval, so it keeps its nominal coverage."""
    expected, covered = exact_remaining(1.5, 0.12), 0
    for seed in range(20):
        reference = ReferenceCurve.fit(warmup_curve(noise=0.01, seed=seed))
        assert reference is not None
        measured = fork_rate(reference, fork(1.5, noise=0.01, seed=seed + 100), target=0.12)
        assert measured is not None
        covered += measured.remaining.low <= expected <= measured.remaining.high
    assert covered >= 14


def test_a_fork_that_does_not_improve_never_reaches() -> None:
    reference = ReferenceCurve.fit(warmup_curve())
    assert reference is not None
    stalled = fork(1.0)
    stalled.curve = [(k, t, stalled.curve[0][2]) for k, t, _ in stalled.curve]
    measured = fork_rate(reference, stalled, target=0.12)
    assert measured is not None and measured.remaining.value == math.inf


def test_a_diverged_fork_says_nothing() -> None:
    reference = ReferenceCurve.fit(warmup_curve())
    assert reference is not None
    diverged = fork(1.0)
    diverged.diverged = True
    assert fork_rate(reference, diverged, target=0.12) is None


def test_a_fork_whose_progress_is_lost_in_its_noise_says_nothing_rather_than_never() -> None:
    """Deep in a run a short fork may show no progress only because SGD's noise hides it: when its
    rate's 80% interval still admits progress it is no evidence either way (the model then
    carries from a neighbour); a fork that clearly gets worse never reaches."""
    reference = ReferenceCurve.fit(warmup_curve())
    assert reference is not None
    noisy = fork(0.0, noise=0.02, seed=0)  # flat: its rate's interval straddles 0 on this seed
    inconclusive = fork_rate(reference, noisy, target=0.12)
    worse = fork(-1.0)
    assert inconclusive is None
    measured = fork_rate(reference, worse, target=0.12)
    assert measured is not None and measured.remaining.value == math.inf


def test_a_continuation_is_read_on_the_reference_itself() -> None:
    reference = ReferenceCurve.fit(warmup_curve(noise=0.01))
    assert reference is not None
    left = continued_remaining(reference, WARMUP + 50, target=0.12)
    goal = float(reference.iteration_at(0.12)[0])
    assert left.value == pytest.approx(goal - WARMUP - 50)
    assert left.low <= left.value <= left.high


def test_a_fork_whose_apparent_progress_its_level_noise_could_fake_has_no_upper_bound() -> None:
    """Near the floor a loss moved by noise maps far along the reference: a fork that only wanders
    down by its lineage's level noise (SGD's iterate drifts slowly, so its points agree on the
    drift) shows a clear positive rate on its own line, but its iterations to the target are then
    unbounded above; the same fork making the reference's own progress keeps a bounded interval."""
    reference = ReferenceCurve.fit(warmup_curve(noise=0.01))
    assert reference is not None and reference.noise > 0
    wander = fork(0.0)
    start = wander.curve[0][2]
    wander.curve = [(k, t, start - 1.5 * reference.noise * (k - WARMUP) / 50) for k, t, _ in wander.curve]
    faked = fork_rate(reference, wander, target=0.12)
    assert faked is not None and faked.rate > 0 and faked.remaining.high == math.inf
    moved = fork_rate(reference, fork(1.0), target=0.12)
    assert moved is not None and math.isfinite(moved.remaining.high)


def test_a_hindcast_tries_the_extrapolation_on_the_evidence_before_it_at_its_own_horizon() -> None:
    """On the power law the fit can represent, the same extrapolation made earlier lands where the
    curve went; on an exponential decay, which a power law fitted late reads too flat, it misses by
    more than MAX_HINDCAST_MISS. The backtest is made no earlier than end/WINDOW, the fit's window:
    before that the curve was in a transient the fit has left behind."""
    power = warmup_curve()
    assert hindcast(power, target=0.12).miss == pytest.approx(1.0, abs=0.01)
    decay = [(k, 0.0, 2.0 * math.exp(-k / 300) + 0.3) for k in range(0, WARMUP + 1, 2)]
    missed = hindcast(decay, target=0.66)
    assert missed.miss > MAX_HINDCAST_MISS and WARMUP / WINDOW < missed.made_at < WARMUP
    transient = [(k, 0.0, 0.5 * math.exp(-k / 5) + 0.6 * (k + 1) ** -0.5 + 0.02)
                 for k in range(0, WARMUP + 1, 2)]
    far = hindcast(transient, target=0.035)
    assert far.made_at == pytest.approx(WARMUP / WINDOW, rel=0.01) and far.miss <= MAX_HINDCAST_MISS
