"""Keyword-only reads and writes of studies, their trainings, events and leases.

Routes, the dashboard, the CLI and the runners never write SQL: they call this module and
``service.db.measurement_store`` (what was measured: probes, training segments, runs, end states).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, bindparam, delete, func, or_, select, text, update
from sqlalchemy.orm import Session

from predictor.types import Plan
from service.db.models import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    TRAINING_TERMINAL_STATES,
    Event,
    Lease,
    Probe,
    Study,
    Training,
    now,
)


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


def cancellable(session: Session, *, study_id: str) -> bool:
    """Whether there is anything left to cancel: the study itself, or its unfinished training."""
    study = _study(session, study_id)
    if study.state not in TERMINAL_STATES:
        return True
    training = session.get(Training, study_id)
    return training is not None and training.state not in TRAINING_TERMINAL_STATES


def request_cancel(session: Session, *, study_id: str) -> Study:
    """Cancel at once when nobody runs the study yet; otherwise ask its runner to stop. A done study
    whose training is unfinished has its training cancelled the same way (``cancel_requested``)."""
    study = _study(session, study_id)
    training = session.get(Training, study_id)
    if study.state in TERMINAL_STATES and training is not None:
        if training.state == "pending":
            set_training_state(session, study_id=study_id, state="cancelled", error="cancelled on request")
        elif training.state not in TRAINING_TERMINAL_STATES:
            study.cancel_requested = True
        return study
    if study.state == "pending":
        set_state(session, study_id=study_id, state="cancelled")
        if training is not None and training.state == "pending":
            set_training_state(session, study_id=study_id, state="cancelled", error="cancelled on request")
    elif study.state not in TERMINAL_STATES:
        study.cancel_requested = True
    return study


def cancel_requested(session: Session, *, study_id: str) -> bool:
    return bool(session.scalar(select(Study.cancel_requested).where(Study.id == study_id)))


def cancel_requested_among(session: Session, *, study_ids: list[str]) -> list[str]:
    """Which of these studies a client asked to cancel (the scheduler checks at every heartbeat)."""
    if not study_ids:
        return []
    return list(session.scalars(select(Study.id).where(Study.id.in_(study_ids), Study.cancel_requested)))


def _study(session: Session, study_id: str) -> Study:
    study = session.get(Study, study_id)
    if study is None:
        raise KeyError(study_id)
    return study



# -- trainings (ttc train) -----------------------------------------------------------------------
def create_training(
    session: Session, *, study_id: str, max_iterations: int, max_overhead: float | None = None
) -> Training:
    """Attach a training to a study; a failed or cancelled one starts again (its segments kept)."""
    _study(session, study_id)
    training = session.get(Training, study_id)
    if training is not None:
        if training.state not in ("failed", "cancelled"):
            raise ValueError(f"study {study_id} already has a training ({training.state})")
        training.state, training.error = "pending", None
        training.max_iterations, training.max_overhead = max_iterations, max_overhead
        study = _study(session, study_id)
        study.cancel_requested = study.cancel_requested and study.state not in TERMINAL_STATES
    else:
        training = Training(study_id=study_id, state="pending", max_iterations=max_iterations,
                            max_overhead=max_overhead)
        session.add(training)
        session.flush()
    add_event(session, study_id=study_id, kind="training", data={"state": "pending"})
    return training


def get_training(session: Session, *, study_id: str) -> Training | None:
    return session.get(Training, study_id)


def unfinished_training_ids(session: Session) -> list[str]:
    """Studies whose training is still to run (pending, or running when its service died)."""
    rows = session.scalars(
        select(Training.study_id).where(Training.state.not_in(TRAINING_TERMINAL_STATES))
        .order_by(Training.created_at, Training.study_id)
    )
    return list(rows)


def set_training_state(session: Session, *, study_id: str, state: str, error: str | None = None) -> None:
    training = session.get(Training, study_id)
    if training is None:
        raise KeyError(study_id)
    if training.state != state:
        add_event(session, study_id=study_id, kind="training",
                  data={"state": state, **({"error": error} if error else {})})
    training.state, training.error = state, error


def set_training_progress(
    session: Session, *, study_id: str, result: dict[str, Any], timeline: dict[str, Any]
) -> None:
    """The Training result so far (phases included) and the timeline the dashboard draws."""
    training = session.get(Training, study_id)
    if training is None:
        raise KeyError(study_id)
    training.result, training.timeline = result, timeline



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


def last_event_id(session: Session, *, study_id: str) -> int:
    """The study's newest event id (the event stream's cursor; 0 without events)."""
    return session.scalar(select(func.max(Event.id)).where(Event.study_id == study_id)) or 0



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


def count_live_leases(session: Session) -> int:
    """Studies some orchestrator is running now (its lease not expired), whichever process it is."""
    return session.scalar(select(func.count()).select_from(Lease).where(Lease.expires_at > now())) or 0


def lease_expires_at(session: Session, *, study_id: str) -> datetime | None:
    return session.scalar(select(Lease.expires_at).where(Lease.study_id == study_id))



# -- health --------------------------------------------------------------------------------------
def ping(session: Session) -> None:
    session.execute(text("SELECT 1"))
