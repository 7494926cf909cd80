"""The one-device warm-up's batch (predictor.warmup_batch)."""

from __future__ import annotations

from predictor.types import Config, ProbeResult, SearchSpace
from predictor.warmup_batch import LARGER_BATCH_SLACK, largest_batch, takes_larger

SPACE = SearchSpace(nodes=2, devices_per_node=4, strategies=("sync",), batch_sizes=(16, 32, 64),
                    learning_rates=(0.01,), momenta=(0.9,))
ONE_DEVICE = Config("sync", 1, 1, batch_size=32, lr=0.01, momentum=0.9)


def _probe(config: Config, step: float, diverged: bool = False) -> ProbeResult:
    return ProbeResult(config, 50, 50 * step, [(0, 0.0, 1.0), (50, 50 * step, 0.5)], [step] * 50,
                       diverged=diverged)


def test_the_largest_batch_of_the_space_or_none_when_already_there() -> None:
    assert largest_batch(ONE_DEVICE, SPACE) == ONE_DEVICE.replace(batch_size=64)
    assert largest_batch(ONE_DEVICE.replace(batch_size=64), SPACE) is None


def test_the_larger_batch_is_taken_only_when_its_step_is_about_as_fast_and_it_lives() -> None:
    large = ONE_DEVICE.replace(batch_size=64)
    small = _probe(ONE_DEVICE, 1e-5)
    assert takes_larger(small, _probe(large, 1e-5 * (1 + LARGER_BATCH_SLACK / 2)))
    assert not takes_larger(small, _probe(large, 1e-5 * (1 + 2 * LARGER_BATCH_SLACK)))
    assert not takes_larger(small, _probe(large, 1e-5, diverged=True))
    assert not takes_larger(None, _probe(large, 1e-5))
    assert not takes_larger(small, None)
