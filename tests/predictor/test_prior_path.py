"""``ttc train``'s ETA read along a finished run of the same job (predictor.prior_path)."""

from __future__ import annotations

import math

import pytest

from predictor.eta import eta_at
from predictor.prior_path import FinishedRun, path_of, prior_path_eta, samples_at
from predictor.types import Config, ProbeResult

TARGET = 0.1
SPEED = 0.001  # seconds per iteration


def _segment(start: int, iterations: int, batch: int) -> ProbeResult:
    config = Config("sync", 1, 1, batch_size=batch, lr=0.01)
    curve = [(k, k * SPEED, 1.0 / (1.0 + 0.01 * k)) for k in range(start, start + iterations + 1, 10)]
    return ProbeResult(config, iterations, iterations * SPEED, curve, step_seconds=[SPEED] * 20,
                       start_iteration=start, start_seconds=start * SPEED, key=f"s{start}")


def _prior(batches: tuple[tuple[int, int], ...], reached: int | None = 1000,
           target: float = TARGET) -> FinishedRun:
    curve = [(float(k), 1.0 / (1.0 + 0.01 * k)) for k in range(10, 1001, 10)]
    return FinishedRun(curve, batches, target, reached)


def test_samples_count_each_phase_at_its_batch() -> None:
    batches = ((0, 32), (400, 64))
    assert samples_at(batches, 200) == 200 * 32
    assert samples_at(batches, 1000) == 400 * 32 + 600 * 64
    lineage = [_segment(0, 200, 32), _segment(200, 200, 32), _segment(400, 100, 64)]
    assert path_of(lineage) == ((0, 32), (400, 64))


def test_the_warm_up_follows_the_prior_in_iterations_and_the_run_after_it_in_samples() -> None:
    """The prior took batch 64 at 400. A run still in its warm-up at 300 will take the prior's switch:
    700 iterations left. A run that kept batch 32 past its study has the prior's samples still to see."""
    prior = _prior(((0, 32), (400, 64)))
    warm = prior_path_eta([prior], [_segment(0, 300, 32)], TARGET, SPEED, 0.0, warmup=True)
    assert warm is not None and warm[1] == pytest.approx(700 * SPEED)
    after = prior_path_eta([prior], [_segment(0, 300, 32), _segment(300, 200, 32)], TARGET, SPEED, 0.0,
                           warmup=False)
    left_samples = 400 * 32 + 600 * 64 - 500 * 32
    assert after is not None and after[1] == pytest.approx(left_samples / 32 * SPEED)
    for low, p50, high in (warm, after):
        assert low < p50 < high
    # the interval spans the other clock's reading: the run may have left the prior's path
    assert after[0] <= 500 * SPEED <= after[2]


def test_the_interval_is_at_least_the_seed_spread() -> None:
    prior = _prior(((0, 32),))
    low, p50, high = prior_path_eta([prior], [_segment(0, 500, 32)], TARGET, SPEED, 0.0, warmup=True)
    assert math.log(high / p50) >= 1.2816 * math.sqrt(2) * 0.075 - 1e-12
    assert math.log(p50 / low) >= 1.2816 * math.sqrt(2) * 0.075 - 1e-12


@pytest.mark.parametrize("prior", [
    _prior(((0, 32),), target=0.05),  # another target
    _prior(((0, 32),), reached=None),  # never reached it
    _prior((), reached=1000),  # no path recorded
    _prior(((0, 32),), reached=400),  # crossed before this run's clock now
])
def test_a_prior_without_a_crossing_ahead_gives_no_path_reading(prior: FinishedRun) -> None:
    assert prior_path_eta([prior], [_segment(0, 500, 32)], TARGET, SPEED, 0.0, warmup=True) is None


def test_the_eta_reads_the_path_where_a_prior_ran_to_this_target() -> None:
    """eta_at answers from the prior's path where it can, and from the curve where it cannot."""
    run = [_segment(0, 500, 32)]
    along = eta_at(run, TARGET, (_prior(((0, 32),)),), transient=True)
    assert along is not None and along["remaining_p50"] == pytest.approx(500 * SPEED)
    other = eta_at(run, TARGET, (_prior(((0, 32),), target=0.05),), transient=True)
    assert other is not None and other["remaining_p50"] != pytest.approx(500 * SPEED)
