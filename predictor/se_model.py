"""Statistical efficiency: iterations needed to reach the target loss, from one probe's curve.

A probe that confirmed the target gives the answer directly. Otherwise we fit a loss-curve family
(predictor.loss_curves: Optimus's l(k) = 1/(a·k+b)+c or a power law with a floor) to the
evaluation curve, solve l(k*) = target, and take an 80% interval from a residual bootstrap of the
fit (Efron & Tibshirani 1993, §9.5). Residuals are taken as ratios (loss noise scales with the
loss) and inflated by √(n/(n−p)) so that they are not smaller than the noise they estimate
(Davison & Hinkley 1997, §6.2.3). A floor at or above the
target means out of reach.

Only the later half of the curve (at least MIN_POINTS + 1 evaluations) is fitted: a short probe
starts in a transient (momentum warm-up, an initial plateau) that no power law describes, and
the extrapolation should continue the regime the curve is in when the probe ends.

Robustness, so that a plan cannot rest on one lucky dip of a short, noisy probe:

* the curve is fitted to its *upper envelope* (each point raised to the highest loss seen at or
  after it), so a late dip cannot pull the fitted trend below the level the curve bounced back to;
* a *noise floor*: SGD at a constant step size settles in a band whose width scales with η/B
  (Mandt et al., JMLR 2017); the band shows up as the curve's fluctuation around its trend; we
  measure it model-free as the RMS of the curve's rises over the probe's later
  half (predictor.se_model.noise_floor).
  A short probe cannot identify a floor c far below its own losses, so the floor is taken to be
  the noise floor: c is fitted within [0, noise] and solving uses max(c, noise). This assumes
  the metric can fall to its noise floor, unless the curve itself shows a higher floor: an F-test
  (95%) of the free-floor fit against the capped one keeps the free floor when it fits
  significantly better (a flattening curve, e.g. held-out loss near its floor). The point uses the
  capped floor, but until the F-test shows the floor the interval draws from both readings, so a
  free floor at or above the target leaves the interval open above: the target may be out of reach;
* *model-form uncertainty*: the bootstrap is run for every family (Optimus and the power law), and
  the interval is the pooled 10–90% of both, so it spans the disagreement between families; on
  top, the log-interval widens with the extrapolation distance, by FORM_SIGMA per e-fold of
  k*/k_probe (a prior, not fitted to any evaluation's ground truth).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import stats

from predictor.loss_curves import FAMILIES, CurveParams, Family
from predictor.types import ProbeResult

BOOTSTRAP_SAMPLES = 60  # resampled fits of one curve, drawn once per extrapolation: its 80% interval
MIN_POINTS = 4
INTERVAL = (10.0, 90.0)  # percentiles of the 80% interval
DEFAULT_FAMILY = "power"  # smaller extrapolation error on real curves: docs/results/predictor.md
FORM_SIGMA = 0.25  # log-sd of model-form error per e-fold of extrapolation (prior)
Z80 = 1.2816  # standard normal quantile of the 80% interval's upper end (used by every model)


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


def envelope(losses: np.ndarray) -> np.ndarray:
    """Upper envelope: each point raised to the highest loss at or after it (non-increasing)."""
    return np.maximum.accumulate(losses[::-1])[::-1]


def noise_floor(k: np.ndarray, losses: np.ndarray) -> float:
    """Amplitude of the curve's fluctuation: RMS of its *rises* over the probe's later half.

    A rise of the loss between two evaluations is direct evidence of the stationary noise band
    (the trend only falls); a curve that falls monotonically shows none, whatever its shape, so
    a misfit of the family to a smooth curve is not mistaken for noise.
    """
    tail = np.flatnonzero(k >= np.median(k))
    start = max(int(tail[0]) - 1, 0)
    rises = np.maximum(np.diff(losses[start:]), 0.0)
    return float(np.sqrt(np.mean(rises**2))) if rises.size else 0.0


def free_and_capped(family: Family, k: np.ndarray, losses: np.ndarray, raw: np.ndarray
                    ) -> tuple[CurveParams, float, CurveParams] | None:
    """``family`` fitted to ``losses`` with its floor free, the noise floor of ``raw`` (the curve as
    measured), and the fit with its floor capped there; None when either fit fails."""
    try:
        free = family.fit(k, losses)
        cap = noise_floor(k, raw)
        return free, cap, family.fit(k, losses, c_max=cap)
    except (RuntimeError, ValueError):
        return None


def floor_identified(k: np.ndarray, losses: np.ndarray, family: Family, free: tuple, capped: tuple) -> bool:
    """F-test (95%) of the free floor against the noise-floor cap: does the curve itself show a floor?"""
    dof = len(k) - 3
    if dof < 1:
        return False
    rss_free = float(np.sum((losses - family.loss(k, *free)) ** 2))
    rss_capped = float(np.sum((losses - family.loss(k, *capped)) ** 2))
    if rss_capped <= rss_free:
        return False
    if rss_free <= 1e-12 * float(np.sum(losses**2)):
        return True
    return (rss_capped - rss_free) / (rss_free / dof) > float(stats.f.ppf(0.95, 1, dof))


class Reading(NamedTuple):
    """One reading of a curve: the params fitted to ``losses`` with the floor within [0, ``cap``]
    (None: free)."""

    params: CurveParams
    cap: float | None
    losses: np.ndarray


def resampled_fits(family: Family, k: np.ndarray, readings: list[Reading], samples: int,
                   rng: np.random.Generator) -> list[tuple[CurveParams, float | None] | None]:
    """Residual bootstrap (ratios, inflated by √(n/(n−3))) of each reading of the curve, the samples
    split evenly between them, each resample refitted under its reading's floor cap; None where a
    refit failed. Both estimators of iterations to a target draw from here, so the interval of one
    spans the same readings of the floor as the other's."""
    draws: list[tuple[CurveParams, float | None] | None] = []
    for params, cap, losses in readings:
        fitted = family.loss(k, *params)
        log_ratio = np.log(np.maximum(losses, 1e-12) / np.maximum(fitted, 1e-12))
        residuals = (log_ratio - log_ratio.mean()) * math.sqrt(len(k) / max(len(k) - len(params), 1))
        for _ in range(samples // len(readings)):
            resampled = np.maximum(fitted * np.exp(rng.choice(residuals, size=len(k), replace=True)), 1e-12)
            try:
                draws.append((family.fit(k, resampled, c_max=cap), cap))
            except (RuntimeError, ValueError):
                draws.append(None)
    return draws


def _solve(family: Family, params: CurveParams, cap: float | None, target: float) -> float:
    """Iterations to ``target`` with the floor at least ``cap``."""
    return family.solve(params._replace(c=max(params.c, cap or 0.0)), target)


def _bootstrap(chosen: Family, k: np.ndarray, raw: np.ndarray, upper: np.ndarray, target: float,
               rng: np.random.Generator) -> tuple[float, list[float]] | None:
    """The point from the capped fit (the free one where the F-test shows the curve's own floor) and
    bootstrap solutions. Unless the floor is shown, the bootstrap draws from *both* readings: a curve
    that has not shown its floor has not ruled out one at or above the target either (on
    ``throttled_node`` the capped reading alone put a run that levels off above the target at
    6,388 iterations, ×2, while the free fit put its floor above the target)."""
    fitted = free_and_capped(chosen, k, upper, raw)
    if fitted is None:
        return None
    free, floor, capped = fitted
    if floor_identified(k, upper, chosen, free, capped):
        readings = [Reading(free, None, upper)]  # the curve shows its own floor: keep the free fit
    else:  # the free reading on the curve itself: an envelope turns a level, noisy curve into a staircase
        try:
            readings = [Reading(capped, floor, upper), Reading(chosen.fit(k, raw), None, raw)]
        except (RuntimeError, ValueError):
            return None
    draws = resampled_fits(chosen, k, readings, BOOTSTRAP_SAMPLES, rng)
    samples = [_solve(chosen, *draw, target) if draw is not None else math.inf for draw in draws]
    return _solve(chosen, readings[0].params, readings[0].cap, target), samples


def extrapolate(
    k: np.ndarray, losses: np.ndarray, target: float, family: str = DEFAULT_FAMILY, seed: int = 0
) -> Estimate | None:
    """Iterations at which the fitted curve reaches ``target``: the point from ``family``, the 80%
    interval pooled over every family's residual bootstrap, widened for extrapolation distance."""
    rng = np.random.default_rng(seed)
    keep = min(len(k), max(MIN_POINTS + 1, math.ceil(len(k) / 2)))
    k, losses = k[-keep:], losses[-keep:]  # the current regime: the early transient is dropped
    upper = envelope(np.maximum(losses, 1e-9))
    point = _bootstrap(FAMILIES[family], k, losses, upper, target, rng)
    if point is None:
        return None
    value, samples = point
    for name, other in FAMILIES.items():
        if name != family and (extra := _bootstrap(other, k, losses, upper, target, rng)) is not None:
            samples += extra[1]
    low, high = np.percentile(np.array(samples), INTERVAL, method="nearest")
    low, high = float(min(low, value)), float(max(high, value))
    if math.isfinite(value):
        widen = math.exp(Z80 * FORM_SIGMA * math.log(max(value / float(k[-1]), 1.0)))
        low, high = low / widen, high * widen
    return Estimate(value, low, high)


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
