"""The training planner on the synthetic lineage cluster: it continues the study's best state,
re-plans within its overhead budget, and reports one timeline."""

from __future__ import annotations

import copy
import functools
import math
from typing import Any

import pytest

from predictor.he_model import allocation
from predictor.planning import plan_of
from predictor.prior_path import FinishedRun
from predictor.se_model import Estimate
from predictor.search import ColdStartSearch
from predictor.switch import sooner, switch_gain
from predictor.timing_round import timing_length
from predictor.training import (
    CHECKPOINT_PROBES,
    FORK_SHARE,
    TrainingPlanner,
    same_segment,
)
from predictor.types import Budget, Prediction, ProbeRequest, ProbeResult
from tests.predictor.test_search import SPACE, SyntheticCluster, cheap_statistics  # noqa: F401

TARGET = 0.03


@functools.cache
def _studied(max_overhead: float) -> tuple[ColdStartSearch, SyntheticCluster]:
    budget = Budget(probe_seconds=10.0, probe_max_iterations=20, max_probes=40, max_overhead=max_overhead)
    search = ColdStartSearch(SPACE, budget, TARGET)
    cluster = SyntheticCluster()
    while requests := search.ask():
        for request in requests:
            search.tell(cluster.run(request, TARGET))
    return search, cluster


@functools.cache
def _trained(max_overhead: float) -> tuple[ColdStartSearch, TrainingPlanner]:
    search, cluster = studied(max_overhead)
    planner = TrainingPlanner(search.study)
    while requests := planner.ask():
        for request in requests:
            planner.tell(cluster.run(request, TARGET))
    return search, planner


def _copy(pair: tuple[ColdStartSearch, Any]) -> tuple[ColdStartSearch, Any]:
    """A copy to change; the finished search's stage generator (exhausted) cannot be copied, and
    is shared."""
    stages = pair[0]._stages
    return copy.deepcopy(pair, {id(stages): stages})


def studied(max_overhead: float = 0.1) -> tuple[ColdStartSearch, SyntheticCluster]:
    """The finished study, and the cluster that keeps its probes' end states. Both are
    deterministic, so each overhead is studied once and every test gets its own copy to change."""
    return _copy(_studied(max_overhead))


def trained(max_overhead: float = 0.1) -> tuple[ColdStartSearch, TrainingPlanner]:
    """The study and the training run that continues it, trained once per overhead (as studied)."""
    return _copy(_trained(max_overhead))


def test_the_run_continues_the_study_and_reaches_the_target() -> None:
    search, planner = trained()
    result = planner.result()
    assert result.reached and math.isfinite(result.ttc_seconds)
    plan = search.plan("s")
    assert planner.run[0].start_iteration == 0 and planner.run[0].parent is None  # from the study's own probe
    probes = search.study.probes
    assert all(s in probes for s in planner.run[: len(planner.run) - 1] if s.start_iteration == 0)
    # every cluster-second counted once: the run's lineage time plus all tuning
    run_seconds = planner._view().reached_seconds
    assert result.ttc_seconds == pytest.approx(run_seconds + result.tuning_cluster_seconds)
    assert result.phases[0].config.key() in {plan.config.key(), search.study.warmup_config.key()}
    reasons = {p.config.key(): p.reason for p in result.phases}
    assert reasons.get(plan.config.key(), "the study's plan") == "the study's plan"


def test_a_plan_forked_from_the_warm_up_is_named_as_such_in_the_timeline(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run's first phase is the study's warm-up and the next the plan's fork, each named."""
    search, _ = studied()
    plan = search.plan("s")
    forked = copy.copy(search.study.lineages.segments[plan.evidence[-1]])
    warmup = copy.copy(forked)
    warmup.config, warmup.key, forked.key = forked.config.replace(lr=forked.config.lr / 2), "warm", "fork"
    monkeypatch.setattr(TrainingPlanner, "_plan_lineage", lambda self, config: [warmup, forked])
    phases = TrainingPlanner(search.study).phases()
    assert [p.reason for p in phases] == ["the study's warm-up", "the study's plan"]


def test_re_planning_never_spends_more_than_its_overhead_share_of_the_run() -> None:
    """The re-plans' forks within ``max_overhead`` of the run's cluster-seconds (the study's own
    share of the plan's predicted TTC is test_search's)."""
    for share in (0.05, 0.2):
        search, planner = trained(max_overhead=share)
        replans = [r for r in planner.tuning if r not in search.study.probes]
        assert replans or share == 0.05
        assert search.study.cost_of(replans) <= share * planner.run_cluster_seconds() + 1e-9


def test_the_first_re_plan_comes_at_the_run_s_first_checkpoint() -> None:
    """One run segment after the study's lineage, the next ask forks neighbours from its end."""
    search, cluster = studied(max_overhead=0.2)
    planner = TrainingPlanner(search.study)
    start = planner.run[-1].end_iteration
    (segment,) = planner.ask()
    assert segment.max_iterations == CHECKPOINT_PROBES * search.budget.probe_max_iterations
    planner.tell(cluster.run(segment, TARGET))
    requests = planner.ask()
    assert any(r.forks for r in requests)
    assert {r.start_iteration for r in requests} == {start + segment.max_iterations}


def test_a_switch_keeps_the_fork_s_progress_and_says_why() -> None:
    _, planner = trained(max_overhead=0.2)
    result = planner.result()
    switched = [p for p in result.phases[1:] if p.reason.startswith("re-plan")]
    for phase in switched:
        assert phase.iterations > 0 and phase.loss_in <= result.phases[0].loss_out  # continues, not restarts
    first = result.phases[0]
    assert first.loss_in == planner.run[0].curve[0][2] and first.loss_in > first.loss_out  # from the start
    payload = result.to_dict()
    assert set(payload) == {"reached", "ttc_seconds", "tuning_cluster_seconds", "iterations", "final_loss",
                            "phases", "eta"}
    assert all(set(p) == {"config", "iterations", "cluster_seconds", "loss_in", "loss_out", "reason"}
               for p in payload["phases"])


def test_re_planning_can_undo_a_switch_the_run_made() -> None:
    """The configs the run came through are forked again at a re-plan (first after a change of
    speed), so a switch that stopped paying — say the warm-up's 1-node recipe left for the full
    cluster — can be undone; otherwise they follow Omnivore's own moves."""
    _, planner = trained()
    planner._behind.clear()  # no earlier re-plan's verdict reorders them (the next test's rule)
    current = planner.run[-1].config
    earlier = copy.copy(planner.run[0])
    earlier.config = current.replace(nodes=1, lr=current.lr * 7)  # no move of one step reaches it
    planner.run.insert(0, earlier)
    came_through = list(dict.fromkeys(s.config.key() for s in reversed(planner.run)
                                      if s.config.key() != current.key()))
    neighbours = [c.key() for c in planner.neighbours(current)]
    assert earlier.config.key() in came_through and current.key() not in neighbours
    moves = [c.key() for c in planner.neighbours(current, allocation_first=True)]
    start = moves.index(came_through[0])  # after the node counts
    assert moves[start: start + len(came_through)] == came_through
    assert any(k not in came_through for k in neighbours[: neighbours.index(earlier.config.key())])


def test_a_change_of_speed_triggers_a_re_plan_that_tries_other_allocations_first() -> None:
    """A node that throttles mid-run shows as the run's segment slowing against the one before it
    (same config): that checkpoint re-plans, and node counts come before the other moves."""
    _, planner = trained(max_overhead=0.5)
    tip = planner.run[-1]
    steady = copy.copy(tip)
    steady.step_seconds = list(tip.step_seconds)
    slowed = copy.copy(tip)
    slowed.step_seconds = [3 * s for s in tip.step_seconds]
    slowed.seconds = 3 * tip.seconds
    planner.run += [steady]
    assert not planner.speed_changed()
    planner.run += [slowed]
    assert planner.speed_changed()
    config = slowed.config
    moves = planner.neighbours(config, allocation_first=True)
    other_nodes = [c for c in moves if c.nodes != config.nodes and c.strategy == config.strategy
                   and c.batch_size == config.batch_size and c.momentum == config.momentum]
    assert other_nodes and moves[: len(other_nodes)] == other_nodes
    diverged = {r.config.key() for r in planner.tuning if r.diverged}
    for nodes in {c.nodes for c in other_nodes}:  # the rate scaled with the batch first, then the same
        offered = [c.lr for c in other_nodes if c.nodes == nodes]
        expected = [config.lr * nodes / config.nodes, config.lr]
        assert offered == [lr for lr in expected if config.replace(nodes=nodes, lr=lr).key() not in diverged]


def test_a_batch_move_forks_the_rate_scaled_then_the_same_rate() -> None:
    """A per-device batch move changes the global batch as a node move does, and is offered the
    same two ways: the linear scaling rule's rate (the noise temperature held), then the same rate
    (a cooler or hotter run, as a lower or higher rate: Smith et al. 2018)."""
    _, planner = trained(max_overhead=0.5)
    config = planner.run[-1].config
    moves = [c for c in planner.neighbours(config) if c.replace(batch_size=config.batch_size, lr=config.lr)
             == config and c.batch_size != config.batch_size]
    assert moves
    for batch in sorted({c.batch_size for c in moves}):
        offered = [c.lr for c in moves if c.batch_size == batch]
        assert offered == [config.lr * batch / config.batch_size, config.lr]


@pytest.mark.parametrize(("incumbent", "challenger", "switches"), [
    ((1.0, 1.2), (0.8, 0.9), True),            # ahead on the point and the risk-aware score
    ((1.0, 1.2), (0.8, 5.0), False),           # ahead on the point only: an uncertain extrapolation
    ((1.0, math.inf), (0.5, 0.7), True),       # the incumbent's own interval unbounded: its point is the bar
    ((1.0, math.inf), (0.7, 30.0), False),     # ...which a wildly uncertain challenger does not clear
    ((math.inf, math.inf), (0.7, 0.9), True),  # the incumbent is measured never to reach
    ((math.inf, math.inf), (0.7, math.inf), False),
    ((1.0, 1.2), (0.97, 1.0), False),          # within the 5% margin
])
def test_a_switch_needs_evidence_not_just_an_unbounded_incumbent(
    incumbent: tuple[float, float], challenger: tuple[float, float], switches: bool
) -> None:
    def prediction(point: float, high: float) -> Prediction:
        return Prediction(point, point / 2, high, 1e-3, point * 1e3)

    gain = switch_gain(prediction(*incumbent), prediction(*challenger))
    assert (gain is not None) == switches
    assert gain is None or 0 < gain <= 1


def test_a_resume_replays_a_longer_committed_segment_in_place_of_a_shorter_ask() -> None:
    """A training resumed under a lower cap asks a shorter run segment than the one committed; the
    committed one answers it (it ran, and its parent's state may be gone), and the run moves on."""
    search, cluster = studied()
    planner = TrainingPlanner(search.study)
    (asked,) = planner.ask()
    longer = ProbeRequest(asked.config, asked.seconds, 2 * asked.max_iterations, asked.parent,
                          asked.start_iteration)
    committed = cluster.run(longer, TARGET)
    assert committed.probe_key != asked.key and same_segment([asked], committed) is asked
    planner.tell(committed)
    assert not planner._pending and planner.run[-1] is committed
    fork = ProbeRequest(asked.config.replace(lr=asked.config.lr / 2), 1.0, asked.max_iterations,
                        asked.parent, asked.start_iteration)
    assert same_segment([fork], committed) is None  # a fork is another config, never the same segment


def test_a_re_plan_times_each_unmeasured_allocation_before_forking_it() -> None:
    """A neighbour whose allocation (strategy, nodes, groups) no segment ran is first timed by a
    short fork, so the re-plan's budget is spent at measured speeds, not at the HE model's guess;
    the re-plan proper follows once the timings are told."""
    search, cluster = studied(max_overhead=0.5)
    planner = TrainingPlanner(search.study)
    tip = planner.run[-1]
    other = next(c for c in planner.neighbours(tip.config) if c.nodes != tip.config.nodes)
    search.study.probes = [r for r in search.study.probes if allocation(r.config) != allocation(other)]
    planner.tuning = [r for r in planner.tuning if allocation(r.config) != allocation(other)]
    planner._replan_at = 0  # a re-plan is due now
    timings = planner.ask()
    assert timings and {allocation(r.config) for r in timings} == {allocation(other)}
    assert len(timings) == 1  # one allocation, timed once
    assert all(r.forks and r.max_iterations == timing_length(search.budget) and r.parent == tip.probe_key
               for r in timings)
    for request in timings:
        planner.tell(cluster.run(request, TARGET))
    replan = planner.ask()
    assert replan[0].config.key() == tip.config.key() and not replan[0].forks  # the run goes on
    assert any(r.forks and r.max_iterations > timing_length(search.budget) for r in replan)


def test_a_fork_s_cost_is_read_at_the_speed_its_config_measured() -> None:
    _, planner = trained(max_overhead=0.5)
    timed = planner.tuning[-1]
    request = ProbeRequest(timed.config, 1.0, 100, planner.run[-1].probe_key, planner.run[-1].end_iteration)
    expected = timed.steady_seconds_per_iteration * 100 * timed.config.devices / planner.space.devices
    assert planner.cost(request) == pytest.approx(expected)


def test_a_synchronous_run_may_take_the_first_asynchronous_step() -> None:
    """Omnivore's g among the moves: g = 2 at the run's momentum, and at the momentum that keeps
    μ + 1 − 1/g where it was."""
    _, planner = trained()
    planner.tuning = [r for r in planner.tuning if not r.diverged]
    config = planner.run[-1].config.replace(strategy="sync", groups=1, momentum=0.9, options={})
    steps = [c for c in planner.neighbours(config) if c.strategy == "async_groups"]
    assert {(c.groups, c.momentum) for c in steps} == {(2, 0.9), (2, 0.5)}


def test_a_move_that_diverged_at_an_earlier_re_plan_is_not_forked_again() -> None:
    _, planner = trained()
    config = planner.run[-1].config
    move = planner.neighbours(config)[0]
    failed = copy.copy(planner.run[-1])
    failed.config, failed.diverged = move, True
    planner.tuning.append(failed)
    assert move.key() not in {c.key() for c in planner.neighbours(config)}


def test_moves_found_behind_the_run_go_last() -> None:
    """A move whose fork ended clearly above the run's loss at an earlier re-plan is still offered
    (the run moves on), but after every untried one: a tight budget goes to the untried."""
    _, planner = trained()
    planner._behind.clear()  # the training's own re-plans may have found some behind already
    config = planner.run[-1].config
    moves = planner.neighbours(config)
    planner._behind.add(moves[0].key())
    reordered = planner.neighbours(config)
    assert [c.key() for c in reordered] == [c.key() for c in moves[1:] + moves[:1]]


def test_once_forks_progress_within_the_noise_a_re_plan_tries_allocations_first(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """Then only a move of speed can win (predictor.speed_first), so allocation moves lead."""
    search, _ = studied()
    seen: list[bool] = []
    for within_noise in (False, True):
        planner = TrainingPlanner(search.study)
        planner._replan_at, planner._within_noise = 0, within_noise
        monkeypatch.setattr(planner, "_timing_requests", lambda tip, allocation_first: [])
        monkeypatch.setattr(planner, "_replan_requests",
                            lambda tip, allocation_first: seen.append(allocation_first) or [])
        planner.ask()
    assert seen == [False, True]


@pytest.mark.parametrize("share", [0.75, 0.3])
def test_the_most_promising_move_is_shortened_to_fit_the_room_down_to_half(
    share: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    search, _ = studied()
    planner = TrainingPlanner(search.study)
    tip = planner.run[-1]
    length = max(planner.length, tip.end_iteration // FORK_SHARE)
    first = planner.neighbours(tip.config)[0]
    full = planner.cost(planner._fork_request(tip, first, length))
    monkeypatch.setattr(planner, "_room", lambda: share * full)
    forks = planner._replan_requests(tip, allocation_first=False)
    if share >= 0.5:
        assert forks[0].config.key() == first.key() and forks[0].max_iterations == int(length * share)
    else:
        assert all(f.config.key() != first.key() and length // 2 <= f.max_iterations <= length for f in forks)


def test_a_move_the_room_cannot_afford_at_half_passes_the_budget_to_the_next(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """No move fits the room at full length: the first fits at a tenth, the second at 0.625 of it,
    so the second is forked, shortened (before, nothing was, and the run went on unplanned)."""
    search, _ = studied()
    planner = TrainingPlanner(search.study)
    tip = planner.run[-1]
    length = max(planner.length, tip.end_iteration // FORK_SHARE)
    first, second = planner.neighbours(tip.config)[:2]
    per_length = {first.key(): 10.0, second.key(): 1.6}
    monkeypatch.setattr(planner, "cost", lambda request: per_length.get(request.config.key(), 100.0)
                        * request.max_iterations / length)
    monkeypatch.setattr(planner, "_room", lambda: 1.0)
    forks = planner._replan_requests(tip, allocation_first=False)
    assert [(f.config.key(), f.max_iterations) for f in forks] == [(second.key(), int(length / 1.6))]


def _one_challenger(monkeypatch: pytest.MonkeyPatch, resolved: bool
                    ) -> tuple[TrainingPlanner, ProbeResult, ProbeResult, ProbeResult, Prediction]:
    """A re-plan with the run's continuation and one challenger on twice the nodes, predicted
    (``resolved``: by its own reading, else by speed) to finish far sooner."""
    search, _ = studied()
    planner = TrainingPlanner(search.study)
    tip = planner.run[-1]
    continued, challenger = copy.copy(tip), copy.copy(tip)
    continued.start_iteration = challenger.start_iteration = tip.end_iteration
    challenger.config = tip.config.replace(nodes=tip.config.nodes * 2)
    planner.run.append(continued)
    planner.tuning.append(challenger)
    fast = Prediction(0.5, 0.4, 0.6, 0.5e-3, 1e3)

    class Model:
        origin_iteration = tip.end_iteration
        on_reference: set[str] = set()

        def __init__(self, *args: object, **kwargs: object) -> None: ...

        def predict(self, config: object) -> Prediction:
            if config == challenger.config:
                return fast if resolved else Prediction(0.5, 0.4, math.inf, 0.5e-3, 1e3)
            return Prediction(9.0, 8.0, 10.0, 1e-3, 1e3)

        def speed(self, config: object) -> Estimate:
            return Estimate(1e-3, 1e-3, 1e-3)

    monkeypatch.setattr("predictor.training.TtcModel", Model)
    monkeypatch.setattr("predictor.training.rest_of_run", lambda *args: Estimate(1e4, 9e3, 1.1e4))
    monkeypatch.setattr("predictor.training.by_speed", lambda *args: fast)
    return planner, tip, continued, challenger, fast


@pytest.mark.parametrize("resolved", [True, False])
def test_after_a_switch_the_run_answers_to_the_challenger_s_interval(
    resolved: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The band whose leaving triggers a re-plan is the prediction of the config the run now runs.
    A switch read by speed (the fork's own reading unbounded) states the measured speed ratio and
    claims no time to the target."""
    planner, tip, continued, challenger, fast = _one_challenger(monkeypatch, resolved)
    planner._decide(tip, [continued, challenger])
    assert planner.run[-1] is challenger and planner._band == (fast.ttc_low, fast.ttc_high)
    reason = planner.reasons[challenger.probe_key]
    if resolved:
        assert "time continuing would take" in reason
    else:
        assert "2.0× the run's measured speed" in reason and "no time to the target is claimed" in reason


@pytest.mark.parametrize("resolved", [True, False])
def test_a_fork_that_ends_clearly_above_the_run_is_never_switched_to(
    resolved: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind the run after the same iterations from the same checkpoint, a fork's fast reading may
    be its recovery from the switch: the run continues, and the move goes last next time."""
    planner, tip, continued, challenger, _ = _one_challenger(monkeypatch, resolved)
    monkeypatch.setattr("predictor.training.level_above", lambda fork, *args: fork is challenger)
    planner._decide(tip, [continued, challenger])
    assert planner.run[-1] is continued and challenger.probe_key not in planner.reasons
    assert challenger.config.key() in planner._behind


def test_the_rate_moves_go_the_way_the_evidence_points_first() -> None:
    """Up first while nothing above the rate failed; down first when the study's sweep ran a
    higher rate from scratch and chose one no higher, or when the doubled rate diverged."""
    _, planner = trained()
    recipe = planner.study.recipe
    planner.study.probes = [p for p in planner.study.probes if p.config.lr <= recipe.lr]  # none above ran
    planner.tuning = [p for p in planner.tuning if p.config.lr <= recipe.lr]
    assert planner.rate_steps(recipe) == (2.0, 0.5)
    swept = copy.copy(next(p for p in planner.study.probes if p.parent is None))
    swept.config, swept.diverged = recipe.replace(lr=recipe.lr * 3), False
    planner.study.probes.append(swept)  # the sweep ran a higher rate and chose the recipe's
    assert planner.rate_steps(recipe) == (0.5, 2.0)
    below = recipe.replace(lr=recipe.lr / 8)
    assert planner.rate_steps(below) == (2.0, 0.5)  # below the sweep's winner: the trend points up
    failed = copy.copy(planner.run[-1])
    failed.config, failed.diverged = below.replace(lr=below.lr * 2), True
    planner.tuning.append(failed)
    assert planner.rate_steps(below) == (0.5, 2.0)


def test_the_switch_margin_is_on_the_rest_of_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Late in a run, a challenger that finishes the rest 10% sooner is taken, though that is
    under 0.1% of the whole run's seconds: only the rest is the switch's to change."""
    planner, tip, continued, challenger, _ = _one_challenger(monkeypatch, resolved=True)
    elapsed = 1000.0
    for segment in (tip, continued, challenger):
        segment.start_seconds = elapsed - segment.seconds
    late = Prediction(elapsed + 9.0, elapsed + 8.9, elapsed + 9.1, 0.9e-3, 1e3)  # the run: + 10 [9, 11]
    monkeypatch.setattr("predictor.training.TtcModel.predict",
                        lambda self, config: late if config == challenger.config else None)
    planner._decide(tip, [continued, challenger])
    assert planner.run[-1] is challenger
    assert "sooner than continuing" in planner.reasons[challenger.probe_key]


@pytest.mark.parametrize(("gain", "words"), [
    (0.27, "27% sooner than continuing"),
    (0.998, "in 0.002× the time continuing would take"),
])
def test_a_switch_s_gain_reads_true_near_100_percent(gain: float, words: str) -> None:
    assert sooner(gain) == words


def _finished(planner: TrainingPlanner) -> FinishedRun:
    """A finished run, as ``ttc train`` records it for a later study's prior."""
    return FinishedRun.of_lineage(planner.run, planner.target, planner._view().reached_iteration)


def test_the_eta_starts_in_the_warm_up_with_a_finished_run_of_the_job_or_without() -> None:
    """The study reads ``ttc train``'s ETA at each warm-up segment the run continues, first in the
    run's list: alone (predictor.eta.TRANSIENT_FORM), or with the finished run of the same job as a prior."""
    search, planner = trained()
    alone = [s for s in planner.run if s.probe_key in search.study.warmup_eta]
    assert alone and alone[0].start_iteration == 0
    assert planner.eta[:len(alone)] == [search.study.warmup_eta[s.probe_key] for s in alone]
    budget = Budget(probe_seconds=10.0, probe_max_iterations=20, max_probes=40, max_overhead=0.1)
    again = ColdStartSearch(SPACE, budget, TARGET, priors=(_finished(planner),))
    cluster = SyntheticCluster()
    while requests := again.ask():
        for request in requests:
            again.tell(cluster.run(request, TARGET))
    assert plan_of(search.study, "first").priors == 0 and plan_of(again.study, "again").priors == 1
    rerun = TrainingPlanner(again.study)
    target = plan_of(again.study, "again").target
    assert target is not None and rerun.after_knee is target["after_knee"]  # which clock reads the prior
    warmup = [s for s in rerun.run if s.probe_key in again.study.warmup_eta]
    assert warmup and warmup[0].start_iteration == 0
    assert rerun.eta == [again.study.warmup_eta[s.probe_key] for s in warmup]
    assert all(e["iteration"] <= again.study.fork.iteration for e in rerun.eta)
    assert all(0 <= e["remaining_p10"] <= e["remaining_p50"] for e in rerun.eta)
