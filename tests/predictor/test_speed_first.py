"""Forks whose progress is within the loss's noise, read by their measured speed."""

from __future__ import annotations

import copy
import math

import pytest

from predictor.fork_level import level_above
from predictor.reference_curve import ReferenceCurve
from predictor.se_model import Estimate
from predictor.speed_first import by_speed, rest_of_run, unresolved
from predictor.ttc_model import ForkPoint, TtcModel, finished, noise_temperature
from predictor.types import Prediction, ProbeResult
from tests.predictor.test_reference_curve import CONFIG, WARMUP, fork

TARGET = 0.12
REST = Estimate(1000.0, 800.0, 1300.0)


def moved(result: ProbeResult, speedup: float = 1.0, level: float = 0.0, **change: object) -> ProbeResult:
    """``result`` run under another config: ``speedup``× its speed, its losses ``level`` higher."""
    other = copy.copy(result)
    other.config = result.config.replace(**change)
    other.step_seconds = [s / speedup for s in result.step_seconds]
    other.seconds = result.seconds / speedup
    other.curve = [(k, t, loss + level) for k, t, loss in result.curve]
    return other


def model_of(reference: ReferenceCurve, *results: ProbeResult) -> TtcModel:
    return TtcModel(list(results), TARGET, fork=ForkPoint(reference, WARMUP, 0.4, "warmup", CONFIG))


@pytest.mark.parametrize("change", [{"lr": CONFIG.lr * 2}, {"devices_per_node": 1}])
def test_a_fork_at_a_higher_noise_temperature_is_not_read_by_speed(
    reference: ReferenceCurve, change: dict[str, object]
) -> None:
    """A doubled rate, or half the devices at the same rate, doubles η_eff/B: near the floor that
    raises the floor, so the run's iterations bound nothing (however fast the fork runs)."""
    continued = fork(1.0)
    hotter = moved(continued, speedup=3.0, **change)
    assert noise_temperature(hotter.config) == pytest.approx(2 * noise_temperature(CONFIG))
    assert by_speed(model_of(reference, continued, hotter), hotter, continued, REST) is None


def test_a_cooler_fork_s_carry_is_never_read_as_better_than_the_run(
    reference: ReferenceCurve, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Twice the devices at the same rate halve the temperature; the noise scale's carry promises
    fewer iterations, which near the floor is exactly the promise not to trust."""
    continued = fork(1.0)
    bigger = moved(continued, devices_per_node=CONFIG.devices_per_node * 2)
    model = model_of(reference, continued, bigger)
    monkeypatch.setattr(model, "b_noise", 1e6)  # a gradient all noise: the most a batch can gain
    assert model.carry(REST, CONFIG, bigger.config).value < REST.value
    incumbent = finished(continued, model.speed(CONFIG), REST)
    challenger = by_speed(model, bigger, continued, REST)
    assert challenger is not None
    assert challenger.ttc_seconds >= incumbent.ttc_seconds and challenger.ttc_high >= incumbent.ttc_high
    assert challenger.iterations >= incumbent.iterations


def test_a_faster_allocation_at_the_scaled_rate_wins_within_the_carries_interval(
    reference: ReferenceCurve,
) -> None:
    """Half the devices (half the global batch) at half the rate (the temperature held, Goyal et
    al.'s linear scaling) and 3× the speed: ahead on its point, while its upper end allows the
    smaller batch up to twice the run's iterations (perfect scaling) and more for the smaller step."""
    continued = fork(1.0)
    halved = moved(continued, speedup=3.0, devices_per_node=1, lr=CONFIG.lr / 2)
    assert noise_temperature(halved.config) == pytest.approx(noise_temperature(CONFIG))
    model = model_of(reference, continued, halved)
    incumbent = finished(continued, model.speed(CONFIG), REST)
    challenger = by_speed(model, halved, continued, REST)
    assert challenger is not None
    assert challenger.ttc_seconds < incumbent.ttc_seconds
    rest_high = (challenger.ttc_high - halved.end_seconds) / model.speed(halved.config).high
    assert rest_high >= 2 * REST.high * 0.999


def test_no_carry_across_dynamics_classes(reference: ReferenceCurve) -> None:
    continued = fork(1.0)
    other = moved(continued, speedup=3.0, strategy="hsgd")
    assert by_speed(model_of(reference, continued, other), other, continued, REST) is None


def test_a_fork_clearly_above_the_run_is_evidence_against_it(reference: ReferenceCurve) -> None:
    continued = fork(1.0, noise=0.01)
    assert level_above(moved(continued, level=4 * reference.noise), continued, reference.noise)
    assert not level_above(moved(continued, level=0.5 * reference.noise), continued, reference.noise)


def test_the_run_s_rest_is_read_on_its_own_curve_when_its_continuation_stalls_within_the_noise(
    reference: ReferenceCurve,
) -> None:
    stalled = fork(1.0)
    stalled.curve = [(k, t, stalled.curve[0][2]) for k, t, _ in stalled.curve]
    model = model_of(reference, stalled)
    assert model.on_reference == {CONFIG.key()}
    rest = rest_of_run(model, reference, stalled)
    goal = float(reference.iteration_at(TARGET)[0])
    assert rest.value == pytest.approx(goal - stalled.end_iteration)
    assert math.isfinite(rest.high)


def test_unresolved_means_no_prediction_or_no_upper_end() -> None:
    assert unresolved(None)
    assert unresolved(Prediction(1.0, 0.5, math.inf, 1e-3, 1e3))
    assert not unresolved(Prediction(1.0, 0.5, 2.0, 1e-3, 1e3))


def test_a_cooler_fork_read_faster_than_its_step_allows_has_no_upper_bound(reference: ReferenceCurve) -> None:
    """A fifth of the warm-up's step at its batch: the model's own carries allow it no more than
    the warm-up's pace, so a fork read at 8× it is the drop of shed noise, not a faster clock. A
    hotter fork (twice the step) read at the same 8× sheds no noise and is taken at its word."""
    cooler = moved(fork(8.0), lr=CONFIG.lr / 5)
    model = model_of(reference, cooler)
    assert model.fastest_rate(cooler.config) == pytest.approx(1.0)
    steps = model.steps(cooler.config)
    assert steps is not None and math.isfinite(steps.value) and steps.high == math.inf
    hotter = moved(fork(8.0), lr=CONFIG.lr * 2)
    model = model_of(reference, hotter)
    assert model.fastest_rate(hotter.config) == pytest.approx(2.0)
    bounded = model.steps(hotter.config)
    assert bounded is not None and math.isfinite(bounded.high)
