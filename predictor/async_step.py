"""Omnivore's first asynchronous step from a synchronous config (Hadjis et al. 2016, §4-5): g = 2 on
the same devices, at the same momentum and at the momentum that keeps μ + 1 − 1/g where it was
(asynchrony acts as implicit momentum, so μ is re-tuned with g). The study forks it beside the
baseline and the re-plans of ``ttc train`` fork it from the run: g is Omnivore's primary knob."""

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
