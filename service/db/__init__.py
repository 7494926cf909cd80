"""Persistence: SQLAlchemy models and the engine/session helpers."""

from service.db.models import Base, Probe, Run, Study
from service.db.session import Database, make_engine

__all__ = ["Base", "Database", "Probe", "Run", "Study", "make_engine"]
