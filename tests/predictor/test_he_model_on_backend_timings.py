"""The HE model fitted to timings it did not generate: the simulator's and real Ray's.

``test_he_model.py`` checks the fit on data made by the HE model itself; here the data come from
the backends, and every check is on a topology the fit never saw (DESIGN.md §6: "must extrapolate
to node counts not probed").
"""

from __future__ import annotations

import statistics
from contextlib import ExitStack
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


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a minute quiet; gloo on starved cores can take ten times that
def test_fitted_to_real_ray_timings_it_predicts_another_layout_of_2_workers(ray_local: None) -> None:
    """Real wall-clock step times of ``sync`` on 1×1 and 2×1 device actors (3 batch sizes) predict
    1×2 — the same two processes on this machine grouped as one node, a topology the fit never saw
    (the intra link tied to the inter one, since no probe told them apart). The layouts are measured
    in alternating rounds and summarised by their median step, so another job's load falls on all
    alike. Measured at load average 9 on the shared 2-core machine: 19–25% apart; bound 2×."""
    from worker.ray_backend import RankLayout, RayBackendConfig, WorkerGroup, make_run

    small = RayBackendConfig(cpus_per_worker=0.25)
    layouts, batches = ((1, 1), (2, 1), (1, 2)), (16, 64, 256)
    steps: dict[tuple[int, int, int], list[float]] = {}
    with ExitStack() as stack:
        groups = {layout: stack.enter_context(WorkerGroup(RankLayout(*layout), small)) for layout in layouts}
        for _ in range(3):
            for (nodes, per_node), workers in groups.items():
                cluster = {"backend": "ray", "nodes": nodes, "devices_per_node": per_node}
                spec = parse_spec({"workload": {"name": "digits-cnn"}, "target": {"eval_every": 10},
                                   "cluster": cluster})
                for batch in batches:
                    config = Config("sync", nodes, per_node, batch_size=batch, lr=0.01, momentum=0.0)
                    run = make_run(spec, config, small, 10**6, workers=workers)
                    run.start()
                    try:
                        for step in range(30):
                            before = run.clock
                            run.step()
                            if step >= 10:  # the first chunk warms up
                                steps.setdefault((nodes, per_node, batch), []).append(run.clock - before)
                    finally:
                        run.shutdown()

    def probe(key: tuple[int, int, int]) -> ProbeResult:
        nodes, per_node, batch = key
        config = Config("sync", nodes, per_node, batch_size=batch, lr=0.01, momentum=0.0)
        median = statistics.median(steps[key])
        return ProbeResult(config, len(steps[key]), median * len(steps[key]), [], steps[key])

    model = HeModel.fit([probe(key) for key in steps if key[:2] != (1, 2)])
    unseen = [probe(key) for key in steps if key[:2] == (1, 2)]
    predicted = np.array([e.value for e in model.predict([r.config for r in unseen])])
    measured = np.array([r.seconds_per_iteration for r in unseen])
    assert np.all(np.abs(np.log(predicted / measured)) < np.log(2.0)), (predicted, measured)
