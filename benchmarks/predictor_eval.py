"""Evaluate ttc's plans out of sample: truth runs on other seeds, regret against the best config anyone found.

For each scenario in benchmarks/scenarios/<kind>/ (a scenario named ``heldout_*`` is held out: no
model constant or default was chosen on it):

1. **methods** pick a config with the probes' seed: ttc's search (its plan is then run *as
   planned*, warm-up phase included), Optuna TPE as a black box (objective: loss after one
   probe) given the same probe cluster-seconds, Omnivore's plain grid without models, and the
   naive baseline; each pick is trained to the target on every truth seed (never the probes'
   seed) with the code ``ttc run`` uses (worker.lineage);
2. **truth** — every config of a ground-truth grid is trained from scratch on each truth seed,
   censored at ``CENSOR``× the best TTC known so far (it only has to find anything faster);
3. **figures** — regret = TTC(pick) / the best TTC known (grid ∪ every pick); the plan's prediction
   error against its measured TTC (mean over truth seeds), only where the plan gives a number (where
   it gives none, the point it withheld is reported beside it as ``withheld``, a diagnostic of what
   the evidence would have said, never scored as the plan's error); where the plan's own run was
   measured without reaching (``at_least``, predictor.no_number), whether every truth seed took
   longer than that; probe cost = the study's cluster-seconds
   / TTC(plan); coverage of 80% intervals over the plan and sampled configs run as the plan would
   run them, a config predicted to reach that never did counting as a miss, and an interval with
   no upper end (it covers anything) not scored, nor a check whose truth run stopped at
   RUN_MAX_ITERATIONS before the interval's top without reaching (it decides nothing);
   ttc's TTC + probe cost against TPE's.

    nice python benchmarks/predictor_eval.py --kind long [--scenarios a,b] [--jobs 2] \
        [--truth-cache /tmp/ttc-truth.json]

writes docs/results/predictor_eval_<kind>.json and prints one line per scenario and a summary.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import optuna

from predictor import ColdStartSearch, Config, Plan, ProbeRequest, ProbeResult
from predictor.async_step import ASYNC_MUST_PAY
from predictor.types import Phase, json_safe
from worker.lineage import State, run_schedule, run_segment
from worker.probe import target_value
from worker.spec import Spec, load_spec

SCENARIOS = Path(__file__).parent / "scenarios"
RESULTS = Path(__file__).parent.parent / "docs" / "results"
RUN_MAX_ITERATIONS = 40_000
CHECKED_CONFIGS = 6  # sampled grid configs whose predictions are checked besides the plan
CENSOR = 1.5  # grid truth runs stop at this multiple of the best TTC known when they start
NEVER = 3.0  # a config predicted never to reach is checked against this multiple of the best known


def held_out(name: str) -> bool:
    return name.startswith("heldout_")


def grids(kind: str = "long") -> dict[str, dict[str, Any]]:
    """This benchmark's last grids by scenario (docs/results): the truth seeds and the best TTC
    each one knew, which other benchmarks score against without re-running a grid."""
    scenarios = json.loads((RESULTS / f"predictor_eval_{kind}.json").read_text())["scenarios"]
    return {s["scenario"]: s for s in scenarios}


def _seeded(spec: Spec, seed: int) -> Spec:
    return spec.model_copy(update={"seed": seed})


def truth_run(args: tuple[Spec, Config, Phase | None, float]) -> ProbeResult:
    """One (config, warm-up) trained as planned to the target within ``cap`` seconds (a pool
    worker: one thread each)."""
    import torch

    torch.set_num_threads(1)
    spec, config, warmup, cap = args
    return run_schedule(spec, config, warmup, cap, RUN_MAX_ITERATIONS)


class Truth:
    """Runs-to-target on the truth seeds (a process pool), cached by what they depend on.

    A run may be censored at ``cap`` simulated seconds: it then only says "slower than the cap",
    which is all a config far slower than the best known needs to say (regret's denominator is the
    best, and a config ``CENSOR``× slower than it on a seed cannot be the best on the mean). A
    cached censored run answers only for caps no larger than its own."""

    def __init__(self, spec: Spec, seeds: list[int], jobs: int, cache: Path | None) -> None:
        self.spec, self.seeds, self.cache = spec, seeds, cache
        self.pool = ProcessPoolExecutor(jobs) if jobs > 1 else None
        job = json.dumps(spec.model_dump(mode="json", exclude={"search", "budget", "seed"}), sort_keys=True)
        self.job = hashlib.sha256(job.encode()).hexdigest()[:16]
        self.runs: dict[str, dict[str, Any]] = {}
        if cache is not None and cache.exists():
            self.runs = json.loads(cache.read_text()).get(self.job, {})

    @staticmethod
    def key(config: Config, warmup: Phase | None, seed: int) -> str:
        prefix = f"{warmup.config.key()}*{warmup.iterations}>" if warmup else ""
        return f"{prefix}{config.key()}@seed{seed}"

    def _known(self, key: str, cap: float) -> bool:
        run = self.runs.get(key)
        if run is None:
            return False
        if run["reached_seconds"] is not None:
            return True
        censored = run.get("censored_at")
        return "ran_seconds" in run and (censored is None or censored >= cap)

    def ttc(self, plans: list[tuple[Config, Phase | None]], cap: float = math.inf) -> list[float]:
        """Mean TTC over the truth seeds of each (config, warm-up); inf unless every seed reached
        within ``cap`` simulated seconds."""
        wanted = {self.key(c, w, s): (_seeded(self.spec, s), c, w, cap) for c, w in plans for s in self.seeds}
        fresh = [k for k in wanted if not self._known(k, cap)]
        runs = self.pool.map(truth_run, [wanted[k] for k in fresh]) if self.pool else map(
            truth_run, [wanted[k] for k in fresh])
        for key, result in zip(fresh, runs, strict=True):
            self.runs[key] = {"reached_seconds": result.reached_seconds,
                              "iterations": result.reached_iteration,
                              "censored_at": None if math.isinf(cap) else cap,
                              "ran_seconds": result.end_seconds}
        if fresh and self.cache is not None:
            stored = json.loads(self.cache.read_text()) if self.cache.exists() else {}
            stored[self.job] = self.runs
            self.cache.write_text(json.dumps(stored))
        out = []
        for config, warmup in plans:
            seconds = [run["reached_seconds"] for run in self.runs_of(config, warmup)]
            reached = all(t is not None and t <= cap for t in seconds)
            out.append(statistics.mean(seconds) if reached else math.inf)
        return out

    def runs_of(self, config: Config, warmup: Phase | None) -> list[dict[str, Any]]:
        """The recorded runs of a (config, warm-up) already run, one per truth seed."""
        return [self.runs[self.key(config, warmup, s)] for s in self.seeds]

    def fastest(self, config: Config, warmup: Phase | None) -> float:
        """The shortest TTC over the truth seeds of a (config, warm-up) already run (inf if none reached)."""
        seconds = [run["reached_seconds"] for run in self.runs_of(config, warmup)]
        return min((t for t in seconds if t is not None), default=math.inf)

    def ran_for(self, config: Config, warmup: Phase | None) -> float:
        """Seconds the shortest run that did not reach the target ran for (inf when every seed
        reached): a check is decided only once its runs went past the interval's top."""
        return min((r["ran_seconds"] for r in self.runs_of(config, warmup) if r["reached_seconds"] is None),
                   default=math.inf)

    def close(self) -> None:
        if self.pool:
            self.pool.shutdown()


class Prober:
    """Runs probes in this process as ``ttc`` would on the simulated cluster, keeping end states."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.states: dict[str, State] = {}

    def run(self, request: ProbeRequest) -> ProbeResult:
        parent = self.states.get(request.parent) if request.parent else None
        result, state = run_segment(self.spec, request, parent)
        self.states[request.key] = state
        return result

    def scratch(self, config: Config) -> ProbeResult:
        budget = self.spec.budget
        return self.run(ProbeRequest(config, budget.probe_seconds, budget.probe_max_iterations))


def cluster_seconds(results: list[ProbeResult], devices: int) -> float:
    return sum(r.seconds * r.config.devices / devices for r in results)


def ground_truth_grid(spec: Spec) -> list[Config]:
    """The reference grid, sized for a 2-core machine (each long-horizon truth run is thousands of
    iterations): sync over learning rates × momenta ≥ 0.3; every other strategy at the two largest
    learning rates; async g ∈ {2, 4} with μ ∈ {0, 0.6}; a larger batch; fewer nodes (at every rate
    when a node throttles mid-run); one device at every rate and every batch (the search may plan
    one device, so the grid and TPE can too; one device's step is latency-bound on a small model,
    so its largest batch costs little more per iteration and is often the fastest run of all).
    The best known config is the best of this grid and every method's pick."""
    n, d = spec.cluster.nodes, spec.cluster.devices_per_node
    lrs, momenta = sorted(spec.search.learning_rates), sorted(spec.search.momenta)
    batches = sorted(spec.search.batch_sizes)
    mid_batch = batches[len(batches) // 2]
    top = lrs[-2:]
    grid = [Config("sync", n, d, batch_size=mid_batch, lr=lr, momentum=mu)
            for lr in lrs for mu in momenta if mu >= 0.3]
    for strategy in spec.search.strategies:
        if strategy in ("sync", "async_groups"):
            continue
        options = {"warmup_epochs": 0} if strategy == "daso" else {}
        grid += [Config(strategy, n, d, batch_size=mid_batch, lr=lr, momentum=0.9, options=options)
                 for lr in top]
    grid += [Config("sync", n, d, batch_size=batches[-1], lr=lr, momentum=0.9) for lr in top
             if batches[-1] != mid_batch]
    if "async_groups" in spec.search.strategies:
        grid += [Config("async_groups", n, d, groups=g, batch_size=mid_batch, lr=lrs[-1], momentum=mu)
                 for g in (2, 4) if (n * d) % g == 0 for mu in (0.0, 0.6)]
    fewer = sorted({1, max(n // 2, 1)} - {n})  # fewer nodes: no slow links, a smaller global batch
    # A node that throttles mid-run makes fewer nodes the fallback to beat, so at every rate.
    fewer_lrs = lrs if spec.cluster.throttle is not None else lrs[-1:]
    grid += [Config("sync", m, d, batch_size=mid_batch, lr=lr, momentum=0.9)
             for m in fewer for lr in fewer_lrs]
    grid += [Config("sync", 1, 1, batch_size=b, lr=lr, momentum=0.9) for b in batches for lr in lrs]
    return list({c.key(): c for c in grid}.values())


def naive_baseline(spec: Spec) -> Config:
    lrs, batches = sorted(spec.search.learning_rates), sorted(spec.search.batch_sizes)
    return Config("sync", spec.cluster.nodes, spec.cluster.devices_per_node,
                  batch_size=batches[len(batches) // 2], lr=lrs[len(lrs) // 2], momentum=0.9)


def run_ttc(spec: Spec) -> tuple[ColdStartSearch, Plan, Prober]:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    prober = Prober(spec)
    search = ColdStartSearch(spec.search_space(), spec.budget_limits(), target_value(spec))
    while requests := search.ask():
        for request in requests:
            search.tell(prober.run(request))
    return search, search.plan("eval"), prober


def run_tpe(spec: Spec, prober: Prober, spend: float, seed: int) -> tuple[Config, list[ProbeResult]]:
    """Optuna TPE as a black box on the same probe cluster-seconds: minimise the loss after one probe."""
    space, devices = spec.search_space(), spec.cluster.nodes * spec.cluster.devices_per_node
    study = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=seed), direction="minimize")
    probes: list[ProbeResult] = []
    nodes_choices = sorted({1 << i for i in range(space.nodes.bit_length()) if (1 << i) <= space.nodes}
                           | {space.nodes})
    per_node = sorted({1 << i for i in range(space.devices_per_node.bit_length())
                       if (1 << i) <= space.devices_per_node} | {space.devices_per_node})
    while not probes or cluster_seconds(probes, devices) < spend:
        trial = study.ask()
        strategy = trial.suggest_categorical("strategy", list(space.strategies))
        nodes = trial.suggest_categorical("nodes", nodes_choices)
        devices = trial.suggest_categorical("devices_per_node", per_node)
        groups = 1
        if strategy == "async_groups":
            groups = trial.suggest_categorical("groups", [2, 4, 8])
            while (nodes * devices) % groups:
                groups //= 2
        config = Config(
            "sync" if strategy == "async_groups" and groups == 1 else strategy, nodes, devices,
            groups=groups, batch_size=trial.suggest_categorical("batch_size", list(space.batch_sizes)),
            lr=trial.suggest_categorical("lr", list(space.learning_rates)),
            momentum=trial.suggest_categorical("momentum", list(space.momenta)),
        )
        result = prober.scratch(config)
        probes.append(result)
        loss = result.final_loss
        study.tell(trial, loss if math.isfinite(loss) and not result.diverged else 1e9)
    best = min(probes, key=lambda r: r.final_loss if math.isfinite(r.final_loss) and not r.diverged else 1e9)
    return best.config, probes


def run_plain_grid(spec: Spec, prober: Prober) -> tuple[Config, list[ProbeResult]]:
    """Omnivore's cold start without models: the μ × η grid per g, judged by loss after a probe."""
    space = spec.search_space()
    n, d = space.nodes, space.devices_per_node
    batch = sorted(space.batch_sizes)[len(space.batch_sizes) // 2]

    def loss(r: ProbeResult) -> float:
        return r.final_loss if math.isfinite(r.final_loss) and not r.diverged else math.inf

    probes = [prober.scratch(Config("sync", n, d, batch_size=batch, lr=lr, momentum=0.9))
              for lr in space.learning_rates]
    best = min(probes, key=loss)
    incumbent = loss(best)
    for g in space.group_counts():
        if g == 1 or "async_groups" not in space.strategies:
            continue
        grid = [prober.scratch(Config("async_groups", n, d, groups=g, batch_size=batch, lr=lr, momentum=mu))
                for mu in space.momenta for lr in (best.config.lr, best.config.lr / 3)]
        probes += grid
        g_best = min(grid, key=loss)
        if not loss(g_best) < (1 - ASYNC_MUST_PAY) * incumbent:
            break
        best, incumbent = g_best, loss(g_best)
    probes += [prober.scratch(Config(s, n, d, batch_size=batch, lr=best.config.lr, momentum=0.9))
               for s in space.strategies if s not in ("sync", "async_groups")]
    return min(probes, key=loss).config, probes


def _check(prediction: Any, measured: float) -> dict[str, Any]:
    """Prediction against measurement; a predicted reach that never came is a miss."""
    if prediction is None:
        return {"predicted": None, "measured": measured}
    point, low, high = prediction.ttc_seconds, prediction.ttc_low, prediction.ttc_high
    if not math.isfinite(point):
        return {"predicted": None, "measured": measured, "covered": not math.isfinite(measured)}
    error = abs(point - measured) / measured if math.isfinite(measured) else math.inf
    if not math.isfinite(high):  # covers anything: no number, so not scored (predictor.confidence)
        return {"predicted": point, "interval": [low, high], "measured": measured, "error": error}
    return {"predicted": point, "interval": [low, high], "measured": measured, "error": error,
            "covered": low <= measured <= high}


def _progress(name: str, started: float, text: str) -> None:
    print(f"  [{name} {time.monotonic() - started:.0f}s] {text}", file=sys.stderr, flush=True)


def evaluate(name: str, kind: str, jobs: int, seeds: list[int], cache: Path | None) -> dict[str, Any]:
    spec = load_spec(SCENARIOS / kind / f"{name}.yaml")
    devices = spec.cluster.nodes * spec.cluster.devices_per_node
    truth = Truth(spec, seeds, jobs, cache)
    started = time.monotonic()
    try:
        search, plan, prober = run_ttc(spec)
        ttc_probes = search.study.probes
        spent = cluster_seconds(ttc_probes, devices)
        tpe_config, tpe_probes = run_tpe(spec, prober, spent, spec.seed)
        grid_config, grid_probes = run_plain_grid(spec, prober)
        picks: dict[str, tuple[Config, Phase | None, list[ProbeResult]]] = {
            "ttc": (plan.config, plan.warmup, ttc_probes), "tpe": (tpe_config, None, tpe_probes),
            "plain_grid": (grid_config, None, grid_probes), "naive": (naive_baseline(spec), None, []),
        }
        _progress(name, started, f"{len(ttc_probes)} ttc probes, picks chosen; truth runs of the picks")
        measured = dict(zip(picks, truth.ttc([(c, w) for c, w, _ in picks.values()]), strict=True))
        _progress(name, started, f"picks measured {json_safe(measured)}; the grid")
        # The grid only has to find anything faster than the picks: censor it at CENSOR × the best so far.
        grid = ground_truth_grid(spec)
        grid_ttc: dict[str, float] = {}
        for batch in (grid[: len(grid) // 2], grid[len(grid) // 2:]):
            best_so_far = min(*measured.values(), *grid_ttc.values())
            grid_ttc |= dict(zip((c.key() for c in batch), truth.ttc([(c, None) for c in batch],
                                                                     CENSOR * best_so_far), strict=True))
        best_known = min(*grid_ttc.values(), *measured.values())
        _progress(name, started, f"grid of {len(grid)} measured; best known {best_known:.4g}s; checks")
        methods = {}
        for method, (config, warmup, probes) in picks.items():
            cost = cluster_seconds(probes, devices)
            methods[method] = {
                "config": config.key(), "warmup": warmup.to_dict() if warmup else None,
                "ttc_seconds": measured[method], "regret": measured[method] / best_known,
                "probes": len(probes), "probe_cluster_seconds": cost, "probe_cost": cost / measured[method],
                "total_seconds": measured[method] + cost,
            }
        plan_check = _check(plan.predicted if plan.confidence.supported else None, measured["ttc"])
        if not plan.confidence.supported:  # a diagnostic, never a plan error: what the plan held back
            plan_check["withheld"] = _check(search.study.predict(plan.config), measured["ttc"])
        if math.isfinite(plan.predicted.evidence_seconds):  # the measured lower bound, on every truth seed
            fastest = truth.fastest(plan.config, plan.warmup)
            plan_check["at_least"] = {"seconds": plan.predicted.evidence_seconds, "fastest_truth": fastest,
                                      "held": fastest >= plan.predicted.evidence_seconds}
        warmup = (Phase(search.study.warmup_config, search.study.fork.iteration)
                  if search.study.fork and search.study.warmup_config else None)
        checks = []
        for config in random.Random(0).sample(grid, min(CHECKED_CONFIGS, len(grid))):
            prediction = search.study.predict(config)
            if prediction is None:
                continue
            # Censored past the interval's top: a run slower than that is a miss whatever its TTC.
            # "Never reaches" is checked as "not within NEVER × the best known".
            high = prediction.ttc_high if math.isfinite(prediction.ttc_seconds) else NEVER * best_known
            cap = max(CENSOR * best_known, 1.5 * high)
            run = (config, None if config == search.study.warmup_config else warmup)
            [seconds] = truth.ttc([run], cap)
            check = {"config": config.key(), **_check(prediction, seconds)}
            ran = truth.ran_for(*run)
            if "covered" in check and ran < high:  # cut by RUN_MAX_ITERATIONS before the top: undecided
                del check["covered"]
                check["undecided"] = f"a truth run stopped unreached at {ran:.4g} s, below {high:.4g} s"
            checks.append(check)
        return {
            "scenario": name, "held_out": held_out(name), "target": target_value(spec),
            "truth_seeds": seeds, "probe_seed": spec.seed, "grid_size": len(grid),
            "best_in_grid": min(grid_ttc, key=grid_ttc.get), "best_known_ttc": best_known,
            "methods": methods,
            "plan": {**plan.to_dict(), **plan_check},
            "checks": checks,
            "tpe_ratio": methods["ttc"]["total_seconds"] / methods["tpe"]["total_seconds"],
            "wall_seconds": time.monotonic() - started,
        }
    finally:
        truth.close()


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    def figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
        ttc = [r["methods"]["ttc"] for r in rows]
        errors = [r["plan"]["error"] for r in rows if r["plan"].get("predicted") is not None]
        checks = [c for r in rows for c in [r["plan"], *r["checks"]] if "covered" in c]
        return {
            "scenarios": [r["scenario"] for r in rows],
            "median_regret": _median([m["regret"] for m in ttc]),
            "worst_regret": max((m["regret"] for m in ttc), default=None),
            "median_plan_error": _median(errors),
            "plans_without_a_number": sum(r["plan"].get("predicted") is None for r in rows),
            "lower_bounds_held": sum(r["plan"]["at_least"]["held"] for r in rows if "at_least" in r["plan"]),
            "lower_bounds": sum("at_least" in r["plan"] for r in rows),
            "median_withheld_error": _median([r["plan"]["withheld"]["error"] for r in rows
                                              if r["plan"].get("withheld", {}).get("predicted") is not None]),
            "median_probe_cost": _median([m["probe_cost"] for m in ttc]),
            "worst_probe_cost": max((m["probe_cost"] for m in ttc), default=None),
            "beats_tpe_by_20pct": sum(r["tpe_ratio"] <= 0.8 for r in rows),
            "coverage": sum(c["covered"] for c in checks) / max(len(checks), 1),
            "coverage_checks": len(checks),
            "unbounded_checks": sum(c.get("predicted") is not None and "covered" not in c
                                    and "undecided" not in c for r in rows for c in r["checks"]),
            "undecided_checks": sum("undecided" in c for r in rows for c in r["checks"]),
            "tpe_median_regret": _median([r["methods"]["tpe"]["regret"] for r in rows]),
            "plain_grid_median_regret": _median([r["methods"]["plain_grid"]["regret"] for r in rows]),
        }

    return {"all": figures(results), "development": figures([r for r in results if not r["held_out"]]),
            "held_out": figures([r for r in results if r["held_out"]])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    kinds = sorted(p.name for p in SCENARIOS.iterdir() if p.is_dir())
    parser.add_argument("--kind", default="long", choices=kinds)
    parser.add_argument("--scenarios", help="comma-separated names (default: every scenario of --kind)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--truth-seeds", default="1,2", help="seeds of the truth runs (not the probes')")
    parser.add_argument("--out", type=Path, help="JSON path (default under docs/results/)")
    parser.add_argument("--truth-cache", type=Path, help="JSON file keeping truth runs between invocations")
    args = parser.parse_args()
    names = args.scenarios.split(",") if args.scenarios else sorted(
        p.stem for p in (SCENARIOS / args.kind).glob("*.yaml"))
    seeds = [int(s) for s in args.truth_seeds.split(",")]
    results = []
    for name in names:
        result = evaluate(name, args.kind, args.jobs, seeds, args.truth_cache)
        results.append(result)
        m, plan = result["methods"], result["plan"]
        withheld = plan.get("withheld", {})
        error = f"plan error {plan['error']:.1%}" if plan.get("predicted") is not None else "plan: no number"
        if withheld.get("predicted") is not None:
            error += f" (withheld {withheld['error']:.1%} off)"
        if "at_least" in plan:
            bound = plan["at_least"]
            error += f"; above {bound['seconds']:.4g}s {'held' if bound['held'] else 'MISSED'}"
        print(f"{name}{' (held out)' if result['held_out'] else ''}: regret ttc {m['ttc']['regret']:.3f} "
              f"tpe {m['tpe']['regret']:.3f} grid {m['plain_grid']['regret']:.3f} "
              f"naive {m['naive']['regret']:.3f}; {error}", end="")
        print(f"; confidence {plan['confidence']['level']}; probe cost {m['ttc']['probe_cost']:.1%}; "
              f"ttc/tpe total {result['tpe_ratio']:.2f}; {result['wall_seconds']:.0f}s", flush=True)
    command = (f"python benchmarks/predictor_eval.py --kind {args.kind} --scenarios {','.join(names)} "
               f"--truth-seeds {args.truth_seeds}")
    report = {"command": command,
              "scenarios": results, "summary": summarise(results)}
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = args.out or RESULTS / f"predictor_eval_{args.kind}.json"
    out.write_text(json.dumps(json_safe(report), indent=1, default=str))
    print(json.dumps(json_safe(report["summary"]), indent=1))


if __name__ == "__main__":
    main()
