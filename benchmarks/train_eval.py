"""``ttc train`` end to end against tuning once and running the plan, and against the best fixed config.

For each long-horizon scenario (benchmarks/scenarios/long/) and each evaluation seed (never the
seed the predictor's constants were developed on): ``ttc train`` (the study, then the run with its
re-plans; TTC = every cluster-second from the first probe to the target), the one-shot route (the
same study, then its plan run to the target: probes + run), and every config of the ground-truth
grid, and the plan's own config, run alone from scratch (tuning free). Ratios per seed, then
their mean over seeds.

    nice python benchmarks/train_eval.py [--scenarios a,b] [--seeds 1,2] [--jobs 2] \
        [--truth-cache /tmp/ttc-truth.json] [--best-known]

``--best-known`` scores against the best TTC predictor_eval's grid knew (docs/results) instead
of running the grid on each seed: a scenario costs its two routes only. Scenarios run as separate
invocations are summarised together with ``--merge a.json,b.json``.

writes docs/results/train_eval.json (train_eval_KIND.json for another --kind) and prints one line
per scenario and a summary.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import time
from pathlib import Path
from typing import Any

from predictor_eval import (
    CENSOR,
    RESULTS,
    RUN_MAX_ITERATIONS,
    SCENARIOS,
    Truth,
    grids,
    ground_truth_grid,
    held_out,
    run_ttc,
)

from predictor.training import TrainingPlanner
from predictor.types import json_safe
from worker.spec import load_spec


def train(spec: Any) -> tuple[Any, Any, Any]:
    """ttc's study, then the run with re-plans, in this process (probe states kept in memory)."""
    search, plan, prober = run_ttc(spec)
    planner = TrainingPlanner(search.study, max_iterations=RUN_MAX_ITERATIONS)
    return search, plan, run_to_target(planner, prober)


def run_to_target(planner: TrainingPlanner, prober: Any) -> Any:
    """``planner``'s run on ``prober``'s cluster until it is done; its result."""
    while requests := planner.ask():
        for request in requests:
            planner.tell(prober.run(request))
    return planner.result()


def evaluate(name: str, kind: str, seeds: list[int], jobs: int, cache: Path | None,
             known: dict[str, Any] | None = None) -> dict[str, Any]:
    """``known``: predictor_eval's grid of this scenario, scored against instead of a grid run per
    seed (its best TTC is a mean over its own truth seeds, so a ratio per seed carries the seed's
    spread)."""
    base = load_spec(SCENARIOS / kind / f"{name}.yaml")
    devices = base.cluster.nodes * base.cluster.devices_per_node
    started = time.monotonic()
    rows = []
    for seed in seeds:
        spec = base.model_copy(update={"seed": seed})
        search, plan, trained = train(spec)
        truth = Truth(spec, [seed], jobs, cache)
        try:
            one_shot_run = truth.ttc([(plan.config, plan.warmup)])[0]
            # A fixed config only matters if it could beat ttc train or the one-shot route: censored.
            cap = CENSOR * min(trained.ttc_seconds, one_shot_run)
            if known is not None:
                grid_ttc = {known["best_in_grid"]: known["best_known_ttc"]}
            else:
                grid = ground_truth_grid(spec)
                if plan.config.key() not in {c.key() for c in grid}:  # the plan's config alone, from scratch
                    grid.append(plan.config)
                measured = truth.ttc([(c, None) for c in grid], cap)
                grid_ttc = dict(zip((c.key() for c in grid), measured, strict=True))
        finally:
            truth.close()
        probes = sum(r.seconds * r.config.devices / devices for r in search.study.probes)
        best_key = min(grid_ttc, key=grid_ttc.get)  # inf when every fixed config was censored
        best_fixed = grid_ttc[best_key] if math.isfinite(grid_ttc[best_key]) else cap
        one_shot = probes + one_shot_run
        rows.append({
            "seed": seed, "train": trained.to_dict(), "one_shot_total": one_shot,
            "one_shot_plan": plan.config.key(), "best_fixed": best_key,
            "best_fixed_ttc": grid_ttc[best_key], "best_fixed_censored_at": cap,
            "vs_one_shot": trained.ttc_seconds / one_shot,
            "vs_best_fixed": trained.ttc_seconds / best_fixed,  # an upper bound when censored
            "switches": len(trained.phases) - 1,
            "beats_every_fixed": trained.ttc_seconds < min(grid_ttc.values()),
        })
    return {
        "scenario": name, "held_out": held_out(name), "seeds": rows,
        "vs_one_shot": statistics.mean(r["vs_one_shot"] for r in rows),
        "vs_best_fixed": statistics.mean(r["vs_best_fixed"] for r in rows),
        "wall_seconds": time.monotonic() - started,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="long", help="scenario folder under benchmarks/scenarios/")
    parser.add_argument("--scenarios", help="comma-separated names (default: every scenario of --kind)")
    parser.add_argument("--seeds", default="1,2", help="evaluation seeds (each one end-to-end run per route)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--truth-cache", type=Path, help="JSON file keeping truth runs between invocations")
    parser.add_argument("--out", type=Path, help="JSON path (default: docs/results/train_eval[_KIND].json)")
    parser.add_argument("--best-known", action="store_true",
                        help="score against predictor_eval's grid (docs/results), not a grid run per seed")
    parser.add_argument("--merge", help="comma-separated --out files of earlier runs to summarise together")
    args = parser.parse_args()
    out = args.out or RESULTS / ("train_eval.json" if args.kind == "long" else f"train_eval_{args.kind}.json")
    if args.merge:
        runs = [json.loads(Path(path).read_text()) for path in args.merge.split(",")]
        write(out, runs[0]["command"], [r for run in runs for r in run["scenarios"]])
        return
    known = grids(args.kind) if args.best_known else {}
    names = args.scenarios.split(",") if args.scenarios else sorted(
        p.stem for p in (SCENARIOS / args.kind).glob("*.yaml") if not args.best_known or p.stem in known)
    seeds = [int(s) for s in args.seeds.split(",")]
    results = []
    for name in names:
        result = evaluate(name, args.kind, seeds, args.jobs, args.truth_cache, known.get(name))
        results.append(result)
        print(f"{name}: train/one-shot {result['vs_one_shot']:.3f}, "
              f"train/best fixed {result['vs_best_fixed']:.3f}, "
              f"switches {[r['switches'] for r in result['seeds']]}; {result['wall_seconds']:.0f}s",
              flush=True)
    command = (f"python benchmarks/train_eval.py --kind {args.kind} --scenarios {','.join(names)} "
               f"--seeds {args.seeds}"
               + (" --best-known" if args.best_known else ""))
    write(out, command, results)


def write(out: Path, command: str, results: list[dict[str, Any]]) -> None:
    """The summary over ``results`` (one run's or several merged), printed and written to ``out``
    with every scenario's rows, under ``command`` with its scenario list made theirs (a merge's)."""
    summary = {
        "train_beats_one_shot_by_10pct": sum(r["vs_one_shot"] <= 0.9 for r in results),
        "median_vs_best_fixed": statistics.median(r["vs_best_fixed"] for r in results),
        "worst_vs_best_fixed": max(r["vs_best_fixed"] for r in results),
        "scenarios": len(results),
    }
    names = ",".join(r["scenario"] for r in results)
    report = {"command": re.sub(r"--scenarios \S+", f"--scenarios {names}", command),
              "scenarios": results, "summary": summary}
    out.write_text(json.dumps(json_safe(report), indent=1, default=str))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
