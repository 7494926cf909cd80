"""A re-plan's reading of a fork whose progress is within the loss's noise: by measured speed.

Near the loss floor the run's curve is flat, and a fork affordable at a re-plan moves the loss by
less than its noise: its rate against the run's curve (predictor.reference_curve) is unbounded,
and it can neither win nor lose on it. What such a fork does measure is its speed. So its
statistical efficiency is carried from the run's own curve by the model (global batch by the noise
scale, learning rate and momentum through the effective step: predictor.ttc_model), and never
assumed better than the run's — near the floor a larger step or a smaller batch raises the noise
floor rather than speeding progress, so a carry that promises fewer iterations is exactly the one
not to trust there. A move that only changes the learning rate then never wins; a move of
allocation (fewer nodes, off a throttled one) wins when its measured speed outweighs the
iterations the carry's interval allows it to lose, but only at a noise temperature no higher than
the run's (predictor.ttc_model.noise_temperature): fewer nodes at the same rate halve the global
batch and double the temperature, and a target near the run's floor may lie below the hotter
fork's (on ``throttled_node`` 2 nodes at the 4-node rate reached 1.5× later than at half of it). A
fork of the run's own recipe on another allocation at a global batch no smaller (the same step on
a less noisy gradient) is read by the model itself, on the run's curve carried by the noise scale
(predictor.ttc_model): its promise of fewer iterations is the one McCandlish et al. measured, and
a larger batch lowers the noise floor.

Guard: a fork whose loss ends clearly above the run's continuation beside it (the two ran the
same iterations from the same checkpoint) is evidence against it, and it is not read this way
(predictor.fork_level).
"""

from __future__ import annotations

import math

from predictor.reference_curve import ReferenceCurve, continued_remaining
from predictor.se_model import Estimate
from predictor.ttc_model import TtcModel, dynamics_class, finished, noise_temperature
from predictor.types import Prediction, ProbeResult

TEMPERATURE_TOLERANCE = 1e-9  # rounding of lr × batch products, not a margin


def unresolved(prediction: Prediction | None) -> bool:
    """The fork's own reading says nothing bounded about how long it needs."""
    return prediction is None or not math.isfinite(prediction.ttc_high)


def rest_of_run(model: TtcModel, reference: ReferenceCurve, continued: ProbeResult) -> Estimate:
    """Iterations the run still needs after its continuation ``continued``: the continuation's own
    reading where it is bounded, else the run's curve extrapolated (its rate is 1 by construction)."""
    steps = model.steps(continued.config)
    if steps is not None and math.isfinite(steps.high):
        done = continued.end_iteration - model.origin_iteration
        return Estimate(*(max(v - done, 0.0) for v in (steps.value, steps.low, steps.high)))
    return continued_remaining(reference, continued.end_iteration, model.target)


def by_speed(model: TtcModel, fork: ProbeResult, continued: ProbeResult, rest: Estimate) -> Prediction | None:
    """The fork's TTC with its statistical efficiency carried from the run's ``rest`` (at least the
    run's own iterations) at its measured speed; None across dynamics classes (no carry there) and
    at a higher noise temperature than the run's (its floor is higher: the run's iterations bound
    nothing)."""
    if dynamics_class(fork.config) != dynamics_class(continued.config):
        return None
    if noise_temperature(fork.config) > noise_temperature(continued.config) * (1 + TEMPERATURE_TOLERANCE):
        return None
    speed = model.speed(fork.config)
    if speed is None or not math.isfinite(rest.high):
        return None
    carried = model.carry(rest, continued.config, fork.config)
    at_least_the_run = Estimate(max(carried.value, rest.value), max(carried.low, rest.low),
                                max(carried.high, rest.high))
    return finished(fork, speed, at_least_the_run)
