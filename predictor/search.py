"""Omnivore's cold-start search (Hadjis et al. 2016, §5) driven through Optuna's ask/tell.

Call order: ``ask()`` returns the next batch of configurations to probe (run them in parallel),
``tell()`` each result, and repeat until ``ask()`` returns an empty list; then ``plan()``.

Stages, each a batch:
  1. ``sync`` on all devices, μ = 0.9, a sweep over learning rates → the best rate η*;
  2. for g = 2, 4, 8, … (``async_groups``): explicit momentum μ × {η*, η*/3}, keeping only the
     μ whose total momentum μ + (1 − 1/g) (Mitliagkas et al. 2016) stays near the sync optimum;
     climb to the next g only while more asynchrony pays ≥ 10%, and not at all when the HE model
     says even sync's iteration count at g's speed could not pay 10%;
  3. the other strategies at η*, μ = 0.9, unless the HE model predicts them ≥ 5% slower per step;
  4. model sweep: every probed recipe over every node count and batch size, predicted by the
     pooled TTC model (predictor.ttc_model); the best few predicted to win by ≥ 5% are probed
     to confirm, and the rest — predicted dominated — are never run;
  5. finalist extension (successive halving's last rung): unless its probe already reached the
     target, the plan's config is re-probed EXTEND_FACTOR× longer, and again while it is predicted
     to need more than EXTEND_WHEN× what that probe ran, so the plan's prediction extrapolates a
     few-fold instead of ~25-fold (a short probe's optimism can hide how far off it is, hence
     the unconditional first round). Stages 1–4 leave ``extension_rounds`` probes of a count
     budget of at least EXTEND_MIN_BUDGET for it. How much the longer probe moved the
     finalist's predicted iterations calibrates every prediction still resting on a short probe
     (geometric mean over extensions): a short probe's extrapolation is biased the same way across
     a study's configs (same workload, same probe length), and ranking an extended finalist
     against uncorrected short-probe predictions would favour whichever was probed least.
A diverged probe prunes its recipe's larger steps (higher η at the same g). Each trial reports its
loss curve against probe time to an Optuna pruner; pruned trials are not expanded in stage 4.
The plan keeps the baseline (sync, all devices, μ = 0.9, η*) unless a challenger wins by ≥ 5%.
Every ranking uses a risk-aware score — the geometric blend of the predicted TTC and its 80%
upper end (predictor.ttc_model.conservative) — so a config that looks fast only through an
uncertain extrapolation of a short, noisy probe does not win.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator

import optuna

from predictor.noise_scale import total_momentum
from predictor.ttc_model import TtcModel, conservative, recipe
from predictor.types import (
    STRATEGIES,
    Budget,
    Config,
    Plan,
    Prediction,
    ProbeRequest,
    ProbeResult,
    SearchSpace,
)

ASYNC_MUST_PAY = 0.10
CHANGE_MARGIN = 0.05
BASELINE_MOMENTUM = 0.9
MOMENTUM_SLACK = 0.1  # total momentum allowed above the sync optimum before a μ is skipped
SWEEP_ROUNDS = 2
SWEEP_WIDTH = 3  # configurations confirmed per sweep round
PRUNER_STEPS = 100  # probe time is reported to the pruner in hundredths of the probe length
EXTEND_WHEN = 2.0  # extend the finalist's probe while its predicted iterations exceed this × its length
EXTEND_FACTOR = 4  # each extension probes this many times longer than the last
EXTEND_ROUNDS = 2
EXTEND_MIN_BUDGET = 8  # below this many probes, none is reserved for the extensions


class TargetUnreachable(RuntimeError):
    """No probed configuration is predicted to reach the target."""


def _trial_distributions(space: SearchSpace) -> dict[str, optuna.distributions.BaseDistribution]:
    return {
        "strategy": optuna.distributions.CategoricalDistribution(list(STRATEGIES)),
        "nodes": optuna.distributions.IntDistribution(1, max(space.nodes, 1)),
        "groups": optuna.distributions.IntDistribution(1, space.devices),
        "batch_size": optuna.distributions.IntDistribution(1, 65536),
        "lr": optuna.distributions.FloatDistribution(1e-6, 100.0, log=True),
        "momentum": optuna.distributions.FloatDistribution(0.0, 0.999),
    }


def node_counts(space: SearchSpace) -> list[int]:
    """1, 2, 4, … up to and including the cluster's node count."""
    counts, n = [], 1
    while n < space.nodes:
        counts.append(n)
        n *= 2
    return counts + [space.nodes]


class ColdStartSearch:
    def __init__(
        self,
        space: SearchSpace,
        budget: Budget,
        target: float,
        study: optuna.Study | None = None,
        extension_rounds: int = EXTEND_ROUNDS,
    ) -> None:
        self.space = space
        self.budget = budget
        self.extension_rounds = extension_rounds  # 0: no finalist extension (the evaluation's ablation)
        # Probes held back from stages 1–4 for the extensions; a small budget is all cold start.
        self._reserve = extension_rounds if budget.max_probes >= EXTEND_MIN_BUDGET else 0
        self._short_bias: list[float] = []  # predicted iterations after / before each extension
        self._extended: set[str] = set()  # config keys whose evidence is an extension's longer probe
        self.target = target
        self.study = study or optuna.create_study(
            direction="minimize",
            pruner=optuna.pruners.MedianPruner(n_startup_trials=4, n_warmup_steps=PRUNER_STEPS // 4),
        )
        self.results: dict[str, ProbeResult] = {}  # the longest probe of each config, by config key
        self.probes: list[ProbeResult] = []  # every probe run, extensions included: the cost
        self.predictions: dict[str, Prediction] = {}
        self.pruned: set[str] = set()
        self.model: TtcModel | None = None
        self._fits: dict = {}  # per-probe curve fits, reused by every refit
        self._trials: dict[str, optuna.trial.Trial] = {}
        self._stages = self._plan_stages()
        self._pending: dict[str, ProbeRequest] = {}  # by config key
        self._run: set[str] = set()  # request keys already probed
        self._extension: dict[str, int] = {}  # config key → its longest probe, in probe lengths
        self._done = False
        self.baseline: Config | None = None

    # -- ask / tell ----------------------------------------------------------------------------
    def ask(self) -> list[ProbeRequest]:
        """The next batch to probe; empty when the search is over (or the budget is spent)."""
        if self._pending or self._done:
            return []
        for batch in self._stages:  # a stage the budget cannot pay for is skipped, not the rest
            fresh = list({r.key: r for r in batch if r.key not in self._run}.values())
            fresh = fresh[: self._probes_left(max(r.extension for r in fresh))] if fresh else []
            if fresh:
                self._pending = {r.config.key(): r for r in fresh}
                for request in fresh:
                    self._run.add(request.key)
                    self._trials[request.config.key()] = self._record(request)
                return fresh
        self._done = True
        return []

    def _request(self, config: Config, extension: int = 1) -> ProbeRequest:
        budget = self.budget
        return ProbeRequest(config, budget.probe_seconds * extension, budget.probe_max_iterations * extension,
                            extension)

    def _probes_left(self, extension: int = 1) -> int:
        """Probes of ``extension``× the probe length that the count and cluster-seconds budgets allow."""
        left = self.budget.max_probes - len(self.probes) - (self._reserve if extension == 1 else 0)
        if self.budget.max_cluster_seconds is not None:
            per_probe = self.budget.probe_seconds * extension
            left = min(left, int((self.budget.max_cluster_seconds - self.cluster_seconds()) // per_probe))
        return max(left, 0)

    def tell(self, result: ProbeResult) -> None:
        key = result.config.key()
        request = self._pending.pop(key, None)
        self.probes.append(result)
        extended = request is not None and request.extension > 1
        before = self.model.predict(result.config) if extended and self.model else None
        if not (extended and result.error):  # a failed extension keeps the shorter probe's evidence
            self.results[key] = result
            if extended:
                self._extended.add(key)
        self._refit()
        after = self.model.predict(result.config) if before is not None and self.model else None
        if before is not None and after is not None and all(
            0 < p.iterations < math.inf for p in (before, after)
        ):
            self._short_bias.append(after.iterations / before.iterations)
            self._refit()
        prediction = self.predictions.get(key)
        trial = self._trials.pop(key, None) or self._record(self._request(result.config))
        trial.set_user_attr("final_loss", result.final_loss)
        trial.set_user_attr("reached_iteration", result.reached_iteration)
        if result.diverged or result.error or prediction is None:
            trial.set_user_attr("prune_reason", result.error or ("diverged" if result.diverged else "no fit"))
            self.pruned.add(key)
            self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            return
        if not extended and self._report_curve(trial, result):
            trial.set_user_attr("prune_reason", "pruner: loss behind the median at equal probe time")
            self.pruned.add(key)
        self.study.tell(trial, min(prediction.ttc_seconds, 1e300))

    def _report_curve(self, trial: optuna.trial.Trial, result: ProbeResult) -> bool:
        """Report loss against probe time (Optuna's pruner over probe length); True when pruned."""
        length = max(self.budget.probe_seconds, 1e-12)
        pruned, reported = False, set()
        for _, seconds, loss in result.curve:
            step = min(int(PRUNER_STEPS * seconds / length), PRUNER_STEPS)
            if not math.isfinite(loss) or step in reported:
                continue  # Optuna keeps one value per step
            reported.add(step)
            trial.report(loss, step)
            pruned = pruned or trial.should_prune()
        return pruned

    def _refit(self) -> None:
        self.model = TtcModel(list(self.results.values()), self.target, self._fits)
        self.predictions = {}
        for key, result in self.results.items():
            prediction = self.predict(result.config)
            if prediction is not None and not result.diverged:
                self.predictions[key] = prediction

    def predict(self, config: Config) -> Prediction | None:
        """The model's prediction; one resting on a short probe is calibrated by the extensions:
        moved by their geometric-mean shift, its interval widened by their largest shift (how
        wrong a short probe has been in this study), so ranking prefers what was measured longer."""
        prediction = self.model.predict(config) if self.model is not None else None
        if prediction is None or not self._short_bias or config.key() in self._extended:
            return prediction
        shifts = [math.log(b) for b in self._short_bias]
        spread = math.exp(max(abs(s) for s in shifts))
        moved = prediction.scaled(math.exp(sum(shifts) / len(shifts)))
        return dataclasses.replace(moved, ttc_low=moved.ttc_low / spread, ttc_high=moved.ttc_high * spread)

    def stop(self) -> None:
        """End the search early (deadline or cancel); ``plan()`` uses what was measured."""
        self._done = True

    def _record(self, request: ProbeRequest) -> optuna.trial.Trial:
        config = request.config
        params = {
            "strategy": config.strategy, "nodes": config.nodes, "groups": config.groups,
            "batch_size": config.batch_size, "lr": config.lr, "momentum": config.momentum,
        }
        self.study.enqueue_trial(params, skip_if_exists=False)
        trial = self.study.ask(_trial_distributions(self.space))
        trial.set_user_attr("config", config.to_dict())
        trial.set_user_attr("extension", request.extension)
        return trial

    # -- the stages ------------------------------------------------------------------------------
    def _ttc(self, config: Config) -> float:
        """Risk-aware score (point blended with the 80% upper end) that every decision ranks by."""
        prediction = self.predictions.get(config.key())
        return conservative(prediction) if prediction else math.inf

    def _point(self, config: Config) -> float:
        prediction = self.predictions.get(config.key())
        return prediction.ttc_seconds if prediction else math.inf

    def _best(self, configs: list[Config]) -> Config | None:
        """Lowest predicted TTC; when none is predicted, the lowest final loss that did not diverge."""
        probed = [c for c in configs if c.key() in self.results]
        finite = [c for c in probed if math.isfinite(self._ttc(c))]
        if finite:
            return min(finite, key=self._ttc)
        alive = [c for c in probed if not self.results[c.key()].diverged]
        return min(alive, key=lambda c: self.results[c.key()].final_loss) if alive else None

    def _predicted_speed(self, config: Config) -> float:
        speed = self.model.speed(config) if self.model is not None else None
        return speed.value if speed is not None else math.inf

    def _plan_stages(self) -> Iterator[list[ProbeRequest]]:
        for configs in self._cold_start():
            yield [self._request(c) for c in configs]
        yield from self._extend_finalist()

    def _cold_start(self) -> Iterator[list[Config]]:
        """Stages 1–4 (module docstring), each a batch of configs probed at the budget's length."""
        space = self.space
        sizes = sorted(space.batch_sizes)
        base_batch = sizes[len(sizes) // 2]

        def config(strategy: str, **kw: float) -> Config:
            return Config(strategy, space.nodes, space.devices_per_node, **{"batch_size": base_batch, **kw})

        # 1. the learning rate, on the baseline strategy
        sweep = [config("sync", lr=lr, momentum=BASELINE_MOMENTUM) for lr in sorted(space.learning_rates)]
        yield sweep
        best = self._best(sweep)
        if best is None:
            return
        self.baseline = best
        best_lr = best.lr
        sync_steps = self.predictions[best.key()].iterations if best.key() in self.predictions else None
        # 2. the asynchrony ladder
        if "async_groups" in space.strategies:
            yield from self._async_ladder(config, best, best_lr, sync_steps)
        # 3. the other strategies, unless the HE model shows them dominated per step
        others = [
            config(s, lr=best_lr, momentum=BASELINE_MOMENTUM)
            for s in space.strategies
            if s not in ("sync", "async_groups")
        ]
        reference = self._predicted_speed(best)
        kept = [c for c in others if self._predicted_speed(c) < (1 + CHANGE_MARGIN) * reference]
        if kept:
            yield kept
        # 4. node counts and batch sizes, predicted by the pooled model; confirm only likely winners
        for _ in range(SWEEP_ROUNDS):
            incumbent = self._best([self._config_of(k) for k in self.results if k not in self.pruned])
            if incumbent is None:
                return
            challengers = self._sweep_candidates(self._ttc(incumbent))
            if not challengers:
                return
            yield challengers[:SWEEP_WIDTH]

    def _extend_finalist(self) -> Iterator[list[ProbeRequest]]:
        """Stage 5: re-probe the plan's config longer while its prediction extrapolates far."""
        self._reserve = 0
        for round_ in range(self.extension_rounds):
            key = self._choice()
            if key is None:
                return
            result, prediction = self.results[key], self.predictions[key]
            far = prediction.iterations > EXTEND_WHEN * result.iterations
            if result.reached_iteration is not None or not (far or round_ == 0):
                return
            self._extension[key] = self._extension.get(key, 1) * EXTEND_FACTOR
            yield [self._request(result.config, self._extension[key])]

    def _async_ladder(self, config, best: Config, best_lr: float, sync_steps: float | None):  # type: ignore[no-untyped-def]
        incumbent = self._ttc(best)
        for g in self.space.group_counts():
            if g == 1:
                continue
            probe_g = config("async_groups", groups=g, lr=best_lr, momentum=0.0)
            if sync_steps is not None and math.isfinite(incumbent):
                # Asynchrony never needs fewer iterations than sync; if even that cannot pay, stop.
                bound = self._predicted_speed(probe_g) * sync_steps
                if not bound < (1 - ASYNC_MUST_PAY) * incumbent:
                    return
            momenta = sorted(space_m for space_m in self.space.momenta
                             if total_momentum(space_m, g) <= BASELINE_MOMENTUM + MOMENTUM_SLACK)
            momenta = momenta or [min(self.space.momenta)]
            grid = [config("async_groups", groups=g, lr=lr, momentum=mu)
                    for mu in momenta for lr in (best_lr, best_lr / 3)]
            yield grid
            g_best = self._best(grid)
            g_ttc = self._ttc(g_best) if g_best else math.inf
            if not g_ttc < (1 - ASYNC_MUST_PAY) * incumbent:
                return
            incumbent = g_ttc

    def _config_of(self, key: str) -> Config:
        return self.results[key].config

    def _sweep_candidates(self, incumbent_ttc: float) -> list[Config]:
        """Unprobed node-count × batch-size variants of every live recipe predicted to win by ≥ 5%."""
        if self.model is None:
            return []
        recipes = {
            recipe(r.config): r.config for k, r in self.results.items()
            if k in self.predictions and k not in self.pruned
        }
        candidates = {}
        for base in recipes.values():
            for nodes in node_counts(self.space):
                for batch in self.space.batch_sizes:
                    devices = nodes * base.devices_per_node
                    if base.groups > 1 and devices % base.groups:
                        continue
                    candidate = base.replace(nodes=nodes, batch_size=batch)
                    if candidate.key() not in self.results:
                        candidates[candidate.key()] = candidate
        configs = list(candidates.values())
        ttc = self.model.score_many(configs)
        ranked = sorted(
            (t, i) for i, t in enumerate(ttc) if t < (1 - CHANGE_MARGIN) * incumbent_ttc
        )
        return [configs[i] for _, i in ranked]

    # -- the answer -----------------------------------------------------------------------------
    def plan(self, study_id: str) -> Plan:
        """The best probed configuration and its prediction; raises TargetUnreachable when none."""
        best_key = self._choice()
        if best_key is None:
            raise TargetUnreachable(
                f"none of {len(self.results)} probes is predicted to reach target loss {self.target}"
            )
        baseline = self.baseline or self.results[best_key].config
        best = self.results[best_key]
        supporting = [
            key for key, r in self.results.items()
            if key != best_key and recipe(r.config) == recipe(best.config)
        ]
        evidence = [best_key] + ([baseline.key()] if baseline.key() != best_key else []) + supporting
        return Plan(
            study_id=study_id,
            config=best.config,
            predicted=self.predictions[best_key],
            baseline_config=baseline,
            baseline_predicted_ttc_seconds=self._point(baseline),
            probe_count=len(self.probes),
            probe_cluster_seconds=self.cluster_seconds(),
            evidence=evidence,
        )

    def _choice(self) -> str | None:
        """The plan's config key: the best risk-aware score, unless the baseline is within 5%."""
        # Rank by the risk-aware score; a config whose 80% interval is unbounded above may never
        # converge, so it is trusted (by its point estimate) only when nothing else is predicted.
        scored = [(conservative(p), key) for key, p in self.predictions.items()]
        scored = [(t, key) for t, key in scored if math.isfinite(t)] or [
            (p.ttc_seconds, key) for key, p in self.predictions.items() if math.isfinite(p.ttc_seconds)
        ]
        if not scored:
            return None
        _, best_key = min(scored)
        baseline = self.baseline or self.results[best_key].config
        baseline_ttc = self._point(baseline)
        challenger = self.predictions[best_key]
        baseline_score = self._ttc(baseline)
        wins = challenger.ttc_seconds <= (1 - CHANGE_MARGIN) * baseline_ttc and (
            not math.isfinite(baseline_score)
            or conservative(challenger) <= (1 - CHANGE_MARGIN) * baseline_score
        )
        if math.isfinite(baseline_ttc) and baseline.key() in self.predictions and not wins:
            return baseline.key()
        return best_key

    def cluster_seconds(self) -> float:
        """Probe seconds × the share of the cluster's devices each probe occupied (DESIGN.md §7)."""
        return sum(r.seconds * r.config.devices / self.space.devices for r in self.probes)
