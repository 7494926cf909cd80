"""Batch-size scaling of statistical efficiency from the gradient noise scale.

McCandlish et al. (arXiv 1812.06162): steps to a given loss follow S = S_min·(1 + B_noise/B),
so doubling a batch far below B_noise halves the steps, and far above it changes nothing.
B_noise ≈ B_simple = tr(Σ)/|G|² is estimated for free from two gradient norms a probe already
has — a worker's (batch B_small) and the all-reduced one (B_big) — with their Appendix A.1
unbiased estimators:

    |G|²  ≈ (B_big·|G_big|² − B_small·|G_small|²) / (B_big − B_small)
    tr(Σ) ≈ (|G_small|² − |G_big|²) / (1/B_small − 1/B_big)
"""

from __future__ import annotations

import math

import numpy as np

from predictor.types import ProbeResult


def noise_scale(results: list[ProbeResult]) -> float | None:
    """B_simple from the probes' averaged gradient-norm pairs; None when they say nothing.

    Near the loss floor the estimate of |G|² can come out at or below zero while tr(Σ) is plainly
    positive: at the largest batch measured the noise still outweighs the signal, so B_noise is
    at least that batch, which is what is returned. None there read as "no gain from a batch" —
    the opposite: on ``throttled_node`` (seed 3) one device was planned at b16 and needed 28,010
    iterations where 4 nodes (global batch 64) needed 5,950.

    Both estimators are noisy for one pair, so (as McCandlish et al. advise) numerator and
    denominator are averaged over probes before the ratio is taken.
    """
    grads, traces, biggest = [], [], 0.0
    for r in results:
        if None in (r.grad_sq_small, r.grad_sq_big, r.batch_small, r.batch_big) or r.diverged:
            continue
        small, big = float(r.batch_small), float(r.batch_big)
        if big <= small:
            continue
        biggest = max(biggest, big)
        grads.append((big * r.grad_sq_big - small * r.grad_sq_small) / (big - small))
        traces.append((r.grad_sq_small - r.grad_sq_big) / (1.0 / small - 1.0 / big))
    if not grads:
        return None
    grad_sq, trace = float(np.mean(grads)), float(np.mean(traces))
    if not (trace > 0 and math.isfinite(trace)):
        return None
    if grad_sq <= 0:  # the gradient is lost in its noise even at the largest batch measured
        return biggest
    return trace / grad_sq


def steps_ratio(batch_from: np.ndarray | float, batch_to: np.ndarray | float, b_noise: float) -> np.ndarray:
    """S(B_to)/S(B_from) = (1 + B_noise/B_to)/(1 + B_noise/B_from) (McCandlish et al., eq. 2.11)."""
    return (1.0 + b_noise / np.asarray(batch_to, float)) / (1.0 + b_noise / np.asarray(batch_from, float))


def fixed_step_ratio(batch_from: np.ndarray | float, batch_to: np.ndarray | float, b_noise: float) -> float:
    """S(B_to)/S(B_from) when the step tuned for B_from is kept at B_to: 1/(2 − r), r = ``steps_ratio``.

    ``steps_ratio`` holds where each batch runs at its own tuned step. A study's configs share the
    step its sweep found best at one batch; McCandlish et al.'s one-step model (their eq. 2.6,
    ΔL(ε) = ε|G|² − ε²/2·GᵀHG·(1 + B_noise/B)) at that step ε = ε_opt(B_from) makes the progress per
    step at B_to (2 − r)× that at B_from: a larger batch at an unchanged step gains under 2×
    however many times larger it is. On digits_mlp (study seed 2) ``steps_ratio`` read 8 devices
    (batch 32 → 256 at lr 0.003, B_noise ≈ 90) as 2.8× fewer iterations; the plan ran them and
    needed as many as one device, 2.7× the best known. Infinite where the step is past what the
    smaller batch's noise allows (r ≥ 2: no progress)."""
    r = float(steps_ratio(batch_from, batch_to, b_noise))
    return 1.0 / (2.0 - r) if r < 2.0 else math.inf


def implicit_momentum(groups: np.ndarray | int) -> np.ndarray:
    """Asynchrony across g groups acts like momentum 1 − 1/g (Mitliagkas et al., arXiv 1605.09774)."""
    return 1.0 - 1.0 / np.asarray(groups, float)


def total_momentum(momentum: np.ndarray | float, groups: np.ndarray | int) -> np.ndarray:
    """Explicit plus implicit momentum — Omnivore (Hadjis et al. 2016, §4) tunes μ so this stays put."""
    return np.asarray(momentum, float) + implicit_momentum(groups)
