"""The HE model fitted to timings it did not generate: the simulator's.

``test_he_model.py`` checks the fit on data made by the HE model itself; here the data come from
the simulated backend, and every check is on a topology the fit never saw (DESIGN.md §6: "must
extrapolate to node counts not probed"). Real Ray step times are wall-clock figures that the
machine's load moves, so their check is a benchmark (``benchmarks/he_ray_layouts.py``), not a test.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from predictor.he_model import HeModel
from predictor.types import Config, ProbeResult
from worker.probe import run_config
from worker.spec import parse_spec

FITTED_NODES, UNSEEN_NODES = (1, 2, 4), (8, 16)
FIT_BATCHES, UNSEEN_BATCH = (2, 8, 32), 4  # simulated seconds; small batches keep it cheap
SIMULATED = parse_spec({
    "workload": {"name": "digits-mlp"}, "target": {"value": 1e-6, "eval_every": 1000},
    "cluster": {"nodes": 16, "devices_per_node": 4},  # V100 profile, 10 Gb/s between nodes
})


@cache
def simulated_seconds(strategy: str, nodes: int, batch: int) -> ProbeResult:
    """A 6-iteration probe of ``strategy`` on nodes × 4 simulated devices."""
    config = Config(strategy, nodes, 4, batch_size=batch, lr=0.01, momentum=0.0)
    return run_config(SIMULATED, config, 1e9, 6)


def _log_errors(strategies: tuple[str, ...]) -> dict[str, float]:
    fit = [simulated_seconds(s, n, b) for s in strategies for n in FITTED_NODES for b in FIT_BATCHES]
    model = HeModel.fit(fit)
    unseen = [simulated_seconds(s, n, UNSEEN_BATCH) for s in strategies for n in UNSEEN_NODES]
    predicted = [e.value for e in model.predict([r.config for r in unseen])]
    pairs = zip(unseen, predicted, strict=True)
    return {r.config.key(): float(np.log(p / r.seconds_per_iteration)) for r, p in pairs}


@pytest.mark.parametrize("strategies", [("sync",), ("sync", "hsgd"), ("sync", "dbs")])
def test_fitted_to_simulated_timings_it_predicts_2_to_4_times_the_probed_nodes(strategies: tuple[str, ...]):
    """Fitted on 1, 2, 4 nodes, predicted at 8 and 16 (and an unprobed batch size): the simulator's
    ring, two-level and balanced costs have the HE model's form term by term, so the fit carries
    over. Measured: within 0.5% (sync), 0.4% (sync + hsgd), 0.5% (sync + dbs); bound 5%."""
    errors = _log_errors(strategies)
    assert max(abs(e) for e in errors.values()) < 0.05, errors


@pytest.mark.xfail(strict=True, reason=(
    "a known gap of predictor/he_model.py (issue 12 report): fitted jointly to sync, hsgd, dbs and "
    "daso probes, the single-start least squares lands in another optimum — at 8-16 nodes sync and "
    "dbs are predicted 19-26% low, hsgd 7-16% low, daso 2-12% low (sync, hsgd, dbs without daso: "
    "sync 37-44% low), while each of the pairs above fits within 0.5%"
))
def test_fitted_jointly_to_every_strategy_it_predicts_unprobed_nodes_within_5_percent() -> None:
    errors = _log_errors(("sync", "hsgd", "dbs", "daso"))
    assert max(abs(e) for e in errors.values()) < 0.05, errors
