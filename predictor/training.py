"""``ttc train``: the run itself as a lineage, re-planned at checkpoints (issue 13).

A one-shot plan is a bet made at iteration zero. Omnivore re-tunes as training proceeds, from the
model's current state, within about 10% of the run (Hadjis et al. 2016, §5); Pollux re-fits its
goodput model online (Qiao et al., OSDI 2021). Here the run continues from the best state the
study produced (the plan's own lineage: the warm-up and the plan's fork, never from scratch) in
checkpoint segments. At re-plan points the run's own curve becomes the reference
(predictor.reference_curve), a few neighbours of the current config are forked from the run's
checkpoint, and the run switches to a challenger predicted to finish the rest of the run ≥ 5%
sooner — continuing from the challenger's fork, whose iterations are not repeated.

Call order, as the search: ``ask()`` the next requests (one run segment, or a batch of forks),
run them, ``tell()`` each result; ``result()`` once ``done``. The first re-plan is at the run's
first checkpoint: a move the study could not try (a rate beyond the user's grid, an allocation
the cluster no longer favours) pays on every iteration left, and the run's curve is already as
long as the study's lineage it continues (with the first re-plan one checkpoint later,
``regression`` seed 1 and ``throttled_node`` took 10–19% longer in all). Later re-plan points
are geometric in the run's iterations (every doubling) — a long run is re-planned about log₂ as
often as a short one — plus any checkpoint at which the run's measured progress leaves the last
re-plan's 80% interval, or its speed leaves the 80% band of its previous segment (the cluster
changed under it: a node throttled, a link degraded — Pollux re-fits its throughput model online
for the same reason).
A neighbour whose allocation (strategy, nodes, devices, groups) nothing has run yet is timed by a short
fork first, so the re-plan's budget is spent at measured speeds; a move that diverged at an
earlier re-plan is not forked again. Near the loss floor, where an affordable fork's progress is
within the loss's noise, a fork is read by its measured speed (predictor.speed_first).
The re-plans' forks stay within ``max_overhead`` of the cluster-seconds the run has spent; the
study's own probes were held to ``max_overhead`` of the plan's predicted TTC. The result's
``ttc_seconds`` is the run's own seconds (its lineage from its first iteration: the study's
warm-up too, when the run continues it, since the run waits for it) plus every cluster-second of
tuning off that lineage (a probe's seconds × its share of the cluster's devices).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from predictor.async_step import first_async_steps
from predictor.daso_defaults import MAX_GLOBAL_SKIPS
from predictor.eta import eta_at
from predictor.fork_level import level_above
from predictor.he_model import allocation
from predictor.lineages import merge
from predictor.planning import plan_of
from predictor.reference_curve import ReferenceCurve
from predictor.se_model import Z80
from predictor.search import adjacent
from predictor.speed_first import by_speed, rest_of_run, unresolved
from predictor.study import Study, pack
from predictor.switch import sooner, switch_gain
from predictor.timing_round import timing_length
from predictor.ttc_model import ForkPoint, TtcModel, conservative, dynamics_class, finished
from predictor.types import Config, Prediction, ProbeRequest, ProbeResult, json_safe

CHECKPOINT_PROBES = 4  # a run segment is this many probe lengths: the most a crash can lose
FORK_SHARE = 16  # a re-plan's fork is this share of the run so far (at least a probe): deep in a
# run, progress over one probe length is lost in SGD's noise, and a fork must outlast it to rank
SPEED_CHANGE = math.log(1.2)  # a segment's speed moving less than 20% is never a changed cluster


@dataclass
class TrainingPhase:
    """One stretch of the run with one config (DESIGN.md §7 *Training result*)."""

    config: Config
    iterations: int = 0
    cluster_seconds: float = 0.0
    loss_in: float = math.nan
    loss_out: float = math.nan
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return json_safe({"config": self.config.to_dict(), "iterations": self.iterations,
                          "cluster_seconds": self.cluster_seconds, "loss_in": self.loss_in,
                          "loss_out": self.loss_out, "reason": self.reason})


@dataclass
class TrainingResult:
    reached: bool
    ttc_seconds: float
    tuning_cluster_seconds: float
    iterations: int
    final_loss: float
    phases: list[TrainingPhase] = field(default_factory=list)
    eta: list[dict[str, Any]] = field(default_factory=list)  # predictor.eta, one per checkpoint

    def to_dict(self) -> dict[str, Any]:
        return json_safe({
            "reached": self.reached, "ttc_seconds": self.ttc_seconds,
            "tuning_cluster_seconds": self.tuning_cluster_seconds, "iterations": self.iterations,
            "final_loss": self.final_loss, "phases": [p.to_dict() for p in self.phases], "eta": self.eta,
        })


class TrainingPlanner:
    def __init__(self, study: Study, max_iterations: int = 1_000_000) -> None:
        """``study``: the finished study (its plan, lineages and probes), whose ledger the re-plans
        are charged to."""
        self.study = study
        self.space, self.budget, self.target = study.space, study.budget, study.target
        self.max_iterations = max_iterations
        self.length = self.budget.probe_max_iterations
        plan = plan_of(study, "training")
        probed = study.lineages.segments[plan.evidence[-1]].config if plan.evidence else plan.config
        self.run: list[ProbeResult] = self._plan_lineage(probed)  # the run's segments so far
        self.tuning: list[ProbeResult] = [p for p in study.probes if p not in self.run]
        self.study_tuning = study.cost_of(self.tuning)  # held to the study's own budget
        planned = next((s for s in self.run if s.config.key() == probed.key()), None)  # after a warm-up
        self.reasons: dict[str, str] = {planned.probe_key: "the study's plan"} if planned else {}
        self._pending: dict[str, ProbeRequest] = {}
        self._replan: tuple[ProbeResult, list[ProbeResult]] | None = None  # (tip, forks told)
        self._last_replan = self._end_iteration()
        self._replan_at = self._last_replan + CHECKPOINT_PROBES * self.length  # the first checkpoint
        self._band: tuple[float, float] | None = None  # 80% interval of the run's TTC, last re-plan
        self._behind: set[str] = set()  # configs whose fork ended clearly above the run's loss
        self._within_noise = False  # the last re-plan's continuation progressed within the loss's noise
        # the forecast of the time left at each checkpoint, from the warm-up's segments where the
        # study read one there (predictor.study)
        self.eta: list[dict[str, Any]] = [study.warmup_eta[s.probe_key] for s in self.run
                                          if s.probe_key in study.warmup_eta]
        self.reading: Prediction | None = plan.predicted  # the pooled model's latest TTC of the run
        self.after_knee = bool(plan.target and plan.target["after_knee"])  # where the plan's target sits

    # -- the run's lineage ------------------------------------------------------------------------
    def _plan_lineage(self, config: Config) -> list[ProbeResult]:
        """The segments of the plan's lineage: the warm-up (if the plan forked from it) and the
        plan's own segments, from the study's records."""
        study = self.study
        chain = study.lineages.chain_of(study.origin(), config.key())
        if study.fork is not None and chain and chain[0].parent == study.fork.key:
            recipe = study.warmup_config
            warmup = study.lineages.chain_of(None, recipe.key()) if recipe else []
            return [s for s in warmup if s.end_iteration <= study.fork.iteration] + chain
        return chain or study.lineages.chain_of(None, config.key())

    def _view(self) -> ProbeResult:
        return merge(self.run)

    def _end_iteration(self) -> int:
        return self.run[-1].end_iteration if self.run else 0

    @property
    def done(self) -> bool:
        if not self.run:
            return True
        view = self._view()
        return bool(view.reached_iteration is not None or view.diverged or view.error
                    or view.end_iteration >= self.max_iterations)

    def tuning_cluster_seconds(self) -> float:
        return self.study.cost_of(self.tuning)

    def run_cluster_seconds(self) -> float:
        return self.study.cost_of(self.run)

    # -- ask / tell -----------------------------------------------------------------------------------
    def ask(self) -> list[ProbeRequest]:
        if self.done or self._pending:
            return []
        tip = self.run[-1]
        length = min(CHECKPOINT_PROBES * self.length, self.max_iterations - tip.end_iteration)
        requests = []
        changed = self.speed_changed()
        if tip.end_iteration >= self._replan_at or self._left_band() or changed:
            speed_first = changed or self._within_noise
            if timings := self._timing_requests(tip, allocation_first=speed_first):
                self._pending = {r.key: r for r in timings}  # the re-plan itself follows them
                return timings
            forks = self._replan_requests(tip, allocation_first=speed_first)
            self._last_replan, self._replan_at = tip.end_iteration, 2 * tip.end_iteration
            if forks:  # the incumbent is measured the same way: continued as long as the forks
                length = forks[0].max_iterations
                self._replan = (tip, [])
                requests += forks
        requests.insert(0, ProbeRequest(tip.config, math.inf, length, tip.probe_key, tip.end_iteration))
        self._pending = {r.key: r for r in requests}
        return requests

    def tell(self, result: ProbeResult) -> None:
        """``result`` answers one pending request: the one of its key, or the one it continues in
        the asker's place (a resume replaying a longer segment committed under a higher cap)."""
        request = self._pending.pop(result.probe_key, None)
        if request is None and (same := same_segment(self._pending.values(), result)) is not None:
            request = self._pending.pop(same.key)
        if request is not None and request.forks:
            self.tuning.append(result)
        else:
            self.run.append(result)
            entry = eta_at(self.run, self.target, self.study.priors, self.reading, after_knee=self.after_knee)
            if entry is not None:
                self.eta.append(entry)
        if self._replan is not None:
            self._replan[1].append(result)
            if not self._pending:
                self._decide(*self._replan)
                self._replan = None

    # -- re-planning ----------------------------------------------------------------------------------
    def _left_band(self) -> bool:
        """The run's time to the target, re-read on its own longer curve, has left the 80% interval
        the last re-plan gave it (checked at most once per re-plan interval's half)."""
        tip = self.run[-1]
        halfway = (self._last_replan + self._replan_at) / 2
        if self._band is None or tip.end_iteration < halfway:
            return False
        reference = ReferenceCurve.fit(self._view().curve, self.target, samples=0)
        if reference is None:
            return False
        remaining = float(reference.iteration_at(self.target)[0]) - tip.end_iteration
        estimate = tip.end_seconds + max(remaining, 0.0) * tip.steady_seconds_per_iteration
        return not self._band[0] <= estimate <= self._band[1]

    def speed_changed(self) -> bool:
        """The last segment ran outside the 80% speed band of the one before it, on the same config
        (the HE model's residual spread, at least SPEED_CHANGE; DASO's skips and DBS's rebalancing
        move less): the speed the plan was made for no longer holds."""
        if len(self.run) < 2 or self.run[-2].config.key() != self.run[-1].config.key():
            return False
        model = self.study.model
        sigma = model.he.sigma if model is not None and model.he is not None else 0.0
        before, now = self.run[-2].steady_seconds_per_iteration, self.run[-1].steady_seconds_per_iteration
        if before <= 0 or now <= 0:
            return False
        return abs(math.log(now / before)) > max(Z80 * sigma, SPEED_CHANGE)

    def _replan_requests(self, tip: ProbeResult, allocation_first: bool) -> list[ProbeRequest]:
        """Forks of the current config's neighbours from the run's checkpoint, within the budget.
        The budget is for the most promising move the room affords at half the length or more:
        when the room falls short of it, every fork is shortened to what the room affords it
        (rather than spending the room on the moves behind it). A move the room cannot afford even
        at half the length passes the budget to the next: a fork's length grows with the run, and
        on ``throttled_node`` no move fitted at full length from iteration 14,476 on, so a run
        levelled off above the target went 15,000 iterations without a re-plan."""
        length = max(self.length, tip.end_iteration // FORK_SHARE)
        neighbours, room = self.neighbours(tip.config, allocation_first), self._room()
        for config in neighbours:
            cost = self.cost(self._fork_request(tip, config, length))
            if cost <= room:
                break
            if room > 0 and (affordable := int(length * room / cost)) >= length // 2:
                length = affordable
                break
        return self._affordable_forks(tip, neighbours, length)

    def _timing_requests(self, tip: ProbeResult, allocation_first: bool) -> list[ProbeRequest]:
        """Short forks that time the neighbours whose allocation (strategy, nodes, devices, groups) no
        segment has run, one per allocation: the HE model's speed for them rests on links fitted
        from other patterns (a parameter server's pushes from a ring's timings), and a fork's cost
        is read from it. The re-plan proper follows with the speeds measured."""
        measured = {allocation(r.config) for r in (*self.study.probes, *self.run, *self.tuning)}
        unmeasured: dict[tuple[str, int, int], Config] = {}
        for config in self.neighbours(tip.config, allocation_first):
            if allocation(config) not in measured:
                unmeasured.setdefault(allocation(config), config)
        return self._affordable_forks(tip, list(unmeasured.values()), timing_length(self.budget))

    def _affordable_forks(self, tip: ProbeResult, configs: list[Config], length: int) -> list[ProbeRequest]:
        """Forks of ``configs`` (in order) from the run's checkpoint, ``length`` iterations each,
        as many as the re-plan budget still holds."""
        room = self._room()
        forks = (self._fork_request(tip, config, length) for config in configs)
        return pack(forks, self.cost, lambda _: room)

    def _fork_request(self, tip: ProbeResult, config: Config, length: int) -> ProbeRequest:
        return ProbeRequest(config, self.budget.probe_seconds * length / self.length, length,
                            tip.probe_key, tip.end_iteration)

    def _room(self) -> float:
        """Cluster-seconds the re-plans may still spend: max_overhead of the run's own."""
        spent = self.tuning_cluster_seconds() - self.study_tuning
        return self.budget.max_overhead * self.run_cluster_seconds() - spent

    def cost(self, request: ProbeRequest) -> float:
        """Expected cluster-seconds: at the speed a segment of this config measured, else the HE
        model's, else the run's."""
        speed = self.run[-1].steady_seconds_per_iteration
        model = self.study.model
        timed = [r for r in (*self.run, *self.tuning) if r.config.key() == request.config.key()]
        if timed:
            speed = timed[-1].steady_seconds_per_iteration
        elif model is not None and (estimate := model.speed(request.config)) is not None:
            speed = estimate.value
        return self.study.share(speed * request.max_iterations, request.config)

    def neighbours(self, config: Config, allocation_first: bool = False) -> list[Config]:
        """Omnivore's re-tuning moves around the current config, most promising first: g (from a synchronous
        run, its first asynchronous step: Omnivore's primary knob), learning rate (the side the evidence
        points to first) and momentum, the batch size with the rate scaled linearly, then at the same rate
        (a larger batch at one rate cools the run as a lower rate does: Smith et al., ICLR 2018), DASO's
        skips, then the configs the run came through (a switch that stopped paying is undone; the run left
        each on a comparison from a checkpoint, and on ``regression`` re-measuring the warm-up's recipe
        first took the first re-plan's only affordable fork), then the node count (at the rate scaled with
        the global batch, which holds SGD's noise temperature and so its floor, then at the same rate).
        After the cluster's speed changed, when the allocation is what stopped holding, and once a re-plan's
        forks progress within the loss's noise, when only a move of speed can win (predictor.speed_first),
        the node count comes first and the configs the run came through next (e.g. a warm-up's 1-node recipe
        left for a cluster that then slowed). A move whose fork ended clearly above the run's loss at an
        earlier re-plan comes last: a tight budget goes to the untried."""
        space = self.space
        came_through = [segment.config for segment in reversed(self.run)]
        moves = []
        lrs, momenta = sorted(space.learning_rates), sorted(space.momenta)
        moves += self._group_moves(config)
        moves += [config.replace(lr=config.lr * f) for f in self.rate_steps(config)
                  if lrs[0] / 3 <= config.lr * f <= lrs[-1] * 3]
        moves += [config.replace(momentum=m) for m in adjacent(momenta, config.momentum)]
        for batch in adjacent(sorted(space.batch_sizes), config.batch_size):
            moved = config.replace(batch_size=batch)  # as a node move: the rate scaled, then the same
            moves += [moved.replace(lr=config.lr * batch / config.batch_size), moved]
        if config.strategy == "daso":
            skips = int(config.options.get("max_global_skips", MAX_GLOBAL_SKIPS))
            moves += [config.replace(options={**config.options, "max_global_skips": s})
                      for s in (skips // 2, skips * 2) if s >= 1]
        allocation = []
        for nodes in adjacent(space.node_counts(), config.nodes):
            if config.groups == 1 or (nodes * config.devices_per_node) % config.groups == 0:
                moved = config.replace(nodes=nodes)  # the global batch scales with the nodes
                # the rate scaled with it first: the noise temperature, and so the floor, held
                allocation += [moved.replace(lr=config.lr * nodes / config.nodes), moved]
        out = allocation + came_through + moves if allocation_first else moves + came_through + allocation
        diverged = {r.config.key() for r in self.tuning if r.diverged}  # forked from this run before
        out = [c for c in out if c.key() not in self._behind] + [c for c in out if c.key() in self._behind]
        return list({c.key(): c for c in out if c.key() != config.key() and c.key() not in diverged}.values())

    def rate_steps(self, config: Config) -> tuple[float, float]:
        """The rate's two moves, the side the evidence points to first (a re-plan often has room
        for one fork): up, unless the study or the run saw a rate of ``config``'s dynamics class
        above its own, up to the doubled one, diverge, or the study's sweep from scratch ran a
        higher rate and chose one no higher than ``config``'s (the trend turned at or below it).
        The model reads rates the same way: a larger step needs no more iterations until it
        diverges (``TtcModel.lr_exponent`` ≥ 0). Down first had ``plateau`` fork half the rate at
        its one re-plan, when double the rate reached the target 20–27% sooner."""
        higher = [r for r in (*self.study.probes, *self.tuning)
                  if dynamics_class(r.config) == dynamics_class(config) and r.config.lr > config.lr]
        recipe = self.study.recipe
        turned = recipe is not None and recipe.lr <= config.lr and any(r.parent is None for r in higher)
        diverged = any(r.diverged and r.config.lr <= 2 * config.lr for r in higher)
        return (0.5, 2.0) if turned or diverged else (2.0, 0.5)

    def _group_moves(self, config: Config) -> list[Config]:
        """Omnivore's g, one step either way; a synchronous run may take the first asynchronous
        step (predictor.async_step)."""
        if config.strategy == "async_groups":
            return [config.replace(groups=g) for g in (config.groups // 2, config.groups * 2)
                    if g >= 2 and config.devices % g == 0]
        return first_async_steps(config, self.space)

    def _decide(self, tip: ProbeResult, told: list[ProbeResult]) -> None:
        """Switch to the best fork when it is predicted to finish ≥ 5% sooner than the incumbent's
        own continuation (point and risk-aware score), both read against the run's curve up to the
        re-plan point. The margin is on the rest of the run: the seconds before the re-plan are
        common to both, and no switch changes them (on the whole run's seconds the margin would
        grow with the run's age, until a late re-plan could not switch at all). A continuation
        whose own progress is within the noise is read on the run's curve, and a fork whose
        progress is within it by its measured speed (predictor.speed_first). A fork whose loss
        ends clearly above the continuation's, after the same iterations from the same
        checkpoint, is not switched to: its later half may be a recovery from the switch, which
        its rate reads as fast progress (on ``throttled_node`` one device at lr 0.1 ended at
        twice the run's loss, was read as 17% sooner, and never reached the target)."""
        run_before = self.run[: self.run.index(tip) + 1]
        reference = ReferenceCurve.fit(merge(run_before).curve, self.target)
        if reference is None:
            return
        fork = ForkPoint(reference, tip.end_iteration, tip.end_seconds, tip.probe_key, tip.config)
        views = [r for r in told if not r.diverged and not r.error]
        model = TtcModel(views, self.target, fork=fork, timings=self.study.probes + self.run + self.tuning,
                         gradients=self.study.learning_probes() + self.run + self.tuning)
        continued = next((r for r in views if r.config.key() == tip.config.key()), None)
        speed = model.speed(tip.config)
        if continued is None or speed is None:
            return
        self._within_noise = tip.config.key() in model.on_reference or unresolved(model.predict(tip.config))
        rest = rest_of_run(model, reference, continued)
        incumbent = self.reading = finished(continued, speed, rest)
        self._band = (incumbent.ttc_low, incumbent.ttc_high)
        scored = []
        for r in (r for r in views if r is not continued):
            prediction, read_by_speed = model.predict(r.config), False
            if level_above(r, continued, reference.noise):
                self._behind.add(r.config.key())
                continue
            if unresolved(prediction):
                prediction, read_by_speed = by_speed(model, r, continued, rest), True
            if prediction is not None:
                scored.append((conservative(prediction), prediction, r, read_by_speed))
        if not scored:
            return
        _, challenger, best, read_by_speed = min(scored, key=lambda item: item[0])
        gain = switch_gain(incumbent.after(tip.end_seconds), challenger.after(tip.end_seconds))
        if gain is None:
            return
        self.run.remove(continued)
        self.tuning.append(continued)
        self.tuning.remove(best)
        self.run.append(best)
        self._band = (challenger.ttc_low, challenger.ttc_high)  # the run now answers to its prediction
        self.reading = None if read_by_speed else challenger  # read by speed, no time is claimed
        self.reasons[best.probe_key] = f"re-plan at iteration {tip.end_iteration}: " + (
            f"{speed.value / challenger.seconds_per_iteration:.1f}× the run's measured speed per iteration; "
            "its progress was within the loss's noise, so its statistical efficiency was taken as the "
            "run's at best (no time to the target is claimed)" if read_by_speed else
            f"predicted to reach the target {sooner(gain)}")

    # -- phases and the result -----------------------------------------------------------------------
    def phases(self) -> list[TrainingPhase]:
        """The run's segments grouped into phases of one config, with why each began; the first
        phase's loss in is the run's first evaluation (at iteration 0)."""
        phases: list[TrainingPhase] = []
        previous = self.run[0].curve[0][2] if self.run and self.run[0].curve else math.nan
        for segment in self.run:
            if not phases or segment.config.key() != phases[-1].config.key():
                reason = self.reasons.get(segment.probe_key, "the study's warm-up" if not phases else "")
                phases.append(TrainingPhase(segment.config, loss_in=previous, reason=reason))
            phase = phases[-1]
            phase.iterations += segment.iterations
            phase.cluster_seconds += self.study.cost_of([segment])
            phase.loss_out = previous = segment.final_loss
        return phases

    def result(self) -> TrainingResult:
        view = self._view()
        reached = view.reached_iteration is not None
        tuning = self.tuning_cluster_seconds()
        return TrainingResult(
            reached=reached,
            ttc_seconds=(view.reached_seconds + tuning) if reached and view.reached_seconds else math.inf,
            tuning_cluster_seconds=tuning,
            iterations=int(view.reached_iteration if reached else view.end_iteration),
            final_loss=view.final_loss, phases=self.phases(), eta=list(self.eta),
        )


def same_segment(requests: Iterable[ProbeRequest], result: ProbeResult) -> ProbeRequest | None:
    """The request ``result`` also answers: the same config from the same parent and iteration,
    of another length (only a run's own continuation: a resumed training whose cap moved asks a
    segment of another length than the one committed, and the committed one stands)."""
    return next((r for r in requests if not r.forks and r.parent == result.parent
                 and r.config.key() == result.config.key() and r.start_iteration == result.start_iteration),
                None)
