"""Omnivore's cold start (Hadjis et al. 2016, §5) for long runs, driven through Optuna's ask/tell.

Call order: ``ask()`` returns the next batch of probes (run them in parallel), ``tell()`` each
result, and repeat until ``ask()`` returns an empty list; then ``plan()``.

A plan is for a run hundreds of probes long, and the study's whole cost is held to
``budget.max_overhead`` of the plan's predicted TTC (issue 11). Stages, each a batch:

  1. **sweep** — the baseline's recipe (``sync``, μ = 0.9) on *one node* (the fewest the search
     space allows: ``search.nodes``) at the middle learning rate from scratch: a short job may be
     planned on it, and its cost sizes the timing round. One node: its ring never crosses the
     network. The other rates only when the job is long enough to pay for them, on the warm-up's
     *one device*, a node's devices' fraction of the cost (the middle rate's own device probe
     only where no other rate's beat its node probe; where the probe count binds, on the node);
     the best of them the warm-up continues. A job whose
     probes cost more than tuning may spend of the TTC a probe measured or a confident prediction
     shows is *not worth tuning* (``worth_tuning`` False). The best rate, where it is the edge of
     the rates that train (the space's largest, or just under one that diverged), is probed once
     more from scratch on a second seed, on the warm-up's one device, before it warms up: a rate
     that trained on one seed can diverge on the next, and the run is on another seed. Then,
     before anything relies on the HE model, the allocations a plan may use are *timed*
     (predictor.timing_round).
  2. **warm-up** — the best sweep probe's recipe on *one device*, its length doubling,
     until its curve is in its slow regime (predictor.regime), long enough to fit, and its
     extrapolation holds by the plan confidence's drift and hindcast tests; its end is
     the fork point and its curve the reference (predictor.reference_curve). One device: a
     transient is moved by updates, and one device's update never communicates and occupies the
     least of the cluster. Where one device stops descending (two doublings in a row lose ground
     beyond its noise, or it diverges: its small batch is unstable at the rate; one rise is a bump
     of the transient), the recipe on its node warms up instead. The first forks, what every
     plan is measured against: the baseline proper (``sync`` on all devices at the warm-up's
     rate), the recipe on its node, the warm-up continued (and at the largest batch), and the
     recipe's first asynchronous step (g = 2, predictor.async_step).
     An allocation no probe has run is *timed* first (an eighth of a probe): the HE model's speed
     for a pattern it never measured rests on links fitted from others, and a full-cluster probe
     on a slow network costs more than the rest of the study. Its learning is probed (the timing
     fork continued) only if it is worth it.
  3. **forks** from the warm-up's checkpoint, each a probe long, so each config's statistical
     efficiency is measured where the long run spends its time: learning rate and momentum of
     the baseline; Omnivore's asynchrony ladder (g = 2, 4, …; μ per g keeping μ + 1 − 1/g near the
     baseline's; climb while it pays ≥ 10%); the other strategies (DASO past its warm-up epochs,
     HSGD with SGD and LARS, DBS; each timed first, from scratch, on an allocation no probe ran);
     then node counts and batch sizes predicted by the pooled model.
  4. **successive halving** — the leaders' forks are continued (each rung doubles a fork) while
     the ranking between them is in doubt or the leader's prediction extrapolates far.

Every candidate must be worth its probe: its expected improvement over the incumbent plan
(predictor.value) must exceed the probe's cluster-seconds, and the study's cost must stay within
``max_overhead`` × the incumbent's predicted TTC, ``max_cluster_seconds`` and ``max_probes``.
A probe is cut at the best TTC measured so far: past it, it can no longer win. A diverged probe
prunes its recipe's larger steps. Each probe reports its loss curve to an Optuna pruner; pruned
lineages are not continued. What the probes showed, and what they cost, is kept in a
``Study`` (predictor.study); the plan is assembled from it (predictor.planning).
"""

from __future__ import annotations

import math
from collections.abc import Generator, Iterator
from dataclasses import replace

import optuna

from predictor.async_step import async_ladder, first_async_steps
from predictor.confidence import assess, extrapolation_holds
from predictor.fork_level import beyond_noise
from predictor.lineages import merge
from predictor.planning import plan_of
from predictor.prior_path import FinishedRun
from predictor.reference_curve import ReferenceCurve, drift, hindcast
from predictor.regime import Regime, read_view_regime, went_backwards
from predictor.study import Study, pack
from predictor.timing_round import timing_length, timing_round
from predictor.trial_space import PRUNER_STEPS, record_trial, report_curve
from predictor.ttc_model import ForkPoint, conservative, recipe
from predictor.types import (
    Budget,
    Config,
    Plan,
    ProbeRequest,
    ProbeResult,
    SearchSpace,
    json_safe,
)
from predictor.value import expected_improvement

BASELINE_MOMENTUM = 0.9
SWEEP_ROUNDS = 2
SWEEP_WIDTH = 3  # configurations confirmed per sweep round
WARMUP_MIN_PROBES = 4  # the warm-up is at least this many probe lengths (a curve to fit)
WARMUP_MAX_DOUBLINGS = 6
HALVING_WIDTH = 2  # lineages continued per rung of successive halving
HALVING_RUNGS = 4
SEED_CHECK_OFFSET = 1  # a rate at the edge is checked on the probes' seed + this
RESERVE = 2 * (WARMUP_MAX_DOUBLINGS + 1)  # the probes the warm-up may need, and as many forks
LARS_LR_FACTOR = 10.0  # LARS's global rate is on another scale (You et al. 2017): η*·10 is probed too


class ColdStartSearch:
    """The cold-start policy: which probes to ask for next, over a ``Study`` that keeps the
    evidence and the ledger (predictor.study); the plan is assembled from it (predictor.planning)."""

    def __init__(
        self, space: SearchSpace, budget: Budget, target: float, optuna_study: optuna.Study | None = None,
        priors: tuple[FinishedRun, ...] = (),
    ) -> None:
        """``optuna_study``: where each probe is recorded as a trial (a fresh in-memory one if None);
        ``priors``: finished runs of the same job (predictor.study)."""
        self.study = Study(space, budget, target, priors)
        self.space, self.budget, self.target = space, budget, target
        self.optuna_study = optuna_study or optuna.create_study(
            direction="minimize",
            pruner=optuna.pruners.MedianPruner(n_startup_trials=4, n_warmup_steps=PRUNER_STEPS // 4),
        )
        self._trials: dict[str, optuna.trial.Trial] = {}  # by probe key
        self._pending: dict[str, ProbeRequest] = {}  # by probe key
        self._asked: set[str] = set()
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
                    self._trials[request.key] = record_trial(self.optuna_study, self.space, request)
                return fresh
        self._done = True
        return []

    def tell(self, result: ProbeResult) -> None:
        key, study = result.probe_key, self.study
        request = self._pending.pop(key, None)
        if request is not None and request.seed_offset:
            study.record_seed_check(result)
            self._close_aside(result, "diverged on a second seed" if result.diverged
                              else "trained on a second seed: the rate is kept")
            return
        if request is not None and request.timing:
            study.record_timing(result)
            self._close_aside(result, "timed an allocation for the hardware model")
            return
        study.record(result)
        trial = self._trials.pop(key, None) or record_trial(
            self.optuna_study, self.space, request or self._scratch(result.config))
        trial.set_user_attr("final_loss", result.final_loss)
        trial.set_user_attr("reached_iteration", result.reached_iteration)
        prediction = study.predictions.get(result.config.key())
        if result.diverged or result.error or prediction is None:
            reason = result.error or ("diverged" if result.diverged else "its curve supports no prediction")
            trial.set_user_attr("prune_reason", reason)
            study.pruned.add(result.config.key())
            self.optuna_study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            return
        trial.set_user_attr("score", json_safe(conservative(prediction)))
        level = result.parent is None or (study.fork is not None and result.parent == study.fork.key)
        if level and report_curve(trial, result, self.budget.probe_max_iterations):  # they start level
            trial.set_user_attr("prune_reason", "pruner: loss behind the median at equal probe progress")
            study.pruned.add(result.config.key())
        self.optuna_study.tell(trial, min(conservative(prediction), 1e300))

    def _close_aside(self, result: ProbeResult, reason: str) -> None:
        """The trial of a probe that is no lineage's evidence (a seed check, a timing: Study),
        closed as pruned with why it ran."""
        trial = self._trials.pop(result.probe_key)
        trial.set_user_attr("prune_reason", result.error or reason)
        self.optuna_study.tell(trial, state=optuna.trial.TrialState.PRUNED)

    def stop(self) -> None:
        """End the search early (deadline or cancel); ``plan()`` uses what was measured."""
        self._done = True

    def plan(self, study_id: str) -> Plan:
        """The plan (predictor.planning.plan_of); raises TargetUnreachable only when the curves show
        the target is out of reach."""
        return plan_of(self.study, study_id)

    # -- budget -------------------------------------------------------------------------------------
    def _affordable(self, requests: list[ProbeRequest]) -> list[ProbeRequest]:
        """The batch trimmed to the probe count and the cost the study may still spend (a warm-up
        segment before its curve settles answers to the hard caps only: nothing sizes the run yet)."""
        study = self.study
        spent = study.cluster_seconds()
        cap, allowed = study.hard_cap() - spent, study.allowed_cost() - spent
        return pack(requests, study.probe_cost, lambda r: cap if r.key in self._unsettled else allowed,
                    count=self.budget.max_probes - len(study.probes))

    def _worth(self, configs: list[Config], length: int) -> list[Config]:
        """The candidates whose expected improvement beats their probe's cost, best value first."""
        incumbent = self.study.incumbent_ttc()
        scored = []
        for config in configs:
            if self._excluded(config):
                continue
            gain = expected_improvement(incumbent, self.study.predict(config))
            cost = self.study.probe_cost(self._request(config, length, self.study.origin()))
            if gain > cost:
                scored.append((-(gain / max(cost, 1e-300)), config.key(), config))
        return [config for *_, config in sorted(scored)]

    def _excluded(self, config: Config) -> bool:
        """A larger step of a diverged recipe, or a config outside the cluster."""
        if config.nodes > self.space.nodes or config.devices_per_node > self.space.devices_per_node:
            return True
        return any(
            recipe(config)[:2] == recipe(d)[:2] and config.momentum >= d.momentum and config.lr >= d.lr
            and config.optimizer == d.optimizer for d in self.study.diverged
        )

    # -- requests ------------------------------------------------------------------------------------
    def _request(self, config: Config, length: int, parent: str | None, start: int = 0) -> ProbeRequest:
        """A probe of ``length`` iterations, cut at the best TTC measured so far (it cannot win past it)."""
        segment = self.study.lineages.segments.get(parent) if parent else None
        start_seconds = segment.end_seconds if segment else 0.0
        seconds = self.budget.probe_seconds * max(length / self.budget.probe_max_iterations, 1.0)
        best = self.study.best_measured_ttc()
        if math.isfinite(best):
            seconds = min(seconds, max(best - start_seconds, 0.0) * 1.0001)
        return ProbeRequest(config, seconds, length, parent, start)

    def _scratch(self, config: Config) -> ProbeRequest:
        return self._request(config, self.budget.probe_max_iterations, None)

    def _fork(self, config: Config, length: int | None = None) -> ProbeRequest:
        assert self.study.fork is not None
        return self._request(config, length or self.budget.probe_max_iterations, self.study.fork.key,
                             self.study.fork.iteration)

    def _timing(self, config: Config, length: int) -> ProbeRequest:
        return replace(self._request(config, length, None), timing=True)

    def _continue(self, tip: ProbeResult, length: int) -> ProbeRequest:
        return self._request(tip.config, length, tip.probe_key, tip.end_iteration)

    # -- the stages ------------------------------------------------------------------------------
    def _plan_stages(self) -> Iterator[list[ProbeRequest]]:
        space = self.space
        sizes = sorted(space.batch_sizes)
        lrs = sorted(space.learning_rates)
        middle = Config("sync", space.node_counts()[0], space.devices_per_node,
                        batch_size=sizes[len(sizes) // 2], lr=lrs[len(lrs) // 2], momentum=BASELINE_MOMENTUM)
        # 1. sweep: the middle rate on the node first; the others, on the warm-up's one device,
        # only if the job turns out long enough
        yield [self._scratch(middle)]
        if self._short_job():
            return
        others = [lr for lr in lrs if lr != middle.lr]
        if self.budget.max_probes - len(self.study.probes) < len(others) + 1 + RESERVE:
            yield [self._scratch(middle.replace(lr=lr)) for lr in others]  # the count binds: on the node
        else:
            yield from self._device_sweep(middle)
        if self._short_job():
            return
        yield from timing_round(self.study, middle, self._timing,
                                self.budget.max_probes - len(self.study.probes) - RESERVE)
        # equal-length probes of one recipe from scratch: the lowest loss warms up best, if its rate
        # also trains on a second seed where it is the edge of the rates that train
        best = yield from self._stable_on_a_second_seed(self._sweep_ranking(middle))
        if best is None:
            return
        self.study.recipe = best.config.replace(devices_per_node=space.devices_per_node)
        self.study.warmup_config = best.config.replace(devices_per_node=1)
        swept = self.study.lineages.chain_of(None, self.study.warmup_config.key())
        if swept:  # the sweep's device probe is the warm-up's first segment
            self.study.read_warmup_eta(swept[-1])
        self.study.baseline = self.study.recipe.replace(nodes=space.node_counts()[-1])
        # 2. warm-up
        yield from self._warm_up(best)
        if self._short_job() or self.study.fork is None:
            return
        # 3. forks
        yield from self._fork_stages()
        # 4. successive halving
        yield from self._halving()

    def _device_sweep(self, middle: Config) -> Iterator[list[ProbeRequest]]:
        """The sweep's other rates from scratch on the warm-up's one device, whose probe of the best
        the warm-up continues: a node's rates cost its devices' multiple, and on the digits studies
        the three node probes were half the study's cost. The middle rate's own device probe runs
        only where its node probe ended below every other rate's device probe: at one rate the
        node's larger batch makes at least the device's progress per step, so a middle rate a
        device probe beat on the node ranks below it on a device too.

        Only where the probe count leaves room for these, the warm-up and as many forks
        (RESERVE): where the count binds, a device probe saves nothing a probe costs, and a node's
        probe at a rate reads its gradient less noisily. With three probes (a sweep of two rates)
        the device sweep left no node probe at the best rate; the curves on one device read flat
        at 50 iterations, and the study found the target unreachable where the node's planned a
        run that reached it."""
        device = middle.replace(devices_per_node=1)
        yield [self._scratch(device.replace(lr=lr)) for lr in sorted(self.space.learning_rates)
               if lr != middle.lr]
        node = self.study.lineages.views(None).get(middle.key())
        if node is None or not _alive(node) or not any(
                v.final_loss <= node.final_loss for v in self._device_probes(middle)):
            yield [self._scratch(device)]

    def _device_probes(self, middle: Config) -> list[ProbeResult]:
        """The sweep's live probes from scratch on one device (``middle``'s recipe at any rate)."""
        device = middle.replace(devices_per_node=1)
        return [v for v in self.study.lineages.views(None).values()
                if _alive(v) and v.config.key() == device.replace(lr=v.config.lr).key()]

    def _sweep_ranking(self, middle: Config) -> list[ProbeResult]:
        """The sweep's live probes on one device, lowest loss first (every rate at one length); the
        node's where none lives on a device (the recipe on its node then warms up)."""
        alive = self._device_probes(middle) or [
            v for v in self.study.lineages.views(None).values() if _alive(v)]
        return sorted(alive, key=lambda v: v.final_loss)

    def _stable_on_a_second_seed(
        self, ranked: list[ProbeResult]
    ) -> Generator[list[ProbeRequest], None, ProbeResult | None]:
        """The best sweep lineage (``ranked`` best first) whose rate is not at the edge, or that
        trains on a second seed too: one probe as long as the sweep's, from scratch on the next
        seed, on the one device the warm-up will run (predictor.search docstring). A rate that
        diverges there is dropped with its recipe's larger steps, and the next lineage is taken. A
        check the budget cannot pay for is skipped (the rate is kept).

        One device, not the sweep's node: the check vouches for the warm-up, which runs there, at
        a node's devices' fraction of the cost, and a device's gradient is noisier than the node's
        mean of them at the same rate, so a rate that trains on one trains on the node. On the
        digits studies the check on the node was a fifth of the probes' cost."""
        for view in ranked:
            if not self._at_the_edge(view.config):
                return view
            device = view.config.replace(devices_per_node=1)
            check = replace(self._request(device, view.iterations, None), seed_offset=SEED_CHECK_OFFSET)
            yield [check]
            result = self.study.seed_checks.get(check.key)
            if result is None or not result.diverged:
                return view
        return None

    def _at_the_edge(self, config: Config) -> bool:
        """The space's largest rate, or the rate just under one its recipe diverged at: the sweep
        saw it train on one seed only. On Ray, charlm's lr 0.3 (the grid's top) trained 1,100
        iterations on the probes' seed and diverged at iteration 50 on seeds 1, 2 and 3."""
        above = [lr for lr in self.space.learning_rates if lr > config.lr]
        return not above or self._excluded(config.replace(lr=min(above)))

    def _short_job(self) -> bool:
        """True (and the search ends) when the run is known short and tuning cannot pay: the study
        has already spent what ``max_overhead`` of the best TTC a probe measured, or a confident
        prediction (predictor.confidence; a transient's extrapolation is optimistic), allows."""
        key, measured = self.study.choice(), self.study.best_measured_ttc()
        best = measured
        if key is not None and self.study.confidence_of(key).confident:
            best = min(best, self.study.predictions[key].ttc_seconds)
        if not math.isfinite(best):
            return False
        spent, allowed = self.study.cluster_seconds(), self.budget.max_overhead * best
        if spent < allowed:
            return False
        how = "a probe reached the target in" if best == measured else "the evidence supports a run of"
        self.study.worth_tuning_reason = (
            f"{how} {best:.4g} s; the {len(self.study.probes)} probes already cost "
            f"{spent:.4g} cluster-seconds ({spent / best:.2g}× that run), more than the "
            f"{self.budget.max_overhead:.0%} tuning may spend")
        self._done = True
        return True

    def _warm_up(self, sweep: ProbeResult) -> Iterator[list[ProbeRequest]]:
        """Stage 2 (module docstring). Until the curve settles nothing can size the overhead budget
        (a transient's extrapolation is optimistic many-fold), so only the hard caps and
        WARMUP_MAX_DOUBLINGS bound it: a job whose warm-up reaches the target was too short to tune."""
        assert self.study.warmup_config is not None and self.study.recipe is not None
        one_device = self.study.warmup_config != self.study.recipe
        descended = yield from self._lineage_warm_up(self.study.warmup_config, sweep, must_descend=one_device)
        if not descended and not self._done:
            self.study.warmup_config = self.study.recipe
            yield from self._lineage_warm_up(self.study.recipe, sweep, must_descend=False)
        study = self.study
        chain = study.lineages.chain_of(None, study.warmup_config.key())
        if self._done or not chain or len(study.probes) >= self.budget.max_probes:  # a short job: no fork
            return
        view, last = merge(chain), chain[-1]
        if view.reached_iteration is not None or view.diverged:
            return
        reference = ReferenceCurve.fit(view.curve, self.target)
        if reference is None:
            return
        study.fork = ForkPoint(reference, last.end_iteration, last.end_seconds, last.probe_key, last.config)
        study.refit()

    def _lineage_warm_up(self, config: Config, sweep: ProbeResult,
                         must_descend: bool) -> Generator[list[ProbeRequest], None, bool]:
        """``config``'s lineage from scratch (the sweep's own probe, when it is the sweep's config),
        continued, doubling, until it settles, reaches the target or the budget ends. False when it
        ``must_descend`` and stopped: two doublings that lost ground beyond its noise, or diverged."""
        length = self.budget.probe_max_iterations
        key = config.key()
        if not self.study.lineages.chain_of(None, key):
            first = self._request(config, sweep.iterations, None)
            self._unsettled.add(first.key)  # nothing is settled yet: only the hard caps bound it
            yield [first]
            if self._short_job():
                return True
        for doubling in range(WARMUP_MAX_DOUBLINGS + 1):
            chain = self.study.lineages.chain_of(None, key)
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
            # and it settles only where the plan's confidence would print its number: on
            # regression (seed 6) a steady, undrifting 200-iteration warm-up whose hindcast missed
            # by ×1.62 forecast 1,043 iterations of a ~9,000-iteration run, and the budget sized
            # on it ended the study there (regret 1.29)
            steady = read_view_regime(view).regime is Regime.STEADY
            settled = steady and extrapolation_holds(self.study.reading(drift, view),
                                                     self.study.reading(hindcast, view))
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
        assert self.study.baseline is not None and self.study.fork is not None
        base, space = self.study.baseline, self.space
        length = self.budget.probe_max_iterations
        # the baseline (the warm-up's recipe on every node) and the warm-up's recipe continued as it
        # is, on its own nodes: on a slow network that may be the fastest run of all. An allocation
        # no probe has measured is timed first (a few iterations), and its statistical efficiency
        # probed only if, at the speed measured, it can still win by more than that probe costs.
        timed = not self.study.allocation_measured(base)
        first = [self._request(base, timing_length(self.budget) if timed else length, self.study.fork.key,
                               self.study.fork.iteration)]
        own = {c.key(): c for c in (self.study.recipe, self.study.warmup_config) if c is not None}
        # and the warm-up's device at the space's largest batch: the gradient's noise grows as the
        # loss falls (McCandlish et al. 2018), so a batch that gained nothing early may gain late, and
        # on one device a larger batch costs little more per step
        if self.study.warmup_config is not None:
            largest = self.study.warmup_config.replace(batch_size=max(space.batch_sizes))
            own.setdefault(largest.key(), largest)
        first += [self._fork(c) for key, c in own.items() if key != base.key()]
        # and Omnivore's first asynchronous step of the cheaper of them (g is the knob Omnivore
        # tunes first): where the warm-up used the budget, this batch is the study's last
        first += [self._fork(c) for c in first_async_steps(self.study.recipe or base, space)]
        # and the warm-up's neighbouring rates on its own device: the sweep ranked rates on a curve
        # still in its transient, which cannot rank them (issue 34: a rate 3× higher, dropped after
        # 40 iterations from scratch, reached the target 1.7× sooner); here they are compared where
        # the long run spends its time, at a device's cost each
        if self.study.warmup_config is not None:
            first += [self._fork(self.study.warmup_config.replace(lr=lr))
                      for lr in adjacent(sorted(space.learning_rates), self.study.warmup_config.lr)]
        yield first
        tip = self.study.lineages.tip(self.study.fork.key, base.key()) if timed else None
        if tip is not None and not tip.diverged and self._worth([base], length - tip.iterations):
            yield [self._continue(tip, length - tip.iterations)]
        # then the baseline's learning rate and momentum
        steps = [base.replace(lr=lr) for lr in space.learning_rates if lr != base.lr]
        steps += [base.replace(momentum=mu) for mu in space.momenta if mu != base.momentum]
        yield [self._fork(c) for c in self._worth(steps, length)]
        incumbent = self._on_a_node(self.study.leader() or base)
        if "async_groups" in space.strategies:
            yield from async_ladder(incumbent, space, lambda grid: self._worth(grid, length), self._fork,
                                    self.study.score)
        incumbent = self._on_a_node(self.study.leader() or base)
        others = []
        for strategy in space.strategies:
            if strategy in ("sync", "async_groups"):
                continue
            options = {"warmup_epochs": 0} if strategy == "daso" else {}  # the model is warmed up
            others.append(incumbent.replace(strategy=strategy, groups=1, options=options))
            if strategy == "hsgd":
                others.append(others[-1].replace(optimizer="lars", lr=incumbent.lr * LARS_LR_FACTOR))
        # each on an allocation no probe ran is timed first, from scratch, then forked only if the
        # speed measured still makes it worth its probe: the HE model reads a pattern it never ran
        # from links fitted on others (on plateau, HSGD's shard read as nothing, and its fork cost
        # a quarter of the study)
        for config in self._worth(others, length):
            if not self.study.allocation_measured(config):
                yield [self._timing(config, timing_length(self.budget))]
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

    def _sweep_candidates(self) -> list[Config]:
        """Unprobed node-count × batch-size variants of every live forked recipe."""
        views = self.study.views()
        live = {recipe(v.config): v.config for k, v in views.items()
                if k in self.study.predictions and k not in self.study.pruned}
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

    def _halving(self) -> Iterator[list[ProbeRequest]]:
        """Stage 4: continue the leaders' forks (doubling) while the ranking or the leader's
        prediction still depends on it, and the forks ahead that no score can rank yet."""
        study = self.study
        for _ in range(HALVING_RUNGS):
            views = study.views()
            # a timing fork's learning is probed only where stage 3 found it worth its probe
            length = self.budget.probe_max_iterations
            ranked = sorted((study.score(v.config), k) for k, v in views.items()
                            if k in study.predictions and k not in study.pruned
                            and v.reached_iteration is None and v.iterations >= length)
            leaders = [k for score, k in ranked if math.isfinite(score)][:HALVING_WIDTH]
            chosen = []
            if leaders:
                top = study.predictions[leaders[0]]
                contested = len(leaders) > 1 and study.predictions[leaders[1]].ttc_low < top.ttc_high
                if contested or assess(top, False, None).level not in ("high", "medium"):
                    chosen = leaders if contested else leaders[:1]
            chosen += self._unread_ahead(views)
            if not chosen:
                return
            start = study.fork.iteration if study.fork else 0
            yield [self._continue(study.lineages.tip(study.origin(), k),
                                  max(views[k].end_iteration - start, 1)) for k in chosen]

    def _unread_ahead(self, views: dict[str, ProbeResult]) -> list[str]:
        """Forks ahead of the warm-up continued (TtcModel.ahead) whose score is still open: a cooler
        step drops the loss at once and then slows, and only a longer fork shows how much (on
        wide-teacher two nodes a cooler fork that crossed the target after 100 iterations was left
        open, and the plan ran a rate that stalls above it). Those the noise cannot tell from the
        lowest go first, the cheapest per iteration among them."""
        study = self.study
        unread = [views[k] for k in study.ahead() if k in views and k not in study.pruned
                  and not math.isfinite(study.score(views[k].config))]
        if not unread or study.fork is None:
            return []
        lowest, noise = min(v.final_loss for v in unread), study.fork.reference.noise
        order = sorted((beyond_noise(v.final_loss - lowest, noise), v.steady_seconds_per_iteration,
                        v.config.key()) for v in unread)
        return [key for *_, key in order][:HALVING_WIDTH]


def _alive(view: ProbeResult) -> bool:
    return not view.diverged and not view.error


def adjacent(values: list[float] | list[int], current: float) -> list:  # type: ignore[type-arg]
    """The values next to ``current`` in a sorted list (below and above)."""
    below = [v for v in values if v < current]
    above = [v for v in values if v > current]
    return ([below[-1]] if below else []) + ([above[0]] if above else [])

