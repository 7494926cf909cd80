"""Omnivore's asynchronous steps from a synchronous config (Hadjis et al. 2016, §4-5): the first is
g = 2 on the same devices, at the same momentum and at the momentum that keeps μ + 1 − 1/g where
it was (asynchrony acts as implicit momentum, so μ is re-tuned with g). The study forks it beside
the baseline and the re-plans of ``ttc train`` fork it from the run: g is Omnivore's primary knob.
The ladder then climbs g on the same devices (``group_ladder``)."""

from __future__ import annotations

from predictor.noise_scale import implicit_momentum
from predictor.types import Config, SearchSpace


def first_async_steps(config: Config, space: SearchSpace) -> list[Config]:
    """g = 2 of ``config`` at its momentum, then at the lowered one (when the space has another);
    none unless ``config`` is synchronous, the space allows asynchrony and its devices split in two."""
    if config.strategy != "sync" or "async_groups" not in space.strategies or config.devices % 2:
        return []
    step = config.replace(strategy="async_groups", groups=2, options={})
    kept = config.momentum - float(implicit_momentum(2))
    lowered = min(sorted(space.momenta), key=lambda mu: abs(mu - kept))
    return [step] + ([step.replace(momentum=lowered)] if lowered != config.momentum else [])


def group_ladder(config: Config, space: SearchSpace) -> list[int]:
    """The space's g > 1 that split ``config``'s own devices: a ladder climbed on one node stops
    at that node's devices, not the cluster's (g = 8 of 16 devices cannot split a 4-device node)."""
    return [g for g in space.group_counts() if g > 1 and config.devices % g == 0]
