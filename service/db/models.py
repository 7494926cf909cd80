"""SQLAlchemy 2 models: studies, their probes, plans and executed runs.

Tables are prefixed ``ttc_`` because Optuna's RDB storage shares the database (its own tables
are ``studies``, ``trials``, …).
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Integer, String, Text
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


def _now() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    return uuid.uuid4().hex[:12]


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON}


class Study(Base):
    __tablename__ = "ttc_studies"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    state: Mapped[str] = mapped_column(String(16), default="pending", index=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    plan: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now, onupdate=_now)

    probes: Mapped[list[Probe]] = relationship(back_populates="study", order_by="Probe.number")


class Probe(Base):
    """One probe of a study; ``result`` is the ProbeResult JSON, committed the moment it arrives."""

    __tablename__ = "ttc_probes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    study_id: Mapped[str] = mapped_column(ForeignKey("ttc_studies.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)
    key: Mapped[str] = mapped_column(String(255))
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    state: Mapped[str] = mapped_column(String(16), default="running")
    result: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    predicted_ttc: Mapped[float | None] = mapped_column(Float, nullable=True)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    study: Mapped[Study] = relationship(back_populates="probes")


class Run(Base):
    """A configuration trained to the target: the measured TTC next to the prediction."""

    __tablename__ = "ttc_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    study_id: Mapped[str | None] = mapped_column(ForeignKey("ttc_studies.id"), nullable=True, index=True)
    config: Mapped[dict[str, Any]] = mapped_column(JSON)
    result: Mapped[dict[str, Any]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=_now)
