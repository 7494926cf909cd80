"""Persistence: SQLAlchemy models, Alembic migrations and the engine/transaction helpers."""

from service.db.models import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    TRAINING_TERMINAL_STATES,
    Base,
    Event,
    Lease,
    Probe,
    ProbeState,
    Run,
    Study,
    Training,
    TrainingSegment,
)
from service.db.session import Database, make_engine

__all__ = [
    "ACTIVE_STATES",
    "TERMINAL_STATES",
    "TRAINING_TERMINAL_STATES",
    "Base",
    "Database",
    "Event",
    "Lease",
    "Probe",
    "ProbeState",
    "Run",
    "Study",
    "Training",
    "TrainingSegment",
    "make_engine",
]
