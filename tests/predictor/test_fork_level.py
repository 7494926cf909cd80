"""A fork whose loss rose is behind, whatever a carry reads; a cooler one whose loss dropped below
the continuation is ahead, read on its own curve (predictor.fork_level, ttc_model)."""

from __future__ import annotations

import math

import numpy as np

from predictor.fork_level import level_above, level_below, lost_ground
from predictor.plan_choice import best
from predictor.reference_curve import ReferenceCurve, fork_rate
from predictor.types import ProbeResult
from tests.predictor.test_reference_curve import CONFIG, WARMUP, fork, reference_loss
from tests.predictor.test_speed_first import TARGET, model_of, moved

LENGTH = 50


def two_evaluations(end_loss: float, lr: float) -> ProbeResult:
    """A fork evaluated only at its start and end (``eval_every`` = the probe's length), too few
    points for a rate against the reference: the model carries its iterations from a neighbour."""
    start = float(reference_loss(WARMUP))
    result = moved(fork(1.0, length=LENGTH), lr=lr)
    result.curve = [(WARMUP, 0.4, start), (WARMUP + LENGTH, 0.4 + LENGTH * 1e-3, end_loss)]
    return result


def test_a_hotter_fork_whose_loss_rose_is_open_above_and_loses_to_the_continuation(
    reference: ReferenceCurve,
) -> None:
    """The carry reads three times the rate as up to three times the pace; the fork's own two
    evaluations show its loss 2.5× where it started. It is behind: no bound above, no plan."""
    continued = fork(1.0, length=LENGTH)
    hotter = two_evaluations(2.5 * float(reference_loss(WARMUP)), lr=3 * CONFIG.lr)
    model = model_of(reference, continued, hotter)
    assert model.behind == {hotter.config.key()}
    prediction, incumbent = model.predict(hotter.config), model.predict(CONFIG)
    assert prediction is not None and incumbent is not None
    assert prediction.ttc_seconds < incumbent.ttc_seconds  # the carry alone would have picked it
    assert not math.isfinite(prediction.ttc_high)
    assert best({hotter.config.key(): prediction, CONFIG.key(): incumbent}, None) == CONFIG.key()


def test_a_hotter_fork_that_kept_falling_keeps_the_carry_s_bound(reference: ReferenceCurve) -> None:
    continued = fork(1.0, length=LENGTH)
    hotter = two_evaluations(float(reference_loss(WARMUP + 3 * LENGTH)), lr=3 * CONFIG.lr)
    model = model_of(reference, continued, hotter)
    assert model.behind == set()
    prediction = model.predict(hotter.config)
    assert prediction is not None and math.isfinite(prediction.ttc_high)


def test_a_rise_within_the_noise_is_not_lost_ground(reference: ReferenceCurve) -> None:
    start = float(reference_loss(WARMUP))
    assert not lost_ground(two_evaluations(start + 0.5 * reference.noise, lr=CONFIG.lr), reference.noise)
    assert lost_ground(two_evaluations(start + 4 * reference.noise, lr=CONFIG.lr), reference.noise)


def test_a_fork_above_a_longer_continuation_is_compared_over_its_own_iterations(
    reference: ReferenceCurve,
) -> None:
    """The continuation ran four times as far (halving): its later half is far lower than the
    fork's, but over the fork's own iterations it is level with it."""
    continued = fork(1.0, length=4 * LENGTH)
    level = fork(1.0, length=LENGTH)
    assert not level_above(level, continued, reference.noise)
    assert level_above(moved(level, level=4 * reference.noise), continued, reference.noise)


def test_a_fork_below_the_continuation_is_level_below(reference: ReferenceCurve) -> None:
    continued = fork(1.0, length=LENGTH)
    level = fork(1.0, length=LENGTH)
    assert not level_below(level, continued, reference.noise)
    assert level_below(moved(level, level=-4 * reference.noise), continued, reference.noise)


def own_loss(j: np.ndarray | float) -> np.ndarray:
    """A cooler step's own curve from the fork: it sheds the warm-up's noise at once (about 10× the
    level noise below the warm-up's loss at the first evaluation), then falls at its own pace to the
    target ``OWN_CROSSING`` iterations after the fork."""
    return 0.11 + 0.0866 * (np.asarray(j, dtype=float) + 10) ** -0.5


OWN_CROSSING = (0.0866 / (TARGET - 0.11)) ** 2 - 10  # about 65 iterations after the fork


def cooler(length: int) -> ProbeResult:
    j = np.arange(2, length + 1, 2)
    curve = [(WARMUP, 0.4, float(reference_loss(WARMUP)))]
    curve += [(WARMUP + int(i), 0.4 + i * 1e-3, float(own_loss(i))) for i in j]
    return ProbeResult(CONFIG.replace(lr=CONFIG.lr / 3), length, length * 1e-3, curve, [1e-3] * length,
                       start_iteration=WARMUP, start_seconds=0.4, parent="warmup")


def test_a_cooler_fork_that_dropped_below_the_continuation_is_read_on_its_own_curve(
    reference: ReferenceCurve,
) -> None:
    """Mapped onto the warm-up's curve its drop reads as a fast clock that ends too soon; its own
    curve past the drop reaches the target where it does."""
    length = 40
    ahead = cooler(length)
    model = model_of(reference, fork(1.0, length=length), ahead)
    assert model.ahead == {ahead.config.key()}
    estimate = model.iterations[ahead.config.key()]
    rate = fork_rate(reference, ahead, TARGET, ahead.config.momentum)
    assert rate is not None
    on_reference = length + rate.remaining.value
    assert abs(estimate.value - OWN_CROSSING) < 0.15 * OWN_CROSSING
    assert abs(estimate.value - OWN_CROSSING) < abs(on_reference - OWN_CROSSING)
    assert estimate.low <= OWN_CROSSING <= estimate.high


def test_neither_a_hotter_fork_nor_one_level_with_the_continuation_is_ahead(
    reference: ReferenceCurve,
) -> None:
    continued = fork(1.0, length=LENGTH)
    hotter = moved(continued, level=-4 * reference.noise, lr=3 * CONFIG.lr)
    level = moved(continued, lr=CONFIG.lr / 3)
    assert model_of(reference, continued, hotter, level).ahead == set()
