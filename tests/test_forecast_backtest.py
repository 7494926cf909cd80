"""The backtest's pieces (benchmarks/forecast_backtest.py): a cut run's forecast is scored against
what the run did after the cut, and configs round-trip through their keys."""

from __future__ import annotations

import numpy as np

from benchmarks.forecast_backtest import check, configs, parse_key
from predictor.types import Config
from worker.spec import load_spec

TARGET = 0.05


def test_a_cut_power_law_is_forecast_near_what_it_did_next() -> None:
    k = np.arange(10, 4001, 10)
    losses = 2.0 * k ** -0.5 * (1.0 + 0.002 * np.sin(k))  # reaches 0.05 at k = 1600
    curve = [[int(i), 0.0, float(loss)] for i, loss in zip(k, losses, strict=True)]
    row = check(curve, 1600, 0.5, TARGET)
    assert row["at"] == 800.0 and row["truth"] == 800.0
    assert row["p10"] <= row["p50"] <= row["p90"]
    assert abs(row["error"]) < 0.25 and row["covered"]


def test_a_prior_run_of_the_same_curve_keeps_the_forecast_on_it() -> None:
    k = np.arange(10, 4001, 10)
    curve = [[int(i), 0.0, float(2.0 * i ** -0.5)] for i in k]
    row = check(curve, 1600, 0.25, TARGET, prior=curve)
    assert abs(row["error"]) < 0.25 and row["covered"]


def test_configs_are_the_plan_and_its_learning_rate_neighbour() -> None:
    plan = Config("sync", 1, 2, batch_size=32, lr=0.03, momentum=0.9)
    assert parse_key(plan.key()) == plan
    spec = load_spec("examples/quickstart.yaml")
    rates = sorted(spec.search.learning_rates)
    picked = configs(spec, plan.replace(lr=rates[-1]))
    assert [c.lr for c in picked] == [rates[-1], rates[-2]]
