"""A minimal spec — workload and cluster, nothing else — on every evaluation scenario (issue 11).

The search runs with the workload's default target, the default probe length and the default
budget; its plan is then run as planned on another seed (1, never the probes' 0). Done when each
scenario ends with probe cost ≤ 10% of the plan's TTC, or with ``worth_tuning: false``.

A truth run cut off at RUN_MAX_ITERATIONS before the target still bounds the plan's TTC from below
by the seconds it ran, so the probe cost is bounded from above: the row gives that bound
(``probe_cost_at_most``) and the loss where the run stopped, and passes only on a bound ≤ 10%.
A run that diverged bounds nothing.

    nice python benchmarks/minimal_spec.py [--kinds long,short]

prints one JSON line per scenario, then a summary line.
"""

from __future__ import annotations

import argparse
import json
import math
import time

from predictor_eval import RUN_MAX_ITERATIONS, SCENARIOS, cluster_seconds, held_out, run_ttc

from predictor.types import json_safe
from worker.lineage import run_schedule
from worker.probe import target_value
from worker.spec import load_spec, parse_spec


def evaluate(kind: str, name: str) -> dict:
    full = load_spec(SCENARIOS / kind / f"{name}.yaml")
    spec = parse_spec({"workload": full.workload.model_dump(mode="json"),
                       "cluster": full.cluster.model_dump(mode="json")})
    started = time.monotonic()
    search, plan, _ = run_ttc(spec)
    devices = spec.cluster.nodes * spec.cluster.devices_per_node
    probes = cluster_seconds(search.study.probes, devices)
    truth_spec = spec.model_copy(update={"seed": 1})
    run = run_schedule(truth_spec, plan.config, plan.warmup, math.inf, RUN_MAX_ITERATIONS)
    measured = run.reached_seconds if run.reached_seconds is not None else math.inf
    cost = probes / measured if math.isfinite(measured) else None
    cut_off = cost is None and not run.diverged and run.end_iteration >= RUN_MAX_ITERATIONS
    bound = probes / run.seconds if cut_off else None  # its TTC exceeds the seconds it ran
    ceiling = cost if cost is not None else bound
    return {"scenario": f"{kind}/{name}", "held_out": held_out(name), "probes": len(search.study.probes),
            "probe_cluster_seconds": probes, "plan": plan.config.key(), "worth_tuning": plan.worth_tuning,
            "reason": plan.worth_tuning_reason, "confidence": plan.confidence.level,
            "predicted_ttc": plan.predicted.ttc_seconds if plan.confidence.supported else None,
            "measured_ttc_seed1": measured, "probe_cost": cost,
            "censored": None if not cut_off else {
                "iterations": run.end_iteration, "seconds": run.seconds, "final_loss": run.final_loss,
                "target": target_value(spec), "probe_cost_at_most": bound},
            "ok": plan.worth_tuning is False or (ceiling is not None and ceiling <= 0.1),
            "wall_seconds": round(time.monotonic() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", default="long,short")
    args = parser.parse_args()
    rows = []
    for kind in args.kinds.split(","):
        for path in sorted((SCENARIOS / kind).glob("*.yaml")):
            rows.append(evaluate(kind, path.stem))
            print(json.dumps(json_safe(rows[-1])), flush=True)
    print(json.dumps({"scenarios": len(rows), "ok": sum(r["ok"] for r in rows)}))


if __name__ == "__main__":
    main()
