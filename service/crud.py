"""Keyword-only reads and writes; routes and the runner never write SQL themselves."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from predictor.types import Config, Plan, ProbeResult
from service.db.models import Probe, Run, Study


def create_study(session: Session, *, spec: dict[str, Any]) -> Study:
    study = Study(spec=spec, state="pending")
    session.add(study)
    session.flush()
    return study


def get_study(session: Session, *, study_id: str) -> Study | None:
    return session.get(Study, study_id)


def list_studies(session: Session, *, limit: int = 100) -> list[Study]:
    return list(session.scalars(select(Study).order_by(Study.created_at.desc()).limit(limit)))


def set_state(session: Session, *, study_id: str, state: str, error: str | None = None) -> None:
    study = session.get(Study, study_id)
    if study is None:
        raise KeyError(study_id)
    study.state = state
    study.error = error


def set_plan(session: Session, *, study_id: str, plan: Plan) -> None:
    study = session.get(Study, study_id)
    if study is None:
        raise KeyError(study_id)
    study.plan = plan.to_dict()
    study.state = "done"


def start_probe(session: Session, *, study_id: str, config: Config) -> Probe:
    number = len(session.scalars(select(Probe.id).where(Probe.study_id == study_id)).all())
    probe = Probe(study_id=study_id, number=number, key=config.key(), config=config.to_dict())
    session.add(probe)
    session.flush()
    return probe


def finish_probe(
    session: Session, *, probe_id: int, result: ProbeResult, predicted_ttc: float | None
) -> None:
    probe = session.get(Probe, probe_id)
    if probe is None:
        raise KeyError(probe_id)
    probe.result = result.to_dict()
    probe.state = "failed" if result.error else ("diverged" if result.diverged else "complete")
    probe.predicted_ttc = predicted_ttc
    probe.finished_at = datetime.now(UTC)


def finished_probes(session: Session, *, study_id: str) -> list[ProbeResult]:
    rows = session.scalars(
        select(Probe).where(Probe.study_id == study_id, Probe.result.is_not(None)).order_by(Probe.number)
    )
    return [ProbeResult.from_dict(row.result) for row in rows]


def record_run(session: Session, *, study_id: str | None, config: Config, result: dict[str, Any]) -> Run:
    run = Run(study_id=study_id, config=config.to_dict(), result=result)
    session.add(run)
    session.flush()
    return run
