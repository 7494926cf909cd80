"""When will a falling loss reach its target? An ensemble of learning-curve families decides.

One family extrapolated far past its evidence is a guess about the curve's shape; several families
that fit the same evidence can disagree many-fold on where it crosses the target. Following
Domhan et al. 2015 (IJCAI), the crossing is forecast by all eleven families of
predictor.curve_families, each weighted by how well it predicts what it did not see:

1. the evidence read is its last three doublings (WINDOW): the transient before them is no
   family's shape, and fitting it bent every extrapolation early (on the calibration curves);
   residuals are relative, the loss's noise scaling with its level;
2. every family is fitted to the first (1 − holdout) of that evidence (by iteration) and scored on
   the held-out rest: weight ∝ exp(−½·Σ r²/(σ²·temperature)), σ the noise of the best fit's
   residuals; prior curves of the same workload add members and scores (predictor.curve_priors);
   members under MIN_WEIGHT are dropped, and the rest refitted on all the evidence;
3. each member's parametric uncertainty is a Laplace approximation, θ ~ N(θ̂, inflation²·Σ) with Σ
   the covariance of the least-squares fit, less the draws the evidence rules out; on top, each
   drawn curve runs on a randomly warped clock past the evidence (``Calibration.form``: the
   model-form error no family's parameters express). Every drawn curve gives the iteration where
   it first reaches the target (∞ when it never does within HORIZON× the evidence); the draws are
   mixed by the members' weights, and p10/p50/p90 read from the mixture;
4. the open end: a family whose floor lies above the target says "never", which is only evidence
   when the loss has been seen levelling off above the target (``levelled_above``: the last doubling
   of iterations falls by less than its own noise, and sits above the target by more than it) on a
   curve past its transient (a ``transient`` one's flat stretch is a plateau, not a floor).
   Otherwise every floor is capped at (1 − FLOOR_MARGIN)× the target (the curve is still falling:
   nothing shows where it stops), and draws that still do not reach the target within the horizon
   are dropped, their share reported as ``unreached_weight``. So p90 is open only for a curve
   levelled above the target, or when no draw at all reaches it (``unreached_weight`` = 1).

The crossing is the *mean* curve's: the seed's own spread around it is the caller's to add
(``CrossingForecast.seed_spread``, or a first-passage simulation along ``Ensemble.curves``).
A call costs 0.13 s of CPU time in the median, 0.21 s at most, for 200 evaluations (11 families,
400 draws; 0.18 s and 0.28 s with one prior curve), measured over the tests' eleven curves.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
from scipy import stats

from predictor.curve_families import FAMILIES, CurveFamily, CurveFit, fit_family
from predictor.curve_priors import MAX_PRIORS, prior_member, prior_scores

MIN_POINTS = 6  # fewer evaluations cannot hold out a tail and still fit four parameters
WINDOW = 8.0  # the fit reads the evidence's last three doublings: the transient before is no family's
MIN_HOLDOUT = 2
MIN_WEIGHT = 1e-3
OVERSAMPLE = 3  # Laplace draws made per draw kept (the implausible ones are replaced)
HORIZON = 1e4  # crossings past HORIZON × the last evidence iteration count as never
GRID = 400
FLOOR_MARGIN = 0.1


class Calibration(NamedTuple):
    """The ensemble's knobs, fitted on synthetic curves (benchmarks/curve_ensemble_calibration.py),
    from a generator kept apart from the one the tests score coverage on.

    ``inflation`` scales the Laplace draws' standard deviations: a fit's covariance is local and
    ignores that the evidence is one seed. ``temperature`` divides the held-out log-likelihood: a
    misfitting family's residuals on the tail are one systematic error, not independent checks, so
    Σ r²/σ² over-counts the evidence against it. ``form`` is the model-form error no family's
    parameters express: each drawn curve runs on a clock warped past the evidence's end K,
    k → K·(k/K)^exp(η) with η ~ N(0, form²), so a crossing's distance in e-folds past the evidence,
    ln(k*/K), is off by a factor e^±form (the extrapolation error grows with the extrapolation, as
    FORM_SIGMA's prior in predictor.se_model). A prior curve's member (predictor.curve_priors) is
    warped alike: its shape past the evidence was seen, but in another run, and its offset and
    stretch are read off a short window.
    """

    inflation: float = 1.0
    temperature: float = 1.0
    form: float = 0.0


CALIBRATION = Calibration(inflation=3.0, temperature=10.0, form=0.1)
"""Nearest 80% coverage (then narrowest) on 160 synthetic curves of the families, extrapolating
1.5–5×: 80%, median p90/p10 1.66 (``python benchmarks/curve_ensemble_calibration.py --curves 160
--generator families``). On curves no family is (``--generator shapes``) it covers less (47%): see
that script's docstring."""
NOISE_FLOOR = 1e-4  # relative: a noise-free curve still gets a finite σ


@dataclass(frozen=True)
class CrossingForecast:
    """Where the loss first reaches the target: quantiles, the weighted draws, and what shaped them.

    ``draws`` are crossing iterations (``math.inf``: never) with ``weights`` summing to 1;
    ``noise`` is the loss's RMS residual around the weighted fit and ``slope`` dl/dk of the weighted
    median curve where it meets the target (negative; nan if it never does), so that
    ``seed_spread`` = noise/|slope| is a spread in iterations that the seed alone can cause.
    """

    p10: float
    p50: float
    p90: float
    draws: np.ndarray
    weights: np.ndarray
    family_weights: dict[str, float]
    noise: float
    slope: float
    levelled_above: bool
    unreached_weight: float = 0.0
    evidence_until: float = 0.0
    notes: tuple[str, ...] = field(default=())

    @property
    def seed_spread(self) -> float:
        """σ/|dl/dk| at the crossing: iterations the noise alone moves it (inf without a slope)."""
        if not math.isfinite(self.slope) or self.slope == 0.0:
            return math.inf
        return self.noise / abs(self.slope)


@dataclass(frozen=True)
class Ensemble:
    """The kept families fitted to all the evidence, their weights, and draws of the mean curve.

    ``fitted(k)`` is the weight-averaged curve; ``curves(k, samples)`` draws mean curves, each
    family contributing rows in proportion to its weight (so the rows are equally weighted), each
    row a Laplace draw of that family's parameters that still fits the evidence.
    """

    fits: dict[str, CurveFit]
    weights: dict[str, float]
    levelled_above: bool
    noise: float  # RMS residual of the loss around ``fitted`` over the evidence's last doubling
    iterations: np.ndarray
    losses: np.ndarray
    floor_max: float | None = None  # the cap on every floor (loss units); None when levelled above
    seed: int = 0
    calibration: Calibration = CALIBRATION

    @property
    def evidence_until(self) -> float:
        return float(self.iterations[-1])

    def fitted(self, k: np.ndarray) -> np.ndarray:
        """The weight-averaged fitted loss at iterations ``k``."""
        k = np.asarray(k, dtype=float)
        with np.errstate(all="ignore"):
            return sum(weight * self.fits[name].loss(k) for name, weight in self.weights.items())

    def curves(self, k: np.ndarray, samples: int = 200, seed: int | None = None) -> np.ndarray:
        """(samples, len(k)) equally weighted draws of the mean loss curve at iterations ``k``."""
        rng = np.random.default_rng(self.seed if seed is None else seed)
        k = np.asarray(k, dtype=float)
        end, rows = self.evidence_until, []
        for name, count in _allocation(self.weights, samples).items():
            if count == 0:
                continue
            inflation = self.calibration.inflation
            theta = _draws(self.fits[name], count, rng, self.iterations, self.losses, inflation)
            warp = np.exp(rng.normal(0.0, self.calibration.form, (count, 1)))
            warp[0] = 1.0  # the point fit, unwarped
            with np.errstate(all="ignore"):
                clock = np.where(k > end, end * np.power(np.maximum(k, end) / end, warp), k)  # (count, n)
                rows.append(self.fits[name].loss(clock, theta))
        return np.vstack(rows)


def fit_ensemble(iterations: Sequence[float], losses: Sequence[float], target: float, *,
                 holdout: float = 0.3, seed: int = 0,
                 prior_curves: Sequence[Sequence[tuple[float, float]]] = (),
                 calibration: Calibration = CALIBRATION, floor_below_target: bool = True,
                 transient: bool = False) -> Ensemble | None:
    """Weight the families on a held-out tail and refit the kept ones on all the evidence.

    ``floor_below_target=False`` leaves a still-falling curve's floor free up to its current level
    instead of capping it below the target: for a caller that simulates the noisy loss's first
    passage (predictor.forecast), where a mean curve levelling just above the target still reaches
    it on a dip, late and widely spread, as a run near its floor does. ``transient``: the curve is
    still in its transient (a warm-up that has not settled, predictor.regime), where a flat stretch
    is a plateau the loss may leave, not a floor: it is never read as levelled above the target.

    None when there are fewer than MIN_POINTS evaluations or no family fits. Raises ValueError on
    input no curve could mean (mismatched lengths, a non-positive target or loss, ``holdout``
    outside [0, 0.8)). ``prior_curves`` are finished runs of the same workload, lists of
    (iteration, loss), most recent first: extra members and a test of the families
    (predictor.curve_priors).
    """
    k, y = _validated(iterations, losses, target, holdout)
    k, y = _window(k, y)
    if len(k) < MIN_POINTS:
        return None
    levelled = not transient and levelled_above(k, y, target)
    floor_max = None if levelled or not floor_below_target else target * (1.0 - FLOOR_MARGIN)
    scales = {"k_scale": float(k[-1]), "loss_scale": float(y.max())}
    members = dict(FAMILIES)
    for index, curve in enumerate(list(prior_curves)[:MAX_PRIORS]):
        member = prior_member(curve, scales["k_scale"], scales["loss_scale"], f"prior_{index + 1}")
        fit = None if member is None else fit_family(member, k, y, **scales)
        if fit is not None and fit.loss(np.array([k[-1] * HORIZON]))[0] <= target:
            members[member.name] = member  # a prior whose copy stays above the target never says when
    log_weights, held_out = _holdout_scores(members, k, y, holdout, floor_max, scales)
    scores, used = prior_scores(prior_curves, (float(k[-1]) / WINDOW, float(k[-1])), held_out, floor_max)
    perfect = -0.5 * held_out * used  # what a member that predicts each prior's tail within its noise scores
    log_weights = {name: (score + scores.get(name, perfect)) / calibration.temperature
                   for name, score in log_weights.items()}
    kept = _normalised(log_weights)
    fits = {name: fit_family(members[name], k, y, floor_max=floor_max, **scales) for name in kept}
    fits = {name: fit for name, fit in fits.items() if fit is not None}
    weights = _normalised({name: log_weights[name] for name in fits})
    if not weights:
        return None
    fits = {name: fits[name] for name in weights}
    return Ensemble(fits, weights, levelled, _noise(fits, weights, k, y), k, y, floor_max, seed, calibration)


def forecast_crossing(iterations: Sequence[float], losses: Sequence[float], target: float, *,
                      holdout: float = 0.3, samples: int = 400, seed: int = 0,
                      prior_curves: Sequence[Sequence[tuple[float, float]]] = (),
                      calibration: Calibration = CALIBRATION) -> CrossingForecast | None:
    """Forecast the iteration where ``losses`` (at ``iterations`` ≥ 1) first reach ``target``.

    The ensemble of ``fit_ensemble`` (same arguments, same None and ValueError), ``samples`` draws
    of its mean curve, and where each first reaches the target on a geometric grid from the first
    evidence iteration to HORIZON× the last, interpolated in ln k.
    """
    if samples < 1:
        raise ValueError(f"samples must be at least 1, got {samples!r}")
    ensemble = fit_ensemble(iterations, losses, target, holdout=holdout, seed=seed, prior_curves=prior_curves,
                            calibration=calibration)
    if ensemble is None:
        return None
    grid = _grid(ensemble)
    draws, unreached = crossing_draws(ensemble, target, samples)
    notes = []
    if not ensemble.levelled_above and 0.0 < unreached < 1.0:
        notes.append(f"{unreached:.0%} of the draws never reached the target within {HORIZON:g}× the "
                     "evidence; dropped, since the curve is still falling")
    weights = np.full(len(draws), 1.0 / len(draws))
    p10, p50, p90 = (_weighted_quantile(draws, weights, q) for q in (0.1, 0.5, 0.9))
    return CrossingForecast(
        p10=p10, p50=p50, p90=p90, draws=draws, weights=weights, family_weights=ensemble.weights,
        noise=ensemble.noise, slope=_median_slope(ensemble.fits, ensemble.weights, grid, target),
        levelled_above=ensemble.levelled_above, unreached_weight=unreached,
        evidence_until=ensemble.evidence_until, notes=tuple(notes),
    )


def crossing_draws(ensemble: Ensemble, target: float, samples: int = 400,
                   seed: int | None = None) -> tuple[np.ndarray, float]:
    """Sorted crossing iterations of ``samples`` mean-curve draws, and the share that never reached
    the target within HORIZON× the evidence: dropped unless the curve levelled off above the target
    (then they stay, as inf), and kept as inf when no draw reaches it at all."""
    grid = _grid(ensemble)
    draws = _crossings(ensemble.curves(grid, samples, seed), grid, target)
    reached = np.isfinite(draws)
    unreached = float(np.mean(~reached))
    if not ensemble.levelled_above and reached.any():
        draws = draws[reached]
    return np.sort(draws), unreached


def _grid(ensemble: Ensemble) -> np.ndarray:
    k = ensemble.iterations
    return np.geomspace(k[0], k[-1] * HORIZON, GRID)


def levelled_above(k: np.ndarray, losses: np.ndarray, target: float) -> bool:
    """Whether the last doubling of iterations is flat within its noise and above the target.

    A line in ln k over [k_end/2, k_end] (at least its last 4 points): flat when its drop over the
    stretch is smaller than the residual noise around it (or than 0.1% of the level, for a curve
    with no noise), above when its end lies more than that noise above the target.
    """
    stretch = k >= k[-1] / 2.0
    if stretch.sum() < 4:
        stretch = np.arange(len(k)) >= len(k) - 4
    log_k, level = np.log(k[stretch]), losses[stretch]
    slope, intercept = np.polyfit(log_k, level, 1)
    fitted = intercept + slope * log_k
    noise = math.sqrt(float(np.sum((level - fitted) ** 2)) / max(len(level) - 2, 1))
    tolerance = max(noise, 1e-3 * abs(float(fitted[-1])))
    drop = -slope * float(log_k[-1] - log_k[0])
    return drop <= tolerance and float(fitted[-1]) - target > tolerance


def _validated(iterations, losses, target, holdout) -> tuple[np.ndarray, np.ndarray]:
    k, y = np.asarray(iterations, dtype=float), np.asarray(losses, dtype=float)
    if k.ndim != 1 or k.shape != y.shape:
        raise ValueError(f"iterations and losses must be 1-D of one length, got {k.shape} and {y.shape}")
    if not (math.isfinite(target) and target > 0.0):
        raise ValueError(f"target must be a positive loss, got {target!r}")
    if not 0.0 <= holdout < 0.8:
        raise ValueError(f"holdout must lie in [0, 0.8), got {holdout!r}")
    keep = np.isfinite(k) & np.isfinite(y) & (k >= 1.0)
    k, y = k[keep], y[keep]
    if np.any(y <= 0.0):
        raise ValueError(f"losses must be positive (the families fall to a floor ≥ 0), got {y.min()!r}")
    order = np.argsort(k, kind="stable")
    return k[order], y[order]


def _window(k: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The evidence's last WINDOW-fold of iterations (at least its last MIN_POINTS evaluations)."""
    inside = k >= k[-1] / WINDOW
    inside[-MIN_POINTS:] = True
    return k[inside], y[inside]


def _holdout_scores(members: dict[str, CurveFamily], k: np.ndarray, y: np.ndarray, holdout: float,
                    floor_max: float | None, scales: dict[str, float]) -> tuple[dict[str, float], int]:
    """Log-weight per member, −½·Σ r²/σ² over the held-out tail (0 for all without one), and the
    number of held-out points."""
    split = k[0] + (1.0 - holdout) * (k[-1] - k[0])
    train = k <= split
    if train.sum() < MIN_POINTS or (~train).sum() < MIN_HOLDOUT:
        return dict.fromkeys(members, 0.0), 0
    fits = {name: fit_family(family, k[train], y[train], floor_max=floor_max, **scales)
            for name, family in members.items()}
    fits = {name: fit for name, fit in fits.items() if fit is not None}
    if not fits:
        return {}, 0
    sigma = max(min(fit.residual_rms for fit in fits.values()), NOISE_FLOOR)
    with np.errstate(all="ignore"):
        scores = {name: -0.5 * float(np.sum((fit.loss(k[~train]) / y[~train] - 1.0) ** 2)) / sigma**2
                  for name, fit in fits.items()}
    return {name: score for name, score in scores.items() if math.isfinite(score)}, int((~train).sum())


def _normalised(log_weights: dict[str, float]) -> dict[str, float]:
    """exp-normalised weights, those under MIN_WEIGHT dropped and the rest renormalised."""
    if not log_weights:
        return {}
    top = max(log_weights.values())
    raw = {name: math.exp(score - top) for name, score in log_weights.items()}
    total = sum(raw.values())
    kept = {name: value / total for name, value in raw.items() if value / total >= MIN_WEIGHT}
    total = sum(kept.values())
    return {name: value / total for name, value in kept.items()}


def _allocation(weights: dict[str, float], samples: int) -> dict[str, int]:
    """Rows per family in proportion to its weight, by largest remainder (they sum to ``samples``)."""
    exact = {name: weight * samples for name, weight in weights.items()}
    counts = {name: int(value) for name, value in exact.items()}
    for name in sorted(exact, key=lambda name: counts[name] - exact[name])[:samples - sum(counts.values())]:
        counts[name] += 1
    return counts


def _draws(fit: CurveFit, count: int, rng: np.random.Generator, k: np.ndarray, y: np.ndarray,
           inflation: float) -> np.ndarray:
    """θ̂ and count − 1 Laplace draws θ ~ N(θ̂, inflation²·Σ), clipped to the fit's bounds: (count, p).

    The Laplace approximation is only local: a draw whose residual sum of squares on the evidence
    exceeds the fit's by more than the 99% quantile of inflation²·σ²·χ²_p (what a draw from the
    approximation should add) is one the evidence rules out, and is replaced by another.
    """
    p = len(fit.theta)
    theta = rng.multivariate_normal(fit.theta, inflation**2 * fit.covariance, size=OVERSAMPLE * count,
                                    check_valid="ignore", method="eigh")
    theta = np.clip(theta, fit.lower, fit.upper)
    with np.errstate(all="ignore"):
        excess = np.sum((fit.loss(k, theta) / y - 1.0) ** 2, axis=1) - np.sum((fit.loss(k) / y - 1.0) ** 2)
    allowed = inflation**2 * fit.residual_rms**2 * stats.chi2.ppf(0.99, p)
    plausible = theta[np.isfinite(excess) & (excess <= allowed)]
    if len(plausible) < count - 1:
        plausible = plausible[rng.integers(len(plausible), size=count - 1)] if len(plausible) else \
            np.repeat(fit.theta[None, :], count - 1, axis=0)
    return np.vstack([fit.theta, plausible[:count - 1]])


def _crossings(curves: np.ndarray, grid: np.ndarray, target: float) -> np.ndarray:
    """First grid iteration where each curve (a row) is ≤ target, interpolated in ln k; inf if none."""
    reached = curves <= target
    first = np.argmax(reached, axis=1)
    crossing = np.full(len(curves), math.inf)
    hit = reached[np.arange(len(curves)), first]
    crossing[hit & (first == 0)] = grid[0]
    inner = hit & (first > 0)
    rows, right = np.nonzero(inner)[0], first[inner]
    above, below = curves[rows, right - 1], curves[rows, right]
    share = np.clip((above - target) / np.maximum(above - below, 1e-300), 0.0, 1.0)
    log_k = np.log(grid[right - 1]) + share * (np.log(grid[right]) - np.log(grid[right - 1]))
    crossing[rows] = np.exp(log_k)
    return crossing


def _weighted_quantile(values: np.ndarray, weights: np.ndarray, q: float) -> float:
    """Inverse of the weighted CDF at q (values sorted; inf allowed)."""
    index = int(np.searchsorted(np.cumsum(weights), q * weights.sum()))
    return float(values[min(index, len(values) - 1)])


def _noise(fits: dict[str, CurveFit], weights: dict[str, float], k: np.ndarray, y: np.ndarray) -> float:
    """RMS residual of the loss around the weight-averaged fit over the evidence's last doubling
    (nearest the crossing, where the seed's spread is read), with the fit's n/(n − p̄) correction."""
    mean = sum(weight * fits[name].loss(k) for name, weight in weights.items())
    parameters = sum(weight * len(fits[name].theta) for name, weight in weights.items())
    late = k >= k[-1] / 2.0
    correction = len(k) / max(len(k) - parameters, 1.0)
    return math.sqrt(float(np.mean((y[late] - mean[late]) ** 2)) * correction)


def _median_slope(fits: dict[str, CurveFit], weights: dict[str, float], grid: np.ndarray,
                  target: float) -> float:
    """dl/dk of the pointwise weighted median of the families' curves where it meets the target."""
    names = list(weights)
    with np.errstate(all="ignore"):
        curves = np.vstack([fits[name].loss(grid) for name in names])  # (F, G)
    order = np.argsort(curves, axis=0)
    sorted_curves = np.take_along_axis(curves, order, axis=0)
    cumulative = np.cumsum(np.array([weights[name] for name in names])[order], axis=0)
    median = sorted_curves[np.argmax(cumulative >= 0.5, axis=0), np.arange(len(grid))]
    below = np.nonzero(median <= target)[0]
    if len(below) == 0:
        return math.nan
    index = max(int(below[0]), 1)
    return float((median[index] - median[index - 1]) / (grid[index] - grid[index - 1]))

