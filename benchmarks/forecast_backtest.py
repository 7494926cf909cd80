"""Backtest the forecast on finished runs: cut each run at 25/50/75% of its iterations, forecast the rest.

forecast_eval scores one forecast per plan; this scores the forecast's reading of a curve many
times, cheaply, where the answer is known: every run here is trained to the target, then cut, and
the forecast (predictor.forecast, exactly as ``ttc train``'s ETA calls it, in iterations) is asked
how many iterations are left. Two configs per scenario — the plan forecast_eval recorded, and the
same config one learning rate up the spec's grid (one down at its top) — each on calibration seeds
(4, 5: neither the probes' seed 0 nor forecast_eval's truth seeds 1–3).

Per check: signed error (p50 − truth) / truth of the iterations left, and whether p10–p90
covered it; a run whose losses another scenario's run already gave (the same workload and config
on another cluster) is scored once. ``--scenarios public`` (the default) runs the development
scenarios only, the ones a forecast constant may be chosen on; ``--scenarios heldout`` runs the
held-out ones, to check a decision after it is made.

    nice python benchmarks/forecast_backtest.py [--scenarios public|heldout|a,b] [--seeds 4,5]
        [--prior] [--curves curves.json] [--out backtest.json]

With ``--prior`` each run is forecast again with the same config's run on the next calibration
seed as a prior curve (predictor.curve_priors): a team re-tuning a job it ran last week.

Prints one line per check and a summary line (JSON); ``--curves`` caches the runs (they are the
slow part: seconds to minutes each), so a change of the forecast is rescored in minutes.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path
from typing import Any

from benchmarks.predictor_eval import RESULTS, RUN_MAX_ITERATIONS, SCENARIOS, held_out
from predictor.forecast import Anchor, forecast
from predictor.se_model import Estimate
from predictor.types import Config, Prediction
from worker.lineage import run_schedule
from worker.probe import target_value
from worker.spec import Spec, load_spec

SHARES = (0.25, 0.5, 0.75)


def parse_key(key: str) -> Config:
    """A Config back from its ``key()`` (options-free keys, as forecast_eval's plans are)."""
    strategy, layout, groups, batch, lr, momentum, optimizer = key.split("/")[:7]
    nodes, per_node = layout[1:].split("x")
    return Config(strategy, int(nodes), int(per_node), groups=int(groups[1:]), batch_size=int(batch[1:]),
                  lr=float(lr[2:]), momentum=float(momentum[1:]), optimizer=optimizer)


def configs(spec: Spec, plan: Config) -> list[Config]:
    """The plan's config and its neighbour one learning rate along the spec's grid."""
    rates = sorted(spec.search.learning_rates)
    index = min(range(len(rates)), key=lambda i: abs(math.log(rates[i] / plan.lr)))
    other = rates[index + 1] if index + 1 < len(rates) else rates[index - 1] if index else None
    return [plan] + ([plan.replace(lr=other)] if other is not None else [])


def plans(selection: str) -> list[tuple[str, str]]:
    """(kind/name, plan config key) of forecast_eval's committed rows, filtered by ``selection``."""
    def wanted(scenario: str) -> bool:
        if selection in ("public", "heldout"):
            return held_out(scenario) == (selection == "heldout")
        return scenario in selection.split(",")

    rows = json.loads((RESULTS / "forecast_eval.json").read_text())["scenarios"]
    return [(f"{row['kind']}/{row['scenario']}", row["config"]) for row in rows if wanted(row["scenario"])]


def runs(selection: str, seeds: list[int], cache: Path | None) -> dict[str, dict[str, Any]]:
    """Every (scenario, config, seed) run to its target, from the cache where it is there."""
    done = json.loads(cache.read_text()) if cache is not None and cache.exists() else {}
    picked = plans(selection)
    for name, key in picked:
        spec = load_spec(SCENARIOS / f"{name}.yaml")
        for config in configs(spec, parse_key(key)):
            for seed in seeds:
                label = f"{name}|{config.key()}|{seed}"
                if label not in done:
                    result = run_schedule(spec.model_copy(update={"seed": seed}), config, None, math.inf,
                                          RUN_MAX_ITERATIONS)
                    done[label] = {"reached": result.reached_iteration, "curve": result.curve}
                    if cache is not None:
                        cache.write_text(json.dumps(done))
    names = {name for name, _ in picked}
    return {label: run for label, run in done.items() if label.split("|")[0] in names}


def check(curve: list[list[float]], reached: int, share: float, target: float,
          prior: list[list[float]] | None = None) -> dict[str, Any]:
    """The forecast of the iterations left, made where the run stood at ``share`` of them; with
    ``prior`` (another seed's finished run of the same config) as the forecast's prior curve."""
    cut = [tuple(point) for point in curve if point[0] <= share * reached]
    end = float(cut[-1][0])
    unknown = Prediction(math.inf, 0.0, math.inf, 1.0, math.inf, end, 0.0)
    anchor = Anchor(cut, end, end, 0.0, 1.0, Estimate(1.0, 1.0, 1.0))
    priors = () if prior is None else ([(k, loss) for k, _, loss in prior],)
    predicted = forecast(unknown, anchor, target, priors=priors).prediction
    truth = reached - end
    return {"share": share, "at": end, "truth": truth, "p10": predicted.ttc_low, "p50": predicted.ttc_seconds,
            "p90": predicted.ttc_high, "error": (predicted.ttc_seconds - truth) / truth,
            "covered": predicted.ttc_low <= truth <= predicted.ttc_high}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    errors = [row["error"] for row in rows]
    widths = [row["p90"] / row["p10"] for row in rows if row["p10"] > 0 and math.isfinite(row["p90"])]
    return {"checks": len(rows), "median_abs_error": statistics.median(abs(e) for e in errors),
            "median_width": statistics.median(widths) if widths else None,
            "median_signed_error": statistics.median(errors),
            "mid_run_median_abs_error": statistics.median(abs(r["error"]) for r in rows if r["share"] == 0.5),
            "coverage": sum(r["covered"] for r in rows) / len(rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default="public", help="public, heldout, or names")
    parser.add_argument("--seeds", default="4,5", help="calibration seeds (not 0: the probes'; not 1-3)")
    parser.add_argument("--curves", type=Path, help="cache of the runs (JSON), read and extended")
    parser.add_argument("--prior", action="store_true",
                        help="the same config's run on the next seed as a prior (a job run before)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    if {0, 1, 2, 3} & set(seeds):
        parser.error("calibration seeds must not be the probes' (0) or forecast_eval's truth seeds (1-3)")
    rows, seen = [], set()
    done = runs(args.scenarios, seeds, args.curves)
    for label, run in sorted(done.items()):
        losses = tuple(point[2] for point in run["curve"])
        if run["reached"] is None or losses in seen:
            continue  # scenarios that differ only in their cluster's clock run the same curve: scored once
        seen.add(losses)
        name, key, seed = label.split("|")
        target = target_value(load_spec(SCENARIOS / f"{name}.yaml"))
        other = seeds[(seeds.index(int(seed)) + 1) % len(seeds)]
        prior = done.get(f"{name}|{key}|{other}") if args.prior else None
        for share in SHARES:
            row = {"scenario": name, "config": key, "seed": int(seed)} | check(
                run["curve"], run["reached"], share, target, None if prior is None else prior["curve"])
            rows.append(row)
            print(json.dumps(row), flush=True)
    result = {"scenarios": args.scenarios, "seeds": seeds, "prior": args.prior, "summary": summary(rows),
              "checks": rows}
    print(json.dumps(result["summary"]))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
