"""A node that slows for good mid-run (``cluster.throttle``): timed on the lineage's clock, so a
run meets it when its training reaches that time, whether it got there from scratch, by
continuing a checkpoint or by forking one; configs that do not use the node never see it."""

from __future__ import annotations

import statistics

import pytest

from predictor.types import Config, ProbeRequest, ProbeResult
from worker.lineage import State, run_segment
from worker.spec import SpecError, parse_spec

AFTER = 0.005  # simulated seconds: about 75 steps of the 2-node config
SPEC = parse_spec({
    "workload": {"name": "digits-mlp"}, "target": {"metric": "train_loss", "value": 0.001},
    "cluster": {"nodes": 2, "devices_per_node": 1, "device": {"name": "a100"}, "jitter": 0.0,
                "throttle": {"node": 1, "speed": 0.25, "after_seconds": AFTER}},
})
BOTH = Config("sync", 2, 1, batch_size=16, lr=0.1)


def _segment(config: Config, iterations: int, parent: tuple[ProbeResult, State] | None = None
             ) -> tuple[ProbeResult, State]:
    """From scratch, or from ``parent``'s end: a continuation for its config, else a fork."""
    if parent is None:
        return run_segment(SPEC, ProbeRequest(config, 1e9, iterations), None)
    result, state = parent
    request = ProbeRequest(config, 1e9, iterations, result.key, result.end_iteration)
    return run_segment(SPEC, request, state)


def test_the_node_slows_from_its_time_on_and_only_for_configs_that_use_it() -> None:
    result, _ = _segment(BOTH, 200)
    before, after, clock = [], [], 0.0
    for seconds in result.step_seconds:  # a step is timed at its start
        (before if clock < AFTER else after).append(seconds)
        clock += seconds
    assert before and after, "the run must start before the throttle and outlast it"
    assert statistics.median(after) > 1.5 * statistics.median(before)  # compute 4×, comms unchanged
    alone, _ = _segment(BOTH.replace(nodes=1), 600)
    assert alone.end_seconds > AFTER and max(alone.step_seconds) < 1.1 * min(alone.step_seconds)


def test_forks_and_continuations_meet_it_on_the_lineage_clock() -> None:
    parent = _segment(BOTH, 200)
    assert parent[1]["end_seconds"] > AFTER
    slow = 1.5 * statistics.median(_segment(BOTH, 10)[0].step_seconds)
    forked, _ = _segment(BOTH.replace(lr=0.05), 10, parent)
    continued, _ = _segment(BOTH, 10, parent)
    assert forked.parent == continued.parent == parent[0].key
    assert min(forked.step_seconds) > slow and min(continued.step_seconds) > slow


@pytest.mark.parametrize(("cluster", "message"), [
    ({"nodes": 2, "throttle": {"node": 2, "speed": 0.5, "after_seconds": 1}}, "nodes 0..1"),
    ({"backend": "ray", "throttle": {"node": 0, "speed": 0.5, "after_seconds": 1}}, "simulated cluster"),
    ({"throttle": {"node": 0, "speed": 0, "after_seconds": 1}}, "greater than or equal to 0.001"),
])
def test_throttle_is_validated_with_a_message_to_act_on(cluster: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        parse_spec({"workload": {"name": "digits-mlp"}, "cluster": cluster})
