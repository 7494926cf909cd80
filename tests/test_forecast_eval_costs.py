"""forecast_eval gives the probes' cost for both routes (benchmarks/forecast_eval.py): the one-shot
route pays the probes on top of a run from scratch; ``ttc train`` continues the study's lineage, so
only the tuning off it is overhead."""

from __future__ import annotations

from benchmarks.forecast_eval import probe_cost, train_cost


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
