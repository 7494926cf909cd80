"""How well could any reading of a run's curve forecast the time it has left? The seed's floor.

forecast_eval scores ``ttc train``'s ETA at 25/50/75% of a run against issue 34's target (median
error ≤ 10% at 50%). This asks what an oracle reaches there: one that knows four finished runs of
the *same plan* on other seeds, more than any study of a new job has. Each long scenario's
recorded plan (forecast_eval.json, probes on seed 0) is trained as planned to the target on the
truth seeds, with its curve. At a share of one run's iterations the oracle reads the time left
from the other seeds' runs:

- ``time``: the median over them of their TTC less this run's seconds so far;
- ``loss``: the median over them of their TTC less their seconds when their trailing mean loss
  (WINDOW evaluations) first reached this run's trailing mean loss now, so a run ahead of the
  others is read as ahead.

Both read the run at exactly that share, not at the last checkpoint before it, which favours them
too. What is left between them and the truth is what the seed does after the reading: a floor
for a forecast from the curve so far, held-out scenarios included (nothing here sets a constant).

    python benchmarks/eta_floor.py [--plans docs/results/forecast_eval.json] [--seeds 1,2,3,8,9] \
        [--jobs 2] [--runs eta_floor_runs.json] [--out eta_floor.json]

Prints one JSON line per scenario and a summary line: the median |estimate − truth| / truth of
each reading at each share, over every (scenario, seed).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from predictor.types import Config, Phase, json_safe
from worker.spec import load_spec

sys.path.insert(0, str(Path(__file__).parent))
from forecast_eval import ETA_SHARES  # noqa: E402
from predictor_eval import SCENARIOS, truth_run  # noqa: E402

WINDOW = 9  # evaluations in the trailing mean that matches one run's loss to another's
KEY = re.compile(r"(\w+)/n(\d+)x(\d+)/g(\d+)/b(\d+)/lr([\d.e-]+)/m([\d.]+)/(\w+)$")


def config_of(key: str) -> Config:
    """A plan's config from its key as forecast_eval records it (no options)."""
    match = KEY.match(key)
    if match is None:
        raise ValueError(f"cannot read config key {key!r}")
    strategy, nodes, per_node, groups, batch, lr, momentum, optimizer = match.groups()
    return Config(strategy, int(nodes), int(per_node), int(groups), int(batch), float(lr), float(momentum),
                  optimizer)


def record(plan: dict[str, Any], seeds: list[int], jobs: int) -> list[dict[str, Any]]:
    """The plan trained as planned to the target on each seed: its curve (iteration, seconds, loss)
    and where it reached the target."""
    spec = load_spec(SCENARIOS / plan["kind"] / f"{plan['scenario']}.yaml")
    warmup = Phase.from_dict(plan["warmup"]) if plan["warmup"] else None
    args = [(spec.model_copy(update={"seed": s}), config_of(plan["config"]), warmup, float("inf"))
            for s in seeds]
    with ProcessPoolExecutor(jobs) as pool:
        results = list(pool.map(truth_run, args))
    return [{"seed": s, "reached_iteration": r.reached_iteration, "reached_seconds": r.reached_seconds,
             "curve": [list(point) for point in r.curve]} for s, r in zip(seeds, results, strict=True)]


def trailing_mean(losses: np.ndarray) -> np.ndarray:
    """Each evaluation's mean over itself and the WINDOW − 1 before it (fewer at the start)."""
    sums = np.cumsum(np.insert(losses, 0, 0.0))
    ends = np.arange(1, len(losses) + 1)
    starts = np.maximum(ends - WINDOW, 0)
    return (sums[ends] - sums[starts]) / (ends - starts)


def readings(run: dict[str, Any], others: list[dict[str, Any]], share: float) -> dict[str, Any] | None:
    """The two oracle readings of ``run``'s time left at ``share`` of its iterations, and the truth."""
    curve = np.array(run["curve"], dtype=float)
    at = np.searchsorted(curve[:, 0], share * run["reached_iteration"], side="right") - 1
    if at < 0:
        return None
    seconds, level = curve[at, 1], trailing_mean(curve[: at + 1, 2])[-1]
    truth = run["reached_seconds"] - seconds
    by_time, by_loss = [], []
    for other in others:
        theirs = np.array(other["curve"], dtype=float)
        by_time.append(other["reached_seconds"] - seconds)
        below = np.flatnonzero(trailing_mean(theirs[:, 2]) <= level)
        matched = theirs[below[0], 1] if below.size else other["reached_seconds"]
        by_loss.append(other["reached_seconds"] - matched)
    estimates = {"time": max(statistics.median(by_time), 0.0), "loss": max(statistics.median(by_loss), 0.0)}
    return {"share": share, "iteration": int(curve[at, 0]), "truth": truth, **{
        f"{name}_error": abs(value - truth) / truth for name, value in estimates.items()}}


def score(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every run read at every share against the other seeds' runs (runs that reached only)."""
    reached = [r for r in runs if r["reached_iteration"] is not None]
    out = []
    for run in reached:
        others = [r for r in reached if r is not run]
        out += [dict(seed=run["seed"], **entry) for share in ETA_SHARES
                if others and (entry := readings(run, others, share)) is not None]
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plans", type=Path, default=Path("docs/results/forecast_eval.json"))
    parser.add_argument("--seeds", default="1,2,3,8,9")
    parser.add_argument("--scenarios", default="", help="comma-separated; default every long scenario")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--runs", type=Path, help="cache of the recorded runs (read and written)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",")]
    wanted = set(filter(None, args.scenarios.split(",")))
    plans = [p for p in json.loads(args.plans.read_text())["scenarios"]
             if p["kind"] == "long" and (not wanted or p["scenario"] in wanted)]
    cache = json.loads(args.runs.read_text()) if args.runs and args.runs.exists() else {}
    rows = []
    for plan in plans:
        if plan["scenario"] not in cache:
            cache[plan["scenario"]] = record(plan, seeds, args.jobs)
            if args.runs:
                args.runs.write_text(json.dumps(cache))
        entries = score(cache[plan["scenario"]])
        row = {"scenario": plan["scenario"], "held_out": plan["held_out"], "config": plan["config"],
               "entries": entries}
        print(json.dumps(json_safe(row)), flush=True)
        rows.append(row)
    summary = {f"{name}_median_error": {f"{share:.0%}": statistics.median(
        e[f"{name}_error"] for r in rows for e in r["entries"] if e["share"] == share)
        for share in ETA_SHARES} for name in ("time", "loss")}
    summary["pairs"] = {f"{share:.0%}": sum(e["share"] == share for r in rows for e in r["entries"])
                        for share in ETA_SHARES}
    print(json.dumps({"summary": summary}), flush=True)
    if args.out:
        args.out.write_text(json.dumps(json_safe({"summary": summary, "scenarios": rows}), indent=1))


if __name__ == "__main__":
    main()
