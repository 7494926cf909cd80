"""Omnivore's cold start (Hadjis et al. 2016, §5) for long runs, driven through Optuna's ask/tell.

Call order: ``ask()`` returns the next batch of probes (run them in parallel), ``tell()`` each
result, and repeat until ``ask()`` returns an empty list; then ``plan()``.

A plan is for a run hundreds of probes long, and the study's whole cost is held to
``budget.max_overhead`` of the plan's predicted TTC (issue 11). Stages, each a batch:

  1. **sweep** — the baseline's recipe (``sync``, μ = 0.9) on *one node* (the fewest the search
     space allows: ``search.nodes``) at the middle learning rate from scratch; the other rates
     only when the job is long enough to pay for them. One node: its ring never crosses the
     network, and the recipe's rate is judged at the batch the plan's candidates run. A job whose
     probes cost more than tuning may spend of the TTC a probe measured or a confident prediction
     shows is *not worth tuning* (``worth_tuning`` False).
  2. **warm-up** — the best sweep probe's recipe on *one device* from scratch, its length doubling,
     until its curve is in its slow regime (predictor.regime) and long enough to fit; its end is
     the fork point and its curve the reference (predictor.reference_curve). One device: a
     transient is moved by updates, and one device's update never communicates and occupies the
     least of the cluster. Where one device stops descending (a doubling loses ground beyond
     its noise, or diverges: its small batch is unstable at the rate), the recipe on its node warms
     up instead. The first forks, what every plan is measured against: the baseline proper (``sync``
     on all devices at the warm-up's rate), the recipe on its node, the warm-up continued (and at
     the largest batch), and the recipe's first asynchronous step (g = 2, predictor.async_step).
     An allocation no probe has run is *timed* first (an eighth of a probe): the HE model's speed
     for a pattern it never measured rests on links fitted from others, and a full-cluster probe
     on a slow network costs more than the rest of the study. Its learning is probed (the timing
     fork continued) only if it is worth it.
  3. **forks** from the warm-up's checkpoint, each a probe long, so each config's statistical
     efficiency is measured where the long run spends its time: learning rate and momentum of
     the baseline; Omnivore's asynchrony ladder (g = 2, 4, …; μ per g keeping μ + 1 − 1/g near the
     baseline's; climb while it pays ≥ 10%); the other strategies (DASO past its warm-up epochs,
     HSGD with SGD and LARS, DBS); then node counts and batch sizes predicted by the pooled model.
  4. **successive halving** — the leaders' forks are continued (each rung doubles a fork) while
     the ranking between them is in doubt or the leader's prediction extrapolates far.

Every candidate must be worth its probe: its expected improvement over the incumbent plan
(predictor.value) must exceed the probe's cluster-seconds, and the study's cost must stay within
``max_overhead`` × the incumbent's predicted TTC, ``max_cluster_seconds`` and ``max_probes``.
A probe is cut at the best TTC measured so far: past it, it can no longer win. A diverged probe
prunes its recipe's larger steps. Each probe reports its loss curve to an Optuna pruner; pruned
lineages are not continued. The plan keeps the baseline unless a challenger wins by ≥ 5% (by the
risk-aware score of predictor.ttc_model.conservative), runs from scratch when its warm-up is the
slow part (predictor.from_scratch), and says how far its prediction can be trusted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import replace
from typing import TypeVar

import optuna

from predictor.async_step import async_ladder, first_async_steps
from predictor.confidence import MAX_DRIFT, assess
from predictor.forecast import Curve
from predictor.from_scratch import FROM_SCRATCH, from_scratch
from predictor.he_model import allocation
from predictor.lineages import Lineages, merge
from predictor.no_number import plan_without_prediction, with_measured_bound
from predictor.plan_choice import best, planned
from predictor.plan_forecast import plan_forecast
from predictor.ranking import ranking
from predictor.reference_curve import ReferenceCurve, drift, hindcast
from predictor.regime import Regime, read_view_regime, went_backwards
from predictor.run_length import with_run_length
from predictor.trial_space import PRUNER_STEPS, record_trial, report_curve
from predictor.ttc_model import ForkPoint, TtcModel, conservative, recipe
from predictor.types import (
    Budget,
    Confidence,
    Config,
    Phase,
    Plan,
    Prediction,
    ProbeRequest,
    ProbeResult,
    SearchSpace,
    json_safe,
)
from predictor.value import expected_improvement

T = TypeVar("T")

BASELINE_MOMENTUM = 0.9
SWEEP_ROUNDS = 2
SWEEP_WIDTH = 3  # configurations confirmed per sweep round
WARMUP_MIN_PROBES = 4  # the warm-up is at least this many probe lengths (a curve to fit)
WARMUP_MAX_DOUBLINGS = 6
HALVING_WIDTH = 2  # lineages continued per rung of successive halving
HALVING_RUNGS = 4
TIMING_SHARE = 8  # an unmeasured allocation is first timed for this share of a probe...
TIMING_MIN_ITERATIONS = 4  # ...and at least this many iterations (its steady half is measured)
LARS_LR_FACTOR = 10.0  # LARS's global rate is on another scale (You et al. 2017): η*·10 is probed too


class ColdStartSearch:
    def __init__(
        self, space: SearchSpace, budget: Budget, target: float, study: optuna.Study | None = None,
        priors: tuple[Curve, ...] = (),
    ) -> None:
        """``priors``: finished runs' curves of the same job, which the plan's forecast reads
        (predictor.forecast); they never change which config is planned."""
        self.space = space
        self.priors = priors
        self.budget = budget
        self.target = target
        self.study = study or optuna.create_study(
            direction="minimize",
            pruner=optuna.pruners.MedianPruner(n_startup_trials=4, n_warmup_steps=PRUNER_STEPS // 4),
        )
        self.lineages = Lineages()
        self.probes: list[ProbeResult] = []  # every segment run: the study's cost
        self.predictions: dict[str, Prediction] = {}  # by config key, in the current epoch
        self.pruned: set[str] = set()  # config keys
        self.model: TtcModel | None = None
        self.fork: ForkPoint | None = None
        self.baseline: Config | None = None  # sync on all devices: what a challenger must beat by 5%
        self.recipe: Config | None = None  # the sweep's best: sync on one node at its best rate
        self.warmup_config: Config | None = None  # the recipe on one device: the warm-up's config
        self.worth_tuning_reason = ""
        self._fits: dict = {}
        self._trials: dict[str, optuna.trial.Trial] = {}  # by probe key
        self._pending: dict[str, ProbeRequest] = {}  # by probe key
        self._asked: set[str] = set()
        self._diverged: list[Config] = []
        self._unsettled: set[str] = set()  # warm-up segments asked before its curve settled
        self._done = False
        self._stages = self._plan_stages()

    # -- ask / tell ----------------------------------------------------------------------------
    def ask(self) -> list[ProbeRequest]:
        """The next batch to probe; empty when the search is over (or the budget is spent)."""
        if self._pending or self._done:
            return []
        for batch in self._stages:
            unique = {r.key: r for r in batch if r.key not in self._asked}
            fresh = self._affordable(list(unique.values()))
            if fresh:
                for request in fresh:
                    self._asked.add(request.key)
                    self._pending[request.key] = request
                    self._trials[request.key] = record_trial(self.study, self.space, request)
                return fresh
        self._done = True
        return []

    def tell(self, result: ProbeResult) -> None:
        key = result.probe_key
        request = self._pending.pop(key, None)
        self.probes.append(result)
        self.lineages.add(result, starts_epoch=self.fork is not None and result.parent == self.fork.key)
        if result.diverged:
            self._diverged.append(result.config)
        self._refit()
        trial = self._trials.pop(key, None) or record_trial(
            self.study, self.space, request or self._scratch(result.config))
        trial.set_user_attr("final_loss", result.final_loss)
        trial.set_user_attr("reached_iteration", result.reached_iteration)
        prediction = self.predictions.get(result.config.key())
        if result.diverged or result.error or prediction is None:
            reason = result.error or ("diverged" if result.diverged else "its curve supports no prediction")
            trial.set_user_attr("prune_reason", reason)
            self.pruned.add(result.config.key())
            self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            return
        trial.set_user_attr("score", json_safe(conservative(prediction)))
        level = result.parent is None or (self.fork is not None and result.parent == self.fork.key)
        if level and report_curve(trial, result, self.budget.probe_max_iterations):  # they start level
            trial.set_user_attr("prune_reason", "pruner: loss behind the median at equal probe progress")
            self.pruned.add(result.config.key())
        self.study.tell(trial, min(conservative(prediction), 1e300))

    def stop(self) -> None:
        """End the search early (deadline or cancel); ``plan()`` uses what was measured."""
        self._done = True

    # -- bookkeeping -----------------------------------------------------------------------------
    def _origin(self) -> str | None:
        return self.fork.key if self.fork else None

    def views(self) -> dict[str, ProbeResult]:
        """Config key → its merged lineage in the current epoch."""
        return self.lineages.views(self._origin())

    def _refit(self) -> None:
        views = self.views()
        self.model = TtcModel(list(views.values()), self.target, self._fits, self.fork, self.probes)
        self.predictions = {}
        for key, view in views.items():
            prediction = self.model.predict(view.config)
            if prediction is not None and not view.diverged:
                self.predictions[key] = prediction

    def predict(self, config: Config) -> Prediction | None:
        return self.model.predict(config) if self.model is not None else None

    def cluster_seconds(self) -> float:
        """Probe seconds × the share of the cluster's devices each probe occupied (DESIGN.md §7)."""
        return self._cost_of(self.probes)

    def _cost_of(self, probes: Iterable[ProbeResult]) -> float:
        return sum(r.seconds * r.config.devices / self.space.devices for r in probes)

    # -- budget -------------------------------------------------------------------------------------
    def best_measured_ttc(self) -> float:
        reached = [r.reached_seconds for r in self.probes if r.reached_seconds is not None]
        return min(reached, default=math.inf)

    def incumbent_ttc(self) -> float:
        """The plan's predicted TTC now (the best measured one when lower)."""
        key = self._choice()
        predicted = self.predictions[key].ttc_seconds if key else math.inf
        return min(predicted, self.best_measured_ttc())

    def supported_ttc(self) -> float:
        """The incumbent's TTC where the evidence supports a number (else the best measured one):
        an extrapolation of a transient is optimistic many-fold and must not size the budget."""
        key = self._choice()
        supported = key is not None and self.confidence_of(key).supported
        return min(self.predictions[key].ttc_seconds if supported else math.inf, self.best_measured_ttc())

    def allowed_cost(self) -> float:
        """Cluster-seconds the whole study may spend now: its overhead share of the incumbent's
        supported TTC, else of its point prediction (a transient's extrapolation is optimistic, so
        the budget errs small), else no share (nothing is predicted yet)."""
        ttc = self.supported_ttc()
        allowed = self.budget.max_overhead * (ttc if math.isfinite(ttc) else self.incumbent_ttc())
        if self.budget.max_cluster_seconds is not None:
            allowed = min(allowed, self.budget.max_cluster_seconds)
        return allowed if math.isfinite(allowed) else (self.budget.max_cluster_seconds or math.inf)

    def _probe_cost(self, request: ProbeRequest) -> float:
        """Expected cluster-seconds of a probe: its iterations at the predicted speed, capped."""
        speed = self.model.speed(request.config) if self.model is not None else None
        seconds = request.seconds
        if speed is not None and math.isfinite(speed.value):
            seconds = min(seconds, speed.value * request.max_iterations)
        return seconds * request.config.devices / self.space.devices

    def _affordable(self, requests: list[ProbeRequest]) -> list[ProbeRequest]:
        """The batch trimmed to the probe count and the cost the study may still spend (a warm-up
        segment before its curve settles answers to the hard caps only: nothing sizes the run yet)."""
        left = self.budget.max_probes - len(self.probes)
        spent = self.cluster_seconds()
        cap = self.budget.max_cluster_seconds if self.budget.max_cluster_seconds is not None else math.inf
        room = self.allowed_cost() - spent
        kept = []
        for request in requests:
            cost = self._probe_cost(request)
            limit = cap - spent if request.key in self._unsettled else room
            if len(kept) >= left or cost > limit:
                continue
            kept.append(request)
            room -= cost
            spent += cost
        return kept

    def _worth(self, configs: list[Config], length: int) -> list[Config]:
        """The candidates whose expected improvement beats their probe's cost, best value first."""
        incumbent = self.incumbent_ttc()
        scored = []
        for config in configs:
            if self._excluded(config):
                continue
            gain = expected_improvement(incumbent, self.predict(config))
            cost = self._probe_cost(self._request(config, length, self._origin()))
            if gain > cost:
                scored.append((-(gain / max(cost, 1e-300)), config.key(), config))
        return [config for *_, config in sorted(scored)]

    def _excluded(self, config: Config) -> bool:
        """A larger step of a diverged recipe, or a config outside the cluster."""
        if config.nodes > self.space.nodes or config.devices_per_node > self.space.devices_per_node:
            return True
        return any(
            recipe(config)[:2] == recipe(d)[:2] and config.momentum >= d.momentum and config.lr >= d.lr
            and config.optimizer == d.optimizer for d in self._diverged
        )

    # -- requests ------------------------------------------------------------------------------------
    def _request(self, config: Config, length: int, parent: str | None, start: int = 0) -> ProbeRequest:
        """A probe of ``length`` iterations, cut at the best TTC measured so far (it cannot win past it)."""
        segment = self.lineages.segments.get(parent) if parent else None
        start_seconds = segment.end_seconds if segment else 0.0
        seconds = self.budget.probe_seconds * max(length / self.budget.probe_max_iterations, 1.0)
        best = self.best_measured_ttc()
        if math.isfinite(best):
            seconds = min(seconds, max(best - start_seconds, 0.0) * 1.0001)
        return ProbeRequest(config, seconds, length, parent, start)

    def _scratch(self, config: Config) -> ProbeRequest:
        return self._request(config, self.budget.probe_max_iterations, None)

    def _fork(self, config: Config, length: int | None = None) -> ProbeRequest:
        assert self.fork is not None
        return self._request(config, length or self.budget.probe_max_iterations, self.fork.key,
                             self.fork.iteration)

    def _continue(self, tip: ProbeResult, length: int) -> ProbeRequest:
        return self._request(tip.config, length, tip.probe_key, tip.end_iteration)

    # -- the stages ------------------------------------------------------------------------------
    def _plan_stages(self) -> Iterator[list[ProbeRequest]]:
        space = self.space
        sizes = sorted(space.batch_sizes)
        lrs = sorted(space.learning_rates)
        middle = Config("sync", space.node_counts()[0], space.devices_per_node,
                        batch_size=sizes[len(sizes) // 2], lr=lrs[len(lrs) // 2], momentum=BASELINE_MOMENTUM)
        # 1. sweep: the middle rate first; the others only if the job turns out long enough
        yield [self._scratch(middle)]
        if self._short_job():
            return
        yield [self._scratch(middle.replace(lr=lr)) for lr in lrs if lr != middle.lr]
        if self._short_job():
            return
        alive = [v for v in self.lineages.views(None).values() if not v.diverged and not v.error]
        if not alive:
            return
        # equal-length probes of one recipe from scratch: the lowest loss warms up best
        best = min(alive, key=lambda v: v.final_loss)
        self.recipe = best.config
        self.warmup_config = best.config.replace(devices_per_node=1)
        self.baseline = best.config.replace(nodes=space.node_counts()[-1])
        # 2. warm-up
        yield from self._warm_up(best)
        if self._short_job() or self.fork is None:
            return
        # 3. forks
        yield from self._fork_stages()
        # 4. successive halving
        yield from self._halving()

    def _short_job(self) -> bool:
        """True (and the search ends) when the run is known short and tuning cannot pay: the study
        has already spent what ``max_overhead`` of the best TTC a probe measured, or a confident
        prediction (predictor.confidence; a transient's extrapolation is optimistic), allows."""
        key, measured = self._choice(), self.best_measured_ttc()
        best = measured
        if key is not None and self.confidence_of(key).confident:
            best = min(best, self.predictions[key].ttc_seconds)
        if not math.isfinite(best):
            return False
        spent, allowed = self.cluster_seconds(), self.budget.max_overhead * best
        if spent < allowed:
            return False
        how = "a probe reached the target in" if best == measured else "the evidence supports a run of"
        self.worth_tuning_reason = (
            f"{how} {best:.4g} s; the {len(self.probes)} probes already cost "
            f"{spent:.4g} cluster-seconds ({spent / best:.2g}× that run), more than the "
            f"{self.budget.max_overhead:.0%} tuning may spend")
        self._done = True
        return True

    def _score(self, config: Config) -> float:
        prediction = self.predictions.get(config.key())
        return conservative(prediction) if prediction else math.inf

    def _warm_up(self, sweep: ProbeResult) -> Iterator[list[ProbeRequest]]:
        """Stage 2 (module docstring). Until the curve settles nothing can size the overhead budget
        (a transient's extrapolation is optimistic many-fold), so only the hard caps and
        WARMUP_MAX_DOUBLINGS bound it: a job whose warm-up reaches the target was too short to tune."""
        assert self.warmup_config is not None and self.recipe is not None
        one_device = self.warmup_config != self.recipe
        descended = yield from self._lineage_warm_up(self.warmup_config, sweep, must_descend=one_device)
        if not descended and not self._done:
            self.warmup_config = self.recipe
            yield from self._lineage_warm_up(self.recipe, sweep, must_descend=False)
        chain = self.lineages.chain_of(None, self.warmup_config.key())
        if self._done or not chain or len(self.probes) >= self.budget.max_probes:  # a short job: no fork
            return
        view, last = merge(chain), chain[-1]
        if view.reached_iteration is not None or view.diverged:
            return
        reference = ReferenceCurve.fit(view.curve, self.target)
        if reference is None:
            return
        self.fork = ForkPoint(reference, last.end_iteration, last.end_seconds, last.probe_key, last.config)
        self._refit()

    def _lineage_warm_up(self, config: Config, sweep: ProbeResult,
                         must_descend: bool) -> Generator[list[ProbeRequest], None, bool]:
        """``config``'s lineage from scratch (the sweep's own probe, when it is the sweep's config),
        continued, doubling, until it settles, reaches the target or the budget ends. False when it
        ``must_descend`` and stopped: a doubling that lost ground beyond its noise, or diverged."""
        length = self.budget.probe_max_iterations
        key = config.key()
        if not self.lineages.chain_of(None, key):
            first = self._request(config, sweep.iterations, None)
            self._unsettled.add(first.key)  # nothing is settled yet: only the hard caps bound it
            yield [first]
            if self._short_job():
                return True
        for doubling in range(WARMUP_MAX_DOUBLINGS + 1):
            chain = self.lineages.chain_of(None, key)
            if not chain:  # the budget cut its first probe
                return True
            view = merge(chain)
            if must_descend and (view.diverged or went_backwards(chain)):
                return False
            if view.reached_iteration is not None or view.diverged or view.error or (
                    doubling == WARMUP_MAX_DOUBLINGS):
                return True
            # shorter than WARMUP_MIN_PROBES lengths, a curve that reads steady still sizes nothing: on
            # throttled_node (seed 3) a 100-iteration warm-up extrapolated a run 40x too short,
            # the budget sized by it stopped the study after 6 probes
            settled = read_view_regime(view).regime is Regime.STEADY and self._read(drift, view) <= MAX_DRIFT
            if settled and view.end_iteration >= WARMUP_MIN_PROBES * length:
                return True
            segment = self._continue(chain[-1], view.end_iteration)
            self._unsettled.add(segment.key)
            yield [segment]
            if self._short_job():
                return True
        return True

    def _fork_stages(self) -> Iterator[list[ProbeRequest]]:
        """Stage 3 (module docstring): candidates forked from the warm-up, each worth its probe."""
        assert self.baseline is not None and self.fork is not None
        base, space = self.baseline, self.space
        length = self.budget.probe_max_iterations
        # the baseline (the warm-up's recipe on every node) and the warm-up's recipe continued as it
        # is, on its own nodes: on a slow network that may be the fastest run of all. An allocation
        # no probe has measured is timed first (a few iterations), and its statistical efficiency
        # probed only if, at the speed measured, it can still win by more than that probe costs.
        timed = not self._allocation_measured(base)
        first = [self._request(base, timing_length(self.budget) if timed else length, self.fork.key,
                               self.fork.iteration)]
        own = {c.key(): c for c in (self.recipe, self.warmup_config) if c is not None}
        # and the warm-up's device at the space's largest batch: the gradient's noise grows as the
        # loss falls (McCandlish et al. 2018), so a batch that gained nothing early may gain late, and
        # on one device a larger batch costs little more per step
        if self.warmup_config is not None:
            largest = self.warmup_config.replace(batch_size=max(space.batch_sizes))
            own.setdefault(largest.key(), largest)
        first += [self._fork(c) for key, c in own.items() if key != base.key()]
        # and Omnivore's first asynchronous step of the cheaper of them (g is the knob Omnivore
        # tunes first): where the warm-up used the budget, this batch is the study's last
        first += [self._fork(c) for c in first_async_steps(self.recipe or base, space)]
        # and the warm-up's neighbouring rates on its own device: the sweep ranked rates on a curve
        # still in its transient, which cannot rank them (issue 34: a rate 3× higher, dropped after
        # 40 iterations from scratch, reached the target 1.7× sooner); here they are compared where
        # the long run spends its time, at a device's cost each
        if self.warmup_config is not None:
            first += [self._fork(self.warmup_config.replace(lr=lr))
                      for lr in adjacent(sorted(space.learning_rates), self.warmup_config.lr)]
        yield first
        tip = self.lineages.tip(self.fork.key, base.key()) if timed else None
        if tip is not None and not tip.diverged and self._worth([base], length - tip.iterations):
            yield [self._continue(tip, length - tip.iterations)]
        # then the baseline's learning rate and momentum
        steps = [base.replace(lr=lr) for lr in space.learning_rates if lr != base.lr]
        steps += [base.replace(momentum=mu) for mu in space.momenta if mu != base.momentum]
        yield [self._fork(c) for c in self._worth(steps, length)]
        incumbent = self._on_a_node(self._leader() or base)
        if "async_groups" in space.strategies:
            yield from async_ladder(incumbent, space, lambda grid: self._worth(grid, length), self._fork,
                                    self._score)
        incumbent = self._on_a_node(self._leader() or base)
        others = []
        for strategy in space.strategies:
            if strategy in ("sync", "async_groups"):
                continue
            options = {"warmup_epochs": 0} if strategy == "daso" else {}  # the model is warmed up
            others.append(incumbent.replace(strategy=strategy, groups=1, options=options))
            if strategy == "hsgd":
                others.append(others[-1].replace(optimizer="lars", lr=incumbent.lr * LARS_LR_FACTOR))
        yield [self._fork(c) for c in self._worth(others, length)]
        for _ in range(SWEEP_ROUNDS):
            challengers = self._worth(self._sweep_candidates(), length)[:SWEEP_WIDTH]
            if not challengers:
                return
            yield [self._fork(c) for c in challengers]

    def _on_a_node(self, config: Config) -> Config:
        """``config`` on whole nodes: the warm-up's single device leads where a tiny model's
        communication outweighs its compute, but asynchrony and the other strategies split or
        join a node's devices, so their moves start from the leader on all of its node's."""
        return config.replace(devices_per_node=self.space.devices_per_node)

    def _allocation_measured(self, config: Config) -> bool:
        """A probe ran this strategy on this many nodes and groups: the HE model's speed for it
        rests on its own communication, not on links fitted from other patterns."""
        return any(allocation(r.config) == allocation(config) for r in self.probes)

    def _sweep_candidates(self) -> list[Config]:
        """Unprobed node-count × batch-size variants of every live forked recipe."""
        views = self.views()
        live = {recipe(v.config): v.config for k, v in views.items()
                if k in self.predictions and k not in self.pruned}
        candidates = {}
        for base in live.values():
            for nodes in self.space.node_counts():
                for batch in self.space.batch_sizes:
                    if base.groups > 1 and (nodes * base.devices_per_node) % base.groups:
                        continue
                    candidate = base.replace(nodes=nodes, batch_size=batch)
                    if candidate.key() not in views:
                        candidates[candidate.key()] = candidate
        return list(candidates.values())

    def _leader(self) -> Config | None:
        key = self._choice()
        return self.views()[key].config if key else None

    def _halving(self) -> Iterator[list[ProbeRequest]]:
        """Stage 4: continue the leaders' forks (doubling) while the ranking or the leader's
        prediction still depends on it."""
        for _ in range(HALVING_RUNGS):
            views = self.views()
            # a timing fork's learning is probed only where stage 3 found it worth its probe
            ranked = sorted((self._score(v.config), k) for k, v in views.items()
                            if k in self.predictions and k not in self.pruned and v.reached_iteration is None
                            and v.iterations >= self.budget.probe_max_iterations)
            leaders = [k for score, k in ranked if math.isfinite(score)][:HALVING_WIDTH]
            if not leaders:
                return
            top = self.predictions[leaders[0]]
            contested = len(leaders) > 1 and self.predictions[leaders[1]].ttc_low < top.ttc_high
            if not contested and assess(top, False, None).level in ("high", "medium"):
                return
            chosen = leaders if contested else leaders[:1]
            yield [self._continue(self.lineages.tip(self._origin(), k),
                                  max(views[k].end_iteration - (self.fork.iteration if self.fork else 0), 1))
                   for k in chosen]

    # -- the answer -----------------------------------------------------------------------------------
    def _choice(self) -> str | None:
        """The config the study leads with now (predictor.plan_choice.best)."""
        return best(self.predictions, self._baseline_key())

    def plan(self, study_id: str) -> Plan:
        """The plan; raises TargetUnreachable only when the curves show the target is out of reach."""
        if self.fork is not None and not self.views():  # the budget ended before any fork ran
            self.fork = None
            self._refit()
        views = self.views()
        key = planned(self.predictions, self._baseline_key(), self._incumbents())
        if key is None:
            return plan_without_prediction(self, study_id, views)
        view, prediction = views[key], self.predictions[key]
        warmup = self.warmup_of(view)
        scratch = (from_scratch(self.model, self.fork, self.recipe, view.config, prediction)
                   if warmup and self.model and self.fork and self.recipe else None)
        if scratch is not None and best({"fork": prediction, "scratch": scratch}, "fork") == "scratch":
            prediction, warmup = scratch, None
        prediction = with_measured_bound(prediction, view, warmup, self.warmup_config)
        baseline = self.baseline or view.config
        base_prediction = self.predictions.get(baseline.key())
        confidence = self.confidence_of(key, prediction)
        if scratch is not None and warmup is None:
            confidence = replace(confidence, reason=f"{confidence.reason}; {FROM_SCRATCH}")
        config = with_run_length(view.config, prediction, warmup, confidence)
        outlook = plan_forecast(view, prediction, self.model, self.lineages, self.fork, self.warmup_config,
                                warmup, self.target, self.priors)
        return Plan(
            study_id=study_id, config=config,
            predicted=outlook.prediction if outlook else prediction,
            target=outlook.target(self.target) if outlook else None,
            baseline_config=baseline,
            baseline_predicted_ttc_seconds=base_prediction.ttc_seconds if base_prediction else math.inf,
            probe_count=len(self.probes), probe_cluster_seconds=self.cluster_seconds(),
            evidence=[s.probe_key for s in self.probes if s.config.key() == key],
            warmup=warmup,
            worth_tuning=not self.worth_tuning_reason, worth_tuning_reason=self.worth_tuning_reason,
            confidence=confidence,
            ranking=[row.to_dict() for row in ranking(self, key)],
        )

    def warmup_of(self, view: ProbeResult) -> Phase | None:
        """The warm-up phase ``view`` was forked from (None for the warm-up's own recipe and for a
        probe from scratch): a forked measurement is of the fork, so a plan on it names the warm-up."""
        if self.fork is None or self.warmup_config is None or view.parent != self.fork.key:
            return None
        if view.config.key() == self.warmup_config.key():
            return None
        return Phase(self.warmup_config, self.fork.iteration)

    def confidence_of(self, key: str, prediction: Prediction | None = None) -> Confidence:
        """Confidence of ``prediction`` (the current one for ``key``). A fork's curve shape is the
        warm-up's reference, so its regime, drift and hindcast are read there; a probe from scratch
        is read on its own."""
        view, prediction = self.views()[key], prediction or self.predictions[key]
        source = view
        if self.fork is not None and view.parent == self.fork.key and self.warmup_config is not None:
            source = merge(self.lineages.chain_of(None, self.warmup_config.key()))
        regime = read_view_regime(source)
        if view.reached_iteration is not None:
            return assess(prediction, True, regime)
        return assess(prediction, False, regime, self._read(drift, source), self._read(hindcast, source))

    def _read(self, test: Callable[[list[tuple[int, float, float]], float], T], view: ProbeResult) -> T:
        """A test of a lineage's curve against the target (predictor.reference_curve's ``drift``,
        ``hindcast``), cached by the lineage's length."""
        key = f"{test.__name__}:{view.config.key()}#{view.start_iteration}+{view.iterations}"
        if key not in self._fits:
            self._fits[key] = test(view.curve, self.target)
        return self._fits[key]

    def _incumbents(self) -> set[str]:
        """What competes when no prediction is bounded (predictor.plan_choice.planned): the recipe,
        and the forks the model read on the warm-up's curve (predictor.ttc_model)."""
        keys = {self.recipe.key()} if self.recipe else set()
        return keys | (self.model.on_reference if self.model is not None else set())

    def _baseline_key(self) -> str | None:
        return self.baseline.key() if self.baseline else None


def adjacent(values: list[float] | list[int], current: float) -> list:  # type: ignore[type-arg]
    """The values next to ``current`` in a sorted list (below and above)."""
    below = [v for v in values if v < current]
    above = [v for v in values if v > current]
    return ([below[-1]] if below else []) + ([above[0]] if above else [])


def timing_length(budget: Budget) -> int:
    """Iterations that time an allocation: its steady speed shows within a few steps."""
    return max(budget.probe_max_iterations // TIMING_SHARE, TIMING_MIN_ITERATIONS)
