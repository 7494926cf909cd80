"""Which config the plan names (predictor.plan_choice)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from predictor.plan_choice import best, planned
from predictor.ranking import ranking
from predictor.types import Confidence, Config, Prediction, ProbeResult

INF = math.inf


def _prediction(ttc: float, high: float) -> Prediction:
    return Prediction(ttc, ttc * 0.8 if math.isfinite(ttc) else INF, high, 1e-5, ttc / 1e-5, 1000.0)


def test_a_point_read_from_the_noise_does_not_move_the_plan_off_the_incumbents() -> None:
    """Nothing is bounded above: the fork's finite point is the noise; the baseline and the
    warm-up's recipe compete on their points, the baseline protected by the margin."""
    predictions = {"recipe": _prediction(0.099, INF), "fork": _prediction(0.08, INF),
                   "baseline": _prediction(0.1, INF)}
    assert best(predictions, "baseline") == "fork"  # what the budget may still be sized by
    assert planned(predictions, "baseline", {"recipe"}) == "baseline"
    predictions["recipe"] = _prediction(0.09, INF)
    assert planned(predictions, "baseline", {"recipe"}) == "recipe"
    predictions["recipe"] = _prediction(INF, INF)
    assert planned(predictions, "baseline", {"recipe"}) == "baseline"


def test_with_nothing_bounded_a_fork_of_the_warm_up_s_recipe_competes_on_its_point() -> None:
    """The warm-up's recipe on another batch, read on the warm-up's curve carried by the noise
    scale, shares the reference's uncertainty with the recipe: their points compare."""
    predictions = {"recipe": _prediction(0.12, INF), "larger batch": _prediction(0.10, INF),
                   "noise": _prediction(0.05, INF), "baseline": _prediction(0.2, INF)}
    assert planned(predictions, "baseline", {"recipe", "larger batch"}) == "larger batch"
    assert planned(predictions, "baseline", {"recipe"}) == "recipe"


def test_a_bounded_challenger_still_wins() -> None:
    predictions = {"recipe": _prediction(0.12, 0.15), "fork": _prediction(0.09, 0.11),
                   "baseline": _prediction(0.4, 0.7)}
    assert planned(predictions, "baseline", {"recipe"}) == "fork"


def test_without_a_measured_incumbent_the_best_point_is_kept() -> None:
    predictions = {"fork": _prediction(0.08, INF), "other": _prediction(0.1, INF)}
    assert planned(predictions, "baseline", {"recipe"}) == "fork"


def test_the_baseline_is_kept_unless_beaten_by_the_margin() -> None:
    predictions = {"baseline": _prediction(0.100, 0.12), "fork": _prediction(0.097, 0.116)}
    assert planned(predictions, "baseline", set()) == "baseline"
    predictions["fork"] = _prediction(0.090, 0.108)
    assert planned(predictions, "baseline", set()) == "fork"


def test_the_baseline_is_held_to_the_risk_aware_score_like_every_other_config() -> None:
    """A baseline 3% ahead on its point whose upper end is 5.6× the challenger's (a 6-iteration
    timing fork read with the noise scale's full gain) does not keep the plan."""
    predictions = {"baseline": _prediction(0.0099, 0.130), "one device": _prediction(0.0102, 0.023)}
    assert planned(predictions, "baseline", set()) == "one device"
    predictions["baseline"] = _prediction(0.0099, 0.0120)  # score 0.01090 against the challenger's
    predictions["one device"] = _prediction(0.0102, 0.0110)  # 0.01059: 2.8% better, within the margin
    assert planned(predictions, "baseline", set()) == "baseline"


RECIPE = Config("sync", 1, 4, batch_size=32, lr=0.01, momentum=0.9)
FORK = RECIPE.replace(strategy="async_groups", groups=2, momentum=0.3)


@dataclass
class _Study:
    """What ``ranking`` reads of a study: the recipe and one fork, both measured 50 iterations."""

    predictions: dict[str, Prediction]
    baseline: Config | None = None
    probes: list[ProbeResult] = field(default_factory=list)
    pruned: set[str] = field(default_factory=set)
    behind_keys: set[str] = field(default_factory=set)
    ahead_keys: set[str] = field(default_factory=set)

    def views(self) -> dict[str, ProbeResult]:
        return {c.key(): ProbeResult(c, 50, 1e-3, [(0, 0.0, 1.0), (50, 1e-3, 0.9)], [2e-5])
                for c in (RECIPE, FORK)}

    def confidence_of(self, key: str) -> Confidence:
        return Confidence("none", "unbounded")

    def evidence_of(self, key: str) -> list[str]:
        return []

    def unstable(self) -> set[str]:
        return set()

    def behind(self) -> set[str]:
        return self.behind_keys

    def ahead(self) -> set[str]:
        return self.ahead_keys


def test_the_ranking_says_why_an_unbounded_point_lost_to_an_incumbent() -> None:
    study = _Study({RECIPE.key(): _prediction(0.099, INF), FORK.key(): _prediction(0.08, INF)})
    plan_key = planned(study.predictions, None, {RECIPE.key()})
    rows = {row.config.key(): row for row in ranking(study, plan_key)}
    assert rows[RECIPE.key()].status == "plan" and "no prediction is bounded" in rows[RECIPE.key()].reason
    assert rows[RECIPE.key()].reason.endswith("the warm-up's recipe, read on the warm-up's curve")
    assert rows[FORK.key()].status == "lost" and "no upper end" in rows[FORK.key()].reason


def test_the_ranking_says_a_fork_whose_loss_rose_is_behind() -> None:
    study = _Study({RECIPE.key(): _prediction(0.099, 0.12), FORK.key(): _prediction(0.05, INF)},
                   behind_keys={FORK.key()})
    rows = {row.config.key(): row for row in ranking(study, planned(study.predictions, None, set()))}
    assert rows[RECIPE.key()].status == "plan"
    fork = rows[FORK.key()]
    assert fork.status == "lost" and "ended above the warm-up continued" in fork.reason


def test_the_ranking_says_a_fork_ahead_left_open_was_not_run_past_its_drop() -> None:
    study = _Study({RECIPE.key(): _prediction(0.099, 0.12), FORK.key(): _prediction(0.05, INF)},
                   ahead_keys={FORK.key()})
    rows = {row.config.key(): row for row in ranking(study, planned(study.predictions, None, set()))}
    fork = rows[FORK.key()]
    assert fork.status == "lost" and "dropped below the warm-up continued" in fork.reason
