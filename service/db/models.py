"""SQLAlchemy 2 models: studies, their probes (the measurements), plans, runs, events, leases, and
``ttc train``'s trainings, their segments and the probes' end states (checkpoints).

Tables are prefixed ``ttc_`` because Optuna's RDB storage shares the database (its own tables
are ``studies``, ``trials``, …). The schema is owned by the Alembic migrations in
``service/db/migrations``; change a model only together with a new migration.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship

TERMINAL_STATES = ("done", "unreachable", "failed", "cancelled")
ACTIVE_STATES = ("pending", "running")
TRAINING_TERMINAL_STATES = ("done", "unreachable", "failed", "cancelled")


def now() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return uuid.uuid4().hex[:12]


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON}


class Study(Base):
    """A study; ``plan`` is the Plan JSON of DESIGN.md §7 once ``state`` is ``done``."""

    __tablename__ = "ttc_studies"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    state: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    plan: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now, onupdate=now)

    probes: Mapped[list[Probe]] = relationship(back_populates="study", order_by="Probe.number")


class Probe(Base):
    """One probe of a study; ``result`` is the ProbeResult JSON, committed the moment it arrives.

    A probe in flight when the service died keeps its row: the resumed study retries it in the
    same row (``attempts`` counts the tries), so a key has at most one row per study.
    """

    __tablename__ = "ttc_probes"
    __table_args__ = (UniqueConstraint("study_id", "key", name="uq_ttc_probes_study_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    study_id: Mapped[str] = mapped_column(ForeignKey("ttc_studies.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    key: Mapped[str] = mapped_column(String(255))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16), default="running")
    attempts: Mapped[int] = mapped_column(Integer, default=1)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    predicted_ttc: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    study: Mapped[Study] = relationship(back_populates="probes")


class Run(Base):
    """A configuration trained to the target: the measured TTC next to the prediction."""

    __tablename__ = "ttc_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    study_id: Mapped[str | None] = mapped_column(ForeignKey("ttc_studies.id"), nullable=True, index=True)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    result: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class Event(Base):
    """A progress event of a study; ``id`` orders the SSE stream and survives restarts."""

    __tablename__ = "ttc_events"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    study_id: Mapped[str] = mapped_column(ForeignKey("ttc_studies.id", ondelete="CASCADE"), index=True)
    kind: Mapped[str] = mapped_column(String(32))
    data: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class Lease(Base):
    """Who runs a study until when; a holder renews ``expires_at`` by heartbeat (DESIGN.md §8)."""

    __tablename__ = "ttc_leases"

    study_id: Mapped[str] = mapped_column(
        ForeignKey("ttc_studies.id", ondelete="CASCADE"), primary_key=True
    )
    owner: Mapped[str] = mapped_column(String(128))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    heartbeat_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class Training(Base):
    """``ttc train`` of a study (issue 13): the study's tune, then the run from the plan's lineage,
    re-planned at checkpoints. ``result`` is the Training result JSON of DESIGN.md §7 so far (its
    phases grow as segments arrive); ``timeline`` the loss against cluster-seconds the dashboard
    draws. ``state``: pending → running → done (target reached) | unreachable | failed | cancelled.
    """

    __tablename__ = "ttc_trainings"

    study_id: Mapped[str] = mapped_column(
        ForeignKey("ttc_studies.id", ondelete="CASCADE"), primary_key=True
    )
    state: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    max_iterations: Mapped[int] = mapped_column(Integer)
    max_overhead: Mapped[float | None] = mapped_column(Float, nullable=True)
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    timeline: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now, onupdate=now)


class TrainingSegment(Base):
    """One finished probe of a training after its study: a run segment (a checkpoint) or a re-plan's
    fork. Committed with its end state the moment it arrives; a resumed training replays these
    through the planner instead of running them again. ``request`` is the ProbeRequest JSON."""

    __tablename__ = "ttc_training_segments"
    __table_args__ = (UniqueConstraint("study_id", "key", name="uq_ttc_training_segments_study_key"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    study_id: Mapped[str] = mapped_column(ForeignKey("ttc_studies.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    key: Mapped[str] = mapped_column(String(255))
    role: Mapped[str] = mapped_column(String(8))  # "run" or "fork"
    request: Mapped[dict[str, Any]] = mapped_column(JSON)
    result: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)


class ProbeState(Base):
    """A probe's end state (``worker.lineage.State``, ``torch.save``d): the checkpoint the next
    segment of its lineage, or a fork, starts from after the service restarted. Only the states
    a later probe may still start from are kept (``measurement_store.prune_states``)."""

    __tablename__ = "ttc_probe_states"

    study_id: Mapped[str] = mapped_column(
        ForeignKey("ttc_studies.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    data: Mapped[bytes] = mapped_column(LargeBinary)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=now)
