"""``ttc train``'s ETA across a switch of the run's rate (predictor.step_clock, predictor.eta), and in
the warm-up."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

from predictor.eta import eta_at, warmup_eta
from predictor.prior_path import FinishedRun
from predictor.step_clock import on_clock, step_clock
from predictor.types import Config, Prediction, ProbeResult

STEP = 1e-3  # seconds per iteration
EVERY = 10  # iterations between evaluations
SLOW, FAST = Config("sync", 1, 1, lr=0.01), Config("sync", 1, 1, lr=0.02)


def segment(config: Config, start: int, iterations: int, loss_at: Callable[[float], float]) -> ProbeResult:
    k = np.arange(start + EVERY, start + iterations + 1, EVERY)
    curve = [(int(i), float(i) * STEP, float(loss_at(i))) for i in k]
    return ProbeResult(config, iterations, iterations * STEP, curve, step_seconds=[STEP] * 50,
                       start_iteration=start, start_seconds=start * STEP)


def flat(k: float) -> float:
    return 1.0


def test_the_step_clock_counts_each_iteration_by_its_step_size() -> None:
    segments = [segment(SLOW, 0, 1000, flat), segment(FAST, 1000, 500, flat)]
    knots = step_clock(segments)
    assert knots is not None
    assert on_clock(knots, np.array([500.0, 1000.0, 1500.0, 2000.0])) == pytest.approx([250, 500, 1000, 1500])
    # heavy-ball momentum's steady-state step is lr / (1 - mu): 0.9 -> 0.5 at one rate steps 5x shorter
    cooled = [segment(SLOW, 0, 1000, flat), segment(SLOW.replace(momentum=0.5), 1000, 500, flat)]
    assert on_clock(step_clock(cooled), 1000.0) == pytest.approx(5000.0)


def test_a_lineage_of_one_step_size_keeps_the_iteration_count() -> None:
    assert step_clock([segment(SLOW, 0, 1000, flat), segment(SLOW, 1000, 500, flat)]) is None


def test_after_a_rate_doubling_the_eta_reads_the_step_clock_too() -> None:
    """A run whose loss is one curve in the distance its steps travelled, its rate doubled at 2,000:
    read in iterations the curve bends at the switch, and the families follow the bend; read on the
    step clock as well, the ETA lands nearer the truth, which its interval covers."""
    rng = np.random.default_rng(0)

    def loss(k: float) -> float:  # a power law in the step clock (the rate's units after the switch)
        clock = k / 2 if k <= 2000 else 1000 + (k - 2000)
        return 2.0 * (clock / 100 + 1) ** -0.7 + 0.05 + float(rng.normal(0, 0.002))

    target = 2.0 * (3000 / 100 + 1) ** -0.7 + 0.05  # the mean reaches it at clock 3,000: iteration 4,000
    switched = [segment(SLOW, 0, 2000, loss), segment(FAST, 2000, 600, loss)]
    one_rate = [dataclasses.replace(switched[0], config=FAST), switched[1]]  # the same curve, no switch
    curve_read = dict(zip(("p10", "p50", "p90"), _left(eta_at(switched, target)), strict=True))
    iterations_only = _left(eta_at(one_rate, target))[1]
    truth = (4000 - 2600) * STEP
    assert abs(curve_read["p50"] - truth) < abs(iterations_only - truth)
    assert curve_read["p10"] <= truth <= curve_read["p90"]


def _left(entry: dict | None) -> tuple[float, float, float]:
    assert entry is not None
    return entry["remaining_p10"], entry["remaining_p50"], entry["remaining_p90"]


def test_in_the_flat_region_the_eta_keeps_the_iteration_count() -> None:
    """A target the loss reaches on a dip of its noise: its level, which a higher rate raises, sets
    when, and a clock of the distance travelled says nothing about it."""
    rng = np.random.default_rng(1)

    def loss(k: float) -> float:
        return 0.1 + 0.05 * (k / 100 + 1) ** -1.0 + float(rng.normal(0, 0.004))

    switched = [segment(SLOW, 0, 2000, loss), segment(FAST, 2000, 600, loss)]
    one_rate = [dataclasses.replace(switched[0], config=FAST), switched[1]]
    assert _left(eta_at(switched, 0.097)) == pytest.approx(_left(eta_at(one_rate, 0.097)))


def test_in_the_warm_up_without_a_prior_the_eta_is_given_and_wider_than_with_one() -> None:
    """Early in a run whose loss is still in its transient, the ETA is given rather than withheld,
    its interval wide enough for the families' misfit of the transient (predictor.eta.TRANSIENT_FORM);
    a finished run of the same job shows where the curve went, and the ETA read with it is narrower."""
    rng = np.random.default_rng(2)

    def loss(k: float) -> float:  # a slow start, then a power law
        return 2.0 / (1 + (k / 400) ** 1.5) + 0.05 + float(rng.normal(0, 0.002))

    target = 0.3
    early = [segment(SLOW, 0, 200, loss), segment(SLOW, 200, 200, loss)]
    finished = [(float(k), loss(k)) for k in range(EVERY, 3000 + 1, EVERY)]
    low, mid, high = _left(warmup_eta(early, target))
    assert 0 < low <= mid <= high
    alone = high / low
    low, _, high = _left(warmup_eta(early, target, (FinishedRun(finished),)))  # its path unknown: a member
    assert high / low < alone


def test_in_the_warm_up_a_plateau_is_not_read_as_never_reaching_the_target() -> None:
    """A loss flat above the target over its last doubling is a floor to a settled run's ETA (its
    p50 open), but the warm-up goes on until its curve leaves its transient, and there a flat
    stretch is a plateau the loss may leave: the warm-up's ETA gives every quantile."""
    rng = np.random.default_rng(3)

    def loss(k: float) -> float:  # a fast drop onto a plateau well above the target
        return 1.0 + 2.0 * np.exp(-k / 20) + float(rng.normal(0, 0.002))

    chain = [segment(SLOW, 0, 400, loss), segment(SLOW, 400, 400, loss)]
    settled = eta_at(chain, 0.5)
    assert settled is not None and settled["remaining_p50"] is None
    low, mid, high = _left(warmup_eta(chain, 0.5))
    assert 0 < low <= mid <= high < float("inf")


def test_a_curve_too_short_to_fit_gives_no_eta_rather_than_never() -> None:
    """Fewer evaluations than the ensemble fits (heldout_digits_cnn's first 50 iterations held
    five): with no plan's reading either, nothing reads the run yet, so there is no ETA, not one
    that says never with a negative time left at p10."""
    short = [segment(SLOW, 0, 5 * EVERY, lambda k: 2.0 / (1 + k / 100))]
    assert warmup_eta(short, 0.3) is None
    assert eta_at(short, 0.3) is None
    # with the plan's reading there is something to read; the time left is never below zero
    reading = Prediction(0.2, 0.01, 0.5, STEP, 200.0, 50.0, 0.05)
    low, mid, high = _left(eta_at(short, 0.3, reading=reading))
    assert 0 <= low <= mid <= high < float("inf")
    longer = [*short, segment(SLOW, 5 * EVERY, 5 * EVERY, lambda k: 2.0 / (1 + k / 100))]
    low, mid, high = _left(warmup_eta(longer, 0.3))
    assert 0 < low <= mid <= high < float("inf")
