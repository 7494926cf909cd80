"""Keyword-only reads the dashboard needs beyond ``service.crud``: per-study probe aggregates
for the studies list, a study's executed runs, and its newest event id (the SSE cursor).

Aggregates are computed in SQL so the studies list never loads probe results (loss curves).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from service.db import Event, Probe, Run


@dataclass(frozen=True)
class ProbeTotals:
    """One study's probes: finished, still running, and the lowest predicted TTC among them."""

    finished: int = 0
    running: int = 0
    best_predicted_ttc: float | None = None


def probe_totals(session: Session, *, study_ids: list[str]) -> dict[str, ProbeTotals]:
    if not study_ids:
        return {}
    rows = session.execute(
        select(
            Probe.study_id,
            func.count(Probe.finished_at),
            func.sum(case((Probe.state == "running", 1), else_=0)),
            func.min(Probe.predicted_ttc),
        )
        .where(Probe.study_id.in_(study_ids))
        .group_by(Probe.study_id)
    )
    return {sid: ProbeTotals(finished, int(running or 0), best) for sid, finished, running, best in rows}


def list_runs(session: Session, *, study_id: str) -> list[Run]:
    """Executed runs of a study's configs (``ttc run --config PLAN``), oldest first."""
    return list(session.scalars(select(Run).where(Run.study_id == study_id).order_by(Run.id)))


def run_count(session: Session, *, study_id: str) -> int:
    return session.scalar(select(func.count()).select_from(Run).where(Run.study_id == study_id)) or 0


def last_event_id(session: Session, *, study_id: str) -> int:
    return session.scalar(select(func.max(Event.id)).where(Event.study_id == study_id)) or 0

