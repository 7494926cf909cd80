"""The search on a synthetic cluster: budget respected, 5% margin kept, predictions sane."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import numpy as np
import pytest

from predictor.he_model import HeParams, Topology, step_seconds
from predictor.search import CHANGE_MARGIN, EXTEND_MIN_BUDGET, EXTEND_ROUNDS, EXTEND_WHEN, ColdStartSearch
from predictor.types import Budget, Config, ProbeResult, SearchSpace

HARDWARE = HeParams(alpha_c=1e-3, beta_c=2e-5, theta_intra=1e-4, lat_intra=1e-6, theta_inter=2e-3,
                    lat_inter=2e-5, gamma=2.0, read=1e-9, daso_skip=4.0, balance=1.0)
TARGET = 0.2


def synthetic_probe(config: Config, probe_seconds: float, async_penalty: float = 0.3) -> ProbeResult:
    """Power-law loss whose speed per iteration grows with lr·batch and shrinks with staleness."""
    step = float(step_seconds(HARDWARE, Topology.of([config]))[0])
    iterations = max(int(probe_seconds / step), 10)
    momentum = config.momentum + (1 - 1 / config.groups)
    if momentum >= 1.05 or config.lr > 0.5:
        curve = [(0, 0.0, 2.0), (10, 10 * step, math.inf)]
        return ProbeResult(config, 10, 10 * step, curve, [step], diverged=True)
    rate = config.lr / (1 - min(momentum, 0.95)) * (1 - async_penalty * (config.groups > 1))
    rate *= 1 / (1 + 256 / config.global_batch)
    every = max(iterations // 6, 1)  # a handful of evaluations per probe keeps the fits cheap
    curve = [(k, k * step, 2.0 * (1 + rate * k) ** -0.7 + 0.05) for k in range(0, iterations + 1, every)]
    return ProbeResult(config, iterations, iterations * step, curve, [step] * 20, grad_sq_small=1.0,
                       grad_sq_big=0.5, batch_small=config.batch_size, batch_big=config.global_batch)


@pytest.fixture(autouse=True)
def few_bootstrap_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests check the search's logic, not interval quality: a small bootstrap keeps them fast."""
    monkeypatch.setattr("predictor.se_model.BOOTSTRAP_SAMPLES", 8)


def two_phase_probe(config: Config, probe_seconds: float) -> ProbeResult:
    """A fast initial drop, then a slow power law: short probes see only the drop (like charlm)."""
    probe = synthetic_probe(config, probe_seconds)
    if probe.diverged:
        return probe
    rate = config.lr / (1 - min(config.momentum + (1 - 1 / config.groups), 0.95))
    curve = [(k, s, 1.5 * math.exp(-k / 8) + 0.5 * (1 + rate * k / 50) ** -0.5 + 0.05)
             for k, s, _ in probe.curve]
    return dataclasses.replace(probe, curve=curve)


def run_search(budget: Budget, space: SearchSpace | None = None, target: float = TARGET,
               probe: Callable[[Config, float], ProbeResult] = synthetic_probe) -> ColdStartSearch:
    space = space or SearchSpace(
        nodes=2, devices_per_node=2, strategies=("sync", "async_groups", "hsgd"),
        batch_sizes=(16, 64), learning_rates=(0.03, 0.1, 0.3), momenta=(0.0, 0.5, 0.9),
    )
    search = ColdStartSearch(space, budget, target)
    while requests := search.ask():
        for request in requests:
            search.tell(probe(request.config, request.seconds))
    return search


@pytest.mark.parametrize("max_probes", [3, 12])
def test_probe_count_budget_respected(max_probes: int) -> None:
    search = run_search(Budget(probe_seconds=0.5, max_probes=max_probes))
    assert len(search.probes) <= max_probes


def test_cluster_seconds_budget_respected() -> None:
    budget = Budget(probe_seconds=0.5, max_probes=100, max_cluster_seconds=2.0)
    search = run_search(budget)
    assert search.cluster_seconds() <= 2.0 + 1e-9


def test_plan_changes_the_baseline_only_for_a_5_percent_win() -> None:
    search = run_search(Budget(probe_seconds=0.5, max_probes=16))
    plan = search.plan("s")
    assert math.isfinite(plan.predicted.ttc_seconds) and plan.predicted.ttc_seconds > 0
    assert plan.predicted.ttc_low <= plan.predicted.ttc_seconds <= plan.predicted.ttc_high
    if plan.config != plan.baseline_config:
        assert plan.predicted.ttc_seconds <= (1 - CHANGE_MARGIN) * plan.baseline_predicted_ttc_seconds
    assert plan.evidence[0] == plan.config.key()
    assert plan.to_dict()["probes"]["count"] == len(search.probes)


def test_predictions_positive_and_finite_for_unprobed_configs() -> None:
    search = run_search(Budget(probe_seconds=0.5, max_probes=16))
    assert search.model is not None
    probed = [r.config for r in search.results.values() if r.config.key() in search.predictions]
    variants = [c.replace(nodes=n, batch_size=b) for c in probed for n in (1, 2) for b in (16, 64)
                if c.groups == 1]
    ttc = search.model.predict_many(variants)
    known = ttc[np.isfinite(ttc)]
    assert known.size > 0 and np.all(known > 0)


def test_a_finalist_predicted_far_beyond_its_probe_is_re_probed_longer() -> None:
    """Short probes, a distant target: the plan's config is extended until its prediction needs at
    most EXTEND_WHEN× what its longest probe ran (or the rounds run out)."""
    search = run_search(Budget(probe_seconds=0.05, max_probes=16), target=0.08)
    plan = search.plan("s")
    longest = search.results[plan.config.key()]
    short = [r for r in search.probes if r.config == plan.config and r is not longest]
    assert short and all(r.iterations < longest.iterations for r in short)
    rounds_left = len(short) < EXTEND_ROUNDS
    assert plan.predicted.iterations <= EXTEND_WHEN * longest.iterations or not rounds_left
    assert plan.probe_count == len(search.probes) > len(search.results)


def test_extensions_come_out_of_the_probe_count_budget() -> None:
    """Stages 1–4 leave the extension rounds' probes unspent, and the total stays in budget."""
    search = run_search(Budget(probe_seconds=0.05, max_probes=EXTEND_MIN_BUDGET), target=0.08)
    assert len(search.probes) <= EXTEND_MIN_BUDGET and len(search.probes) > len(search.results)


def test_the_extension_calibrates_predictions_resting_on_short_probes() -> None:
    """Every short-probed config moves by one common factor; the extended finalist does not."""
    search = run_search(Budget(probe_seconds=0.05, max_probes=16), target=0.2, probe=two_phase_probe)
    assert search.model is not None
    plan_key = search.plan("s").config.key()
    ratios = {
        key: search.predict(r.config).iterations / search.model.predict(r.config).iterations
        for key, r in search.results.items() if key in search.predictions
    }
    shorts = [ratio for key, ratio in ratios.items() if key != plan_key]
    assert ratios[plan_key] == pytest.approx(1.0)
    assert shorts and max(shorts) == pytest.approx(min(shorts)) and shorts[0] != pytest.approx(1.0)
