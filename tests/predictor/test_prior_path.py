"""``ttc train``'s ETA read along a finished run of the same job (predictor.prior_path)."""

from __future__ import annotations

import math

import pytest

from predictor.eta import eta_at
from predictor.prior_path import FinishedRun, parted, path_of, prior_path_eta, progress_at, steps_left
from predictor.types import Config, ProbeResult

TARGET = 0.1
SPEED = 0.001  # seconds per iteration
STEP = 0.01 / (1 - 0.9)  # lr / (1 − momentum) at lr 0.01


def _segment(start: int, iterations: int, batch: int, lr: float = 0.01) -> ProbeResult:
    config = Config("sync", 1, 1, batch_size=batch, lr=lr)
    curve = [(k, k * SPEED, 1.0 / (1.0 + 0.01 * k)) for k in range(start, start + iterations + 1, 10)]
    return ProbeResult(config, iterations, iterations * SPEED, curve, step_seconds=[SPEED] * 20,
                       start_iteration=start, start_seconds=start * SPEED, key=f"s{start}")


def _prior(batches: tuple[tuple[int, int], ...], reached: int | None = 1000,
           target: float = TARGET, steps: tuple[float, ...] = ()) -> FinishedRun:
    """A prior of phases (first iteration, global batch), at STEP unless ``steps`` says."""
    curve = [(float(k), 1.0 / (1.0 + 0.01 * k)) for k in range(10, 1001, 10)]
    phases = tuple((start, batch, steps[i] if steps else STEP) for i, (start, batch) in enumerate(batches))
    return FinishedRun(curve, phases, target, reached)


def test_samples_count_each_phase_at_its_batch_and_steps_at_its_step_too() -> None:
    phases = ((0, 32, STEP), (400, 64, 2 * STEP))
    assert progress_at(phases, 200) == 200 * 32
    assert progress_at(phases, 1000) == 400 * 32 + 600 * 64
    assert progress_at(phases, 1000, stepped=True) == pytest.approx((400 * 32 + 600 * 64 * 2) * STEP)
    lineage = [_segment(0, 200, 32), _segment(200, 200, 32), _segment(400, 100, 64),
               _segment(500, 100, 64, lr=0.02)]
    assert path_of(lineage) == ((0, 32, STEP), (400, 64, STEP), (500, 64, 2 * STEP))


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


def test_after_the_knee_a_rate_the_run_doubled_and_the_prior_did_not_halves_the_rest() -> None:
    """The prior kept lr 0.01 to its crossing at 1,000; this run doubled it at 500. At 600 it has come
    as far as the prior had at 700, and the prior's last 300 iterations take it 150 at twice the step.
    In the flat region a doubled rate need not go faster (public regression), and samples are read."""
    prior = _prior(((0, 32),))
    run = [_segment(0, 500, 32), _segment(500, 100, 32, lr=0.02)]
    assert steps_left(prior.phases, 1000, path_of(run), 600) == pytest.approx(150)
    stepped = prior_path_eta([prior], run, TARGET, SPEED, 0.0, warmup=False, after_knee=True)
    assert stepped is not None and stepped[1] == pytest.approx(150 * SPEED)
    assert stepped[0] <= stepped[1] < 400 * SPEED <= stepped[2]  # the samples reading still bounds it
    flat = prior_path_eta([prior], run, TARGET, SPEED, 0.0, warmup=False, after_knee=False)
    assert flat is not None and flat[1] == pytest.approx(400 * SPEED)


def test_a_switch_of_the_prior_ahead_is_taken_and_one_the_run_passed_is_not() -> None:
    """The prior doubled its rate at 500. A run at 500 still on the old rate may take that switch: the
    prior's 500 iterations after it. A run at 700 that did not has come as far as the prior had at
    600, and the prior's last 400 iterations, at twice its step, take it 800."""
    prior = _prior(((0, 32), (500, 32)), steps=(STEP, 2 * STEP))
    at_switch = [_segment(0, 500, 32)]
    assert steps_left(prior.phases, 1000, path_of(at_switch), 500) == pytest.approx(500)
    passed = [_segment(0, 500, 32), _segment(500, 200, 32)]
    assert steps_left(prior.phases, 1000, path_of(passed), 700) == pytest.approx(2 * (1000 - 600))
    # a last segment that continues its config ran beside a re-plan's forks, one of which may replace
    # it: the run has parted from the prior only once a later segment shows it kept the old rate
    assert not parted(prior.phases, 1000, passed)
    assert parted(prior.phases, 1000, [*passed, _segment(700, 100, 32)])


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
