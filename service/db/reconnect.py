"""Riding out a dropped database connection: PostgreSQL restarted or failed over mid-study.

The pool's pre-ping replaces a dead connection at checkout, but a statement that runs while the
server is down, or on a connection it just closed, still fails. A study must not end "failed"
for that: the orchestrator's writes (a probe's result, Optuna's tell) are each one transaction,
so running it again on a fresh connection once the server is back is safe. SQLite has no server
to lose, and its errors are never retried. One call waits ``TTC_DATABASE_RETRY_SECONDS`` (120 s);
a longer outage pauses the study instead of failing it (``service.db.outage``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import Engine, event
from sqlalchemy.exc import InterfaceError, OperationalError

log = logging.getLogger(__name__)
T = TypeVar("T")

RECONNECT_SECONDS = 120.0
FIRST_DELAY, MAX_DELAY = 0.2, 2.0


def retrying(
    work: Callable[[], T], *, enabled: bool, seconds: float = RECONNECT_SECONDS,
    errors: tuple[type[Exception], ...] = (OperationalError, InterfaceError),
) -> T:
    """``work()``, run again while the database is unreachable (``errors``), for up to ``seconds``."""
    deadline = time.monotonic() + seconds
    delay = FIRST_DELAY
    while True:
        try:
            return work()
        except errors as exc:
            if not enabled or time.monotonic() + delay > deadline:
                raise
            log.warning("database unavailable (%s); trying again in %.1f s",
                        (str(exc).strip().splitlines() or [type(exc).__name__])[0], delay)
            time.sleep(delay)
            delay = min(2 * delay, MAX_DELAY)


def wait_for_server(engine: Engine, seconds: float = RECONNECT_SECONDS) -> None:
    """New connections of ``engine`` wait for the server (up to ``seconds``) instead of failing.

    With ``pool_pre_ping`` a connection the restart killed is replaced at checkout; this makes
    the replacement wait out the restart. It covers Optuna's storage too, whose calls are not
    safe to repeat from the outside.
    """
    @event.listens_for(engine, "do_connect")
    def _connect(dialect, _record, cargs, cparams):  # type: ignore[no-untyped-def]
        dbapi = dialect.loaded_dbapi
        return retrying(lambda: dbapi.connect(*cargs, **cparams), enabled=True, seconds=seconds,
                        errors=(dbapi.OperationalError, dbapi.InterfaceError))
