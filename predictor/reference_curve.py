"""Statistical efficiency of forked probes: a rate against the warm-up's reference curve.

A long run spends its time far below the loss a short probe from scratch reaches, so ttc trains
one shared warm-up (the baseline's recipe) past the initial transient and forks every candidate
from its checkpoint (issue 11). Each fork is short (a hundredth of the run); extrapolating its own
curve a hundredfold would be a guess. Instead:

1. the **reference curve** l_ref(k) is fitted (least squares) to the warm-up lineage over its
   current regime (the last two doublings, [k/4, k]; predictor.regime says whether that regime is
   steady) with the power law with a floor, l(k) = a·(k+1)^(−p) + c (predictor.loss_curves), the
   floor capped at the curve's noise band unless an F-test shows the curve's own floor
   (predictor.se_model);
2. each fork's losses are mapped through the inverse K(l) of the reference — the lineage
   iteration at which the reference reaches that loss — and a robust line (Theil–Sen) through
   K(l_c(j)) against the fork's own iterations j gives the fork's **rate** r_c (reference
   iterations per fork iteration: SGD progress under a rescaled step is a rescaled clock, the
   basis of the effective-learning-rate carry of predictor.ttc_model) and its position at its end;
3. the fork's iterations still needed are (K(target) − position)/r_c.

Near the floor the reference is flat: a loss moved by the lineage's level noise maps to a
position thousands of iterations away, so a short fork's apparent rate can be noise (a 50-iteration
continuation of the warm-up's own recipe read 36× its real rate on `regression`). The rate's
interval is widened by what that noise can fake: a rate it could fake entirely leaves the
remaining iterations unbounded above, so such a fork neither wins a ranking by its risk-aware
score nor gives a plan a confident number.

Only the fork's later half is used: a fork starts with a fresh optimizer (momentum builds up over
≈ 1/(1 − μ) steps) and the rate of the regime it settles into is what the run will see.
The 80% interval comes from a residual bootstrap of the reference fit, with and without the floor
cap (each resample re-maps the fork), widened by FORM_SIGMA per e-fold of extrapolation as in
predictor.se_model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import stats

from predictor.loss_curves import FAMILIES, CurveParams, Family
from predictor.regime import Regime, read_regime
from predictor.se_model import (
    FORM_SIGMA,
    INTERVAL,
    Z80,
    Estimate,
    Reading,
    floor_identified,
    free_and_capped,
    resampled_fits,
)
from predictor.types import ProbeResult

BOOTSTRAP_SAMPLES = 40  # fewer than se_model's: the reference keeps them, every fork's rate is read on each
MIN_POINTS = 6
WINDOW = 4.0  # the fit reads the curve's last WINDOW-fold of iterations: its current regime
FAMILY = "power"


@dataclass(frozen=True)
class ReferenceCurve:
    """The warm-up lineage's fitted curve and bootstrap resamples of it."""

    family: Family
    params: CurveParams
    samples: tuple[CurveParams, ...]
    measured_until: int  # the lineage iteration the fit's evidence reaches
    noise: float = 0.0  # the lineage's level noise: RMS of its rises (se_model.noise_floor), not misfit

    @classmethod
    def fit(cls, curve: list[tuple[int, float, float]], target: float | None = None, seed: int = 0,
            samples: int = BOOTSTRAP_SAMPLES) -> ReferenceCurve | None:
        """Fit over [k/4, k] of the lineage; None when too few points or the fit fails.

        The point estimate takes the free floor only when the F-test shows it (else the floor is
        capped at the curve's noise band, predictor.se_model), and never a floor at or above
        ``target`` while the curve is still falling: that the target is out of reach needs a
        curve that has levelled off (predictor.regime). The bootstrap resamples *both* fits, so
        the interval spans the two readings of the floor a short curve cannot tell apart.
        """
        points = [(k, loss) for k, _, loss in curve if k > 0 and math.isfinite(loss)]
        if not points:
            return None
        end = points[-1][0]
        k, losses = (np.array(c, dtype=float) for c in zip(*[p for p in points if p[0] >= end / WINDOW],
                                                          strict=True))
        if len(k) < MIN_POINTS:
            return None
        family = FAMILIES[FAMILY]
        losses = np.maximum(losses, 1e-12)
        fitted = free_and_capped(family, k, losses, losses)
        if fitted is None:
            return None
        free, cap, capped = fitted
        params = free if floor_identified(k, losses, family, free, capped) else capped
        if target is not None and params.c >= target and read_regime(k, losses).regime is not Regime.FLAT:
            params = capped
        readings = [Reading(free, None, losses), Reading(capped, cap, losses)]
        draws = resampled_fits(family, k, readings, samples, np.random.default_rng(seed))
        return cls(family, params, tuple(draw[0] for draw in draws if draw is not None), int(end), cap)

    def iteration_at(self, loss: float | np.ndarray, params: CurveParams | None = None) -> np.ndarray:
        """K(l): the lineage iteration at which the reference reaches ``loss`` (inf below its floor)."""
        params = params or self.params
        losses = np.atleast_1d(np.asarray(loss, dtype=float))
        return np.array([self.family.solve(params, float(value)) for value in losses])


def drift(curve: list[tuple[int, float, float]], target: float) -> float:
    """How far the extrapolated iterations to ``target`` moved when the evidence doubled: the ratio
    (≥ 1) of the fit at the curve's end to the fit at its half. An extrapolation from a transient
    grows many-fold with every doubling; one from the slow regime holds still. inf when only one
    of the two reaches the target, or either fit fails."""
    end = max((k for k, _, _ in curve), default=0)
    full = ReferenceCurve.fit(curve, target, samples=0)
    half = ReferenceCurve.fit([p for p in curve if p[0] <= end / 2], target, samples=0)
    if full is None or half is None:
        return math.inf
    now, before = float(full.iteration_at(target)[0]), float(half.iteration_at(target)[0])
    if not (math.isfinite(now) and math.isfinite(before)) or min(now, before) <= 0:
        return 1.0 if now == before == math.inf else math.inf
    return max(now / before, before / now)


class Hindcast(NamedTuple):
    """The extrapolation tried earlier on its own curve: made at ``made_at`` over the same multiple
    of its evidence, it reached the loss measured at the curve's end after ``miss``× (≥ 1) too
    many or too few iterations."""

    made_at: float
    miss: float


def hindcast(curve: list[tuple[int, float, float]], target: float) -> Hindcast:
    """Backtest of the extrapolation to ``target`` at its own horizon.

    The fit at the curve's end k extrapolates ρ = K(target)/k. The same fit made at k/ρ had to
    extrapolate the same ρ to reach the loss the curve shows at k; how far it missed is what this
    method's error at this horizon looks like on this curve. ρ is capped at WINDOW: the fit reads
    only [k/WINDOW, k], the current regime, and a backtest made before k/WINDOW would try the
    method on an earlier one (a transient the fit has left behind).

    ``drift`` compares the fits at k/2 and k on the target, a horizon 2ρ for the earlier one, and
    two fits of different shapes can agree on it by chance: on heldout_classification at 400
    iterations, fits with floors 0 and 0.36 read 1,389 and 1,212, and the plan's run needed
    7,400–9,200. The miss is 1 when nothing is extrapolated, and inf when the earlier fit has too
    few points or never reaches that loss.
    """
    end = max((k for k, _, _ in curve), default=0)
    full = ReferenceCurve.fit(curve, target, samples=0)
    if full is None:
        return Hindcast(0.0, math.inf)
    ratio = min(float(full.iteration_at(target)[0]) / max(end, 1), WINDOW)
    if ratio <= 1:
        return Hindcast(float(end), 1.0)
    made_at = end / ratio
    early = ReferenceCurve.fit([p for p in curve if p[0] <= made_at], target, samples=0)
    level = float(full.family.loss(np.array([end]), *full.params)[0])
    reached = float(early.iteration_at(level)[0]) if early is not None else math.inf
    if not (math.isfinite(reached) and reached > 0):
        return Hindcast(made_at, math.inf)
    return Hindcast(made_at, max(reached / end, end / reached))


@dataclass(frozen=True)
class ForkRate:
    """A fork's rate against the reference and the iterations it still needs to the target."""

    rate: float  # reference iterations per fork iteration
    position: float  # reference iteration equivalent to the fork's loss at its end
    remaining: Estimate  # fork iterations after its end until the target
    rate_low: float = -math.inf  # the rate's 80% interval, the level noise's share included
    rate_high: float = math.inf
    span: float = 0.0  # fork iterations the rate was read over (its settled part)


def _rate_line(reference: ReferenceCurve, params: CurveParams, j: np.ndarray, losses: np.ndarray
               ) -> tuple[float, float, float, float] | None:
    """Theil–Sen line through K(l_c(j)) against j: (rate, its 80% low and high, position at the
    fork's last iteration)."""
    mapped = reference.iteration_at(losses, params)
    finite = np.isfinite(mapped)
    if finite.sum() < MIN_POINTS // 2 or np.ptp(j[finite]) <= 0:
        return None
    slope, intercept, low, high = stats.theilslopes(mapped[finite], j[finite], alpha=0.8)
    return float(slope), float(low), float(high), float(intercept + slope * j[-1])


def _rate_hidden_by_noise(reference: ReferenceCurve, position: float, span: float) -> float:
    """Reference iterations per fork iteration that the lineage's level noise can fake or hide.

    Near the floor the reference is flat, so a loss moved by noise maps to a position thousands
    of iterations away, and a short fork's rate is then noise. Its points are not independent
    draws about a line (SGD's iterate wanders slowly), so Theil–Sen's interval is too narrow;
    this is the 80% spread of a rate read from the two ends of the fork, each at the reference's
    level noise: Z80·√2·(K(l − σ) − K(l + σ))/2 over the fork's span."""
    if reference.noise <= 0 or span <= 0:
        return 0.0
    level = float(reference.family.loss(np.array([position]), *reference.params)[0])
    lower, upper = reference.iteration_at([level - reference.noise, level + reference.noise])
    spread = (float(lower) - float(upper)) / 2
    return Z80 * math.sqrt(2) * spread / span if math.isfinite(spread) else math.inf


def _form_widening(measured: int, value: float) -> float:
    """Log-widening of an interval for extrapolating ``value`` iterations past ``measured``."""
    return Z80 * FORM_SIGMA * math.log(max((measured + value) / max(measured, 1), 1.0))


def continued_remaining(reference: ReferenceCurve, end_iteration: int, target: float) -> Estimate:
    """Iterations after ``end_iteration`` until the reference lineage itself, continued as it is,
    reaches ``target``: its own extrapolation (rate 1 by construction), with the bootstrap's 80%
    interval widened for extrapolation distance as a fork's is: what a continuation whose own few
    iterations show no progress beyond their noise is read on (it cannot be out of reach by noise)."""
    goal = float(reference.iteration_at(target)[0])
    if not math.isfinite(goal):
        return Estimate(math.inf, math.inf, math.inf)
    value = max(goal - end_iteration, 0.0)
    draws = [max(float(reference.iteration_at(target, params)[0]) - end_iteration, 0.0)
             for params in reference.samples]
    low, high = (np.percentile(np.array(draws), INTERVAL, method="nearest") if draws else (value, value))
    form = _form_widening(end_iteration, value)
    return Estimate(value, min(float(low), value) * math.exp(-form), max(float(high), value) * math.exp(form))


def settling_iterations(momentum: float) -> float:
    """Iterations a fork's fresh momentum buffer takes to build up: ≈ 1/(1 − μ), at least 4."""
    return max(1.0 / (1.0 - min(momentum, 0.99)), 4.0)


def fork_points(fork: ProbeResult) -> tuple[np.ndarray, np.ndarray]:
    """(iterations since the fork, losses) of a fork's finite evaluations after its start."""
    points = [(k - fork.start_iteration, loss) for k, _, loss in fork.curve
              if k > fork.start_iteration and math.isfinite(loss)]
    if not points:
        return np.empty(0), np.empty(0)
    j, losses = (np.array(c, dtype=float) for c in zip(*points, strict=True))
    return j, losses


def fork_rate(reference: ReferenceCurve, fork: ProbeResult, target: float, momentum: float = 0.0,
              offset: float = 0.0) -> ForkRate | None:
    """Rate and remaining iterations of ``fork`` (a probe started from a lineage's checkpoint).

    The fork's first ``settling_iterations(momentum)`` (at most half the fork) are skipped. The
    80% interval combines, in log space, the spread over the reference's bootstrap resamples and
    the rate's own 80% interval (Theil–Sen), then widens for extrapolation distance. ``offset``:
    reference iterations the fork's reading may stand off beyond the lineage's level noise (the
    control's miss, predictor.ttc_model), spread over the fork's span like that noise.
    """
    if fork.diverged or fork.error:
        return None
    j_all, l_all = fork_points(fork)
    if j_all.size < MIN_POINTS:
        return None
    settled = j_all >= min(j_all[-1] / 2, settling_iterations(momentum))
    j, losses = j_all[settled], l_all[settled]
    line = _rate_line(reference, reference.params, j, losses)
    if line is None:
        return None
    rate, rate_low, rate_high, position = line
    goal = float(reference.iteration_at(target)[0])
    if rate <= 0 < rate_high and math.isfinite(goal):
        return None  # no progress seen, yet progress is within its 80% interval: no evidence either way
    span = float(np.ptp(j))
    hidden = _rate_hidden_by_noise(reference, position, span) + (offset / span if span > 0 else 0.0)
    rate_low, rate_high = min(rate_low, rate - hidden), max(rate_high, rate + hidden)
    if not (rate > 0 and math.isfinite(goal)):
        return ForkRate(rate, position, Estimate(math.inf, math.inf, math.inf), rate_low, rate_high, span)
    value = max((goal - position) / rate, 0.0)
    draws = []
    for params in reference.samples:
        sample = _rate_line(reference, params, j, losses)
        sample_goal = float(reference.iteration_at(target, params)[0])
        ok = sample is not None and sample[0] > 0 and math.isfinite(sample_goal)
        draws.append(max((sample_goal - sample[3]) / sample[0], 0.0) if ok else math.inf)
    low, high = (np.percentile(np.array(draws), INTERVAL, method="nearest") if draws else (value, value))
    if value <= 0:
        return ForkRate(rate, position, Estimate(0.0, 0.0, float(max(high, 0.0))), rate_low, rate_high, span)
    below = math.log(value / low) if low > 0 else math.inf
    above = math.log(high / value) if math.isfinite(high) else math.inf
    rate_below = math.log(rate_high / rate) if rate_high > rate else 0.0  # a faster rate: fewer iterations
    rate_above = math.log(rate / rate_low) if rate_low > 0 else math.inf
    measured = fork.end_iteration
    form = _form_widening(measured, value)
    low = value * math.exp(-math.hypot(max(below, 0.0), rate_below) - form)
    high = value * math.exp(math.hypot(max(above, 0.0), rate_above) + form)
    return ForkRate(rate, position, Estimate(value, low, high), rate_low, rate_high, span)
