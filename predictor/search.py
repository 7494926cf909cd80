"""Omnivore's cold-start search (Hadjis et al. 2016, §5) driven through Optuna's ask/tell.

Call order: ``ask()`` returns the next batch of configurations to probe (run them in parallel),
``tell()`` each result, and repeat until ``ask()`` returns an empty list; then ``plan()``.

Stages, each a batch:
  1. ``sync`` on all devices, μ = 0.9, a sweep over learning rates → the best rate η*;
  2. for g = 2, 4, 8, … (``async_groups``): a grid of explicit momentum μ × {η*, η*/3}, since
     asynchrony adds implicit momentum ≈ 1 − 1/g and explicit μ must be re-tuned per g; climb
     to the next g only while more asynchrony pays ≥ 10%;
  3. the other strategies at η*, μ = 0.9;
  4. the other batch sizes for the incumbent, learning rate scaled linearly with batch.
The plan keeps the baseline (sync, all devices, μ = 0.9, η*) unless a challenger wins by ≥ 5%.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import optuna

from predictor.ttc_model import predict_ttc
from predictor.types import STRATEGIES, Budget, Config, Plan, Prediction, ProbeResult, SearchSpace

ASYNC_MUST_PAY = 0.10
CHANGE_MARGIN = 0.05
BASELINE_MOMENTUM = 0.9


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


class ColdStartSearch:
    def __init__(
        self,
        space: SearchSpace,
        budget: Budget,
        target: float,
        study: optuna.Study | None = None,
    ) -> None:
        self.space = space
        self.budget = budget
        self.target = target
        self.study = study or optuna.create_study(direction="minimize")
        self.results: dict[str, ProbeResult] = {}
        self.predictions: dict[str, Prediction] = {}
        self._trials: dict[str, optuna.trial.Trial] = {}
        self._stages = self._plan_stages()
        self._pending: list[Config] = []
        self._done = False
        self.baseline: Config | None = None

    # -- ask / tell ----------------------------------------------------------------------------
    def ask(self) -> list[Config]:
        """The next batch to probe; empty when the search is over (or the budget is spent)."""
        if self._pending or self._done:
            return []
        remaining = self.budget.max_probes - len(self.results)
        while remaining > 0:
            try:
                batch = next(self._stages)
            except StopIteration:
                break
            fresh = list({c.key(): c for c in batch if c.key() not in self.results}.values())
            if fresh:
                self._pending = fresh[:remaining]
                for config in self._pending:
                    self._trials[config.key()] = self._record(config)
                return list(self._pending)
        self._done = True
        return []

    def tell(self, result: ProbeResult) -> None:
        key = result.config.key()
        self.results[key] = result
        self._pending = [c for c in self._pending if c.key() != key]
        prediction = predict_ttc(result, self.target)
        if prediction is not None:
            self.predictions[key] = prediction
        trial = self._trials.pop(key, None) or self._record(result.config)
        trial.set_user_attr("final_loss", result.final_loss)
        trial.set_user_attr("reached_iteration", result.reached_iteration)
        if result.diverged or result.error or prediction is None:
            trial.set_user_attr("prune_reason", result.error or ("diverged" if result.diverged else "no fit"))
            self.study.tell(trial, state=optuna.trial.TrialState.PRUNED)
        else:
            self.study.tell(trial, min(prediction.ttc_seconds, 1e300))

    def stop(self) -> None:
        """End the search early (deadline or cancel); ``plan()`` uses what was measured."""
        self._done = True

    def _record(self, config: Config) -> optuna.trial.Trial:
        params = {
            "strategy": config.strategy, "nodes": config.nodes, "groups": config.groups,
            "batch_size": config.batch_size, "lr": config.lr, "momentum": config.momentum,
        }
        self.study.enqueue_trial(params, skip_if_exists=False)
        trial = self.study.ask(_trial_distributions(self.space))
        trial.set_user_attr("config", config.to_dict())
        return trial

    # -- the stages ------------------------------------------------------------------------------
    def _ttc(self, config: Config) -> float:
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

    def _plan_stages(self) -> Iterator[list[Config]]:
        space = self.space
        sizes = sorted(space.batch_sizes)
        base_batch = sizes[len(sizes) // 2]

        def config(strategy: str, **kw: float) -> Config:
            return Config(strategy, space.nodes, space.devices_per_node, **{"batch_size": base_batch, **kw})

        sweep = [config("sync", lr=lr, momentum=BASELINE_MOMENTUM) for lr in space.learning_rates]
        yield sweep
        best = self._best(sweep)
        if best is None:
            return
        self.baseline = best
        best_lr = best.lr
        candidates: list[Config] = list(sweep)
        if "async_groups" in space.strategies:
            incumbent = self._ttc(best)
            for g in space.group_counts():
                if g == 1:
                    continue
                grid = [
                    config("async_groups", groups=g, lr=lr, momentum=mu)
                    for mu in space.momenta
                    for lr in (best_lr, best_lr / 3)
                ]
                yield grid
                candidates += grid
                g_best = self._best(grid)
                g_ttc = self._ttc(g_best) if g_best else math.inf
                if not g_ttc < (1 - ASYNC_MUST_PAY) * incumbent:
                    break
                incumbent = g_ttc
        others = [s for s in space.strategies if s not in ("sync", "async_groups")]
        if others:
            batch = [config(s, lr=best_lr, momentum=BASELINE_MOMENTUM) for s in others]
            yield batch
            candidates += batch
        leader = self._best(candidates)
        if leader is not None and len(sizes) > 1:
            yield [
                leader.replace(batch_size=b, lr=leader.lr * b / leader.batch_size)
                for b in sizes
                if b != leader.batch_size
            ]

    # -- the answer -----------------------------------------------------------------------------
    def plan(self, study_id: str) -> Plan:
        """The best configuration and its prediction; raises TargetUnreachable when none."""
        scored = [
            (p.ttc_seconds, key) for key, p in self.predictions.items() if math.isfinite(p.ttc_seconds)
        ]
        if not scored:
            raise TargetUnreachable(
                f"none of {len(self.results)} probes is predicted to reach target loss {self.target}"
            )
        _, best_key = min(scored)
        baseline = self.baseline or self.results[best_key].config
        baseline_ttc = self._ttc(baseline)
        if math.isfinite(baseline_ttc) and self.predictions[best_key].ttc_seconds > (
            1 - CHANGE_MARGIN
        ) * baseline_ttc:
            best_key = baseline.key()
        best = self.results[best_key]
        evidence = [best_key] + ([baseline.key()] if baseline.key() != best_key else [])
        return Plan(
            study_id=study_id,
            config=best.config,
            predicted=self.predictions[best_key],
            baseline_config=baseline,
            baseline_predicted_ttc_seconds=baseline_ttc,
            probe_count=len(self.results),
            probe_cluster_seconds=self.cluster_seconds(),
            evidence=evidence,
        )

    def cluster_seconds(self) -> float:
        """Probe seconds × the share of the cluster's devices each probe occupied (DESIGN.md §7)."""
        return sum(r.seconds * r.config.devices / self.space.devices for r in self.results.values())
