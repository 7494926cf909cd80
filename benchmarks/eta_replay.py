"""Replay ``ttc train``'s ETA at every checkpoint of recorded runs, so a change to it is scored in seconds.

forecast_eval scores the ETA at three shares of one run per scenario, and a run costs minutes.
Here each (scenario, study seed) is trained once, as forecast_eval trains it (the study, then
``ttc train``), and what the ETA read at each checkpoint is recorded: the run's segments so far,
the segment just told and the pooled model's reading then. ``--runs`` caches the recordings;
rescoring replays predictor.eta.eta_at on them as the code now stands. Truth per checkpoint:
the seconds the run actually had left (its own seconds at the target less its seconds then).

Public scenarios only by default, on calibration seeds (4, 5: neither the probes' seed 0 nor
forecast_eval's truth seeds 1–3): a choice made here must not be made on a held-out scenario.

    python benchmarks/eta_replay.py [--scenarios digits_mlp,regression,plateau] [--seeds 4,5] \
        [--runs eta_runs.json] [--out eta_replay.json] [--prior]

With ``--prior`` each run's ETA also reads the other seeds' runs of its scenario as finished runs of
the same job (issue 34 item 4: a team re-running a job it ran last week), the way a study of a job
run before reads them back (service.db.priors). A recording keeps where the plan put the target
(after the knee or in the flat region), which decides the clock a prior is read on after the study
(predictor.prior_path); recordings made before 2026-12-06's sixth session have none and read as flat.

With a prior or without, the warm-up's segments are read as checkpoints (``summary.warmup``; the
run's own checkpoints are ``summary.after_study``).

With ``--config-alone CACHE`` each run's warm-up config is also run alone from scratch to the
target on the run's seed (predictor_eval's truth runs, cached in CACHE), and the warm-up's
checkpoints are scored against it too (``summary.warmup.against_config_alone``): the warm-up's
ETA forecasts its own config continued, and ``ttc train`` then switches, so this tells the error
of the extrapolation from the error the switches add.

Prints one line per checkpoint and a summary (JSON): the median |p50 − truth| / truth over every
checkpoint and at 25/50/75% of the run (the last checkpoint at or before it, as forecast_eval),
the p10–p90 coverage and the median p90/p10 of the time left. ``parts``: the same median error of
each of the two readings the ETA mixes, alone (the ensemble on the run's curve; the pooled model's
latest TTC less the run's seconds so far), to tell which one a change of the mix should trust.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

from predictor.eta import eta_at, warmup_eta
from predictor.lineages import merge
from predictor.prior_path import FinishedRun
from predictor.training import TrainingPlanner
from predictor.types import Prediction, ProbeResult, json_safe
from worker.spec import load_spec

sys.path.insert(0, str(Path(__file__).parent))
from forecast_eval import ETA_SHARES, eta_left  # noqa: E402
from predictor_eval import RUN_MAX_ITERATIONS, SCENARIOS, Truth, held_out, run_ttc  # noqa: E402
from train_eval import run_to_target  # noqa: E402

PUBLIC = ("digits_mlp", "regression", "plateau")


class RecordingPlanner(TrainingPlanner):
    """``ttc train``'s planner that keeps, at each run segment told, what its ETA read."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.checkpoints: list[dict[str, Any]] = []
        self.segments = {s.probe_key: s for s in [*self.study.probes, *self.run]}  # all a checkpoint names

    def tell(self, result: ProbeResult) -> None:
        reading, before, entries = self.reading, [s.probe_key for s in self.run], len(self.eta)
        self.segments[result.probe_key] = result
        super().tell(result)
        if len(self.eta) > entries:  # the ETA read the run as it stood with this segment appended
            self.checkpoints.append({"segments": [*before, result.probe_key], "tip": result.probe_key,
                                     "reading": None if reading is None else reading.to_dict()})


def record(name: str, seed: int) -> dict[str, Any]:
    """The study and ``ttc train`` on ``seed``, with every checkpoint's ETA inputs."""
    spec = load_spec(SCENARIOS / "long" / f"{name}.yaml").model_copy(update={"seed": seed})
    search, _, prober = run_ttc(spec)
    planner = RecordingPlanner(search.study, max_iterations=RUN_MAX_ITERATIONS)
    result = run_to_target(planner, prober).to_dict()
    return {"scenario": name, "seed": seed, "target": planner.target, "reached": result["reached"],
            "iterations": result["iterations"],
            "end_seconds": result["ttc_seconds"] - result["tuning_cluster_seconds"],
            "segments": {key: segment.to_dict() for key, segment in planner.segments.items()},
            "lineage": [segment.probe_key for segment in planner.run],  # the whole run, a later run's prior
            "after_knee": planner.after_knee,
            "checkpoints": planner.checkpoints}


def relative_error(p50: float, truth: float) -> float:
    return abs(p50 - truth) / truth


def prior_run(run: dict[str, Any]) -> FinishedRun:
    """A finished run as ``ttc train`` records it and a later study of the same job reads it back
    (service.db.priors): its (iteration, loss) curve, its path, its target and where it reached it."""
    segments = [ProbeResult.from_dict(run["segments"][key]) for key in run["lineage"]]
    return FinishedRun.of_lineage(segments, run["target"], run["iterations"] if run["reached"] else None)


def checkpoints(run: dict[str, Any]) -> list[dict[str, Any]]:
    """The recorded checkpoints, after each segment of the warm-up the run continues (the study's
    lineage from scratch, up to its first change of config), read as a checkpoint with no pooled
    reading, as the study reads ``ttc train``'s ETA there (predictor.study)."""
    recorded = run["checkpoints"]
    early = []
    if recorded:
        first = recorded[0]["segments"][:-1]  # the run's first own segment is a recorded checkpoint
        config = run["segments"][first[0]]["config"] if first else None
        for i, key in enumerate(first, start=1):
            if run["segments"][key]["config"] != config:
                break
            early.append({"segments": first[:i], "tip": key, "reading": None, "warmup": True})
    return early + recorded


def config_alone(run: dict[str, Any], cache: Path) -> float | None:
    """The seconds the run's warm-up config takes alone, from scratch to the target on the run's seed
    (None: it never reached): what the warm-up's ETA forecasts, before ``ttc train``'s switches."""
    warmup = ProbeResult.from_dict(run["segments"][run["lineage"][0]]).config
    truth = Truth(load_spec(SCENARIOS / "long" / f"{run['scenario']}.yaml"), [run["seed"]], 1, cache)
    try:
        truth.ttc([(warmup, None)])
        return truth.runs_of(warmup, None)[0]["reached_seconds"]
    finally:
        truth.close()


def replay(run: dict[str, Any], priors: tuple[FinishedRun, ...] = (),
           alone_seconds: float | None = None) -> list[dict[str, Any]]:
    """The ETA at each warm-up segment and recorded checkpoint, as predictor.eta now computes it,
    against the truth; ``priors``: finished runs of the same job; ``alone_seconds``: the seconds the
    warm-up's config takes alone (``config_alone``), the warm-up's checkpoints' second truth."""
    segments = {key: ProbeResult.from_dict(data) for key, data in run["segments"].items()}
    knee = run.get("after_knee", False)  # the plan's target position (recordings before 2026-12-06: none)
    rows = []
    for checkpoint in checkpoints(run):
        lineage = [segments[key] for key in checkpoint["segments"]]
        view = merge(lineage)
        truth = run["end_seconds"] - view.end_seconds
        reading = None if checkpoint["reading"] is None else Prediction.from_dict(checkpoint["reading"])
        entry = (warmup_eta(lineage, run["target"], priors) if checkpoint.get("warmup")
                 else eta_at(lineage, run["target"], priors, reading, after_knee=knee))
        if entry is None or truth <= 0:
            continue
        p10, p50, p90 = eta_left(entry)
        ensemble = entry if reading is None else eta_at(lineage, run["target"], priors)
        read = reading.ttc_seconds - view.end_seconds if reading is not None else math.nan
        left_alone = (alone_seconds - view.end_seconds
                      if alone_seconds is not None and checkpoint.get("warmup") else None)
        rows.append({"scenario": run["scenario"], "seed": run["seed"], "iteration": view.end_iteration,
                     "warmup": checkpoint.get("warmup", False),
                     "share": view.end_iteration / run["iterations"], "truth": truth, "p50": p50,
                     "error": relative_error(p50, truth), "covered": p10 <= truth <= p90,
                     "width": p90 / p10 if p10 > 0 else math.inf,
                     "ensemble_error": relative_error(eta_left(ensemble)[1], truth),
                     "reading_error": relative_error(read, truth) if math.isfinite(read) else None,
                     "truth_config_alone": left_alone})
    return rows


def at_shares(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Median error at each share, and how many runs had an ETA by then: per run, the last
    checkpoint at or before it."""
    scored: dict[str, dict[str, Any]] = {}
    runs = {(r["scenario"], r["seed"]) for r in rows}
    for share in ETA_SHARES:
        errors = []
        for run in runs:
            before = [r for r in rows if (r["scenario"], r["seed"]) == run and r["share"] <= share]
            if before:
                errors.append(before[-1]["error"])
        scored[f"{share:.0%}"] = {"median_error": statistics.median(errors) if errors else None,
                                  "runs": f"{len(errors)}/{len(runs)}"}
    return scored


def scores(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Median error (over every checkpoint, and at 25/50/75% of the run), p10–p90 coverage and
    median p90/p10 over ``rows``."""
    if not rows:
        return {"checkpoints": 0}
    return {"checkpoints": len(rows), "median_error": statistics.median(r["error"] for r in rows),
            "at": at_shares(rows), "coverage": sum(r["covered"] for r in rows) / len(rows),
            "median_width": statistics.median(r["width"] for r in rows)}


def against_config_alone(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The median error and bias (median ln(p50 / truth)) of the rows' p50 against the time their
    warm-up config alone had left, where it was run (None: it was not)."""
    scored = [(r["p50"], r["truth_config_alone"]) for r in rows if (r.get("truth_config_alone") or 0) > 0]
    if not scored:
        return None
    logs = [math.log(p50 / truth) for p50, truth in scored if p50 > 0]
    return {"checkpoints": len(scored),
            "median_error": statistics.median(relative_error(p50, truth) for p50, truth in scored),
            "bias": statistics.median(logs) if logs else None}


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Over every checkpoint, then apart: the warm-up's and the run's own (both ``ttc train`` prints)."""
    if not rows:
        return {"checkpoints": 0}
    read = [r["reading_error"] for r in rows if r["reading_error"] is not None]
    return {**scores(rows),
            "warmup": {**scores(warmup := [r for r in rows if r["warmup"]]),
                       "against_config_alone": against_config_alone(warmup)},
            "after_study": scores([r for r in rows if not r["warmup"]]),
            "parts": {"ensemble_alone": statistics.median(r["ensemble_error"] for r in rows),
                      "reading_alone": statistics.median(read) if read else None}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scenarios", default=",".join(PUBLIC))
    parser.add_argument("--seeds", default="4,5", help="calibration seeds (not 0: the probes'; not 1-3)")
    parser.add_argument("--runs", type=Path, help="cache of the recorded runs (JSON), read and extended")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--config-alone", type=Path,
                        help="also run each warm-up's config alone to the target (truth runs cached in "
                             "this JSON) and score the warm-up's checkpoints against it")
    parser.add_argument("--prior", action="store_true",
                        help="each run's ETA also reads the other seeds' runs of its scenario as finished "
                             "runs of the same job (issue 34 item 4)")
    args = parser.parse_args()
    names, seeds = args.scenarios.split(","), [int(s) for s in args.seeds.split(",")]
    if {0, 1, 2, 3} & set(seeds):
        parser.error("calibration seeds must not be the probes' (0) or forecast_eval's truth seeds (1-3)")
    if held := [name for name in names if held_out(name)]:
        print(f"note: held-out scenarios {held}: read them only to check a decision already made")
    cached = json.loads(args.runs.read_text()) if args.runs is not None and args.runs.exists() else {}
    rows = []
    for name in names:
        for seed in seeds:
            label = f"{name}|{seed}"
            if label not in cached:
                cached[label] = json_safe(record(name, seed))
                if args.runs is not None:
                    args.runs.write_text(json.dumps(cached))
    for name in names:
        for seed in seeds:
            others = [cached[f"{name}|{s}"] for s in seeds if s != seed] if args.prior else []
            run = cached[f"{name}|{seed}"]
            alone_seconds = config_alone(run, args.config_alone) if args.config_alone is not None else None
            for row in replay(run, tuple(prior_run(other) for other in others), alone_seconds):
                rows.append(row)
                print(json.dumps(row), flush=True)
    result = {"scenarios": names, "seeds": seeds, "summary": summary(rows), "checkpoints": rows}
    print(json.dumps(result["summary"]))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
