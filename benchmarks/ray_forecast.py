"""Real timings: ttc's plan for a job on Ray against runs of that plan, on this machine's cores.

Per (layout, workload): ttc's study on the Ray backend (probes on seed 0, wall-clock timings),
then the plan run *as planned* (its warm-up included) on truth seeds 1, 2, 3 with the code
``ttc run`` uses, on the same Ray. Reported per scenario:

* **HE** — the HE model fitted to the study's probes (its timings included), predicting
  seconds/iteration of the configs the probes ran, of each again refitted without its own probes
  and without its whole allocation's (out of sample: what the model says of a config, or an
  allocation, it never saw), and of configs they never ran, each against fresh measurements (the
  median of three short runs of it after the study) and, for the plan, against the truth runs' own s/it;
* **forecast** — the plan's p10/p50/p90 TTC against each truth run's TTC (Ray seconds: the
  training steps' wall clock, evaluations not counted, as every backend counts);
* **overhead** — the study's wall time split into Ray start-up, device actors' start
  (``launch_seconds``), training steps, Ray's per-call cost, evaluations and the rest (scheduling
  the probe tasks, the search), against the plan's run.

Layouts: ``local`` — one node × 2 CPU devices on a local Ray; ``two_node`` — a local two-node Ray
cluster (``ray start`` twice) with one device per node, each node given 1 CPU: two machines of
one core, which is what this 2-core machine holds. Given 2 CPUs each (as the deploy tests start
them), the study's probe host ran two probes of both nodes side by side, four device processes on
two cores, and read their steps up to twice as slow as a run alone.

    nice python benchmarks/ray_forecast.py [--layouts local,two_node] [--workloads charlm]
        [--truth-seeds 1,2,3] [--out docs/results/ray_forecast.json]

prints one JSON line per scenario and a summary line, and writes ``--out``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import ray

from predictor.he_model import HeModel, allocation, he_key
from predictor.se_model import Estimate
from predictor.types import Config, Plan, ProbeResult, json_safe
from service.db import Database, measurement_store
from service.runners.study_runner import StudyRunner
from service.runners.study_wall import StudyWall
from worker.lineage import run_schedule
from worker.probe import run_config
from worker.ray_backend.connect import ensure_ray
from worker.spec import Spec, parse_spec
from worker.workloads.registry import ALLOWLIST_ENV

REPOSITORY = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPOSITORY))
sys.path.insert(0, str(Path(__file__).parent))
from forecast_eval import median, score_run  # noqa: E402

from tests.deploy.ray_nodes import start_nodes, stop_nodes  # noqa: E402

RESULTS = REPOSITORY / "docs" / "results"
LAYOUTS = {"local": (1, 2), "two_node": (2, 1)}
# Targets that need a minute or more of real compute from the best config on two CPU devices
# (charlm to 1.2: about 2,100 iterations of sync on one device at b64, lr 0.1, about 55 s of steps;
# wide-teacher, a user's workload shipped to the nodes as users' code is, to 0.3: about 7,000).
SEARCH = {"strategies": ["sync", "async_groups"], "batch_sizes": [16, 64], "learning_rates": [0.03, 0.1, 0.3],
          "momenta": [0.9]}
WORKLOADS: dict[str, dict[str, Any]] = {
    "charlm": {"workload": {"name": "charlm"},
               "target": {"metric": "train_loss", "value": 1.2, "eval_every": 50}, "search": SEARCH},
    "wide-teacher": {"workload": {"factory": "wide_teacher:wide_teacher"},
                     "target": {"metric": "train_loss", "value": 0.3, "eval_every": 100}, "search": SEARCH},
}
USER_MODULES = "wide_teacher"  # allowlisted (TTC_WORKLOAD_MODULES) for the study and its nodes
MEASURE_STEPS = 150  # a fresh measurement of one config's s/it (its warm-up steps are dropped by rule)
MEASURE_RUNS = 3  # fresh measurements per config; the median is the reference
RUN_MAX_ITERATIONS = 100_000


def spec_for(workload: str, layout: str, seed: int = 0) -> Spec:
    nodes, per_node = LAYOUTS[layout]
    return parse_spec({**WORKLOADS[workload], "seed": seed,
                       "cluster": {"backend": "ray", "nodes": nodes, "devices_per_node": per_node}})


@contextlib.contextmanager
def connected() -> Iterator[float]:
    """Ray connected (``RAY_ADDRESS``, else a new local instance); yields the seconds that took."""
    started = time.perf_counter()
    ensure_ray()
    try:
        yield time.perf_counter() - started
    finally:
        ray.shutdown()


@contextlib.contextmanager
def cluster_for(layout: str) -> Iterator[tuple[dict[str, str], float]]:
    """The environment a scenario's process joins its Ray with, and the seconds the cluster took to
    start: none for ``local`` (the process starts its own); two ``ray start`` nodes otherwise (Ray
    reads the cluster's token when it is imported, hence a process per scenario)."""
    if layout == "local":
        yield {}, 0.0
        return
    started = time.perf_counter()
    hidden = Path(tempfile.mkdtemp(prefix="ttc-hidden-"))
    nodes = start_nodes([1, 1], Path(tempfile.mkdtemp(prefix="ttc-ray-logs-")), hidden=hidden)
    try:
        yield {**nodes.client_env, "RAY_ADDRESS": nodes.gcs_address}, time.perf_counter() - started
    finally:
        stop_nodes(nodes)


def study(spec: Spec, database: Path) -> tuple[Plan, list[ProbeResult], float]:
    """ttc's study as ``ttc tune`` runs it (its probe host reusing device actors); its plan, probes
    and wall seconds."""
    db = Database(f"sqlite:///{database}")
    db.migrate()
    runner = StudyRunner(db)
    started = time.perf_counter()
    plan = runner.run(runner.submit(spec))
    wall = time.perf_counter() - started
    with db.read() as session:
        probes = list(measurement_store.finished_probes(session, study_id=plan.study_id).values())
    db.dispose()
    return plan, probes, wall


def unprobed(spec: Spec, probed: set[tuple[Any, ...]], plan: Config) -> list[Config]:
    """Configs whose timing the study never measured: ``sync`` on every allocation the search may
    plan (node counts × one or all devices per node) and each strategy on the whole cluster, at
    every batch size, at the plan's rate (s/it does not depend on it)."""
    space = spec.search_space()
    shapes = {("sync", nodes, per_node) for nodes in space.node_counts()
              for per_node in {1, space.devices_per_node}}
    shapes |= {(strategy, space.nodes, space.devices_per_node) for strategy in space.strategies}
    out = []
    for strategy, nodes, per_node in sorted(shapes):
        groups = space.group_counts()[-1] if strategy == "async_groups" else 1
        for batch in space.batch_sizes:
            config = Config(strategy, nodes, per_node, groups=groups, batch_size=batch, lr=plan.lr,
                            momentum=plan.momentum)
            if he_key(config) not in probed:
                out.append(config)
    return out


def measure(spec: Spec, configs: list[Config]) -> list[list[float]]:
    """Each config's steady s/it (the rule drops its warm-up steps) in MEASURE_RUNS fresh short
    runs, taken round-robin so that the machine's drift falls on every config alike: one run of a
    two-device config on this machine differs from the next by up to a fifth."""
    runs: list[list[float]] = [[] for _ in configs]
    for _ in range(MEASURE_RUNS):
        for config, measured in zip(configs, runs, strict=True):
            measured.append(run_config(spec, config, math.inf, MEASURE_STEPS).steady_seconds_per_iteration)
    return runs


def held_out(probes: list[ProbeResult], config: Config,
             key: Callable[[Config], tuple[Any, ...]]) -> Estimate | None:
    """``config``'s s/it predicted by the HE model refitted without the probes that share its
    ``key`` (its own config, or its whole allocation): out of sample, with the interval it gives."""
    model = HeModel.fit([p for p in probes if key(p.config) != key(config)])
    return model.predict([config])[0] if model is not None else None


def scored(name: str, estimate: Estimate | None, measured: float) -> dict[str, Any]:
    """An estimate's point, its relative error and whether its 80% interval holds the measurement."""
    if estimate is None:
        return {name: None, f"error_{name}": None, f"covered_{name}": None}
    return {name: estimate.value, f"error_{name}": abs(estimate.value - measured) / measured,
            f"covered_{name}": estimate.low <= measured <= estimate.high}


def he_check(spec: Spec, plan: Plan, probes: list[ProbeResult]) -> list[dict[str, Any]]:
    """Every config the probes (timings included) ran, and every config of the space's shapes
    they never ran, each measured fresh, against the HE model fitted to all probes, and (for
    the probed) refitted without the config's own probes and without its whole allocation."""
    model = HeModel.fit(probes)
    if model is None:
        return []
    probed = {he_key(p.config): p.config for p in probes if p.iterations > 0 and not p.error}
    rows = [(config, True) for config in probed.values()]
    rows += [(config, False) for config in unprobed(spec, set(probed), plan.config)]
    out = []
    configs = [c for c, _ in rows]
    for (config, was_probed), estimate, runs in zip(rows, model.predict(configs), measure(spec, configs),
                                                    strict=True):
        measured = statistics.median(runs)
        row = {"config": config.key(), "probed": was_probed, "low": estimate.low, "high": estimate.high,
               "measured": measured, "measured_runs": runs, **scored("predicted", estimate, measured)}
        if was_probed:
            row |= scored("without_config", held_out(probes, config, he_key), measured)
            row |= scored("without_allocation", held_out(probes, config, allocation), measured)
        out.append(row)
    return out


def truth(spec: Spec, plan: Plan, seeds: list[int]) -> list[dict[str, Any]]:
    runs = []
    for seed in seeds:
        started = time.perf_counter()
        run = run_schedule(spec.model_copy(update={"seed": seed}), plan.config, plan.warmup, math.inf,
                           RUN_MAX_ITERATIONS)
        runs.append({"seed": seed, "reached_seconds": run.reached_seconds, "diverged": run.diverged,
                     "iterations": run.iterations,
                     "seconds_per_iteration": run.seconds_per_iteration,
                     # the plan's config past its warm-up: the last segment's settled steps
                     "plan_seconds_per_iteration": run.steady_seconds_per_iteration,
                     "wall_seconds": time.perf_counter() - started})
    return runs


def evaluate(layout: str, workload: str, seeds: list[int]) -> dict[str, Any]:
    spec = spec_for(workload, layout)
    with tempfile.TemporaryDirectory() as tmp, connected() as ray_seconds:
        plan, probes, study_wall = study(spec, Path(tmp) / "ttc.db")
        runs = truth(spec, plan, seeds)
        he = he_check(spec, plan, probes)
    predicted = plan.to_dict()["predicted"]
    scores = [{"seed": r["seed"], **score_run(predicted, r["reached_seconds"])} for r in runs]
    plan_measured = statistics.median(r["plan_seconds_per_iteration"] for r in runs)
    return {
        "scenario": f"{layout}/{workload}", "config": plan.config.key(),
        "warmup": plan.warmup.to_dict() if plan.warmup else None,
        "confidence": plan.confidence.level, "predicted": predicted, "truth_runs": runs, "scores": scores,
        "plan_s_per_it": {"predicted": predicted["seconds_per_iteration"], "measured": plan_measured,
                          "error": abs(predicted["seconds_per_iteration"] - plan_measured) / plan_measured},
        "he": he, "probes": len(probes), "overhead": StudyWall.of(ray_seconds, study_wall, probes).to_dict(),
        "run_seconds": statistics.median(r["wall_seconds"] for r in runs),
    }


def spread(values: list[float | None]) -> dict[str, float | None]:
    kept = [v for v in values if v is not None]
    return {"median": median(kept), "worst": max(kept, default=None), "count": len(kept)}


def share(flags: list[bool | None]) -> str:
    """How many of the decided checks held, as "k/n"."""
    kept = [f for f in flags if f is not None]
    return f"{sum(kept)}/{len(kept)}"


def summarise(results: list[dict[str, Any]]) -> dict[str, Any]:
    he = [row for r in results for row in r["he"]]
    probed = [row for row in he if row["probed"]]
    checks = (("predicted", he), ("without_config", probed), ("without_allocation", probed))
    return {
        "he_error_probed": median([row["error_predicted"] for row in probed]),
        "he_error_unprobed": spread([row["error_predicted"] for row in he if not row["probed"]]),
        "he_error_without_config": spread([row.get("error_without_config") for row in probed]),
        "he_error_without_allocation": spread([row.get("error_without_allocation") for row in probed]),
        "he_interval_covers": {kind: share([row.get(f"covered_{kind}") for row in rows])
                               for kind, rows in checks},
        "covered": {r["scenario"]: share([s["covered"] for s in r["scores"]]) for r in results},
        "forecast_error": median([s["error"] for r in results for s in r["scores"]]),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", default="local,two_node")
    parser.add_argument("--workloads", default="charlm")
    parser.add_argument("--truth-seeds", default="1,2,3")
    parser.add_argument("--out", type=Path, default=RESULTS / "ray_forecast.json")
    parser.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)  # one scenario's child
    args = parser.parse_args()
    os.environ.setdefault(ALLOWLIST_ENV, USER_MODULES)
    if args.in_process:
        result = evaluate(args.layouts, args.workloads, [int(s) for s in args.truth_seeds.split(",")])
        args.out.write_text(json.dumps(json_safe(result)))
        return
    results = []
    for workload in args.workloads.split(","):
        for layout in args.layouts.split(","):
            results.append(one_process(layout, workload, args.truth_seeds))
            print(json.dumps(json_safe(results[-1])), flush=True)
    summary = summarise(results)
    print(json.dumps({"summary": json_safe(summary)}), flush=True)
    args.out.write_text(json.dumps(json_safe({"summary": summary, "scenarios": results}), indent=1) + "\n")


def one_process(layout: str, workload: str, seeds: str) -> dict[str, Any]:
    """One scenario in a process of its own, on its layout's Ray (started here for two nodes)."""
    with tempfile.TemporaryDirectory() as tmp, cluster_for(layout) as (env, cluster_seconds):
        out = Path(tmp) / "one.json"
        subprocess.run([sys.executable, __file__, "--in-process", "--layouts", layout, "--workloads",
                        workload, "--truth-seeds", seeds, "--out", str(out)],
                       env={**os.environ, **env}, check=True)
        result = json.loads(out.read_text())
    result["overhead"]["ray_start"] += cluster_seconds
    result["overhead"]["total"] += cluster_seconds
    return result


if __name__ == "__main__":
    main()
