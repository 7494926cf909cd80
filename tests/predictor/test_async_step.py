"""Omnivore's asynchronous steps (predictor.async_step): g = 2 of a synchronous config at its
momentum and at the momentum that keeps μ + 1 − 1/g where it was, and the g ladder."""

from __future__ import annotations

from predictor.async_step import async_ladder, first_async_steps, group_ladder
from predictor.types import Config, ProbeRequest, SearchSpace

SPACE = SearchSpace(nodes=2, devices_per_node=2, strategies=("sync", "async_groups"),
                    batch_sizes=(32,), learning_rates=(0.01,), momenta=(0.0, 0.3, 0.6, 0.9))


def test_a_synchronous_config_steps_to_two_groups_at_its_momentum_and_at_the_lowered_one() -> None:
    sync = Config("sync", 1, 2, batch_size=32, lr=0.01, momentum=0.9)
    steps = first_async_steps(sync, SPACE)
    assert [(c.strategy, c.groups, c.momentum) for c in steps] == [
        ("async_groups", 2, 0.9), ("async_groups", 2, 0.3)]  # 0.9 − (1 − 1/2) = 0.4: nearest is 0.3
    assert all((c.nodes, c.devices_per_node, c.lr, c.batch_size) == (1, 2, 0.01, 32) for c in steps)


def test_no_lowered_step_when_the_momentum_is_already_the_nearest() -> None:
    sync = Config("sync", 1, 2, batch_size=32, lr=0.01, momentum=0.0)
    assert [c.momentum for c in first_async_steps(sync, SPACE)] == [0.0]


def test_no_step_from_an_asynchronous_config_an_odd_device_count_or_a_space_without_asynchrony() -> None:
    assert first_async_steps(Config("async_groups", 2, 2, groups=2, batch_size=32, lr=0.01), SPACE) == []
    assert first_async_steps(Config("sync", 1, 1, batch_size=32, lr=0.01), SPACE) == []
    sync_only = SearchSpace(nodes=2, devices_per_node=2, strategies=("sync",), batch_sizes=(32,),
                            learning_rates=(0.01,), momenta=(0.9,))
    assert first_async_steps(Config("sync", 1, 2, batch_size=32, lr=0.01), sync_only) == []


def test_the_group_ladder_stays_within_the_incumbents_devices() -> None:
    """On a 4 × 4 cluster the space's g reach 16; a ladder from one 4-device node climbs 2 and 4."""
    space = SearchSpace(nodes=4, devices_per_node=4, strategies=("sync", "async_groups"),
                        batch_sizes=(32,), learning_rates=(0.01,), momenta=(0.9,))
    on_a_node = Config("sync", 1, 4, batch_size=32, lr=0.01, momentum=0.9)
    assert space.group_counts() == (1, 2, 4, 8, 16)
    assert group_ladder(on_a_node, space) == [2, 4]
    assert group_ladder(on_a_node.replace(nodes=4), space) == [2, 4, 8, 16]


def _ladder(scores: dict[int, float], worth_all: bool = True) -> list[list[Config]]:
    """The rungs the ladder forks from one 4-device node, each g's configs scored scores[g]."""
    space = SearchSpace(nodes=1, devices_per_node=4, strategies=("sync", "async_groups"),
                        batch_sizes=(32,), learning_rates=(0.01,), momenta=(0.0, 0.3, 0.6, 0.9))
    incumbent = Config("sync", 1, 4, batch_size=32, lr=0.03, momentum=0.9)
    rungs = async_ladder(incumbent, space, lambda grid: grid if worth_all else [],
                         lambda c: ProbeRequest(c, 1.0, 50), lambda c: scores[c.groups])
    return [[r.config for r in rung] for rung in rungs]


def test_the_ladder_climbs_while_a_rung_pays_and_re_tunes_momentum_per_g() -> None:
    rungs = _ladder({1: 1.0, 2: 0.8, 4: 0.75})  # g = 2 pays 20%; g = 4 only 6% more: the ladder stops
    assert [{c.groups for c in rung} for rung in rungs] == [{2}, {4}]
    # μ + (1 − 1/g) ≤ 0.9 + 0.1: g = 2 keeps μ ≤ 0.5, g = 4 μ ≤ 0.25, each at lr and lr / 3
    assert {(c.momentum, c.lr) for c in rungs[0]} == {(0.0, 0.03), (0.3, 0.03), (0.0, 0.01), (0.3, 0.01)}
    assert {c.momentum for c in rungs[1]} == {0.0}
    assert _ladder({1: 1.0, 2: 0.95, 4: 0.5}) == [rungs[0]]  # g = 2 does not pay: no g = 4


def test_the_ladder_stops_when_no_rung_is_worth_its_probes() -> None:
    assert _ladder({1: 1.0, 2: 0.5, 4: 0.25}, worth_all=False) == []
