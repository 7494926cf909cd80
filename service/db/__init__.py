"""Persistence: SQLAlchemy models, Alembic migrations and the engine/transaction helpers."""

from service.db.models import ACTIVE_STATES, TERMINAL_STATES, Base, Event, Lease, Probe, Run, Study
from service.db.session import Database, make_engine

__all__ = [
    "ACTIVE_STATES",
    "TERMINAL_STATES",
    "Base",
    "Database",
    "Event",
    "Lease",
    "Probe",
    "Run",
    "Study",
    "make_engine",
]
