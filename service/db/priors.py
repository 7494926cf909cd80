"""Finished runs of the same job, read back as priors for a new study's forecast (issue 34).

A team that re-tunes a job it ran last week has already measured its whole curve once: the
shape past where this study's evidence ends, and how its loss wanders. ``ttc train`` records
each run's curve in its timeline; a new study of the same workload and target metric hands the
newest of those to its forecast (predictor.forecast), which weighs them like any ensemble
member, by how well they predict what this study measured. A run to the same target also lends
``ttc train``'s ETA its crossing, read along the run's path: its phases' batches and step sizes, from
the training result (predictor.prior_path).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from predictor.prior_path import FinishedRun, phases_of
from predictor.types import Config
from service.db.models import Study, Training

MAX_PRIORS = 3  # the newest finished runs read; older ones rarely add a shape the newest lack
MIN_POINTS = 8  # a timeline thinner than this says nothing about a curve's shape


def _job(spec: dict[str, Any]) -> tuple[str, str]:
    """What makes two studies the same job for a curve's shape: the workload and the target's metric."""
    workload = spec.get("workload") or {}
    target = spec.get("target") or {}
    return repr(sorted(workload.items())), str(target.get("metric", "train_loss"))


def finished_runs(session: Session, spec: dict[str, Any], exclude: str | None = None
                  ) -> tuple[FinishedRun, ...]:
    """The newest finished trainings of ``spec``'s job (not ``exclude``), newest first."""
    rows = session.execute(
        select(Training.timeline, Training.result, Study.spec, Study.id)
        .join(Study, Study.id == Training.study_id)
        .where(Training.state == "done").order_by(Training.updated_at.desc()))
    job, runs = _job(spec), []
    for timeline, result, other, study_id in rows:
        if study_id == exclude or _job(other or {}) != job or not timeline:
            continue
        points = [(float(iteration), float(loss)) for _, iteration, loss in timeline.get("points", [])
                  if iteration and loss is not None and loss > 0]
        if len(points) >= MIN_POINTS:
            runs.append(_finished(points, timeline, result or {}))
        if len(runs) == MAX_PRIORS:
            break
    return tuple(runs)


def _finished(points: list[tuple[float, float]], timeline: dict[str, Any],
              result: dict[str, Any]) -> FinishedRun:
    """A finished training as a prior: its curve, and from its result its path (each phase's first
    iteration, global batch and step size) and where it reached its target (the timeline's)."""
    starts, start = [], 0
    for phase in result.get("phases") or []:
        starts.append((start, Config.from_dict(phase["config"])))
        start += int(phase["iterations"])
    phases = phases_of(starts)
    reached = int(result["iterations"]) if result.get("reached") and phases else None
    return FinishedRun(points, phases, timeline.get("target"), reached)
