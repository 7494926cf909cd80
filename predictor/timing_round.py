"""The study's timing round: the allocations a plan may use, timed before the HE model is relied on.

The HE model's speed for an allocation no probe ran rests on links fitted from other patterns:
on Ray it was 24–76% off (docs/results/history/real_timings.md). So after the rate sweep the
study *times* one device, the sweep's node and every node, and the first asynchronous step of
each (at the momentum that keeps μ + 1 − 1/g: the one less likely to diverge before it is
timed), at the space's smallest and largest batch: two batch sizes split a cost per step (the
links) from one in proportion to the batch (devices slowing each other's compute,
predictor.he_model). Each is a few iterations from scratch and no lineage's evidence
(``ProbeRequest.timing``); they run one at a time (a probe beside one shares its links and
hosts: on the two-node Ray, side-by-side timings read ``sync`` on both nodes 40% slow), the
cheapest first at the speed predicted then, while the round has spent less than TIMING_BUDGET of
what the sweep's first probe cost. Uncapped, the round multiplied a slow-network study's probe
cost by 5; capped at the whole of that probe, it still added 40% to the digits studies'. Nor
does it take a probe of the count the warm-up and as many forks may need: on the short
scenarios (12 probes) nine timings cut the warm-up before it reached the target, and forecast
coverage fell from 12 of 12 truth runs to 7; two still took its last probes (p50 a third off,
was 7%).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from predictor.async_step import first_async_steps
from predictor.study import Study
from predictor.types import Budget, Config, ProbeRequest, SearchSpace

TIMING_SHARE = 8  # an allocation is timed for this share of a probe...
TIMING_MIN_ITERATIONS = 4  # ...and at least this many iterations (its steady half is measured)
TIMING_BUDGET = 0.5  # the round spends at most this share of what the sweep's first probe cost


def timing_length(budget: Budget) -> int:
    """Iterations that time an allocation: its steady speed shows within a few steps."""
    return max(budget.probe_max_iterations // TIMING_SHARE, TIMING_MIN_ITERATIONS)


def allocations_to_time(sweep: Config, space: SearchSpace) -> list[Config]:
    """One device, the sweep's node, every node and the first asynchronous step of each, at the
    space's smallest and largest batch, less the sweep's own config."""
    shapes = [sweep.replace(devices_per_node=1), sweep, sweep.replace(nodes=space.node_counts()[-1])]
    shapes += [step for shape in shapes[1:] for step in first_async_steps(shape, space)[-1:]]
    ends = {min(space.batch_sizes), max(space.batch_sizes)}
    configs = {c.key(): c for c in (shape.replace(batch_size=b) for shape in shapes for b in ends)}
    configs.pop(sweep.key(), None)
    return list(configs.values())


def timing_round(study: Study, sweep: Config, request: Callable[[Config, int], ProbeRequest],
                 spare_probes: int) -> Iterator[list[ProbeRequest]]:
    """The round's timings one batch each, cheapest first, within its budget and at most
    ``spare_probes`` of them (the probe count the study needs for its learning is not theirs);
    ``request`` makes a timing probe of a config for so many iterations."""
    first = next((r for r in study.probes if r.probe_key == sweep.key()), None)
    cap = TIMING_BUDGET * study.cost_of([first]) if first is not None else 0.0
    length = timing_length(study.budget)
    ran = {r.config.key() for r in study.probes}  # a probe of the config timed it already
    pending = [request(c, length) for c in allocations_to_time(sweep, study.space) if c.key() not in ran]
    spent = 0.0
    del pending[max(spare_probes, 0):]  # the shapes first listed: one device, then the sweep's node
    while pending:
        cheapest = min(pending, key=study.probe_cost)
        if spent + study.probe_cost(cheapest) > cap:
            return
        pending.remove(cheapest)
        yield [cheapest]
        done = study.timings.get(cheapest.key)
        spent += study.cost_of([done]) if done is not None else 0.0
