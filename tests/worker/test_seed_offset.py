"""A probe with a seed offset runs exactly as the same probe on the spec's seed plus that offset."""

from __future__ import annotations

from predictor.types import Config, ProbeRequest
from worker.lineage import run_segment
from worker.spec import MAX_SEED, parse_spec

SPEC = {"workload": {"name": "digits-mlp"},
        "target": {"metric": "train_loss", "value": 0.001, "eval_every": 5},
        "cluster": {"nodes": 1, "devices_per_node": 2}}
CONFIG = Config("sync", 1, 2, batch_size=16, lr=0.1, momentum=0.9)


def losses(seed: int, offset: int) -> list[float]:
    request = ProbeRequest(CONFIG, 1e9, 20, seed_offset=offset)
    result, _ = run_segment(parse_spec({**SPEC, "seed": seed}), request, None)
    return [loss for _, _, loss in result.curve]


def test_an_offset_probe_is_the_next_seeds_probe_and_not_this_seeds() -> None:
    assert losses(3, 1) == losses(4, 0) != losses(3, 0)


def test_the_offset_wraps_at_the_largest_seed() -> None:
    assert losses(MAX_SEED, 1) == losses(0, 0)
