"""When a fresh seed's run first reaches the target: the first passage of a noisy loss curve.

The convergence rule fires the first time an evaluation is at or below the target, so a run's
iterations-to-target are not where its *mean* curve crosses the target but where the mean plus
the loss's fluctuation first does, confirmed by the next evaluation (worker.convergence: one
noisy dip does not count). Near a flat stretch that is much earlier than the mean's crossing,
and it spreads widely from seed to seed (two of the four public long targets are crossed on a
dip of 20 iterations; MLPerf places targets "right after the knee" for this reason).

This module simulates it: each draw of the mean curve (predictor.curve_ensemble: the shape's
uncertainty) is continued on the run's evaluation grid with the fluctuation measured around it,
an AR(1) process whose lag-one correlation is read off the residuals (SGD's iterate wanders; an
evaluation one step later is not a fresh draw), and the first evaluation at or below the target
whose next one is too is the crossing. The spread over fluctuation draws is the seed's share of
the forecast; the spread over mean curves is the shape's.

The fluctuation keeps the residuals' own distribution (a Gaussian copula: the AR(1) process is a
standard normal one, mapped through the residuals' quantiles). A training loss is skewed: it
spikes up, and its dips are shallow. On ``regression`` at mid-run the residuals' σ is 0.0043, but
their 10% quantile lies 0.0024 below their median (a normal law's: 0.0055). A normal law of that σ
put a dip to the target (1.5σ below the mean) within a hundred iterations, while the run hovered
above it for 4,000 (ttc train's ETA at mid-run: 98% early; 60% with the residuals' own law).

The grid is walked in chunks from the evidence's end, at the run's own evaluation interval at
first; every CHUNKS_PER_DOUBLING chunks the stride doubles, so a crossing a thousand times past
the evidence costs a few dozen chunks while the resolution stays a small share of the iterations.
A stride of s simulates one evaluation in s; the s − 1 between are not lost: each counts with the
rate at which a confirmed dip *begins* there (the previous evaluation above the target, it and the
next below), read off the AR(1) law at the simulated mean, as independent chances (Aldous's
Poisson clumping). Without them a target reached on a dip read late far out: a target 2σ under a
flat mean was reached in a median of 3,124 evaluations (5.5% never), where the rule itself takes
1,349; with them, 1,309. The walk stops when every simulated run has crossed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
from scipy.signal import lfilter
from scipy.special import ndtr, ndtri

CHUNK = 128  # evaluations simulated per chunk
CHUNKS_PER_DOUBLING = 4
_LEVELS = np.linspace(-12.0, 12.0, 2401)  # standard-normal levels the entrance rate is tabulated at
_DEPTHS = np.linspace(0.0, 12.0, 481)  # how far below the level the middle evaluation lies


@dataclass(frozen=True)
class Fluctuation:
    """The loss around its fitted mean: the residuals, sorted (their quantile function), and the
    lag-one correlation of the process (clipped to [0, 0.99])."""

    residuals: np.ndarray
    rho: float

    @cached_property
    def _tails(self) -> tuple[np.ndarray, float, float]:
        """The residuals' standard-normal knots (plotting positions (i + ½)/n) and the slopes of the
        lines from the median through each extreme; read once, used at every chunk of the walk."""
        values = self.residuals
        knots = ndtri((np.arange(values.size) + 0.5) / values.size)
        median = float(np.median(values))
        return knots, (median - values[0]) / -knots[0], (values[-1] - median) / knots[-1]

    def at(self, z: np.ndarray) -> np.ndarray:
        """The residual at standard-normal quantile ``z``: the empirical quantile function between
        the extreme residuals, continued past them along the line from the median through each
        extreme (a dip deeper than any seen stays possible)."""
        values = self.residuals
        if values.size < 2:
            return np.zeros_like(z) + (values[0] if values.size else 0.0)
        knots, low, high = self._tails
        inside = np.interp(z, knots, values)
        return np.where(z < knots[0], values[0] + (z - knots[0]) * low,
                        np.where(z > knots[-1], values[-1] + (z - knots[-1]) * high, inside))

    def z_of(self, residual: np.ndarray) -> np.ndarray:
        """The standard-normal quantile of ``residual``: the inverse of ``at``."""
        values = self.residuals
        knots, low, high = self._tails
        inside = np.interp(residual, values, knots)
        with np.errstate(divide="ignore", invalid="ignore"):
            below = knots[0] + (residual - values[0]) / low if low > 0 else -np.inf
            above = knots[-1] + (residual - values[-1]) / high if high > 0 else np.inf
        return np.where(residual < values[0], below, np.where(residual > values[-1], above, inside))

    @cached_property
    def _entrance(self) -> np.ndarray:
        """The entrance rate at each level of _LEVELS (see ``entrance_rate``)."""
        rho = min(self.rho, 0.99)
        scale = math.sqrt(1.0 - rho**2)
        x = _LEVELS[:, None] - _DEPTHS[None, :]  # the middle evaluation's latent value
        neighbour_below = ndtr((_LEVELS[:, None] - rho * x) / scale)
        density = np.exp(-0.5 * x**2) / math.sqrt(2 * math.pi)
        return np.trapezoid(density * neighbour_below * (1.0 - neighbour_below), _DEPTHS, axis=1)

    def entrance_rate(self, z: np.ndarray) -> np.ndarray:
        """Per evaluation, the chance that a confirmed dip begins there when the target lies at
        standard-normal level ``z`` of the fluctuation: P(previous above, this and the next below)
        of the stationary AR(1) process (a Markov chain, reversible: both neighbours are drawn from
        the middle one alike)."""
        return np.interp(z, _LEVELS, self._entrance)


def residual_noise(residuals: np.ndarray) -> Fluctuation:
    """The fluctuation of ``residuals`` (the loss minus its fitted mean, in iteration order)."""
    residuals = np.asarray(residuals, dtype=float)
    residuals = residuals[np.isfinite(residuals)]
    if residuals.size < 3:
        return Fluctuation(np.zeros(0), 0.0)
    centred = residuals - residuals.mean()
    denominator = float(np.sum(centred**2))
    rho = float(np.sum(centred[1:] * centred[:-1]) / denominator) if denominator > 0 else 0.0
    return Fluctuation(np.sort(residuals), float(np.clip(rho, 0.0, 0.99)))


def first_passages(means: Callable[[np.ndarray], np.ndarray], start: float, step: float, horizon: float,
                   target: float, noise: Fluctuation, seeds: int,
                   rng: np.random.Generator) -> np.ndarray:
    """(draws, seeds) crossing iterations: for each mean curve (``means(k)`` gives (draws, len(k)))
    and each simulated seed, the first evaluation after ``start`` where mean + ``noise`` ≤
    ``target`` and the next evaluation is too (worker.convergence's rule); ``inf`` where none is
    by ``horizon``."""
    step = max(step, 1.0)
    out: np.ndarray | None = None
    state: np.ndarray | None = None  # the latent AR process's last value per (draw, seed)
    was_below: np.ndarray | None = None  # whether the last evaluation simulated was at or below
    position, stride, chunk = start, 1, 0
    while position < horizon:
        grid = position + step * stride * np.arange(1, CHUNK + 1)
        mean = means(grid)  # (draws, CHUNK)
        draws = mean.shape[0]
        if out is None:
            out = np.full((draws, seeds), math.inf)
            state = rng.standard_normal((draws, seeds))
            was_below = np.zeros((draws, seeds), dtype=bool)
        phi = noise.rho**stride
        shocks = rng.standard_normal((draws, seeds, CHUNK)) * math.sqrt(1.0 - phi**2)
        latent, _ = lfilter([1.0], [1.0, -phi], shocks, axis=2, zi=(phi * state)[..., None])
        state = latent[..., -1]
        below = (mean[:, None, :] + noise.at(latent)) <= target
        # confirmed[j]: evaluation j-1 (the last one before this chunk for j = 0) and j both below;
        # the crossing is the first of the two
        confirmed = np.concatenate([was_below[..., None] & below[..., :1], below[..., :-1] & below[..., 1:]],
                                   axis=2)
        firsts = np.concatenate([[position], grid[:-1]])
        if stride > 1 and noise.residuals.size > 1:  # the evaluations between the simulated ones
            rate = noise.entrance_rate(noise.z_of(target - mean))  # (draws, CHUNK)
            chance = -np.expm1((stride - 1) * np.log1p(-np.minimum(rate, 1.0 - 1e-12)))
            between = rng.random(confirmed.shape) < chance[:, None, :]
            where = firsts + step * rng.integers(1, stride, size=between.shape)
            firsts = np.where(between & ~confirmed, where, firsts)
            confirmed |= between
        was_below = below[..., -1]
        fresh = np.isinf(out) & confirmed.any(axis=2)
        first = np.argmax(confirmed, axis=2)[..., None]
        crossing = np.take_along_axis(np.broadcast_to(firsts, confirmed.shape), first, axis=2)[..., 0]
        out[fresh] = crossing[fresh]
        if not np.isinf(out).any():
            break
        position = float(grid[-1])
        chunk += 1
        if chunk % CHUNKS_PER_DOUBLING == 0:
            stride *= 2
    return out if out is not None else np.full((0, seeds), math.inf)
