"""The JSON the dashboard's pages draw: rows of the database shaped for tables and charts.

Pure functions over ORM rows, so the routes stay thin. Loss curves are thinned to at most
``CURVE_POINTS`` points each: a 50-trial study then ships well under a megabyte.
"""

from __future__ import annotations

import math
from typing import Any

from predictor.confidence import MAX_EXTRAPOLATION
from predictor.types import Config, json_safe
from service.dashboard.plan_view import shown_plan
from service.db import Probe, Run, Study, Training
from service.db.measurement_store import ProbeTotals

CURVE_POINTS = 120
DEFAULT_MAX_PROBES = 48  # BudgetSpec's default, for specs stored without a budget


def cluster_devices(study: Study) -> int:
    cluster = study.spec.get("cluster") or {}
    return int(cluster.get("nodes", 1)) * int(cluster.get("devices_per_node", 1))


def _max_probes(study: Study) -> int:
    return int((study.spec.get("budget") or {}).get("max_probes", DEFAULT_MAX_PROBES))


def workload(study: Study) -> str | None:
    workload = study.spec.get("workload") or {}
    return workload.get("name") or workload.get("factory")


def study_summary(study: Study, totals: ProbeTotals) -> dict[str, Any]:
    """A row of the studies list: state, progress, best predicted TTC, probes spent."""
    plan = study.plan or {}
    best = (plan.get("predicted") or {}).get("ttc_seconds", totals.best_predicted_ttc)
    return {
        "id": study.id,
        "state": study.state,
        "workload": workload(study),
        "error": study.error,
        "created_at": study.created_at.isoformat(),
        "probes_done": totals.finished,
        "probes_running": totals.running,
        "max_probes": _max_probes(study),
        "best_predicted_ttc": json_safe(best),
        "probe_cluster_seconds": json_safe((plan.get("probes") or {}).get("cluster_seconds")),
    }


def thin(curve: list[Any], points: int = CURVE_POINTS) -> list[Any]:
    """Every k-th point of a loss curve, always keeping the last one (where the probe ended)."""
    if len(curve) <= points:
        return curve
    step = math.ceil(len(curve) / points)
    return curve[::step] + ([curve[-1]] if (len(curve) - 1) % step else [])


def prune_reason(probe: Probe) -> str | None:
    """Why the search set a probe aside — the same rule as ``ColdStartSearch.tell``."""
    if probe.result is None:
        return None
    if probe.result.get("error"):
        return str(probe.result["error"])
    if probe.result.get("diverged"):
        return "diverged"
    return "no fit" if probe.predicted_ttc is None else None


def trial(probe: Probe, cluster_devices: int) -> dict[str, Any]:
    """A row of the trials table and a point of each chart.

    ``iterations_to_target`` is the iteration where the probe reached the target, else the
    predicted TTC over the measured seconds/iteration (TTC = s/it × iterations, DESIGN.md §1).
    ``beyond_evidence``: that prediction lies past MAX_EXTRAPOLATION× the iterations its lineage
    measured (predictor.confidence gives no number there); charts mark it instead of plotting it.
    """
    result = probe.result or {}
    iterations, seconds = result.get("iterations") or 0, result.get("seconds") or 0.0
    per_iteration = seconds / iterations if iterations else None
    predicted = json_safe(probe.predicted_ttc)
    to_target = result.get("reached_iteration")
    if to_target is None and predicted is not None and per_iteration:
        to_target = predicted / per_iteration
    config = probe.config
    devices = config["nodes"] * config["devices_per_node"]
    curve = [[point[0], json_safe(point[2])] for point in thin(result.get("curve") or [])]
    measured = (result.get("start_iteration") or 0) + iterations
    beyond = (result.get("reached_iteration") is None and to_target is not None
              and to_target > MAX_EXTRAPOLATION * max(measured, 1))
    return {
        "number": probe.number,
        "key": probe.key,
        "state": probe.state,
        "config": config,
        "devices": devices,
        "seconds_per_iteration": json_safe(per_iteration),
        "iterations_to_target": json_safe(to_target),
        "predicted_ttc": predicted,
        "reached": result.get("reached_iteration") is not None,
        "probe_cluster_seconds": seconds * devices / max(cluster_devices, 1),
        "prune_reason": prune_reason(probe),
        "beyond_evidence": beyond,
        "curve": curve,
    }


def run(row: Run) -> dict[str, Any]:
    result = row.result
    return {
        "label": result.get("label", "config"),
        "key": Config.from_dict(row.config).key(),
        "predicted_ttc": json_safe(result.get("predicted_ttc_seconds")),
        "measured_ttc": json_safe(result.get("ttc_seconds")),
        "reached": bool(result.get("reached")),
    }


def training(row: Training | None) -> dict[str, Any] | None:
    """The training card and its timeline chart (issue 13): loss against the run's cluster-seconds,
    its phases and re-plan points, as the runner stored them (already thinned and JSON-safe)."""
    if row is None:
        return None
    return {"state": row.state, "error": row.error, "result": row.result, "timeline": row.timeline,
            "max_overhead": row.max_overhead, "max_iterations": row.max_iterations}


def study_detail(study: Study, probes: list[Probe], runs: list[Run], last_event: int,
                 training_row: Training | None = None) -> dict[str, Any]:
    """Everything the study page draws, in one response (one round trip per refresh)."""
    devices = cluster_devices(study)
    trials = [trial(p, devices) for p in probes]
    unsupported = {row["config_key"] for row in (study.plan or {}).get("ranking") or []
                   if (row.get("predicted") or {}).get("ttc_seconds") is None}
    for row, probe in zip(trials, probes, strict=True):  # the plan's confidence says no number
        if row["predicted_ttc"] is not None and Config.from_dict(probe.config).key() in unsupported:
            row["beyond_evidence"] = True
    totals = ProbeTotals(
        finished=sum(p.finished_at is not None for p in probes),
        running=sum(p.state == "running" for p in probes),
        best_predicted_ttc=min((t["predicted_ttc"] for t in trials
                                if t["predicted_ttc"] and not t["beyond_evidence"]), default=None),
    )
    return {
        "study": {**study_summary(study, totals), "spec": study.spec,
                  "cancel_requested": study.cancel_requested},
        "plan": shown_plan(study.plan),
        "trials": trials,
        "runs": [run(r) for r in runs],
        "training": training(training_row),
        "last_event_id": last_event,
    }
