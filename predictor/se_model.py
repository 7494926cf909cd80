"""Statistical efficiency: iterations needed to reach the target loss, from one probe's curve.

A probe that confirmed the target gives the answer directly. Otherwise we fit a loss-curve family
(predictor.loss_curves: Optimus's l(k) = 1/(a·k+b)+c or a power law with a floor) to the
evaluation curve, solve l(k*) = target, and take an 80% interval from a residual bootstrap of the
fit (Efron & Tibshirani 1993, §9.5). Residuals are taken as ratios (loss noise scales with the
loss) and inflated by √(n/(n−p)) so that they are not smaller than the noise they estimate
(Davison & Hinkley 1997, §6.2.3). A floor at or above the
target means out of reach.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from predictor.loss_curves import FAMILIES, Family
from predictor.types import ProbeResult

BOOTSTRAP_SAMPLES = 60
MIN_POINTS = 4
INTERVAL = (10.0, 90.0)  # percentiles of the 80% interval
DEFAULT_FAMILY = "power"  # smaller extrapolation error on real curves: docs/results/predictor.md


@dataclass(frozen=True)
class Estimate:
    """A point estimate with an 80% interval; ``math.inf`` when the target looks unreachable."""

    value: float
    low: float
    high: float


def curve_points(result: ProbeResult) -> tuple[np.ndarray, np.ndarray] | None:
    """(iterations, losses) of the evaluations after the first, or None when too few."""
    points = [(k, loss) for k, _, loss in result.curve if k > 0 and math.isfinite(loss)]
    if len(points) < MIN_POINTS:
        return None
    k, losses = (np.array(column, dtype=float) for column in zip(*points, strict=True))
    return k, losses


def _solve(family: Family, k: np.ndarray, losses: np.ndarray, target: float) -> float:
    try:
        return family.solve(family.fit(k, np.maximum(losses, 1e-9)), target)
    except (RuntimeError, ValueError):
        return math.inf


def extrapolate(
    k: np.ndarray, losses: np.ndarray, target: float, family: str = DEFAULT_FAMILY, seed: int = 0
) -> Estimate | None:
    """Iterations at which the fitted curve reaches ``target``, with a residual-bootstrap interval."""
    chosen = FAMILIES[family]
    try:
        params = chosen.fit(k, losses)
    except (RuntimeError, ValueError):
        return None
    fitted = chosen.loss(k, *params)
    log_ratio = np.log(np.maximum(losses, 1e-12) / np.maximum(fitted, 1e-12))
    residuals = (log_ratio - log_ratio.mean()) * math.sqrt(len(k) / max(len(k) - len(params), 1))
    rng = np.random.default_rng(seed)
    samples = [
        _solve(chosen, k, fitted * np.exp(rng.choice(residuals, size=len(residuals), replace=True)), target)
        for _ in range(BOOTSTRAP_SAMPLES)
    ]
    low, high = np.percentile(np.array(samples), INTERVAL)
    value = chosen.solve(params, target)
    return Estimate(value, float(min(low, value)), float(max(high, value)))


def iterations_to_target(
    result: ProbeResult, target: float, seed: int = 0, family: str = DEFAULT_FAMILY
) -> Estimate | None:
    """Iterations to the target for ``result``'s config; None when the curve says nothing."""
    if result.diverged or result.error:
        return None
    if result.reached_iteration is not None:
        previous = [k for k, _, _ in result.curve if k < result.reached_iteration]
        low = previous[-1] if previous else 0
        return Estimate(float(result.reached_iteration), float(low), float(result.reached_iteration))
    points = curve_points(result)
    if points is None:
        return None
    return extrapolate(*points, target, family=family, seed=seed)
