"""How early the forecast's own method read this curve before: the bias of its clock past the evidence.

A learning curve extrapolated from its evidence often reaches a level later than every family fitted
to it says: it keeps bending (a knee, a slower regime), and a family fitted to the bend so far
takes it for the last. The forecast had that bias on both public long scenarios of
forecast_eval (plateau's p50 22% early, regression's 50%). The same method is therefore run
again where it stood at the evidence's midpoint, and asked when the curve reaches the level it
shows at its end: the answer is known.

The miss is read as a warp of the clock past the evidence: a crossing forecast h-fold past the
evidence comes h^(1+b)-fold past it. The early forecast put the level h_f-fold past its evidence,
and the curve reached it h_a-fold past (about 2), so b = ln h_a / ln h_f − 1: positive when the
method was early, negative when late, 0 where the curve did not fall beyond its noise between the
two (a flat stretch says nothing of the clock). One backtest is a noisy measure, so the forecast
(predictor.forecast) spreads its draws from none of the bias to twice it, centred on the reading:
spread from none to all of it, the median corrected half the miss, and ttc train's ETA on
``plateau`` stayed 21% early at mid-run (12% centred).
"""

from __future__ import annotations

import math

import numpy as np

from predictor.curve_ensemble import MIN_POINTS, Calibration, crossing_draws, fit_ensemble

BIAS_RANGE = (-0.5, 1.0)  # a backtest at one horizon never warps the clock by more than this
FELL = 3.0  # the curve fell this many σ of its noise between the midpoint and the end, or no reading
SAMPLES = 100


def clock_bias(k: np.ndarray, losses: np.ndarray, target: float, level: float, noise: float,
               calibration: Calibration, floor_below_target: bool) -> float:
    """``b`` of the module docstring for the curve (``k``, ``losses``) whose fitted loss at its
    end is ``level`` and whose fluctuation is ``noise``."""
    half = k <= k[-1] / 2
    if int(half.sum()) < MIN_POINTS:
        return 0.0
    made_at = float(k[half][-1])
    early = fit_ensemble(k[half], losses[half], target, calibration=calibration,
                         floor_below_target=floor_below_target)
    if early is None:
        return 0.0
    if float(early.fitted(np.array([made_at]))[0]) - level <= FELL * noise:
        return 0.0
    draws, _ = crossing_draws(early, level, SAMPLES)
    finite = draws[np.isfinite(draws)]
    if finite.size == 0:
        return BIAS_RANGE[0]  # the early forecast never reached a level the curve did: late
    forecast_at = float(np.median(finite)) / made_at
    actual = float(k[-1]) / made_at
    if forecast_at <= 1.0:
        return BIAS_RANGE[1]  # it put the level inside its own evidence: as early as it gets
    bias = math.log(actual) / math.log(forecast_at) - 1.0
    return min(max(bias, BIAS_RANGE[0]), BIAS_RANGE[1])


def warped(draws: np.ndarray, end: float, bias: float, rng: np.random.Generator) -> np.ndarray:
    """(shape draws, seeds) crossings with each shape draw's clock past ``end`` warped by a share
    of ``bias`` drawn uniformly in [0, 2]: the backtest's reading on the median, none of it to
    twice it at the ends."""
    if bias == 0.0 or draws.size == 0:
        return draws
    share = rng.uniform(0.0, 2.0, (draws.shape[0], 1))
    with np.errstate(all="ignore"):
        past = np.maximum(draws / end, 1.0)
        return np.where(np.isfinite(draws) & (draws > end), end * past ** (1.0 + share * bias), draws)
