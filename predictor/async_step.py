"""Omnivore's asynchronous steps from a synchronous config (Hadjis et al. 2016, §4-5): the first is
g = 2 on the same devices, at the same momentum and at the momentum that keeps μ + 1 − 1/g where
it was (asynchrony acts as implicit momentum, so μ is re-tuned with g). The study forks it beside
the baseline and the re-plans of ``ttc train`` fork it from the run: g is Omnivore's primary knob.
The ladder then climbs g on the same devices (``async_ladder``), while more asynchrony pays."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

from predictor.noise_scale import implicit_momentum, total_momentum
from predictor.types import Config, ProbeRequest, SearchSpace

ASYNC_MUST_PAY = 0.10  # a rung of g must beat the one below by this much for the ladder to climb on
MOMENTUM_SLACK = 0.1  # total momentum allowed above the incumbent's before a μ is skipped


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


def async_ladder(
    incumbent: Config, space: SearchSpace, worth: Callable[[list[Config]], list[Config]],
    fork: Callable[[Config], ProbeRequest], score: Callable[[Config], float],
) -> Iterator[list[ProbeRequest]]:
    """Omnivore's g ladder at the fork point: each rung forks μ per g (keeping μ + 1 − 1/g near
    the incumbent's) at its rate and a third of it, ``worth`` their probes, and the ladder climbs
    while the rung's best ``score`` beats the one below by ASYNC_MUST_PAY."""
    best_ttc = score(incumbent)
    for g in group_ladder(incumbent, space):
        ceiling = incumbent.momentum + MOMENTUM_SLACK
        momenta = [mu for mu in space.momenta if total_momentum(mu, g) <= ceiling] or [min(space.momenta)]
        grid = [incumbent.replace(strategy="async_groups", groups=g, lr=lr, momentum=mu, options={})
                for mu in momenta for lr in (incumbent.lr, incumbent.lr / 3)]
        kept = worth(grid)
        if not kept:
            return
        yield [fork(c) for c in kept]
        g_best = min((score(c) for c in grid), default=math.inf)
        if not g_best < (1 - ASYNC_MUST_PAY) * best_ttc:
            return
        best_ttc = g_best
