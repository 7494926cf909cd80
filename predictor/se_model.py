"""Statistical efficiency: iterations needed to reach the target loss, from one probe's curve.

A probe that confirmed the target gives the answer directly. Otherwise we fit Optimus's loss
model l(k) = 1/(a·k + b) + c (Peng et al., EuroSys 2018) to the evaluation curve, solve
l(k*) = target for k* = (1/(target − c) − b)/a, and take an 80% interval from a residual
bootstrap of the fit. A floor c at or above the target means the target is out of reach.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import curve_fit

from predictor.types import ProbeResult

BOOTSTRAP_SAMPLES = 40
MIN_POINTS = 4
INTERVAL = (10.0, 90.0)  # percentiles of the 80% interval


@dataclass(frozen=True)
class Estimate:
    """A point estimate with an 80% interval; ``math.inf`` when the target looks unreachable."""

    value: float
    low: float
    high: float


def optimus_loss(k: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
    """l(k) = 1/(a·k + b) + c."""
    return 1.0 / (a * k + b) + c


def fit_optimus(iterations: np.ndarray, losses: np.ndarray) -> tuple[float, float, float]:
    """Least-squares fit of (a, b, c) with a, b > 0 and 0 ≤ c < min(loss)."""
    floor_max = max(float(losses.min()) * 0.999, 1e-9)
    start_loss = max(float(losses[0]) - floor_max * 0.5, 1e-6)
    guess = (1.0 / (start_loss * max(iterations[-1], 1.0)), 1.0 / start_loss, floor_max * 0.5)
    params, _ = curve_fit(
        optimus_loss, iterations, losses, p0=guess,
        bounds=([1e-12, 1e-9, 0.0], [np.inf, np.inf, floor_max]), maxfev=4000,
    )
    return tuple(float(p) for p in params)


def solve_iterations(a: float, b: float, c: float, target: float) -> float:
    if target <= c:
        return math.inf
    return max((1.0 / (target - c) - b) / a, 0.0)


def iterations_to_target(result: ProbeResult, target: float, seed: int = 0) -> Estimate | None:
    """Iterations to the target for ``result``'s config; None when the curve says nothing."""
    if result.diverged or result.error:
        return None
    if result.reached_iteration is not None:
        previous = [k for k, _, _ in result.curve if k < result.reached_iteration]
        low = previous[-1] if previous else 0
        return Estimate(float(result.reached_iteration), float(low), float(result.reached_iteration))
    points = [(k, loss) for k, _, loss in result.curve if k > 0 and math.isfinite(loss)]
    if len(points) < MIN_POINTS:
        return None
    k, losses = (np.array(column, dtype=float) for column in zip(*points, strict=True))
    try:
        a, b, c = fit_optimus(k, losses)
    except (RuntimeError, ValueError):
        return None
    fitted = optimus_loss(k, a, b, c)
    residuals = losses - fitted
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(BOOTSTRAP_SAMPLES):
        resampled = fitted + rng.choice(residuals, size=len(residuals), replace=True)
        try:
            samples.append(solve_iterations(*fit_optimus(k, np.maximum(resampled, 1e-9)), target))
        except (RuntimeError, ValueError):
            samples.append(math.inf)
    low, high = np.percentile(np.array(samples), INTERVAL)
    value = solve_iterations(a, b, c, target)
    return Estimate(value, float(min(low, value)), float(max(high, value)))
