"""A plan's TTC as a distribution on a fresh seed: p10/p50/p90 and where the width comes from.

A number a team plans capacity on must say how sure it is, and be right about that: its 80%
interval should cover about 80% of runs on seeds the study never saw. Three things spread the
TTC, each read off what the study ran:

* **the curve's shape** past the evidence — draws of the mean curve from an ensemble of
  learning-curve families weighted by how well each predicted what it did not see
  (predictor.curve_ensemble, Domhan et al. 2015);
* **the seed** — the convergence rule fires on the first evaluation at or below the target that
  the next one confirms, so each draw of the mean is continued with the loss's measured
  fluctuation and the first passage taken (predictor.first_passage); never less than SEED_FLOOR,
  inside the seed-to-seed spread of iterations-to-target of MLPerf Training's reference runs (a
  coefficient of variation of 3–10%): a seed also moves the slow part of the trajectory, which
  the loss's fluctuation around one run's fit does not show;
* **the hardware** — the spread of seconds per iteration (the HE model's interval).

The pooled model that ranked the configs (predictor.ttc_model: a power law with a floor on the
warm-up's curve, each fork's rate against it) is a second reading of the same curve: where it has
a finite point, the forecast mixes as many draws around it as the ensemble gives, so that where
the two disagree on the crossing the interval covers both.

The forecast is in the *anchor*'s iterations — the lineage whose curve the study measured
longest (the warm-up for a forked plan, the plan's own lineage otherwise) — and mapped to the
plan's seconds by the pooled model's own pace (predictor.ttc_model): a forked config's rate
against the warm-up, its speed. The measured lower bound (predictor.no_number) holds: no
quantile is below it, at the pace a fresh run may take where the study's own probes of one config
differed from one run to the next (predictor.he_model.rerun_spread). The p90 is open only where
the loss was seen levelling off above the target.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from predictor.curve_ensemble import Calibration, Ensemble, fit_ensemble
from predictor.first_passage import first_passages, residual_noise
from predictor.se_model import FORM_SIGMA, Z80, Estimate
from predictor.types import Prediction

OFF_FAMILY = Calibration(inflation=3.0, temperature=10.0, form=0.2)
"""The ensemble's calibration for real curves, which are often no family's (a plateau's exit, a knee,
a change of regime): the model-form warp lies between the families' own 0.1 (80% coverage on curves
of the families, 47% on curves no family is) and 0.35 (74% on those; p90/p10 ≈ 2.6), measured by
benchmarks/curve_ensemble_calibration.py; 0.2 puts the forecast's coverage inside 70–90% over the
synthetic curves of tests/predictor/test_forecast.py (two shapes of the families, two of none).
No scenario was used to choose it."""
NEAR_NOISE = 3.0  # a target this many σ of the loss's fluctuation below its level is within the noise
SEED_FLOOR = 0.075
"""Log-sd of TTC that the seed alone causes, at least: the largest measured over the public scenarios'
plans on calibration seeds 4–7 (benchmarks/seed_spread.py: 0.075 on the short ones, 0.043 on
regression, 0.0006 on plateau), inside the 3–10% coefficient of variation of steps-to-target of
MLPerf Training's reference runs. Neither the probes' seed (0), forecast_eval's truth seeds (1–3)
nor a held-out scenario was used."""
FLAT_SPREAD = 0.10  # a target whose seed spread exceeds MLPerf's largest CV (10%) is in the flat region
SEEDS = 24  # simulated seeds per mean-curve draw
NOISE_SHARE = 0.1
"""The loss's fluctuation is read over this last share of the evidence's iterations. Over the last
doubling (0.5), ``ttc train``'s ETA on the ensemble alone came out 78% (regression) and 67%
(plateau) early in the median over their checkpoints (the public long scenarios' runs, replayed):
the residuals there held the step of the run's switch (batch 32 → 64, lr 0.01 → 0.02) and the
misfit of a plateau's exit, read as dips that reach the target soon; over the last tenth, 53%
and 35% off (a quarter: 62%, 32%); with the pooled reading mixed in (predictor.eta), 39% and 31%."""
NOISE_POINTS = 30  # evaluations the fluctuation is read over, at least
HORIZON = 1000.0  # a crossing is looked for up to this multiple of the evidence
QUANTILES = (10.0, 50.0, 90.0)
Curve = list[tuple[float, float]]  # a finished run's (iteration, loss)
KNEE_LADDER = 8  # candidate targets tried between the target and the loss measured last
KNEE_SAMPLES = 60  # mean-curve draws per candidate target (a bisection reads three or four)


@dataclass(frozen=True)
class Anchor:
    """What the forecast reads: the anchor lineage's curve and how the plan's run maps onto it.

    A crossing is looked for after ``end``, where the anchor's evidence ends. The plan's TTC at an
    anchor crossing K is ``measured_seconds + (K − origin) × pace``: ``measured_seconds`` is how
    long the plan's own run was measured (0 for a run from scratch), ``origin`` the anchor
    iteration that corresponds to (``end``, or 0 from scratch), ``pace`` the plan's seconds per
    anchor iteration (the model's). ``speed`` is the plan's seconds/iteration, 80% interval.
    ``rerun``: the log-sd by which a fresh run's pace differs from the one measured
    (predictor.he_model.rerun_spread): the plan's run repeats the measured stretch at its own.
    ``form``: the model-form error's log-sd per e-fold past the evidence (``_spread``).
    ``transient``: the curve has not left its transient, so its levelling off is no evidence that
    the target is never reached (predictor.curve_ensemble.fit_ensemble)."""

    curve: list[tuple[int, float, float]]
    end: float
    origin: float
    measured_seconds: float
    pace: float
    speed: Estimate
    reached_iteration: float | None = None
    reached_seconds: float | None = None
    rerun: float = 0.0
    form: float = FORM_SIGMA
    transient: bool = False


@dataclass(frozen=True)
class Suggestion:
    """A target after the knee and its TTC forecast (p10/p50/p90)."""

    value: float
    ttc_p10: float
    ttc_p50: float
    ttc_p90: float


@dataclass(frozen=True)
class Forecast:
    """The plan's forecast and where its target sits: after the knee, or in the flat region,
    where the slope is small against the noise and iterations-to-target spread widely by seed."""

    prediction: Prediction
    after_knee: bool
    seed_spread: float  # log-sd of iterations-to-target across seeds at the target
    suggested: Suggestion | None = None
    fitted: bool = True  # False: too little curve to fit, the model's point is all there is

    def target(self, value: float) -> dict[str, object]:
        """The plan's ``target`` field (DESIGN.md §7)."""
        where = ("after the knee" if self.after_knee else
                 f"in the flat region: iterations to it spread ×{math.exp(Z80 * self.seed_spread):.2g} "
                 "from seed to seed (the loss's noise against its slope there)")
        return {"value": value, "after_knee": self.after_knee, "seed_spread": self.seed_spread,
                "reason": f"target {value:g} is {where}",
                "suggested": (None if self.suggested is None else
                              {"value": self.suggested.value, "ttc_p10": self.suggested.ttc_p10,
                               "ttc_p50": self.suggested.ttc_p50, "ttc_p90": self.suggested.ttc_p90})}


def within_noise(losses: np.ndarray, target: float) -> bool:
    """The target lies within NEAR_NOISE σ of the loss's current level (the median of the evidence's
    last tenth; σ from its successive differences). There a run reaches it on a dip, and the curve's
    floor may well lie above it; further below, the curve must still fall far, the evidence cannot
    place its floor, and the floor is kept below the target (the user's target is taken as reachable)."""
    tail = losses[-max(5, len(losses) // 10):]
    sigma = float(np.std(np.diff(tail))) / math.sqrt(2) if tail.size > 2 else 0.0
    return float(np.median(tail)) - target <= NEAR_NOISE * sigma


def _points(curve: list[tuple[int, float, float]]) -> tuple[np.ndarray, np.ndarray]:
    points = [(k, loss) for k, _, loss in curve if k > 0 and math.isfinite(loss) and loss > 0]
    if not points:
        return np.zeros(0), np.zeros(0)
    k, losses = (np.array(c, dtype=float) for c in zip(*points, strict=True))
    return k, losses


def hardware_sd(speed: Estimate) -> float:
    """Log-sd of seconds per iteration, from the HE model's 80% interval."""
    if not (speed.low > 0 and math.isfinite(speed.high) and speed.high > 0):
        return 0.0
    return math.log(speed.high / speed.low) / (2 * Z80)


def _step(k: np.ndarray) -> float:
    tail = np.diff(k[-20:])
    return float(np.median(tail)) if tail.size else 1.0


def crossings(model: Ensemble, k: np.ndarray, losses: np.ndarray, target: float, start: float,
              horizon: float, rng: np.random.Generator, samples: int = 200, seeds: int = SEEDS) -> np.ndarray:
    """(shape draws, seeds) iterations at which a fresh seed first reaches ``target`` after ``start``.
    The loss's fluctuation is read over the evidence's last NOISE_SHARE of iterations (at least
    NOISE_POINTS evaluations): earlier, the families' misfit of the transient passes for noise, and
    so does a config change's step (a run's batch doubled halves its loss's fluctuation)."""
    late = k >= k[-1] * (1.0 - NOISE_SHARE)
    if late.sum() < NOISE_POINTS:
        late = np.arange(k.size) >= k.size - NOISE_POINTS
    noise = residual_noise(losses[late] - model.fitted(k[late]))
    return first_passages(lambda grid: model.curves(grid, samples), start, _step(k), horizon, target,
                          noise, seeds, rng)


def _seed_and_shape(draws: np.ndarray) -> tuple[float, float]:
    """Log-sd of the crossing within a mean curve (the seed) and between mean curves (the shape)."""
    logs = np.where(np.isfinite(draws) & (draws > 0), np.log(np.maximum(draws, 1e-300)), np.nan)
    rows = [row[np.isfinite(row)] for row in logs]
    within = [float(np.var(row)) for row in rows if row.size > 1]
    centres = np.array([float(np.median(row)) for row in rows if row.size])
    seed = math.sqrt(float(np.mean(within))) if within else 0.0
    shape = float(np.std(centres)) if centres.size > 1 else 0.0
    return seed, shape


def _quantiles(ttc: np.ndarray, levelled: bool) -> tuple[float, float, float]:
    """p10/p50/p90 of the draws; an infinite draw (only where the loss was seen levelling off above
    the target) is never, and a quantile that falls on it is open."""
    low, mid, high = np.percentile(ttc, QUANTILES, method="nearest" if levelled else "linear")
    return float(low), float(mid), float(high)


def _shares(seed: float, shape: float, hardware: float) -> tuple[tuple[str, float], ...]:
    total = seed**2 + shape**2 + hardware**2
    if total <= 0:
        return (("seed", 1.0), ("shape", 0.0), ("hardware", 0.0))
    return (("seed", seed**2 / total), ("shape", shape**2 / total), ("hardware", hardware**2 / total))


@dataclass(frozen=True)
class Spread:
    """TTC quantiles of one target and the log-sds behind them."""

    low: float
    mid: float
    high: float
    seed: float
    shape: float


def _spread(model: Ensemble, k: np.ndarray, losses: np.ndarray, anchor: Anchor, target: float,
            horizon: float, hardware: float, bound: float, rng: np.random.Generator,
            samples: int = 200, point: Prediction | None = None) -> Spread:
    """TTC quantiles at ``target``: the ensemble's first passages and, where the pooled model that
    ranked the configs has a finite ``point``, as many draws again around it: two readings of one
    curve, and where they disagree on the crossing the interval covers both. The point's draws at
    or below ``bound`` are dropped: the run has outlived them, and a reading it outlives loses its
    weight in the mix (``ttc train``'s ETA reads its plan's point while the run passes it).

    The iterations past the evidence carry the model-form error no family's draws express, a
    log-sd of ``anchor.form`` per e-fold past the evidence (FORM_SIGMA, the pooled model's prior,
    predictor.se_model, unless the caller knows better):
    on the public backtest the forecast's log error of the iterations left was 0.86, 0.45 and 0.14
    at cuts 1.4, 0.7 and 0.3 e-folds before the target, about 0.6 per e-fold, while the interval's
    width stayed ×2.6 at all three (39% covered at the first cut, 100% at the last).

    A draw that never reaches the target within the horizon while the curve still falls is slow,
    not lost: it counts at the horizon, with the seed's and the hardware's spread of any draw (no
    form error: it has no crossing to be wrong about). Counted there exactly, a forecast whose
    draws all missed read p10 = p50 = p90, narrower than any seed's spread."""
    draws = crossings(model, k, losses, target, anchor.end, horizon, rng, samples)
    seed_sd, shape_sd = _seed_and_shape(draws)
    extra = math.sqrt(max(SEED_FLOOR**2 - seed_sd**2, 0.0))
    never = ~np.isfinite(draws)
    past = np.maximum(np.where(never & (not model.levelled_above), horizon, draws) - anchor.end, 0.0)
    distance = np.where(never, 0.0, np.log1p(past / max(anchor.end, 1.0)))
    past = past * np.exp(rng.normal(0.0, 1.0, draws.shape) * anchor.form * distance)
    shape_sd = math.hypot(shape_sd, anchor.form * float(np.median(distance)))
    remaining = np.maximum(anchor.end - anchor.origin + past, 0.0)
    jitter = np.exp(rng.normal(0.0, 1.0, draws.shape) * math.hypot(extra, hardware))
    measured = anchor.measured_seconds
    if anchor.rerun > 0:  # a fresh run repeats the measured stretch at its own pace
        measured = measured * np.exp(rng.normal(0.0, anchor.rerun, draws.shape))
    ttc = (measured + remaining * anchor.pace * jitter).ravel()
    reading = _model_draws(point, ttc.size, math.hypot(max(seed_sd, SEED_FLOOR), hardware), rng)
    if reading is not None and math.isfinite(bound):
        reading = reading[reading > bound]  # the run outlived these: a reading it outlives loses weight
    if reading is not None and reading.size:
        ttc = np.concatenate([ttc, reading])
        logs = np.log(np.maximum(ttc[np.isfinite(ttc)], 1e-300))
        shape_sd = math.sqrt(max(float(np.var(logs)) - max(seed_sd, SEED_FLOOR) ** 2 - hardware**2,
                                 shape_sd**2))
    low, mid, high = _quantiles(ttc, model.levelled_above)
    if math.isfinite(bound):
        low, mid, high = max(low, bound), max(mid, bound), max(high, bound)
    return Spread(low, mid, high, seed_sd, shape_sd)


def _model_draws(point: Prediction | None, count: int, floor: float,
                 rng: np.random.Generator) -> np.ndarray | None:
    """``count`` TTC draws around the pooled model's point (predictor.ttc_model: a power law with a
    floor against the warm-up's reference, the fork's rate), log-normal on each side of it with the
    widths of its 80% interval (an open top takes the bottom's), never narrower than ``floor``."""
    if point is None or not (math.isfinite(point.ttc_seconds) and point.ttc_seconds > 0):
        return None
    mid = point.ttc_seconds
    below = math.log(mid / point.ttc_low) / Z80 if 0 < point.ttc_low < mid else 0.0
    bounded = math.isfinite(point.ttc_high) and point.ttc_high > mid
    above = math.log(point.ttc_high / mid) / Z80 if bounded else below
    z = rng.standard_normal(count)
    return mid * np.exp(z * np.where(z < 0, max(below, floor), max(above, floor)))


def forecast(prediction: Prediction, anchor: Anchor, target: float, seed: int = 0,
             priors: tuple[Curve, ...] = ()) -> Forecast:
    """``prediction`` (the model's point, which chose the plan) turned into the plan's forecast;
    ``priors``: finished runs' curves of the same job, (iteration, loss) each (their shape past
    this evidence and their seed spread sharpen the ensemble, predictor.curve_priors)."""
    rng = np.random.default_rng(seed)
    k, losses = _points(anchor.curve)
    hardware = hardware_sd(anchor.speed)
    model = (fit_ensemble(k, losses, target, prior_curves=priors, calibration=OFF_FAMILY,
                          floor_below_target=not within_noise(losses, target), transient=anchor.transient)
             if k.size else None)
    if anchor.reached_iteration is not None and anchor.reached_seconds is not None:
        return _measured(prediction, anchor, model, k, losses, target, hardware, rng)
    if model is None:
        return _unfitted(prediction, hardware)
    horizon = max(anchor.end * HORIZON,
                  2 * prediction.iterations if math.isfinite(prediction.iterations) else 0.0)
    bound = prediction.evidence_seconds * math.exp(-Z80 * anchor.rerun)  # at a fresh run's pace
    spread = _spread(model, k, losses, anchor, target, horizon, hardware, bound, rng, point=prediction)
    predicted = replace(prediction, ttc_seconds=spread.mid, ttc_low=spread.low, ttc_high=spread.high,
                        iterations=_iterations(prediction, anchor, spread.mid),
                        sources=_shares(max(spread.seed, SEED_FLOOR), spread.shape, hardware))
    suggested = None
    if spread.seed > FLAT_SPREAD:
        suggested = _after_knee(model, k, losses, anchor, target, horizon, hardware, rng)
    return Forecast(predicted, spread.seed <= FLAT_SPREAD, spread.seed, suggested)


def _after_knee(model: Ensemble, k: np.ndarray, losses: np.ndarray, anchor: Anchor, target: float,
                horizon: float, hardware: float, rng: np.random.Generator) -> Suggestion | None:
    """The lowest target above ``target`` on a geometric ladder up to the loss measured last whose
    seed spread is within FLAT_SPREAD (after the knee), with its forecast: a bisection of the
    ladder (the spread grows as the target falls toward the floor), on fewer draws."""
    level = float(model.fitted(k[-1:])[0])
    if not level > target > 0:
        return None
    ladder = np.geomspace(target, level, KNEE_LADDER + 1)[1:]
    low, high, found = 0, len(ladder) - 1, None
    while low <= high:
        middle = (low + high) // 2
        spread = _spread(model, k, losses, anchor, float(ladder[middle]), horizon, hardware, math.nan, rng,
                         samples=KNEE_SAMPLES)
        if spread.seed <= FLAT_SPREAD and math.isfinite(spread.mid):
            found = Suggestion(float(f"{ladder[middle]:.3g}"), spread.low, spread.mid, spread.high)
            high = middle - 1
        else:
            low = middle + 1
    return found


def _iterations(prediction: Prediction, anchor: Anchor, ttc: float) -> float:
    """The plan's iterations at its forecast TTC: what it measured, then the rest at its speed."""
    if not math.isfinite(ttc) or not anchor.speed.value > 0:
        return math.inf
    done = prediction.evidence_iterations if math.isfinite(prediction.evidence_iterations) else 0.0
    return done + max(ttc - anchor.measured_seconds, 0.0) / anchor.speed.value


def _measured(prediction: Prediction, anchor: Anchor, model: Ensemble | None, k: np.ndarray,
              losses: np.ndarray, target: float, hardware: float, rng: np.random.Generator) -> Forecast:
    """A config whose run reached the target: the measured run is one seed's first passage, so the
    forecast is centred where a fresh seed's passage falls in the median (the run's curve continued
    from its midpoint with its own fluctuation: a flat target reached on a lucky dip moves later),
    as wide as the seed's spread there (a new seed against one observed: √2 × the spread)."""
    reached = float(anchor.reached_iteration or 0.0)
    seed_sd, luck = 0.0, 1.0
    if model is not None and k.size:
        start = float(k[len(k) // 2])
        draws = crossings(model, k, losses, target, start, max(2 * reached, start + 1), rng)
        seed_sd, _ = _seed_and_shape(draws)
        finite = draws[np.isfinite(draws)]
        if finite.size and reached > 0:
            luck = float(np.median(finite)) / reached
    spread = max(seed_sd, SEED_FLOOR) * math.sqrt(2)
    total = math.hypot(spread, hardware)
    seconds = float(anchor.reached_seconds or prediction.ttc_seconds) * luck
    low, high = seconds * math.exp(-Z80 * total), seconds * math.exp(Z80 * total)
    iterations = reached * luck if reached > 0 else prediction.iterations
    predicted = replace(prediction, ttc_seconds=seconds, ttc_low=low, ttc_high=high, iterations=iterations,
                        sources=_shares(spread, 0.0, hardware))
    return Forecast(predicted, seed_sd <= FLAT_SPREAD, seed_sd)


def _unfitted(prediction: Prediction, hardware: float) -> Forecast:
    """Too little curve to fit: the model's own interval, never narrower than the seed's spread."""
    mid = prediction.ttc_seconds
    floor = math.exp(Z80 * math.hypot(SEED_FLOOR, hardware))
    low = min(prediction.ttc_low, mid / floor) if math.isfinite(mid) else prediction.ttc_low
    high = max(prediction.ttc_high, mid * floor) if math.isfinite(mid) else prediction.ttc_high
    shares = _shares(SEED_FLOOR, math.log(high / low) / (2 * Z80) if low > 0 and math.isfinite(high) else 0.0,
                     hardware)
    return Forecast(replace(prediction, ttc_low=low, ttc_high=high, sources=shares), True, SEED_FLOOR,
                    fitted=False)
