"""Alembic environment: the engine comes from ``service.db.migrate`` (or ``-x url=`` on the CLI)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from service.db.migrate import VERSION_TABLE
from service.db.models import Base


def run_migrations() -> None:
    config = context.config
    engine = config.attributes.get("engine")
    if engine is None:
        arguments = context.get_x_argument(as_dictionary=True)
        url = arguments.get("url") or config.get_main_option("sqlalchemy.url")
        engine = create_engine(url)
    with engine.connect() as connection:
        context.configure(
            connection=connection,
            target_metadata=Base.metadata,
            version_table=VERSION_TABLE,
            render_as_batch=connection.dialect.name == "sqlite",
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()


run_migrations()
