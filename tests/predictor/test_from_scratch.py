"""A forked plan predicted from scratch (predictor.from_scratch)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from predictor.from_scratch import asynchrony_move, from_scratch
from predictor.reference_curve import ReferenceCurve
from predictor.se_model import Estimate
from predictor.ttc_model import ForkPoint
from predictor.types import Config, Prediction

RECIPE = Config("sync", 1, 4, batch_size=32, lr=0.01, momentum=0.9)
G2 = RECIPE.replace(strategy="async_groups", groups=2)
WARM_UP = 1000  # iterations of RECIPE at 20 µs before the fork
CURVE = [(k, k * 20e-6, (1 + k) ** -0.5) for k in range(0, WARM_UP + 1, 10)]
FORK = ForkPoint(ReferenceCurve.fit(CURVE, samples=2), iteration=WARM_UP, seconds=WARM_UP * 20e-6, key="w",
                 config=RECIPE)
FORKED = Prediction(FORK.seconds + 0.03, FORK.seconds + 0.025, FORK.seconds + 0.04, 11e-6, WARM_UP + 2727.0,
                    evidence_iterations=1050.0)


@dataclass
class Model:
    """The two things from_scratch reads of a TtcModel: a config's speed and a carry of iterations."""

    carried: float  # the warm-up's iterations carried to the config, as a factor

    def speed(self, config: Config) -> Estimate:
        return Estimate(11e-6, 10e-6, 12e-6)

    def carry(self, estimate: Estimate, donor: Config, config: Config) -> Estimate:
        f = self.carried
        return Estimate(estimate.value * f, estimate.low * f / 2, estimate.high * f * 2)


def test_only_omnivores_knobs_count_as_a_move_of_the_recipe() -> None:
    assert asynchrony_move(RECIPE, G2)
    assert asynchrony_move(RECIPE, G2.replace(momentum=0.3))
    assert asynchrony_move(RECIPE, RECIPE.replace(momentum=0.6))
    assert not asynchrony_move(RECIPE, G2.replace(lr=0.03))
    assert not asynchrony_move(RECIPE, G2.replace(batch_size=64))
    assert not asynchrony_move(RECIPE, RECIPE.replace(nodes=4))
    assert not asynchrony_move(RECIPE, RECIPE.replace(strategy="hsgd"))
    assert not asynchrony_move(RECIPE.replace(strategy="daso"), RECIPE.replace(strategy="daso", momentum=0.6))


def test_the_warm_ups_stretch_runs_at_the_configs_speed_and_never_in_fewer_iterations() -> None:
    """A larger effective step carries to fewer iterations; the evidence never measured the config
    there, so the point keeps the warm-up's count (the interval's low end may go below)."""
    prediction = from_scratch(Model(carried=0.5), FORK, RECIPE, G2, FORKED)
    assert prediction is not None
    assert prediction.ttc_seconds == pytest.approx(WARM_UP * 11e-6 + 0.03)
    assert prediction.iterations == pytest.approx(WARM_UP + 2727.0)
    assert prediction.ttc_low == pytest.approx(WARM_UP / 4 * 10e-6 + 0.025)
    assert prediction.ttc_high == pytest.approx(WARM_UP * 12e-6 + 0.04)
    assert prediction.evidence_iterations == FORKED.evidence_iterations


def test_a_smaller_effective_step_takes_the_carried_iterations() -> None:
    prediction = from_scratch(Model(carried=1.5), FORK, RECIPE, G2.replace(momentum=0.3), FORKED)
    assert prediction is not None
    assert prediction.ttc_seconds == pytest.approx(1.5 * WARM_UP * 11e-6 + 0.03)
    assert prediction.iterations == pytest.approx(1.5 * WARM_UP + 2727.0)


def test_other_moves_are_not_predicted_from_scratch() -> None:
    assert from_scratch(Model(carried=1.0), FORK, RECIPE, G2.replace(lr=0.03), FORKED) is None
