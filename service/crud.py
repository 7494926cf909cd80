"""Keyword-only reads and writes; routes and the runner never write SQL themselves."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, or_, select, text, update
from sqlalchemy.orm import Session

from predictor.types import Config, Plan, ProbeResult
from service.db.models import ACTIVE_STATES, TERMINAL_STATES, Event, Lease, Probe, Run, Study, now


# -- studies -------------------------------------------------------------------------------------
def create_study(session: Session, *, spec: dict[str, Any]) -> Study:
    study = Study(spec=spec, state="pending")
    session.add(study)
    session.flush()
    add_event(session, study_id=study.id, kind="state", data={"state": "pending"})
    return study


def get_study(session: Session, *, study_id: str) -> Study | None:
    return session.get(Study, study_id)


# Built once: constructing a statement costs more than running this one on indexed columns.
_STUDY_WITH_PROBE_COUNTS = (
    select(Study.__table__, Probe.state.label("probe_state"), func.count(Probe.id).label("probe_count"))
    .outerjoin(Probe, Probe.study_id == Study.id)
    .where(Study.id == bindparam("study_id"))
    .group_by(Study.id, Probe.state)
)


def study_detail(connection: Connection, *, study_id: str) -> dict[str, Any] | None:
    """The study's row and its probe counts by state, or ``None``.

    One Core statement on a bare connection (a row per probe state), not ORM objects: this is
    what dashboards and CI jobs poll, and an ORM ``Study`` costs several times the indexed read.
    """
    rows = connection.execute(_STUDY_WITH_PROBE_COUNTS, {"study_id": study_id}).mappings().all()
    if not rows:
        return None
    study = {key: value for key, value in rows[0].items() if key not in ("probe_state", "probe_count")}
    return study | {"probes": {row["probe_state"]: row["probe_count"] for row in rows if row["probe_count"]}}


def list_studies(
    session: Session, *, state: str | None = None, limit: int = 100, offset: int = 0
) -> tuple[list[Study], int]:
    """A page of studies, newest first, and the total count matching ``state``."""
    query = select(Study)
    counted = select(func.count()).select_from(Study)
    if state is not None:
        query, counted = query.where(Study.state == state), counted.where(Study.state == state)
    rows = session.scalars(query.order_by(Study.created_at.desc(), Study.id).offset(offset).limit(limit))
    return list(rows), session.scalar(counted) or 0


def count_by_state(session: Session) -> dict[str, int]:
    return dict(session.execute(select(Study.state, func.count()).group_by(Study.state)).all())


def unfinished_study_ids(session: Session) -> list[str]:
    """Studies still to run, oldest first: the ones a (re)started service must pick up."""
    rows = session.scalars(
        select(Study.id).where(Study.state.in_(ACTIVE_STATES)).order_by(Study.created_at, Study.id)
    )
    return list(rows)


def set_state(session: Session, *, study_id: str, state: str, error: str | None = None) -> None:
    study = _study(session, study_id)
    if study.state != state:
        add_event(session, study_id=study_id, kind="state",
                  data={"state": state, **({"error": error} if error else {})})
    study.state = state
    study.error = error


def set_plan(session: Session, *, study_id: str, plan: Plan) -> None:
    study = _study(session, study_id)
    study.plan = plan.to_dict()
    add_event(session, study_id=study_id, kind="plan", data=study.plan)
    set_state(session, study_id=study_id, state="done")


def request_cancel(session: Session, *, study_id: str) -> Study:
    """Cancel at once when nobody runs the study yet; otherwise ask its runner to stop."""
    study = _study(session, study_id)
    if study.state == "pending":
        set_state(session, study_id=study_id, state="cancelled")
    elif study.state not in TERMINAL_STATES:
        study.cancel_requested = True
    return study


def cancel_requested(session: Session, *, study_id: str) -> bool:
    return bool(session.scalar(select(Study.cancel_requested).where(Study.id == study_id)))


def _study(session: Session, study_id: str) -> Study:
    study = session.get(Study, study_id)
    if study is None:
        raise KeyError(study_id)
    return study


# -- probes --------------------------------------------------------------------------------------
def start_probe(session: Session, *, study_id: str, config: Config, key: str | None = None) -> Probe:
    """The probe row for ``config`` (or ``key``, an extension's): new, or the unfinished row left
    by a crash (a retry)."""
    key = key or config.key()
    probe = session.scalar(select(Probe).where(Probe.study_id == study_id, Probe.key == key))
    if probe is not None:
        if probe.result is not None:
            raise ValueError(f"probe {key} of study {study_id} already finished; it is never re-run")
        probe.attempts += 1
        probe.state = "running"
    else:
        number = session.scalar(select(func.count()).where(Probe.study_id == study_id)) or 0
        probe = Probe(study_id=study_id, number=number, key=key, config=config.to_dict(), state="running")
        session.add(probe)
        session.flush()
    add_event(session, study_id=study_id, kind="probe_started",
              data={"probe": probe.number, "key": key, "attempt": probe.attempts})
    return probe


def finish_probe(
    session: Session, *, probe_id: int, result: ProbeResult, predicted_ttc: float | None
) -> Probe:
    probe = session.get(Probe, probe_id)
    if probe is None:
        raise KeyError(probe_id)
    probe.result = result.to_dict()
    probe.state = "failed" if result.error else ("diverged" if result.diverged else "complete")
    probe.predicted_ttc = predicted_ttc
    probe.finished_at = now()
    final_loss = result.final_loss
    add_event(session, study_id=probe.study_id, kind="probe_finished", data={
        "probe": probe.number, "key": probe.key, "state": probe.state, "predicted_ttc": predicted_ttc,
        "final_loss": final_loss if final_loss == final_loss else None, "iterations": result.iterations,
        "seconds": result.seconds, "error": result.error,
    })
    return probe


def finished_probes(session: Session, *, study_id: str) -> dict[str, ProbeResult]:
    """Every finished probe's result by its probe key, in the order they ran."""
    rows = session.scalars(
        select(Probe).where(Probe.study_id == study_id, Probe.result.is_not(None)).order_by(Probe.number)
    )
    return {row.key: ProbeResult.from_dict(row.result) for row in rows}


def list_probes(session: Session, *, study_id: str) -> list[Probe]:
    return list(session.scalars(select(Probe).where(Probe.study_id == study_id).order_by(Probe.number)))


def count_probes_by_state(session: Session, *, study_id: str | None = None) -> dict[str, int]:
    query = select(Probe.state, func.count()).group_by(Probe.state)
    if study_id is not None:
        query = query.where(Probe.study_id == study_id)
    return dict(session.execute(query).all())


# -- runs ----------------------------------------------------------------------------------------
def record_run(session: Session, *, study_id: str | None, config: Config, result: dict[str, Any]) -> Run:
    """Record a run; a plan made against another database (its study is not here) runs unlinked."""
    if study_id is not None and session.get(Study, study_id) is None:
        study_id = None
    run = Run(study_id=study_id, config=config.to_dict(), result=result)
    session.add(run)
    session.flush()
    return run


# -- events --------------------------------------------------------------------------------------
def add_event(session: Session, *, study_id: str, kind: str, data: dict[str, Any]) -> Event:
    event = Event(study_id=study_id, kind=kind, data=data)
    session.add(event)
    return event


def events_after(session: Session, *, study_id: str, after: int = 0, limit: int = 500) -> list[Event]:
    rows = session.scalars(
        select(Event).where(Event.study_id == study_id, Event.id > after).order_by(Event.id).limit(limit)
    )
    return list(rows)


# -- leases --------------------------------------------------------------------------------------
def acquire_lease(session: Session, *, study_id: str, owner: str, seconds: float) -> bool:
    """Take the study's lease if it is free, expired, or already ours; False when another holds it.

    The conditional UPDATE/INSERT is atomic on both databases, so two services never both win.
    """
    moment = now()
    expires = moment + timedelta(seconds=seconds)
    taken = session.execute(
        update(Lease)
        .where(Lease.study_id == study_id, or_(Lease.owner == owner, Lease.expires_at < moment))
        .values(owner=owner, expires_at=expires, heartbeat_at=moment)
    ).rowcount
    if taken:
        return True
    if session.get(Lease, study_id) is not None:
        return False
    session.add(Lease(study_id=study_id, owner=owner, expires_at=expires, heartbeat_at=moment))
    session.flush()
    return True


def renew_lease(session: Session, *, study_id: str, owner: str, seconds: float) -> bool:
    """Heartbeat: extend our lease; False when it was lost (expired and taken by another)."""
    moment = now()
    return bool(session.execute(
        update(Lease)
        .where(Lease.study_id == study_id, Lease.owner == owner)
        .values(expires_at=moment + timedelta(seconds=seconds), heartbeat_at=moment)
    ).rowcount)


def release_lease(session: Session, *, study_id: str, owner: str) -> None:
    session.execute(delete(Lease).where(Lease.study_id == study_id, Lease.owner == owner))


def lease_expires_at(session: Session, *, study_id: str) -> datetime | None:
    return session.scalar(select(Lease.expires_at).where(Lease.study_id == study_id))


# -- health --------------------------------------------------------------------------------------
def ping(session: Session) -> None:
    session.execute(text("SELECT 1"))
