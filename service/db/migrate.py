"""Alembic, driven from code so an installed wheel migrates without an ``alembic.ini`` on disk.

Our version table is ``ttc_alembic_version``: Optuna's RDB storage, in the same database, keeps
its own revision in ``alembic_version``.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, text

MIGRATIONS = Path(__file__).with_name("migrations")
VERSION_TABLE = "ttc_alembic_version"
MIGRATION_LOCK = 0x74746300  # PostgreSQL advisory-lock key: ttc's migrations, one process at a time


def alembic_config(engine: Engine | None = None) -> Config:
    config = Config(str(MIGRATIONS / "alembic.ini"))
    config.set_main_option("script_location", str(MIGRATIONS))
    if engine is not None:
        config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate to ``revision``, one process at a time (``_one_at_a_time``)."""
    with _one_at_a_time(engine):
        command.upgrade(alembic_config(engine), revision)


@contextmanager
def _one_at_a_time(engine: Engine) -> Iterator[None]:
    """Processes starting together on one database (API workers beside the orchestrator) take
    turns: on PostgreSQL two once created the version table at the same moment and one exited at
    start-up; on SQLite concurrent migrations deadlock on the file's lock until the busy timeout.
    PostgreSQL: an advisory lock; an SQLite file: an exclusive lock on a file beside it."""
    if engine.dialect.name == "postgresql":
        with engine.connect() as lock:
            lock.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK})
            try:
                yield
            finally:
                lock.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK})
    elif engine.dialect.name == "sqlite" and engine.url.database not in (None, "", ":memory:"):
        with open(f"{engine.url.database}.migrate-lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes
            yield
    else:
        yield
