"""Telling "the database is away" from every other error, and waiting until it is back.

A study must never end ``failed`` because PostgreSQL was down (issue 36): its runner holds what it
has in memory and commits it when the server returns, and what cannot be held (a call into Optuna's
storage, not safe to repeat from outside) pauses the study, which the scheduler resumes from its
committed probes once the server answers again. An API read during the outage answers 503. Optuna
wraps the driver's error in its own ``StorageInternalError``, so the whole cause chain is searched.
SQLite has no server to lose: its errors are never an outage.
"""

from __future__ import annotations

import logging
import threading
import time

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError, DisconnectionError, InterfaceError, OperationalError

from service.db.reconnect import FIRST_DELAY, MAX_DELAY

log = logging.getLogger(__name__)


def is_outage(error: BaseException) -> bool:
    """``error``, or an error that caused it, says the database server could not be reached."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OperationalError | InterfaceError | DisconnectionError):
            return True
        if isinstance(current, DBAPIError) and current.connection_invalidated:
            return True
        if type(current).__name__ in ("OperationalError", "InterfaceError") and \
                type(current).__module__.startswith("psycopg"):  # the driver's own, unwrapped
            return True
        current = current.__cause__ or current.__context__
    return False


def wait_until_back(engine: Engine, stop: threading.Event | None = None) -> bool:
    """Block until ``engine`` can run ``SELECT 1`` (True), or ``stop`` is set (False)."""
    delay = FIRST_DELAY
    logged = 0.0
    while stop is None or not stop.is_set():
        try:
            with engine.connect() as connection:
                connection.execute(text("SELECT 1"))
            return True
        except Exception as exc:  # noqa: BLE001 — anything but an answer means "not back yet"
            if not is_outage(exc):
                raise
            if time.monotonic() - logged > 30:
                log.warning("the database is still unreachable; waiting for it (%s)",
                            (str(exc).strip().splitlines() or [type(exc).__name__])[0])
                logged = time.monotonic()
        if stop is not None:
            stop.wait(delay)
        else:
            time.sleep(delay)
        delay = min(2 * delay, MAX_DELAY)
    return False
