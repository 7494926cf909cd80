"""Does the plan depend on the study's own seed? The long scenarios studied on several probe seeds.

Issue 34: on one held-out workload, one study seed planned 4 devices at lr 0.1 and another a
one-device warm-up at lr 0.03. Each long scenario is studied with its probes on each
``--study-seeds`` seed (never a truth seed), and each plan trained as planned on predictor_eval's
truth seeds; regret is its mean TTC over the best TTC predictor_eval's grid knew.

    nice python -m benchmarks.plan_stability [--scenarios a,b] [--study-seeds 0,5,6] [--jobs 2]

Prints one JSON line per (scenario, study seed), then a summary line; ``--out`` keeps them.
Scenarios run as separate invocations are summarised together with ``--merge a.json,b.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from benchmarks.predictor_eval import SCENARIOS, Truth, grids, held_out, run_ttc
from worker.spec import load_spec


def studied(name: str, seed: int, jobs: int, cache: Path | None) -> dict[str, Any]:
    spec = load_spec(SCENARIOS / "long" / f"{name}.yaml").model_copy(update={"seed": seed})
    known = grids()[name]
    _, plan, _ = run_ttc(spec)
    truth = Truth(spec, known["truth_seeds"], jobs, cache)
    try:
        mean = truth.ttc([(plan.config, plan.warmup)])[0]
    finally:
        truth.close()
    best = known["best_known_ttc"]
    return {"scenario": name, "held_out": held_out(name), "study_seed": seed, "config": plan.config.key(),
            "warmup": plan.warmup.iterations if plan.warmup else None, "mean_ttc": mean,
            "regret": mean / min(mean, best), "best_known_ttc": best}


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How many scenarios' plans change with the study's seed, and the plans' regret."""
    names = list(dict.fromkeys(r["scenario"] for r in rows))
    by_scenario = {name: [r for r in rows if r["scenario"] == name] for name in names}
    changed = sum(len({(r["config"], r["warmup"]) for r in group}) > 1 for group in by_scenario.values())
    regrets = [r["regret"] for r in rows]
    return {"scenarios": len(names), "study_seeds": sorted({r["study_seed"] for r in rows}),
            "plans_that_change_with_the_seed": changed,
            "median_regret": statistics.median(regrets), "worst_regret": max(regrets)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios",
                        help="comma-separated long scenarios (default: those with a predictor_eval grid)")
    parser.add_argument("--study-seeds", default="0,5,6")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--truth-cache", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--merge", help="comma-separated --out files of earlier runs to summarise together")
    args = parser.parse_args()
    if args.merge:
        rows = [r for path in args.merge.split(",") for r in json.loads(Path(path).read_text())["rows"]]
    else:
        names = args.scenarios.split(",") if args.scenarios else sorted(
            p.stem for p in (SCENARIOS / "long").glob("*.yaml") if p.stem in grids())
        rows = []
        for name in names:
            for seed in (int(s) for s in args.study_seeds.split(",")):
                rows.append(studied(name, seed, args.jobs, args.truth_cache))
                print(json.dumps(rows[-1]), flush=True)
    summary = summarise(rows)
    print(json.dumps({"summary": summary}))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
