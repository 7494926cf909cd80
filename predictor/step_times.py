"""Where a probe's step times settle, and how much they spread once settled.

A real device's first steps pay for warm-up (allocator, caches, kernel selection, Ray actor
start), and some strategies have their own start-up (DASO's blocking warm-up, DBS's first,
unbalanced epoch). A long run sees the rate after that, so a probe's s/it is the mean of its
*settled* steps. Where they settle is found by a one-sided CUSUM (Page, Biometrika 1954) of the
steps' excess over the settled level, read backwards as a change-point estimate: the warm-up is
the prefix whose cumulative excess is largest,

    S(i) = Σ_{j<i} clip(x_j − μ − k, −c, c),     settle = argmax_i S(i)

with μ, σ the mean and standard deviation of the last third (the steps surely settled),
k = σ the drift allowance (settled steps pull S down by k each) and c = 3σ the clip (one
spike weighs no more than a few settled steps, so it is not taken for a level shift). μ is a mean,
not a median, so a strategy's periodic slow steps (a global sync every few steps) are part of
the level and not a warm-up. σ has a floor of 1% of μ: the simulated clock can be exact.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

DRIFT = 1.0  # k = DRIFT·σ
CLIP = 3.0  # c = CLIP·σ
RELATIVE_FLOOR = 0.01  # σ ≥ 1% of the settled level
MIN_KEPT = 0.25  # at least this share of the steps is kept as settled


def settle_index(step_seconds: Sequence[float]) -> int:
    """Index of the first settled step: the steps before it are warm-up (0 when there is none)."""
    x = np.asarray(step_seconds, dtype=float)
    n = x.size
    if n < 4:
        return 0
    tail = x[-max(n // 3, 2):]
    level = float(tail.mean())
    sigma = max(float(tail.std()), RELATIVE_FLOOR * abs(level))
    if sigma <= 0.0:
        return 0
    excess = np.clip(x - level - DRIFT * sigma, -CLIP * sigma, CLIP * sigma)
    cumulative = np.concatenate(([0.0], np.cumsum(excess)))
    latest = n - max(int(np.ceil(MIN_KEPT * n)), 1)
    return int(np.argmax(cumulative[: latest + 1]))


def settled(step_seconds: Sequence[float]) -> np.ndarray:
    """The steps from the settle point on (all of them when none were recorded warm)."""
    x = np.asarray(step_seconds, dtype=float)
    return x[settle_index(x):]


def steady_mean(step_seconds: Sequence[float]) -> float:
    """Mean seconds of the settled steps (NaN when there are none)."""
    steps = settled(step_seconds)
    return float(steps.mean()) if steps.size else float("nan")


def steady_spread(step_seconds: Sequence[float]) -> float:
    """Coefficient of variation of the settled steps (std / mean): the timing's relative spread,
    0 for an exact clock, NaN with fewer than two settled steps. The relative standard error of
    the steady mean is this divided by √(number of settled steps)."""
    steps = settled(step_seconds)
    if steps.size < 2 or steps.mean() <= 0.0:
        return float("nan")
    return float(steps.std(ddof=1) / steps.mean())
