"""Keyword-only reads and writes of what was measured: probes, training segments, runs, end states.

The studies and trainings they belong to, and their events, are ``service.db.study_store``'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, delete, func, select, update
from sqlalchemy.orm import Session

from predictor.types import Config, ProbeRequest, ProbeResult, json_safe
from service.db.models import Probe, ProbeState, Run, Study, TrainingSegment, now
from service.db.study_store import add_event


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
        "probe": probe.number, "key": probe.key, "state": probe.state,
        "predicted_ttc": json_safe(predicted_ttc),
        "final_loss": final_loss if final_loss == final_loss else None, "iterations": result.iterations,
        "seconds": result.seconds, "error": result.error,
    })
    return probe


def set_predicted(session: Session, *, study_id: str, predicted: dict[str, float | None]) -> None:
    """Each finished probe's predicted TTC, by probe key, once the search has been told its batch
    (``finish_probe`` committed the result before): one ``probes_predicted`` event, for live displays."""
    rows = session.scalars(select(Probe).where(Probe.study_id == study_id, Probe.key.in_(predicted),
                                               Probe.result.is_not(None)).order_by(Probe.number))
    events = []
    for probe in rows:
        probe.predicted_ttc = ttc = predicted[probe.key]
        events.append({"probe": probe.number, "key": probe.key, "predicted_ttc": json_safe(ttc)})
    add_event(session, study_id=study_id, kind="probes_predicted", data={"probes": events})


def cancel_unfinished_probes(session: Session, *, study_id: str) -> int:
    """Probes of an ended study that never got a result: no row stays ``running`` after its study."""
    return session.execute(
        update(Probe).where(Probe.study_id == study_id, Probe.result.is_(None), Probe.state == "running")
        .values(state="cancelled", finished_at=now())
    ).rowcount


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


@dataclass(frozen=True)
class ProbeTotals:
    """One study's probes: finished, still running, and the lowest predicted TTC among them."""

    finished: int = 0
    running: int = 0
    best_predicted_ttc: float | None = None


def probe_totals(session: Session, *, study_ids: list[str]) -> dict[str, ProbeTotals]:
    """Per-study probe aggregates, computed in SQL so a studies list never loads loss curves."""
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



# -- training segments (ttc train) ---------------------------------------------------------------
def record_training_segment(
    session: Session, *, study_id: str, request: ProbeRequest, result: ProbeResult, role: str
) -> TrainingSegment:
    """A finished run segment or re-plan fork; never run again once recorded."""
    number = session.scalar(select(func.count()).where(TrainingSegment.study_id == study_id)) or 0
    segment = TrainingSegment(study_id=study_id, number=number, key=request.key, role=role,
                              request=json_safe(request.to_dict()), result=result.to_dict())
    session.add(segment)
    session.flush()
    final_loss = result.final_loss
    add_event(session, study_id=study_id, kind="training_segment", data={
        "segment": number, "key": request.key, "role": role, "iterations": result.iterations,
        "end_iteration": result.end_iteration, "seconds": json_safe(result.seconds),
        "final_loss": json_safe(final_loss), "error": result.error,
    })
    return segment


def segment_request(data: dict[str, Any]) -> ProbeRequest:
    """A stored segment's request (a run segment's unbounded seconds are stored as null)."""
    seconds = data.get("seconds")
    return ProbeRequest.from_dict({**data, "seconds": math.inf if seconds is None else seconds})


def training_segments(session: Session, *, study_id: str) -> dict[str, ProbeResult]:
    """Every recorded segment's result by its probe key, in the order they arrived."""
    rows = session.scalars(select(TrainingSegment).where(TrainingSegment.study_id == study_id)
                           .order_by(TrainingSegment.number))
    return {row.key: ProbeResult.from_dict(row.result) for row in rows}


def count_training_segments(session: Session, *, study_id: str) -> int:
    return session.scalar(select(func.count()).select_from(TrainingSegment)
                          .where(TrainingSegment.study_id == study_id)) or 0



# -- runs ----------------------------------------------------------------------------------------
def record_run(session: Session, *, study_id: str | None, config: Config, result: dict[str, Any]) -> Run:
    """Record a run; a plan made against another database (its study is not here) runs unlinked."""
    if study_id is not None and session.get(Study, study_id) is None:
        study_id = None
    run = Run(study_id=study_id, config=config.to_dict(), result=result)
    session.add(run)
    session.flush()
    return run


def list_runs(session: Session, *, study_id: str) -> list[Run]:
    """Executed runs of a study's configs (``ttc run --config PLAN``), oldest first."""
    return list(session.scalars(select(Run).where(Run.study_id == study_id).order_by(Run.id)))


def run_count(session: Session, *, study_id: str) -> int:
    return session.scalar(select(func.count()).select_from(Run).where(Run.study_id == study_id)) or 0



# -- probe end states (checkpoints) --------------------------------------------------------------
def put_state(session: Session, *, study_id: str, key: str, data: bytes) -> None:
    """Store probe ``key``'s end state (serialized); a retried probe's replaces the old one."""
    row = session.get(ProbeState, (study_id, key))
    if row is None:
        session.add(ProbeState(study_id=study_id, key=key, data=data))
    else:
        row.data = data


def get_state(session: Session, *, study_id: str, key: str) -> bytes | None:
    return session.scalar(select(ProbeState.data).where(ProbeState.study_id == study_id,
                                                         ProbeState.key == key))


def state_keys(session: Session, *, study_id: str) -> list[str]:
    return list(session.scalars(select(ProbeState.key).where(ProbeState.study_id == study_id)
                                .order_by(ProbeState.key)))


def prune_states(session: Session, *, study_id: str, keep: set[str]) -> int:
    """Drop the study's states no later probe can start from (every one but ``keep``)."""
    query = delete(ProbeState).where(ProbeState.study_id == study_id)
    if keep:
        query = query.where(ProbeState.key.not_in(sorted(keep)))
    return session.execute(query).rowcount
