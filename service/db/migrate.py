"""Alembic, driven from code so an installed wheel migrates without an ``alembic.ini`` on disk.

Our version table is ``ttc_alembic_version``: Optuna's RDB storage, in the same database, keeps
its own revision in ``alembic_version``.
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config
from sqlalchemy import Engine

MIGRATIONS = Path(__file__).with_name("migrations")
VERSION_TABLE = "ttc_alembic_version"


def alembic_config(engine: Engine | None = None) -> Config:
    config = Config(str(MIGRATIONS / "alembic.ini"))
    config.set_main_option("script_location", str(MIGRATIONS))
    if engine is not None:
        config.attributes["engine"] = engine
    return config


def upgrade(engine: Engine, revision: str = "head") -> None:
    command.upgrade(alembic_config(engine), revision)
