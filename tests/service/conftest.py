"""Fixtures: a throwaway database per test on SQLite and on the real PostgreSQL, one Ray per session.

PostgreSQL: 127.0.0.1:5432, trust auth, user postgres (``.ci/start-postgres`` starts it). One
database is created per test session and dropped after; each test gets a clean schema in it.
Unreachable locally → the ``postgres`` cases skip.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from service.app import create_app
from service.db import Database
from service.db.optuna_mirror import dispose_optuna_storages
from service.settings import Settings
from tests.service.service_helpers import local_client

API_TOKEN = "s3cret"
POSTGRES_SERVER = os.environ.get("TTC_TEST_POSTGRES", "postgresql+psycopg2://postgres@127.0.0.1:5432")


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    admin = create_engine(f"{POSTGRES_SERVER}/postgres", isolation_level="AUTOCOMMIT", pool_pre_ping=True)
    name = f"ttc_test_{os.getpid()}_{uuid.uuid4().hex[:6]}"
    try:
        with admin.connect() as connection:
            connection.execute(text(f'CREATE DATABASE "{name}"'))
    except OperationalError as exc:
        admin.dispose()
        pytest.skip(f"PostgreSQL not reachable at {POSTGRES_SERVER}: {str(exc).splitlines()[0]}")
    yield f"{POSTGRES_SERVER}/{name}"
    dispose_optuna_storages()
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def _reset_postgres(url: str) -> None:
    engine = create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path) -> str:  # type: ignore[no-untyped-def]
    """A fresh, empty database on each backend."""
    dispose_optuna_storages()  # cached engines point at the previous test's database
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ttc.db'}"
    url = request.getfixturevalue("postgres_url")
    _reset_postgres(url)
    return url


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = Database(database_url)
    database.migrate()
    yield database
    database.dispose()


@pytest.fixture(scope="session")
def ray_address(ray_local: None) -> str:
    """The session's Ray (tests/conftest.py); service subprocesses connect to it as drivers."""
    import ray

    return ray.get_runtime_context().gcs_address


@pytest.fixture
def api(database_url: str) -> Iterator[TestClient]:
    """The API alone (no scheduler, no Ray) on a fresh database, with an API token configured."""
    settings = Settings(database_url=database_url, api_token=API_TOKEN, max_cluster_devices=64)
    with local_client(create_app(settings, run_studies=False)) as client:
        client.headers["Authorization"] = f"Bearer {API_TOKEN}"
        yield client
