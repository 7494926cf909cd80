"""The lease of a study this process runs itself: ``ttc tune`` and ``ttc train`` without ``--server``.

A ``ttc serve`` claims every unfinished study whose lease is free or expired: that is how it
resumes a study whose service crashed (service.runners.scheduler). A local run that held no lease was
therefore claimed by a server on the same database as soon as it was submitted, and both drove
it: the second to finish a probe failed with "already finished; it is never re-run". A local run
now takes the lease in the transaction that creates the study and heartbeats it as the
scheduler does; a local run killed outright leaves a lease that expires, so a server resumes it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid
from collections.abc import Callable
from types import TracebackType

from sqlalchemy.orm import Session

from service.db import Database, study_store

log = logging.getLogger(__name__)


def local_owner() -> str:
    """A lease owner naming this process (the scheduler's form, marked as the CLI's)."""
    return f"cli:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def take(session: Session, study_id: str, owner: str, seconds: float) -> None:
    """Take a new study's lease inside the transaction that creates it (no server can claim the
    study between the two)."""
    if not study_store.acquire_lease(session, study_id=study_id, owner=owner, seconds=seconds):
        raise RuntimeError(f"study {study_id} was leased before it was committed")


class HeldLease:
    """Heartbeat of a lease taken by ``take``; ``lost`` is set when another holder took it over
    (this process stalled past the lease), and the runner given it as its ``stop`` stops.
    ``on_interrupt`` ends the study when a Ctrl-C leaves the block, before the lease is let go (a
    server could otherwise claim the study in between)."""

    def __init__(self, db: Database, study_id: str, owner: str, seconds: float,
                 on_interrupt: Callable[[], None] | None = None) -> None:
        self.db, self.study_id, self.owner, self.seconds = db, study_id, owner, seconds
        self.on_interrupt = on_interrupt
        self.lost = threading.Event()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-{study_id}", daemon=True)

    def __enter__(self) -> HeldLease:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._done.set()
        self._thread.join()
        if kind is KeyboardInterrupt and self.on_interrupt is not None and not self.lost.is_set():
            self.on_interrupt()
        if not self.lost.is_set():
            with self.db.transaction() as session:
                study_store.release_lease(session, study_id=self.study_id, owner=self.owner)

    def why_stopped(self, error: Exception) -> str:
        """What to tell the user when the run stopped: the lease's loss, else ``error``."""
        if not self.lost.is_set():
            return str(error)
        return (f"study {self.study_id}: this process stalled past its {self.seconds:g}s lease and another "
                f"process on the same database (a ttc serve) took the study over; follow it there with "
                f"`ttc studies show {self.study_id}`")

    def _beat(self) -> None:
        while not self._done.wait(self.seconds / 3):
            try:
                with self.db.transaction() as session:
                    kept = study_store.renew_lease(session, study_id=self.study_id, owner=self.owner,
                                                   seconds=self.seconds)
            except Exception:  # a database hiccup: the next beat retries before the lease expires
                log.warning("could not renew the lease of study %s", self.study_id, exc_info=True)
                continue
            if not kept:
                log.warning("lost the lease of study %s to another process; stopping here", self.study_id)
                self.lost.set()
                return
