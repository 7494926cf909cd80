"""Loss-curve families for statistical efficiency: fit a probe's curve, solve for the target.

Two three-parameter families, both with a floor c the loss cannot go below:

* Optimus (Peng et al., EuroSys 2018):       l(k) = 1/(a·k + b) + c
* power law with a floor (Hestness et al., arXiv 1712.00409; Kaplan et al., arXiv 2001.08361,
  where loss falls as a power of steps):     l(k) = a·(k + 1)^(−p) + c

Optimus is the power law with p = 1 and an offset, so the power law can bend faster or slower.
docs/results/predictor.md compares both on truncated real curves (prefix of a run → iterations
the full run needed); the family with the smaller extrapolation error is the default.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy.optimize import curve_fit


class CurveParams(NamedTuple):
    """(a, b_or_p, c): Optimus's (a, b, c) or the power law's (a, p, c); c is the floor."""

    a: float
    shape: float
    c: float


class Family(NamedTuple):
    name: str
    loss: Callable[..., np.ndarray]
    fit: Callable[..., CurveParams]
    solve: Callable[[CurveParams, float], float]


def optimus_loss(k: np.ndarray, a: float, b: float, c: float) -> np.ndarray:
    """l(k) = 1/(a·k + b) + c (Optimus)."""
    return 1.0 / (a * k + b) + c


def power_loss(k: np.ndarray, a: float, p: float, c: float) -> np.ndarray:
    """l(k) = a·(k + 1)^(−p) + c (power law with a floor)."""
    return a * np.power(k + 1.0, -p) + c


def _floor_bounds(losses: np.ndarray, c_max: float | None = None) -> float:
    bound = float(losses.min()) * 0.999 if c_max is None else min(float(losses.min()) * 0.999, c_max)
    return max(bound, 1e-9)


def fit_optimus(k: np.ndarray, losses: np.ndarray, c_max: float | None = None) -> CurveParams:
    """Least squares with a, b > 0 and 0 ≤ c < min(loss) (and ≤ ``c_max``)."""
    floor_max = _floor_bounds(losses, c_max)
    start = max(float(losses[0]) - floor_max * 0.5, 1e-6)
    guess = (1.0 / (start * max(k[-1], 1.0)), 1.0 / start, floor_max * 0.5)
    params, _ = curve_fit(
        optimus_loss, k, losses, p0=guess,
        bounds=([1e-12, 1e-9, 0.0], [np.inf, np.inf, floor_max]), maxfev=4000,
    )
    return CurveParams(*(float(p) for p in params))


def fit_power(k: np.ndarray, losses: np.ndarray, c_max: float | None = None) -> CurveParams:
    """Least squares with a > 0, 0.05 ≤ p ≤ 4 and 0 ≤ c < min(loss) (and ≤ ``c_max``)."""
    floor_max = _floor_bounds(losses, c_max)
    guess = (max(float(losses[0]) - floor_max * 0.5, 1e-6), 0.5, floor_max * 0.5)
    params, _ = curve_fit(
        power_loss, k, losses, p0=guess,
        bounds=([1e-12, 0.05, 0.0], [np.inf, 4.0, floor_max]), maxfev=4000,
    )
    return CurveParams(*(float(p) for p in params))


def solve_optimus(params: CurveParams, target: float) -> float:
    """k* = (1/(target − c) − b)/a; inf when the floor is at or above the target."""
    a, b, c = params
    if target <= c:
        return math.inf
    return max((1.0 / (target - c) - b) / a, 0.0)


def solve_power(params: CurveParams, target: float) -> float:
    """k* = ((target − c)/a)^(−1/p) − 1; inf when the floor is at or above the target."""
    a, p, c = params
    if target <= c:
        return math.inf
    return max(((target - c) / a) ** (-1.0 / p) - 1.0, 0.0)


FAMILIES: dict[str, Family] = {
    "optimus": Family("optimus", optimus_loss, fit_optimus, solve_optimus),
    "power": Family("power", power_loss, fit_power, solve_power),
}
