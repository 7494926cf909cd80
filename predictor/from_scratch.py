"""A forked plan run from scratch, when the warm-up is the slow part of its run (issue 11).

A forked plan's run repeats the study's warm-up before it switches. When the warm-up was the
synchronous recipe on one node, on ``plateau`` it was 3,200 iterations at 20.2 µs, and the g = 2
fork the plan picked runs 11.2 µs iterations: the same config from scratch (TPE's pick) was 1.38×
faster than the plan run as planned. The warm-up now runs that recipe on one device (8 µs there),
but a config can still out-run it. Omnivore's move (g and μ on the recipe's devices, batch and
rate) changes the speed of every iteration, including the warm-up's. So such a config is also
predicted from scratch: its warm-up stretch takes the warm-up's iterations carried from the
recipe's to it by the TTC model (batch per update and effective step), never fewer than the
warm-up's own (no probe measured it there, and a larger step early buys nothing the evidence
shows), at its own measured speed; the rest is its fork's prediction. The plan runs from scratch
only when that wins by the 5% a change of plan needs (predictor.plan_choice), on its risk-aware
score.
"""

from __future__ import annotations

from predictor.se_model import Estimate
from predictor.ttc_model import ForkPoint, TtcModel
from predictor.types import Config, Prediction

FROM_SCRATCH = ("run from scratch: the warm-up's stretch taken at the warm-up's iterations (carried, never "
                "fewer) and at this config's own measured speed")


def asynchrony_move(recipe: Config, config: Config) -> bool:
    """``config`` is ``recipe`` with only Omnivore's knobs moved: g (asynchrony) and μ."""
    if recipe.strategy != "sync" or config.strategy not in ("sync", "async_groups"):
        return False
    unmoved = config.replace(strategy="sync", groups=1, momentum=recipe.momentum, options=recipe.options)
    return unmoved == recipe


def from_scratch(model: TtcModel, fork: ForkPoint, recipe: Config, config: Config,
                 forked: Prediction) -> Prediction | None:
    """``config``'s TTC run from scratch, given ``forked``, its prediction forked after ``fork``'s
    warm-up of ``recipe``; None unless ``config`` is an asynchrony move of ``recipe``."""
    speed = model.speed(config)
    if speed is None or fork.iteration <= 0 or not asynchrony_move(recipe, config):
        return None
    warm = float(fork.iteration)
    carried = model.carry(Estimate(warm, warm, warm), recipe, config)
    stretch = Estimate(max(warm, carried.value), min(warm, carried.low), max(warm, carried.high))
    return Prediction(
        speed.value * stretch.value + forked.ttc_seconds - fork.seconds,
        speed.low * stretch.low + forked.ttc_low - fork.seconds,
        speed.high * stretch.high + forked.ttc_high - fork.seconds,
        speed.value,
        forked.iterations - warm + stretch.value,
        forked.evidence_iterations,
    )
