"""forecast_eval gives the probes' cost for both routes (benchmarks/forecast_eval.py): the one-shot
route pays the probes on top of a run from scratch; ``ttc train`` continues the study's lineage, so
only the tuning off it is overhead."""

from __future__ import annotations

import pytest

from benchmarks.forecast_eval import probe_cost, standard_score, train_cost
from predictor.se_model import Z80


def test_the_one_shot_route_counts_the_probes_against_the_plans_mean_ttc() -> None:
    scores = [{"truth": 4.0}, {"truth": 6.0}]
    assert probe_cost(1.0, scores) == 0.2
    assert probe_cost(1.0, [{"truth": 4.0}, {"truth": None}]) is None  # a truth run that never reached


def test_ttc_train_counts_only_the_tuning_off_its_lineage_against_its_own_seconds() -> None:
    trained = {"reached": True, "ttc_seconds": 11.0, "tuning_cluster_seconds": 1.0, "phases": [{}, {}]}
    assert train_cost(trained) == {"reached": True, "ttc_seconds": 11.0, "tuning_cluster_seconds": 1.0,
                                   "tuning_share": 0.1, "switches": 1}
    unreached = train_cost({**trained, "reached": False})
    assert unreached["tuning_share"] is None


def test_a_truth_at_an_edge_of_the_interval_scores_z_of_that_edge() -> None:
    predicted = {"ttc_p10": 5.0, "ttc_p50": 10.0, "ttc_p90": 40.0}
    assert standard_score(predicted, 40.0) == pytest.approx(Z80)
    assert standard_score(predicted, 5.0) == pytest.approx(-Z80)
    assert standard_score(predicted, 20.0) == pytest.approx(Z80 / 2)  # halfway to p90 in log terms
    assert standard_score({**predicted, "ttc_p90": None}, 20.0) is None  # open above: no scale
    assert standard_score(predicted, None) is None  # never reached
