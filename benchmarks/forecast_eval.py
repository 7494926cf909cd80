"""Score ttc's forecasts out of sample: each plan's p10/p50/p90 against its run on other seeds.

For each scenario of benchmarks/scenarios/<kind>/ (``heldout_*`` scenarios are held out: no
constant or default of the forecast was chosen on them), ttc's study runs on the probes' seed,
and the plan is trained *as planned* (its warm-up included) to the target on every truth seed
(never the probes' seed), with the code ``ttc run`` uses. Per (scenario, truth seed):

* covered — p10 ≤ truth ≤ p90 (an open p90 is unbounded above);
* error — |p50 − truth| / truth;
* width — p90 / p10;
* bound held — truth ≥ the plan's measured lower bound (``evidence_seconds``), where it has one;
* z — how far the truth sits from p50, in units where p10 and p90 sit at ∓1.28 (each side
  log-normal). Pairs share their scenario's shape error, so coverage counts them as more
  independent than they are; the median |z| (0.67 for a calibrated forecast) says whether the
  intervals are too wide or too narrow on the whole.

Long scenarios also run ``ttc train`` on the probes' seed (the study is the same one): its ETA at
the checkpoints nearest 25%, 50% and 75% of the run's iterations is scored against the run's own
seconds left (|p50 − truth| / truth, and whether p10–p90 covered it); its span, (p90 − p10) over the
run's own seconds, is how far apart the finish times it allows lie, which should narrow as the
run goes (an open p90 is an infinite span). The probes' cost is given
for both routes: against the plan's TTC (``probe_cost``: the one-shot route, the run starts over)
and, for ``ttc train``, its tuning off the run's lineage against the run's own seconds
(``train.tuning_share``: the run continues the study's lineage).

With ``--prior-seed S`` the plan is also run once on seed S (neither the probes' seed nor a truth
seed): a finished run of the same job, as a team that ran it last week has. The same plan's
forecast is made again with that run's curve as a prior (predictor.forecast) and scored beside
the forecast without it (``with_prior``).

    nice python benchmarks/forecast_eval.py --kind short,long [--scenarios a,b] [--truth-seeds 1,2,3]
        [--jobs 1] [--truth-cache truth_fe.json] [--study-seed 10]

A scenario's truths all sit around its one study's centre, so its pairs share that centre's
error. ``--study-seed`` studies on another probes' seed; merged with the default run, the summary's
``by_study_seed`` gives each study seed's coverage and median |z|, and the pooled figures count
each centre drawn afresh.

prints one JSON line per scenario and a summary line, and writes docs/results/forecast_eval.json.
Scenarios run as separate invocations (one process each, say) are summarised together with
``--merge a.json,b.json`` (no scenario is run then).
The plan's choice is predictor_eval's to score against a ground-truth grid; this benchmark reads
that grid's best TTC from predictor_eval's committed JSON (``--best-known``) and reports the plan's
regret on the same truth seeds, so a changed plan is scored without re-running the grid.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from predictor import ColdStartSearch, Plan
from predictor.quantile_cdf import normal_score
from predictor.types import json_safe
from worker.lineage import run_schedule
from worker.probe import target_value
from worker.spec import Spec, load_spec

sys.path.insert(0, str(Path(__file__).parent))
from best_found import regret_found  # noqa: E402
from predictor_eval import RESULTS, RUN_MAX_ITERATIONS, SCENARIOS, Truth, held_out, run_ttc  # noqa: E402
from train_eval import train  # noqa: E402

ETA_SHARES = (0.25, 0.5, 0.75)  # shares of the run at which ttc train's ETA is scored


def score_run(predicted: dict[str, Any], truth: float | None) -> dict[str, Any]:
    """One truth run against the plan's forecast (``truth`` None: it never reached)."""
    p10, p50, p90 = predicted["ttc_p10"], predicted["ttc_p50"], predicted["ttc_p90"]
    top = math.inf if p90 is None else p90
    bound = predicted.get("evidence_seconds")
    if truth is None:
        return {"truth": None, "covered": p90 is None, "error": None, "bound_held": True}
    return {
        "truth": truth,
        "covered": p10 is not None and p10 <= truth <= top,
        "error": abs(p50 - truth) / truth if p50 is not None else None,
        "bound_held": None if bound is None else truth >= bound,
    }


def standard_score(predicted: dict[str, Any], truth: float | None) -> float | None:
    """The truth's z under the forecast, read as the CI gate reads it (predictor.quantile_cdf);
    None where it never reached or its side of p50 is open or flat."""
    if truth is None or predicted["ttc_p50"] is None:
        return None
    return normal_score(truth, predicted["ttc_p10"], predicted["ttc_p50"], predicted["ttc_p90"])


def score_eta(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The training's ETA at 25/50/75% of its run against the seconds the run actually had left:
    the last ETA at or before that share of the run's iterations. A share the run passed while it
    was still tuning has no ETA yet (the plan is the forecast there) and is not scored."""
    eta = result.get("eta") or []
    if not result.get("reached") or not eta:
        return []
    end = result["ttc_seconds"] - result["tuning_cluster_seconds"]  # the run's own seconds at the target
    scored = []
    for share in ETA_SHARES:
        at = share * result["iterations"]
        before = [e for e in eta if e["iteration"] <= at]
        common = {"share": share, "run_iterations": result["iterations"]}
        if not before:
            why = f"no ETA yet: the first came at iteration {eta[0]['iteration']}"
            scored.append({**common, "iteration": None, "error": None, "why": why})
            continue
        entry = before[-1]
        truth = end - entry["seconds"]
        p10, p50, p90 = eta_left(entry)
        scored.append({**common, "iteration": entry["iteration"], "truth": truth, "p50": p50,
                       "error": abs(p50 - truth) / truth if truth > 0 else None,
                       "covered": p10 <= truth <= p90, "span": (p90 - p10) / end})
    return scored


def eta_left(entry: dict[str, Any]) -> tuple[float, float, float]:
    """An ETA entry's p10/p50/p90 of the time left; an open one (``null``: the loss read levelling off
    above the target) is never."""
    p10, p50, p90 = (math.inf if entry[f"remaining_p{q}"] is None else float(entry[f"remaining_p{q}"])
                     for q in (10, 50, 90))
    return p10, p50, p90


def probe_cost(probe_seconds: float, scores: list[dict[str, Any]]) -> float | None:
    """The study's probes (cluster-seconds) against the plan's mean TTC on the truth seeds: the
    one-shot route, where the plan's run starts over from scratch or from its warm-up."""
    truths = [s["truth"] for s in scores]
    return probe_seconds / statistics.mean(truths) if truths and None not in truths else None


def train_cost(result: dict[str, Any]) -> dict[str, Any]:
    """``ttc train``'s tuning off the run's lineage (the study's probes the run does not continue,
    and its re-plans' forks) against the run's own seconds: where the study's lineage reached the
    target, the run is that lineage and costs nothing more."""
    tuning = result["tuning_cluster_seconds"]
    own = result["ttc_seconds"] - tuning if result["reached"] else None
    return {"reached": result["reached"], "ttc_seconds": result["ttc_seconds"],
            "tuning_cluster_seconds": tuning, "tuning_share": tuning / own if own else None,
            "switches": len(result["phases"]) - 1}


def grid(name: str, best_known: Path) -> dict[str, Any] | None:
    """The scenario's predictor_eval entry (its grid's ``best_known_ttc`` over its ``truth_seeds``)."""
    if not best_known.exists():
        return None
    return {r["scenario"]: r for r in json.loads(best_known.read_text())["scenarios"]}.get(name)


def regret(name: str, scores: list[dict[str, Any]], best_known: Path) -> dict[str, Any] | None:
    """The plan's mean TTC over predictor_eval's truth seeds against the best TTC its grid knew."""
    known = grid(name, best_known)
    if known is None:
        return None
    truths = [s["truth"] for s in scores if s["seed"] in known["truth_seeds"]]
    if len(truths) != len(known["truth_seeds"]) or None in truths:
        return {"regret": None, "why": "a truth run did not reach the target"}
    mean, previous = statistics.mean(truths), known["methods"]["ttc"]
    return {"regret": mean / min(mean, known["best_known_ttc"]), "best_known_ttc": known["best_known_ttc"],
            "previous_config": previous["config"], "previous_regret": previous["regret"]}


def with_prior(search: ColdStartSearch, plan: Plan, spec: Spec, seed: int) -> dict[str, Any]:
    """The plan's forecast remade with a finished run of it on ``seed`` as a prior."""
    run = run_schedule(spec.model_copy(update={"seed": seed}), plan.config, plan.warmup, math.inf,
                       RUN_MAX_ITERATIONS)
    curve = [(float(k), float(loss)) for k, _, loss in run.curve if k > 0 and math.isfinite(loss)]
    search.study.priors = (curve,)
    return search.plan("eval").to_dict()["predicted"]


def evaluate(name: str, kind: str, seeds: list[int], jobs: int, cache: Path | None,
             prior_seed: int | None = None, study_seed: int | None = None) -> dict[str, Any]:
    spec = load_spec(SCENARIOS / kind / f"{name}.yaml")
    if study_seed is not None:
        spec = spec.model_copy(update={"seed": study_seed})
    started = time.monotonic()
    training = None
    if kind == "long":  # the same study, then ttc train's run on the probes' seed for its ETA
        search, plan, result = train(spec)
        training = result.to_dict()
    else:
        search, plan, _ = run_ttc(spec)
    study_seconds = time.monotonic() - started
    truth = Truth(spec, seeds, jobs, cache)
    try:
        truth.ttc([(plan.config, plan.warmup)])
        runs = truth.runs_of(plan.config, plan.warmup)
    finally:
        truth.close()
    public = plan.to_dict()
    predicted = public["predicted"]
    scores = [{"seed": seed, **score_run(predicted, run["reached_seconds"])}
              for seed, run in zip(seeds, runs, strict=True)]
    prior = None
    if prior_seed is not None:
        informed = with_prior(search, plan, spec, prior_seed)
        prior = {"predicted": informed, "width": _width(informed),
                 "scores": [{"seed": seed, **score_run(informed, run["reached_seconds"])}
                            for seed, run in zip(seeds, runs, strict=True)]}
    return {
        "scenario": name, "kind": kind, "held_out": held_out(name), "target": target_value(spec),
        "probe_seed": spec.seed, "config": plan.config.key(),
        "warmup": plan.warmup.to_dict() if plan.warmup else None,
        "predicted": predicted, "confidence": public["confidence"], "target_position": public["target"],
        "width": _width(predicted),
        "probe_cluster_seconds": plan.probe_cluster_seconds, "scores": scores,
        "probe_cost": probe_cost(plan.probe_cluster_seconds, scores),
        "train": train_cost(training) if training else None,
        "eta": score_eta(training) if training else [],
        "with_prior": prior,
        "regret": regret(name, scores, _grid_file(kind)),
        "study_wall_seconds": study_seconds, "wall_seconds": time.monotonic() - started,
    }


def _regrets(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and worst regret over the long scenarios whose truth runs all reached."""
    spread = _spread_of([r["regret"]["regret"] for r in results if r["kind"] == "long" and r.get("regret")])
    return {"long_median": spread["median"], "long_worst": spread["worst"], "scenarios": spread["scenarios"]}


def _grid_file(kind: str) -> Path:
    return RESULTS / f"predictor_eval_{kind}.json"


def _grids(results: list[dict[str, Any]]) -> dict[str, dict[str, Any] | None]:
    """Each scenario's grid entry, read once."""
    scenarios = {(r["scenario"], r["kind"]) for r in results}
    return {name: grid(name, _grid_file(kind)) for name, kind in scenarios}


def _width(predicted: dict[str, Any]) -> float | None:
    p10, p90 = predicted["ttc_p10"], predicted["ttc_p90"]
    return p90 / p10 if p90 is not None and p10 else None


def _prior_summary(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The same figures without and with a finished run as a prior, on the scenarios that had one."""
    had = [r for r in results if r.get("with_prior")]
    if not had:
        return None
    return {"scenarios": len(had), "without": _figures(had), "with": _figures([r["with_prior"] for r in had])}


def _figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Coverage, median error and median width of forecasts (each with its ``scores`` and ``width``)."""
    scores = [s for r in rows for s in r["scores"]]
    return {"coverage": coverage(scores),
            "median_error": median([s["error"] for s in scores]),
            "median_width": median([r["width"] for r in rows])}


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    scores = [s for r in results for s in r["scores"]]
    errors = [s["error"] for s in scores if s["error"] is not None]
    long = [r for r in results if r["kind"] == "long"]
    after_knee = [r for r in long if (r["target_position"] or {}).get("after_knee")]
    knee = [s["error"] for r in after_knee for s in r["scores"] if s["error"] is not None]
    widths = [r["width"] for r in results if r["width"] is not None]
    bounds = [s["bound_held"] for s in scores if s["bound_held"] is not None]
    return {
        "pairs": len(scores),
        "coverage": coverage(scores),
        "median_error": statistics.median(errors) if errors else None,
        "median_error_long_after_knee": statistics.median(knee) if knee else None,
        "median_width": statistics.median(widths) if widths else None,
        "p90_open": sum(r["predicted"]["ttc_p90"] is None for r in results),
        "p50_missing": sum(r["predicted"]["ttc_p50"] is None for r in results),
        "bounds_held": f"{sum(bounds)}/{len(bounds)}",
        "median_abs_z": _median_abs_z(results),
        "prior": _prior_summary(results),
        "regret": _regrets(results),
        "regret_found": regret_found(results, _grids(results)),
        "probe_cost_long": _spread_of([r.get("probe_cost") for r in long]),
        "train_tuning_share_long": _spread_of([(r.get("train") or {}).get("tuning_share") for r in long]),
        "eta_median_error": {f"{share:.0%}": median([eta_error(e) for r in results for e in r["eta"]
                                                      if e["share"] == share]) for share in ETA_SHARES},
        "eta_scored": {f"{share:.0%}": _scored(results, share) for share in ETA_SHARES},
        "eta_median_span": {f"{share:.0%}": median([eta_span(e) for r in results for e in r["eta"]
                                                     if e["share"] == share]) for share in ETA_SHARES},
        "by_study_seed": _by_study_seed(results),
    }


def _by_study_seed(results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Coverage and median |z| of each study seed's plans, where the results hold more than one:
    a scenario's truths share its study's centre, so only other study seeds draw it afresh."""
    seeds = sorted({r["probe_seed"] for r in results})
    if len(seeds) < 2:
        return None
    table = {}
    for seed in seeds:
        rows = [r for r in results if r["probe_seed"] == seed]
        scores = [s for r in rows for s in r["scores"]]
        table[str(seed)] = {"pairs": len(scores), "coverage": coverage(scores),
                            "median_abs_z": _median_abs_z(rows)}
    return table


def coverage(scores: list[dict[str, Any]]) -> float | None:
    """The share of scored truths inside their forecast's p10-p90 (None: nothing scored)."""
    return sum(s["covered"] for s in scores) / len(scores) if scores else None


def _median_abs_z(rows: list[dict[str, Any]]) -> float | None:
    """The median |z| of the rows' truths under their forecasts (0.67 for a calibrated forecast)."""
    return median([abs(z) if (z := standard_score(r["predicted"], s["truth"])) is not None else None
                   for r in rows for s in r["scores"]])


def eta_error(entry: dict[str, Any]) -> float | None:
    """A scored ETA's error; one given with an open p50 (it read the target never reached, and the
    run reached it) is infinitely off, not left out, also once the JSON has written its infinity as
    ``null``; None where the run had no ETA yet."""
    if entry["iteration"] is not None and entry.get("p50") is None:
        return math.inf
    return entry["error"]


def eta_span(entry: dict[str, Any]) -> float | None:
    """A scored ETA's span; an open p90's is infinite, also once the JSON has written it ``null``;
    None where the run had no ETA yet."""
    if entry["iteration"] is not None and entry.get("span") is None:
        return math.inf
    return entry.get("span")


def _spread_of(values: list[float | None]) -> dict[str, Any]:
    """Median and worst of the known values, and how many there were."""
    known = [v for v in values if v is not None]
    return {"median": median(known), "worst": max(known, default=None), "scenarios": len(known)}


def _scored(results: list[dict[str, Any]], share: float) -> str:
    """How many trainings had an ETA at ``share`` of their run, of those that reached."""
    entries = [e for r in results for e in r["eta"] if e["share"] == share]
    return f"{sum(e['iteration'] is not None for e in entries)}/{len(entries)}"


def median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kind", default="short,long", help="comma-separated scenario kinds")
    parser.add_argument("--scenarios", help="comma-separated names (default: every scenario of each kind)")
    parser.add_argument("--truth-seeds", default="1,2,3", help="seeds of the truth runs (not the probes')")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--truth-cache", type=Path, help="JSON file keeping truth runs between invocations")
    parser.add_argument("--out", type=Path, default=RESULTS / "forecast_eval.json")
    parser.add_argument("--prior-seed", type=int, help="also forecast with a run on this seed as a prior")
    parser.add_argument("--study-seed", type=int,
                        help="the probes' seed (default: the scenario's); never one of the truth seeds")
    parser.add_argument("--merge", help="comma-separated outputs of earlier runs to summarise together")
    args = parser.parse_args()
    if args.merge:
        runs = [json.loads(Path(path).read_text()) for path in args.merge.split(",")]
        write(args.out, [r for run in runs for r in run["scenarios"]])
        return
    seeds = [int(s) for s in args.truth_seeds.split(",")]
    if args.study_seed in seeds:
        parser.error(f"--study-seed {args.study_seed} is a truth seed: a plan is scored on unseen seeds")
    wanted = set(args.scenarios.split(",")) if args.scenarios else None
    results = []
    for kind in args.kind.split(","):
        for path in sorted((SCENARIOS / kind).glob("*.yaml")):
            if wanted is None or path.stem in wanted:
                result = evaluate(path.stem, kind, seeds, args.jobs, args.truth_cache, args.prior_seed,
                                  args.study_seed)
                results.append(result)
                print(json.dumps(json_safe(result)), flush=True)
    write(args.out, results)


def write(out: Path, results: list[dict[str, Any]]) -> None:
    """Print the summary line and write the summary with every scenario's figures to ``out``."""
    for r in results:  # runs from before regret was scored, or before their scenario's grid was
        if r.get("regret") is None:
            r["regret"] = regret(r["scenario"], r["scores"], _grid_file(r["kind"]))
    summary = summarise(results)
    print(json.dumps({"summary": json_safe(summary)}), flush=True)
    out.write_text(json.dumps(json_safe({"summary": summary, "scenarios": results}), indent=1) + "\n")


if __name__ == "__main__":
    main()
