"""Where a fork's loss ends against where it could have been: evidence against a move.

A fork's rate against the warm-up's curve (predictor.reference_curve) needs a curve to read, and a
carry (predictor.ttc_model) assumes the move only rescales the clock. Neither sees a fork whose loss
*rose*: a hotter step often lifts the loss at once and settles to a higher floor, which a short
fork cannot show. On a held-out workload (a wide student memorising a teacher's labels) a
100-iteration fork to three times the warm-up's rate ended at 2.6× the loss it started from; with
two evaluations it had no readable rate, the carry read it three times faster, the plan ran it, and
all three truth runs stalled above the target and diverged after 76,000-86,000 iterations, where
the warm-up's rate continued reaches the target in about 300 more.

So a fork whose loss ends clearly above the warm-up continued beside it over the same iterations
(or, where none ran as far, above its own start) is behind: the level noise of the run cannot
explain the gap (80%, the difference of two readings each at that noise).

The other way round, a cooler fork whose loss ends clearly *below* the continuation is ahead: it
shed the gradient noise the warm-up's step kept the iterate in, a drop the warm-up's curve cannot
read (predictor.ttc_model.shedding_noise), so it is measured further rather than left open.
"""

from __future__ import annotations

import math

import numpy as np

from predictor.reference_curve import settling_iterations
from predictor.se_model import Z80
from predictor.types import ProbeResult


def settled_window(result: ProbeResult) -> tuple[float, float]:
    """The lineage iterations of the fork's later half, past its fresh momentum's build-up."""
    span = result.end_iteration - result.start_iteration
    settle = min(span / 2, settling_iterations(result.config.momentum))
    return result.start_iteration + settle, result.end_iteration


def level_in(result: ProbeResult, window: tuple[float, float]) -> float:
    """Mean loss of ``result``'s evaluations after its start within ``window`` (inf: none there)."""
    losses = [loss for k, _, loss in result.curve
              if result.start_iteration < k and window[0] <= k <= window[1] and math.isfinite(loss)]
    return float(np.mean(losses)) if losses else math.inf


def settled_level(result: ProbeResult) -> float:
    """Mean loss over the fork's later half, past its fresh momentum's build-up."""
    return level_in(result, settled_window(result))


def beyond_noise(gap: float, noise: float) -> bool:
    """A rise of the loss between two readings, each at the run's level ``noise``, that the noise
    explains less than 80% of the time."""
    return gap > Z80 * math.sqrt(2) * noise


def level_gap(fork: ProbeResult, continued: ProbeResult) -> float:
    """The fork's settled loss less the run's continuation over the same iterations (the
    continuation's own later half where it did not run them)."""
    window = settled_window(fork)
    beside = level_in(continued, window) if continued.end_iteration >= window[1] else math.inf
    if not math.isfinite(beside):
        beside = settled_level(continued)
    return settled_level(fork) - beside


def level_above(fork: ProbeResult, continued: ProbeResult, noise: float) -> bool:
    """The fork's loss ends above the run's continuation by more than their noise can explain."""
    return beyond_noise(level_gap(fork, continued), noise)


def level_below(fork: ProbeResult, continued: ProbeResult, noise: float) -> bool:
    """The fork's loss ends below the run's continuation by more than their noise can explain."""
    return beyond_noise(-level_gap(fork, continued), noise)


def lost_ground(fork: ProbeResult, noise: float) -> bool:
    """The fork's loss ends above the loss it started from by more than the noise can explain."""
    start = next((loss for k, _, loss in fork.curve if k == fork.start_iteration), math.inf)
    return beyond_noise(settled_level(fork) - start, noise)
