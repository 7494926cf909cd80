"""The timeline of a training (issue 13): the run's loss against its cluster-seconds, the phases
(one config each) with why each began, and where the run was re-planned.

Pure functions over a ``TrainingPlanner``; the result is stored with the training as it grows and
is what the dashboard draws. Cluster-seconds are seconds × the share of the cluster's devices the
segment's config occupies (DESIGN.md §7), counted from the start of the run's lineage (the study's
warm-up or plan probe), so the x-axis ends at the run's own cost; the tuning is reported beside it.
"""

from __future__ import annotations

import math
from typing import Any

from predictor.training import TrainingPlanner
from predictor.types import ProbeResult, json_safe

MAX_POINTS = 400  # a long run's curve is thinned to about this many points


def timeline(planner: TrainingPlanner, predicted_ttc_seconds: float | None = None) -> dict[str, Any]:
    """``{points: [[cluster_seconds, iteration, loss]], phases: [{start, end, key, config, reason}],
    replans: [cluster_seconds], run_cluster_seconds, tuning_cluster_seconds (= the study's probes off
    the run + the re-plans' forks: study_tuning_cluster_seconds + replan_cluster_seconds), target,
    predicted_ttc_seconds, eta: [{iteration, seconds, remaining_p10, remaining_p50, remaining_p90}]}``."""
    devices = planner.space.devices
    points: list[list[float]] = []
    spans: list[tuple[float, float, ProbeResult]] = []  # (cluster-seconds at its start, at its end, segment)
    phases: list[dict[str, Any]] = []
    elapsed = 0.0
    for segment in planner.run:
        share = segment.config.devices / devices
        for iteration, seconds, loss in segment.curve:
            points.append([elapsed + (seconds - segment.start_seconds) * share, iteration, loss])
        end = elapsed + segment.seconds * share
        spans.append((elapsed, end, segment))
        if not phases or phases[-1]["key"] != segment.config.key():
            phases.append({"start": elapsed, "end": end, "key": segment.config.key(),
                           "config": segment.config.to_dict(),
                           "reason": planner.reasons.get(segment.probe_key, "the study's warm-up"
                                                         if not phases else "")})
        phases[-1]["end"] = end
        elapsed = end
    study_probes = {id(p) for p in planner.study.probes}
    replans = [r for r in planner.tuning if id(r) not in study_probes]
    replan_cost = sum(r.seconds * r.config.devices / devices for r in replans)
    replan_iterations = sorted({r.start_iteration for r in replans})
    return json_safe({
        "points": _thin(points), "phases": phases,
        "replans": [x for it in replan_iterations if (x := _at_iteration(spans, it)) is not None],
        "run_cluster_seconds": elapsed, "tuning_cluster_seconds": planner.tuning_cluster_seconds(),
        "replan_cluster_seconds": replan_cost,  # the re-plans' forks (and a run segment a switch displaced)
        "study_tuning_cluster_seconds": planner.tuning_cluster_seconds() - replan_cost,
        "target": planner.target, "predicted_ttc_seconds": predicted_ttc_seconds,
        "eta": planner.eta,
    })


def _at_iteration(spans: list[tuple[float, float, ProbeResult]], iteration: int) -> float | None:
    """The run's cluster-seconds when it was at ``iteration`` (linear within a segment)."""
    for start, end, segment in spans:
        if segment.start_iteration <= iteration <= segment.end_iteration:
            return start + (end - start) * (iteration - segment.start_iteration) / max(segment.iterations, 1)
    return None


def _thin(points: list[list[float]]) -> list[list[float]]:
    if len(points) <= MAX_POINTS:
        return points
    step = math.ceil(len(points) / MAX_POINTS)
    return points[::step] + ([points[-1]] if (len(points) - 1) % step else [])
