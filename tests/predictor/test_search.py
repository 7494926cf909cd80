"""The search on a synthetic cluster whose probes are lineages: budgets, stops, forks, the plan.

The synthetic job: a loss curve with a fast first drop and a slow power-law phase, l(u) over
"progress" u; a config advances u at a rate set by its effective step (η/(1 − μ_total)) and its
global batch, and its seconds per iteration follow the HE model's own formula. A probe from a
parent's state starts at the parent's progress, so forks and continuations behave as on the
simulated cluster: the search sees only curves and timings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pytest

from predictor import timing_round
from predictor.async_step import first_async_steps
from predictor.he_model import HeParams, Topology, step_seconds
from predictor.no_number import plan_without_prediction, with_measured_bound
from predictor.plan_choice import CHANGE_MARGIN
from predictor.reference_curve import Hindcast
from predictor.regime import Regime, RegimeReading
from predictor.search import WARMUP_MIN_PROBES, ColdStartSearch, adjacent
from predictor.timing_round import timing_length
from predictor.types import Budget, Config, Plan, Prediction, ProbeRequest, ProbeResult, SearchSpace
from tests.predictor.logic_only import logic_only

HARDWARE = HeParams(alpha_c=1e-3, beta_c=2e-5, theta_intra=1e-4, lat_intra=1e-6, theta_inter=2e-3,
                    lat_inter=2e-5, gamma=2.0, read=1e-9, daso_skip=4.0, balance=1.0)
SPACE = SearchSpace(nodes=2, devices_per_node=2, strategies=("sync", "async_groups", "hsgd"),
                    batch_sizes=(16, 64), learning_rates=(0.03, 0.1, 0.3), momenta=(0.0, 0.5, 0.9))
EVERY = 2


def loss_at(progress: float) -> float:
    """A fast drop, then a slow power law with a floor (a shape the models can represent: these
    tests check the search's logic, benchmarks/predictor_eval.py its accuracy on real curves)."""
    return 0.5 * math.exp(-progress / 5) + 0.6 * (1 + progress) ** -0.5 + 0.02


def rate_of(config: Config) -> float:
    momentum = min(config.momentum + 1 - 1 / config.groups, 0.95)
    return config.lr / (1 - momentum) * config.global_batch / (config.global_batch + 64) * (
        0.7 if config.groups > 1 else 1.0)


@dataclass
class State:
    progress: float
    iteration: int
    seconds: float


class SyntheticCluster:
    """Runs ProbeRequests: curves from ``loss_at``, timings from the HE formula, states kept by key."""

    def __init__(self) -> None:
        self.states: dict[str, State] = {}

    def run(self, request: ProbeRequest, target: float) -> ProbeResult:
        config = request.config
        start = self.states[request.parent] if request.parent else State(0.0, 0, 0.0)
        step = float(step_seconds(HARDWARE, Topology.of([config]))[0])
        if config.lr / (1 - min(config.momentum + 1 - 1 / config.groups, 0.99)) > 2.0:
            curve = [(start.iteration, start.seconds, loss_at(start.progress)),
                     (start.iteration + EVERY, start.seconds + EVERY * step, math.inf)]
            return ProbeResult(config, EVERY, EVERY * step, curve, [step], diverged=True, key=request.key,
                               parent=request.parent, start_iteration=start.iteration,
                               start_seconds=start.seconds)
        iterations = min(request.max_iterations, max(int(min(request.seconds / step, 1e9)), 1))
        curve, reached, below = [], None, None
        for j in range(0, iterations + 1, EVERY):
            k, t = start.iteration + j, start.seconds + j * step
            loss = loss_at(start.progress + rate_of(config) * j)
            curve.append((k, t, loss))
            if loss <= target and below is None:
                below = (k, t)
            elif loss <= target and reached is None:
                reached = below
                iterations = j
                break
        self.states[request.key] = State(start.progress + rate_of(config) * iterations,
                                         start.iteration + iterations, start.seconds + iterations * step)
        return ProbeResult(
            config, iterations, iterations * step, curve, [step] * min(iterations, 64),
            reached_iteration=reached[0] if reached else None,
            reached_seconds=reached[1] if reached else None,
            grad_sq_small=1.0, grad_sq_big=0.5, batch_small=config.batch_size, batch_big=config.global_batch,
            key=request.key, parent=request.parent, start_iteration=start.iteration,
            start_seconds=start.seconds)


@pytest.fixture(autouse=True)
def cheap_statistics(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests check the search's logic, not interval quality (tests.predictor.logic_only)."""
    logic_only(monkeypatch)


def run_search(budget: Budget, target: float = 0.03) -> ColdStartSearch:
    search = ColdStartSearch(SPACE, budget, target)
    cluster = SyntheticCluster()
    while requests := search.ask():
        for request in requests:
            search.tell(cluster.run(request, target))
    return search


LONG = Budget(probe_seconds=10.0, probe_max_iterations=20, max_probes=40, max_overhead=0.5)


@pytest.fixture(scope="module", name="search")
def long_search() -> ColdStartSearch:
    """The long job's finished search (``LONG``), built once for the tests that only read it: each
    build is most of such a test's time."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        logic_only(monkeypatch)
        return run_search(LONG)


@pytest.mark.parametrize("max_probes", [1, 3, 12])
def test_probe_count_budget_respected(max_probes: int) -> None:
    search = run_search(Budget(probe_seconds=10.0, probe_max_iterations=20, max_probes=max_probes))
    assert len(search.study.probes) <= max_probes


@pytest.mark.parametrize("max_cluster_seconds", [0.05, 0.2, 1.0])
def test_cluster_seconds_budget_respected(max_cluster_seconds: float) -> None:
    budget = Budget(probe_seconds=10.0, probe_max_iterations=20, max_probes=100,
                    max_cluster_seconds=max_cluster_seconds)
    assert run_search(budget).study.cluster_seconds() <= max_cluster_seconds + 1e-9


def test_a_long_job_warms_up_once_and_forks_candidates_from_its_end(search: ColdStartSearch) -> None:
    assert search.study.fork is not None, "a job this long must get a warm-up"
    forks = [r for r in search.study.probes if r.parent == search.study.fork.key]
    assert len({r.config.key() for r in forks}) >= 2
    assert all(r.start_iteration == search.study.fork.iteration for r in forks)
    plan = search.plan("s")
    if plan.warmup is not None:
        assert plan.warmup.iterations == search.study.fork.iteration
        assert plan.warmup.config == search.study.warmup_config
        assert search.study.baseline is not None and search.study.baseline.nodes == SPACE.nodes


def test_the_study_costs_at_most_its_overhead_share_of_the_plan_beyond_its_warm_up(
        search: ColdStartSearch) -> None:
    """Once the plan's TTC is supported, no probe is started that would take the study past
    max_overhead × that TTC (the warm-up, run before anything is supported, is what it is)."""
    plan = search.plan("s")
    assert plan.confidence.supported
    study = search.study
    assert study.fork is not None
    warmup_cost = sum(r.seconds * r.config.devices / SPACE.devices for r in study.probes
                      if r.config == study.warmup_config and r.start_iteration < study.fork.iteration)
    assert study.cluster_seconds() - warmup_cost <= LONG.max_overhead * plan.predicted.ttc_seconds * 1.5


def test_a_warm_up_is_at_least_its_minimum_length_whatever_its_extrapolation_sizes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A curve read steady at its first probe still sizes nothing until it is WARMUP_MIN_PROBES
    probe lengths long: the budget its extrapolation sizes does not cut the warm-up short."""
    steady = RegimeReading(Regime.STEADY, 0.1, 0.08, 0.001)
    monkeypatch.setattr("predictor.search.read_view_regime", lambda view: steady)
    monkeypatch.setattr("predictor.search.drift", lambda curve, target: 1.0)
    budget = Budget(probe_seconds=10.0, probe_max_iterations=20, max_probes=40, max_overhead=0.001)
    search = run_search(budget)
    assert search.study.fork is not None
    assert search.study.fork.iteration >= WARMUP_MIN_PROBES * budget.probe_max_iterations


def test_a_warm_up_whose_hindcast_misses_has_not_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Steady and undrifting is not settled while the same extrapolation made earlier on the
    curve missed what was measured since: the warm-up goes on doubling until its hindcast holds
    (here from 320 iterations on), as the plan's confidence would not print its number before."""
    steady = RegimeReading(Regime.STEADY, 0.1, 0.08, 0.001)

    def drift(curve: list[tuple[int, float, float]], target: float) -> float:
        return 1.0

    def hindcast(curve: list[tuple[int, float, float]], target: float) -> Hindcast:
        return Hindcast(0.0, 1.0 if max(k for k, _, _ in curve) >= 320 else 2.0)

    monkeypatch.setattr("predictor.search.read_view_regime", lambda view: steady)
    monkeypatch.setattr("predictor.search.drift", drift)
    monkeypatch.setattr("predictor.search.hindcast", hindcast)
    budget = Budget(probe_seconds=10.0, probe_max_iterations=20, max_probes=40, max_overhead=0.001)
    search = run_search(budget)
    assert search.study.fork is not None
    assert search.study.fork.iteration >= 4 * WARMUP_MIN_PROBES * budget.probe_max_iterations


def test_a_job_shorter_than_its_probes_is_not_worth_tuning() -> None:
    """The first probe reaches the target: further probes cannot pay, so the search stops there."""
    search = run_search(Budget(probe_seconds=10.0, probe_max_iterations=400, max_probes=40), target=0.5)
    plan = search.plan("s")
    assert len(search.study.probes) == 1
    assert not plan.worth_tuning and "reached the target" in plan.worth_tuning_reason
    assert plan.confidence.level == "high"
    assert plan.to_dict()["worth_tuning"] is False


def test_a_job_the_evidence_shows_short_is_not_worth_tuning_before_any_probe_reaches() -> None:
    """No probe reaches the target, but the warm-up's confident prediction shows a run shorter than
    what the probes already cost over max_overhead: the search stops there and says so."""
    budget = Budget(probe_seconds=10.0, probe_max_iterations=100, max_probes=40, max_overhead=0.1)
    search = run_search(budget, target=0.05)
    plan = search.plan("s")
    assert all(r.reached_iteration is None for r in search.study.probes) and search.study.fork is None
    assert not plan.worth_tuning and "the evidence supports a run" in plan.worth_tuning_reason
    assert plan.confidence.confident
    assert search.study.cluster_seconds() >= budget.max_overhead * plan.predicted.ttc_seconds


def test_value_of_information_stops_probing_when_no_candidate_can_pay() -> None:
    """With a target so near that any probe costs more than it could save, nothing is forked beyond
    what every plan is measured against: the baseline, the recipe on its node, the warm-up continued
    on its device (and at the largest batch, and at its neighbouring rates), and the recipe's first
    asynchronous step (Omnivore's g = 2)."""
    budget = Budget(probe_seconds=10.0, probe_max_iterations=20, max_probes=40, max_overhead=1e-4)
    near = run_search(budget).study
    forks = {r.config.key() for r in near.probes if near.fork and r.parent == near.fork.key}
    assert near.baseline is not None and near.warmup_config is not None and near.recipe is not None
    steps = {c.key() for c in first_async_steps(near.recipe, near.space)}
    rates = {near.warmup_config.replace(lr=lr).key()
             for lr in adjacent(sorted(SPACE.learning_rates), near.warmup_config.lr)}
    own = {near.baseline.key(), near.recipe.key(), near.warmup_config.key(),
           near.warmup_config.replace(batch_size=max(SPACE.batch_sizes)).key()}
    assert steps and forks <= own | steps | rates


def first_fork_batch(space: SearchSpace) -> tuple[ColdStartSearch, set[str] | None]:
    """A long synthetic search run to its end, and the config keys of its first batch of forks."""
    search, cluster, first_batch = ColdStartSearch(space, LONG, 0.03), SyntheticCluster(), None
    while requests := search.ask():
        if first_batch is None and search.study.fork is not None:
            first_batch = {r.config.key() for r in requests if r.parent == search.study.fork.key}
        for request in requests:
            search.tell(cluster.run(request, 0.03))
    return search, first_batch


def test_the_first_forks_carry_the_recipes_first_asynchronous_step_and_its_largest_batch() -> None:
    """Where the warm-up spends the budget the first fork batch is the study's last, so Omnivore's
    g = 2 of the recipe is in it, beside the baseline and the recipe itself; and so is the warm-up's
    device at the largest batch (a batch that gained nothing early may near the floor)."""
    space = replace(SPACE, batch_sizes=(16, 64, 256))
    search, first_batch = first_fork_batch(space)
    assert first_batch is not None and search.study.recipe is not None
    steps = {c.key() for c in first_async_steps(search.study.recipe, space)}
    assert steps and steps <= first_batch
    assert search.study.warmup_config is not None and search.study.warmup_config.batch_size == 64
    assert search.study.warmup_config.replace(batch_size=256).key() in first_batch


def test_the_first_forks_compare_the_warm_ups_neighbouring_rates_past_the_transient() -> None:
    """The sweep ranks rates on curves still in their transient, which cannot rank them (issue 34):
    the warm-up's neighbouring rates are forked from its checkpoint, on its own device, in the first
    fork batch, so no rate is dropped on its first probe from scratch alone."""
    search, first_batch = first_fork_batch(SPACE)
    warmup = search.study.warmup_config
    assert first_batch is not None and warmup is not None
    neighbours = adjacent(sorted(SPACE.learning_rates), warmup.lr)
    assert neighbours and {warmup.replace(lr=lr).key() for lr in neighbours} <= first_batch


def test_the_plan_changes_the_baseline_only_for_a_5_percent_win(search: ColdStartSearch) -> None:
    plan = search.plan("s")
    prediction = plan.predicted
    assert math.isfinite(prediction.ttc_seconds) and prediction.ttc_seconds > 0
    assert prediction.ttc_low <= prediction.ttc_seconds <= prediction.ttc_high
    if plan.config != plan.baseline_config:
        assert prediction.ttc_seconds <= (1 - CHANGE_MARGIN) * plan.baseline_predicted_ttc_seconds
    assert plan.to_dict()["probes"]["count"] == len(search.study.probes)


def test_predictions_are_positive_and_finite_for_unprobed_configs(search: ColdStartSearch) -> None:
    assert search.study.model is not None
    probed = [v.config for v in search.study.views().values()]
    variants = [c.replace(nodes=n, batch_size=b) for c in probed if c.groups == 1
                for n in (1, 2) for b in (16, 64)]
    ttc = search.study.model.predict_many(variants)
    known = ttc[np.isfinite(ttc)]
    assert known.size > 0 and np.all(known > 0)


def test_a_diverged_probe_prunes_larger_steps_of_its_recipe(search: ColdStartSearch) -> None:
    diverged = [r.config for r in search.study.probes if r.diverged]
    assert diverged
    for config in diverged:
        bigger = [r.config for r in search.study.probes if r.config.strategy == config.strategy
                  and r.config.groups == config.groups and r.config.momentum >= config.momentum
                  and r.config.lr > config.lr and r.start_iteration >= 0]
        assert not [c for c in bigger if c.key() not in {d.key() for d in diverged}]


def test_the_ranking_explains_every_config_and_its_decision_values_put_the_plan_first(
        search: ColdStartSearch) -> None:
    from predictor.ranking import decision_values

    plan = search.plan("s")
    rows = plan.ranking
    assert rows[0]["status"] == "plan" and rows[0]["config_key"] == plan.config.key()
    assert {r["config_key"] for r in rows} == set(search.study.views())
    assert all(r["reason"] for r in rows)
    values = decision_values(search.study, plan.config.key())
    best = min((v, k) for k, v in values.items() if v is not None)[1]
    assert best == plan.evidence[-1]


def test_the_allocations_a_plan_may_use_are_timed_at_both_ends_of_the_batch_before_the_warm_up(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One device, the sweep's node, every node and their first asynchronous step, at the
    smallest and the largest batch (where the round's budget allows all of them): a few
    iterations each, from scratch, before the first fork, and none of them a lineage's evidence."""
    monkeypatch.setattr(timing_round, "TIMING_BUDGET", math.inf)
    search = run_search(LONG)
    first_fork = next(i for i, r in enumerate(search.study.probes) if r.parent is not None)
    timings = [r for r in search.study.timings.values() if search.study.probes.index(r) < first_fork]
    shapes = {(r.config.strategy, r.config.nodes, r.config.devices_per_node, r.config.groups,
               r.config.batch_size) for r in timings}
    expected = {(s, n, d, g, b) for s, n, d, g in [("sync", 1, 1, 1), ("sync", 1, 2, 1), ("sync", 2, 2, 1),
                                                     ("async_groups", 1, 2, 2), ("async_groups", 2, 2, 2)]
                for b in (16, 64)}
    # the sweep's node and its rates' one device ran these configs already
    swept = {(r.config.strategy, r.config.nodes, r.config.devices_per_node, r.config.groups,
              r.config.batch_size) for r in search.study.lineages.views(None).values()}
    assert ("sync", 1, 2, 1, 64) in swept and ("sync", 1, 1, 1, 64) in swept
    assert shapes == expected - swept
    assert all(r.parent is None for r in timings)
    assert all(r.iterations == timing_length(search.budget) for r in timings if not r.diverged)
    # after the first fork, only another strategy's allocation is timed (before its own fork)
    later = [r for r in search.study.timings.values() if r not in timings]
    assert all(r.config.strategy not in ("sync", "async_groups") for r in later)
    views = search.study.lineages.views(None)
    assert not any(r.probe_key == v.probe_key for r in search.study.timings.values() for v in views.values())
    assert not set(search.plan("s").evidence) & set(search.study.timings)


def test_the_timing_round_stops_once_it_has_spent_what_the_sweeps_first_probe_cost(
        search: ColdStartSearch) -> None:
    """Cheapest first at the speed predicted then; only the last timing may overshoot (it was
    predicted to fit), and what it left out (here every node's largest batch) is timed later
    only where a fork needs it."""
    study = search.study
    first = next(r for r in study.probes if r.parent is None)
    timings = list(study.timings.values())
    assert timings and study.cost_of(timings[:-1]) <= timing_round.TIMING_BUDGET * study.cost_of([first])
    assert len(timings) < 9  # not all of the round's shapes (the test above: all, unbounded)
    assert timings[0].config.devices == 1 and timings[0].config.batch_size == 16  # the cheapest first


def test_an_allocation_the_timing_round_left_out_is_timed_before_its_statistical_efficiency_is_probed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the timing round ran nothing (here: none at all), the baseline's allocation (every
    node) has no probe when the forks start: its first segment is a timing fork of a few
    iterations, and only its continuation measures how it learns."""
    monkeypatch.setattr(timing_round, "allocations_to_time", lambda sweep, space: [])
    search = run_search(LONG)
    assert search.study.baseline is not None and search.study.fork is not None
    chain = search.study.lineages.chain_of(search.study.fork.key, search.study.baseline.key())
    assert chain and chain[0].iterations == timing_length(search.budget) < LONG.probe_max_iterations
    assert all(s.parent == p.probe_key for p, s in zip(chain, chain[1:], strict=False))


def test_a_timed_allocation_that_cannot_pay_gets_no_probe_of_its_learning(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ColdStartSearch, "_worth", lambda self, configs, length: [])
    monkeypatch.setattr(timing_round, "allocations_to_time", lambda sweep, space: [])
    search = run_search(LONG)
    assert search.study.baseline is not None and search.study.fork is not None
    chain = search.study.lineages.chain_of(search.study.fork.key, search.study.baseline.key())
    assert [s.iterations for s in chain] == [timing_length(search.budget)]


def test_a_plan_with_no_number_on_a_forked_config_names_the_warm_up_it_was_measured_after(
        search: ColdStartSearch) -> None:
    """With nothing supported the plan is the best measured config; measured as a fork, it was
    measured after the warm-up, so the plan runs the warm-up first, as a supported forked plan does.
    The warm-up's own recipe, continued, is the warm-up itself and runs from scratch."""
    fork, recipe = search.study.fork, search.study.warmup_config
    assert fork is not None and recipe is not None
    views = search.study.views()
    forks = {k: v for k, v in views.items() if v.parent == fork.key and v.config != recipe}
    assert forks
    plan = plan_without_prediction(search.study, "s", forks)
    assert plan.confidence.level == "none" and plan.config.key() in forks
    assert plan.warmup is not None
    assert (plan.warmup.config, plan.warmup.iterations) == (recipe, fork.iteration)
    alone = plan_without_prediction(search.study, "s", {recipe.key(): views[recipe.key()]})
    assert alone.config == recipe and alone.warmup is None


def test_a_plan_with_no_number_says_how_long_its_run_was_measured_without_reaching(
        search: ColdStartSearch) -> None:
    """The seconds a plan's run was measured without reaching the target (its warm-up included)
    bound its TTC from below with no extrapolation; a run from scratch read off a fork was never
    measured, so it has no such bound."""
    fork, recipe = search.study.fork, search.study.warmup_config
    assert fork is not None and recipe is not None
    views = search.study.views()
    forks = {k: v for k, v in views.items()
             if v.parent == fork.key and v.config != recipe and v.reached_iteration is None}
    key, view = next(iter(forks.items()))
    plan = plan_without_prediction(search.study, "s", {key: view})
    assert plan.predicted.evidence_seconds == pytest.approx(view.end_seconds)
    assert plan.predicted.evidence_seconds > fork.seconds  # the warm-up's seconds are in it
    assert plan.to_dict()["predicted"]["evidence_seconds"] == pytest.approx(view.end_seconds)
    stored = Plan.from_dict(plan.to_dict())  # as the database keeps it
    assert stored.predicted.evidence_seconds == pytest.approx(view.end_seconds)
    continued = views[recipe.key()]
    alone = plan_without_prediction(search.study, "s", {recipe.key(): continued})
    assert alone.predicted.evidence_seconds == pytest.approx(continued.end_seconds)
    scratch = with_measured_bound(Prediction(1.0, 0.5, 2.0, 1e-3, 1000.0), view, None, recipe)
    assert math.isnan(scratch.evidence_seconds)


def test_the_warm_up_runs_the_sweeps_recipe_on_one_device_and_asynchrony_on_whole_nodes(
        search: ColdStartSearch) -> None:
    """A transient is moved by updates, and one device's update never communicates: the warm-up is
    the recipe on one device, from scratch to the fork point. Groups split a node's devices, so the
    asynchronous forks stay on whole nodes even where the one-device lineage leads."""
    recipe, warm_up, fork = search.study.recipe, search.study.warmup_config, search.study.fork
    assert recipe is not None and warm_up is not None and fork is not None
    assert recipe.devices_per_node == SPACE.devices_per_node
    assert warm_up == recipe.replace(devices_per_node=1)
    chain = search.study.lineages.chain_of(None, warm_up.key())
    assert chain[0].parent is None and chain[-1].probe_key == fork.key
    asynchronous = [r.config for r in search.study.probes if r.config.groups > 1]
    assert asynchronous and all(c.devices_per_node == SPACE.devices_per_node for c in asynchronous)


def sweep_probes(search: ColdStartSearch) -> list[ProbeResult]:
    """The first probe of every lineage from scratch, in the order run."""
    firsts = {chain[0].probe_key for chain in (search.study.lineages.chain_of(None, v.config.key())
                                                for v in search.study.lineages.views(None).values())}
    return [r for r in search.study.probes if r.probe_key in firsts]


def test_the_sweeps_other_rates_run_on_the_warm_ups_one_device_which_continues_the_best() -> None:
    """The middle rate on the node, the others on one device (a node's devices' fraction of the
    cost). Here the node's middle rate ends below every other rate's device probe, so its own
    device probe runs too, and the warm-up continues it."""
    search = run_search(LONG)
    middle = Config("sync", 1, SPACE.devices_per_node, batch_size=64, lr=0.1, momentum=0.9)
    sweep = sweep_probes(search)
    assert sweep[0].config == middle
    device = middle.replace(devices_per_node=1)
    devices = {r.config.lr: r for r in sweep[1:] if r.config == device.replace(lr=r.config.lr)}
    assert set(devices) == set(SPACE.learning_rates)
    assert not [r for r in sweep if r.config.devices_per_node > 1 and r.config.lr != middle.lr]
    chain = search.study.lineages.chain_of(None, search.study.warmup_config.key())
    assert search.study.warmup_config.lr == 0.1 and chain[0] is devices[0.1]
    recipe = search.study.recipe  # the recipe stays on the node, the baseline on every node
    assert recipe == middle and search.study.baseline == recipe.replace(nodes=SPACE.nodes)


def test_where_the_probe_count_binds_the_sweeps_rates_all_run_on_the_node() -> None:
    """Ten probes leave no room for a device sweep, the warm-up and its forks: a device probe
    saves nothing there, and each rate is read at the node's batch."""
    search = run_search(replace(LONG, max_probes=10))
    sweep = sweep_probes(search)
    on_the_node = {r.config.lr for r in sweep if r.config.devices_per_node == SPACE.devices_per_node}
    assert on_the_node == set(SPACE.learning_rates)


def test_another_strategy_on_an_allocation_no_probe_ran_is_timed_before_it_is_forked(
        search: ColdStartSearch) -> None:
    """HSGD on the incumbent's node: its speed there is the HE model's fit until it is timed (a few
    iterations from scratch, no lineage's evidence), and it is forked only after."""
    probes = search.study.probes
    timed = [r for r in search.study.timings.values() if r.config.strategy == "hsgd"]
    assert timed and all(r.parent is None for r in timed)
    first = min(probes.index(r) for r in timed)
    forks = [i for i, r in enumerate(probes) if r.config.strategy == "hsgd" and r.parent is not None]
    assert all(first < i for i in forks)


class TripledWhere(SyntheticCluster):
    """The probes ``where`` picks end three times higher: a config that is slow or unstable there."""

    def __init__(self, where) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.where = where

    def run(self, request: ProbeRequest, target: float) -> ProbeResult:
        result = super().run(request, target)
        if self.where(request):
            result.curve = [(k, t, 3 * loss) for k, t, loss in result.curve]
        return result


def test_a_middle_rate_a_device_probe_beat_on_the_node_gets_no_device_probe_of_its_own() -> None:
    search, cluster = ColdStartSearch(SPACE, LONG, 0.03), TripledWhere(  # the node's probes from scratch
        lambda r: r.config.devices_per_node > 1 and r.parent is None)
    while requests := search.ask():
        for request in requests:
            search.tell(cluster.run(request, 0.03))
    lrs = sorted(r.config.lr for r in sweep_probes(search) if r.config.devices_per_node == 1)
    assert lrs == [0.03, 0.3]
    assert search.study.warmup_config is not None and search.study.warmup_config.lr == 0.03


def test_a_one_device_warm_up_that_stops_descending_hands_over_to_the_recipe_on_its_node() -> None:
    search, cluster = ColdStartSearch(SPACE, LONG, 0.03), TripledWhere(  # one device's continuations
        lambda r: r.config.devices_per_node == 1 and r.parent is not None)
    while requests := search.ask():
        for request in requests:
            search.tell(cluster.run(request, 0.03))
    recipe, fork = search.study.recipe, search.study.fork
    assert recipe is not None and fork is not None
    device = recipe.replace(devices_per_node=1).key()
    one_device = [r for r in search.study.probes if r.probe_key in search.study.evidence_of(device)
                  and r.start_iteration < fork.iteration]
    assert len(one_device) == 3, "from scratch, then two doublings that ended higher than it began"
    assert search.study.warmup_config == recipe
    assert fork.key == search.study.lineages.chain_of(None, recipe.key())[-1].probe_key
    plan = search.plan("s")
    assert plan.warmup is None or plan.warmup.config == recipe


@dataclass
class _AheadStudy:
    """What ``_halving`` reads of a study whose forks are ahead of the warm-up continued and that no
    score ranks yet (every prediction open above)."""

    forks: dict[str, ProbeResult]
    noise: float = 0.01

    def __post_init__(self) -> None:
        self.predictions: dict[str, Prediction] = {}
        self.pruned: set[str] = set()
        self.fork = type("Fork", (), {"iteration": 100, "key": "warmup",
                                      "reference": type("Reference", (), {"noise": self.noise})})
        self.lineages = self

    def views(self) -> dict[str, ProbeResult]:
        return self.forks

    def ahead(self) -> set[str]:
        return set(self.forks)

    def score(self, config: Config) -> float:
        return math.inf

    def origin(self) -> str:
        return "warmup"

    def tip(self, origin: str, key: str) -> ProbeResult:
        return self.forks[key]

    def best_measured_ttc(self) -> float:
        return math.inf

    @property
    def segments(self) -> dict[str, ProbeResult]:
        return {}


def _ahead_fork(nodes: int, lr: float, loss: float, step: float) -> ProbeResult:
    config = Config("sync", nodes, 1, batch_size=16, lr=lr)
    return ProbeResult(config, 20, 20 * step, [(100, 0.0, 0.7), (120, 20 * step, loss)], [step] * 20,
                       key=f"{config.key()}#100", parent="warmup", start_iteration=100)


def test_halving_lengthens_the_cheapest_forks_ahead_that_the_noise_cannot_tell_from_the_lowest() -> None:
    """A cooler step drops the loss at once and then slows; until a fork ahead has run long enough
    for its own curve, no score bounds it, and halving measures it further: of those level with the
    lowest within the noise the cheapest per iteration, never one clearly above it."""
    forks = {f.config.key(): f for f in (
        _ahead_fork(2, 0.1, 0.450, step=3e-3),  # the lowest, on a slow allocation
        _ahead_fork(1, 0.1, 0.455, step=1e-4),  # level with it, and 30 times cheaper
        _ahead_fork(1, 0.03, 0.459, step=2e-4),
        _ahead_fork(1, 0.01, 0.600, step=1e-5),  # the cheapest, clearly above the lowest
    )}
    search = ColdStartSearch(SPACE, LONG, 0.3)
    search.study = _AheadStudy(forks)  # type: ignore[assignment]
    continued = next(search._halving())
    assert [r.config.key() for r in continued] == [
        Config("sync", 1, 1, batch_size=16, lr=lr).key() for lr in (0.1, 0.03)]
    assert all(r.max_iterations == 20 and r.parent == f"{r.config.key()}#100" for r in continued)
