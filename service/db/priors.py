"""Finished runs of the same job, read back as priors for a new study's forecast (issue 34).

A team that re-tunes a job it ran last week has already measured its whole curve once: the
shape past where this study's evidence ends, and how its loss wanders. ``ttc train`` records
each run's curve in its timeline; a new study of the same workload and target metric hands the
newest of those to its forecast (predictor.forecast), which weighs them like any ensemble
member, by how well they predict what this study measured.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from service.db.models import Study, Training

MAX_PRIORS = 3  # the newest finished runs read; older ones rarely add a shape the newest lack
MIN_POINTS = 8  # a timeline thinner than this says nothing about a curve's shape


def _job(spec: dict[str, Any]) -> tuple[str, str]:
    """What makes two studies the same job for a curve's shape: the workload and the target's metric."""
    workload = spec.get("workload") or {}
    target = spec.get("target") or {}
    return repr(sorted(workload.items())), str(target.get("metric", "train_loss"))


def finished_curves(session: Session, spec: dict[str, Any], exclude: str | None = None
                    ) -> tuple[list[tuple[float, float]], ...]:
    """(iteration, loss) curves of the newest finished trainings of ``spec``'s job (not ``exclude``)."""
    rows = session.execute(
        select(Training.timeline, Study.spec, Study.id).join(Study, Study.id == Training.study_id)
        .where(Training.state == "done").order_by(Training.updated_at.desc()))
    job, curves = _job(spec), []
    for timeline, other, study_id in rows:
        if study_id == exclude or _job(other or {}) != job or not timeline:
            continue
        points = [(float(iteration), float(loss)) for _, iteration, loss in timeline.get("points", [])
                  if iteration and loss is not None and loss > 0]
        if len(points) >= MIN_POINTS:
            curves.append(points)
        if len(curves) == MAX_PRIORS:
            break
    return tuple(curves)
