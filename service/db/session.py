"""Engine and transactions: SQLite (WAL, busy timeout, immediate writes) by default, PostgreSQL by URL.

SQLite's deferred ``BEGIN`` lets two writers both read and then fail to upgrade with "database
is locked" without waiting for the busy timeout; write transactions therefore ``BEGIN IMMEDIATE``,
which queues writers on the busy timeout, while reads keep a deferred ``BEGIN`` so they never wait
on a writer (WAL).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from service.db.outage import is_outage, wait_until_back
from service.db.reconnect import RECONNECT_SECONDS, retrying, wait_for_server

log = logging.getLogger(__name__)
T = TypeVar("T")
SQLITE_BUSY_TIMEOUT_MS = 120_000
"""How long a SQLite writer queues for the file's lock before "database is locked". Optuna's storage
begins every transaction IMMEDIATE, its reads too, so twenty studies queue behind each other; on a
loaded 2-core machine one study waited past the 30 s this was, and failed
(tests/service/test_service_concurrency.py in a loaded CI run, issue 36). A wait beats a lost study."""
POOL = {"pool_size": 20, "max_overflow": 20, "pool_timeout": 60}


def is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def sqlite_engine_kwargs() -> dict[str, Any]:
    """Driver arguments that hand transaction control to SQLAlchemy (see ``use_sqlite_begin``)."""
    return {"connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "isolation_level": None,
                             "check_same_thread": False}}


def use_sqlite_begin(engine: Engine, begin: str) -> None:
    """Pragmas on connect, and ``begin`` (``BEGIN`` or ``BEGIN IMMEDIATE``) for each transaction."""

    @event.listens_for(engine, "connect")
    def _pragmas(connection, _record) -> None:  # type: ignore[no-untyped-def]
        cursor = connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(connection) -> None:  # type: ignore[no-untyped-def]
        connection.exec_driver_sql(begin)


def make_engine(url: str, *, write: bool = True) -> Engine:
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return create_engine(url, pool_pre_ping=True, **POOL)
    if parsed.database and parsed.database != ":memory:":
        Path(parsed.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, **POOL, **sqlite_engine_kwargs())
    use_sqlite_begin(engine, "BEGIN IMMEDIATE" if write else "BEGIN")
    return engine


class Database:
    """The engines and session factories; ``transaction()`` is the only way to write."""

    def __init__(self, url: str, *, reconnect: bool = False,
                 retry_seconds: float = RECONNECT_SECONDS) -> None:
        """``reconnect``: new connections wait for a restarting server (the orchestrator's
        studies outlive it) instead of failing at once (what an API request should do), for up
        to ``retry_seconds`` per call (``TTC_DATABASE_RETRY_SECONDS``)."""
        self.url = url
        self.retry_seconds = retry_seconds
        self.engine = make_engine(url)
        if reconnect and not is_sqlite(url):
            wait_for_server(self.engine, retry_seconds)
        self._read_engine = make_engine(url, write=False) if is_sqlite(url) else self.engine
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        self._read_sessions = sessionmaker(self._read_engine, expire_on_commit=False)

    def migrate(self) -> None:
        """Bring the schema to the newest Alembic revision (idempotent; run at start-up)."""
        from service.db.migrate import upgrade

        upgrade(self.engine)

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        """A read-write transaction, committed on exit and rolled back on error."""
        with self._sessions.begin() as session:
            yield session

    def write(self, work: Callable[[Session], T]) -> T:
        """``work`` in one ``transaction()``, run again if the connection to the server drops
        (``service.db.reconnect``): for the orchestrator, whose studies outlive a database restart."""
        def attempt() -> T:
            with self.transaction() as session:
                return work(session)

        return self.reconnecting(attempt)

    def reconnecting(self, work: Callable[[], T]) -> T:
        """Any database work (reads, Optuna's storage) retried while the server is unreachable."""
        return retrying(work, enabled=not is_sqlite(self.url), seconds=self.retry_seconds)

    def write_outlasting(self, work: Callable[[Session], T], stop: threading.Event | None = None) -> T:
        """``write``, held in memory through an outage of any length (``outlasting``)."""
        def attempt() -> T:
            with self.transaction() as session:
                return work(session)

        return self.outlasting(attempt, stop)

    def is_outage(self, error: BaseException) -> bool:
        """``error`` is the server being away (never on SQLite, which has none)."""
        return not is_sqlite(self.url) and is_outage(error)

    def outlasting(self, work: Callable[[], T], stop: threading.Event | None = None) -> T:
        """``work()`` however long the server is away: after each ``reconnecting`` window it waits
        until the server answers and tries again; what ``work`` holds stays in memory meanwhile.
        Only a set ``stop`` (the study is being stopped here) gives up, with the outage's error."""
        while True:
            try:
                return self.reconnecting(work)
            except Exception as exc:
                if not self.is_outage(exc) or (stop is not None and stop.is_set()):
                    raise
                log.warning("the database is away past %gs; holding on until it is back", self.retry_seconds)
                if not wait_until_back(self.engine, stop):
                    raise

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A read-only transaction that never waits on writers."""
        with self._read_sessions.begin() as session:
            yield session

    @contextmanager
    def read_connection(self) -> Iterator[Connection]:
        """Like ``read()`` but a bare connection, for Core reads on hot paths (no ORM session)."""
        with self._read_engine.connect() as connection:
            yield connection

    def dispose(self) -> None:
        self.engine.dispose()
        self._read_engine.dispose()
