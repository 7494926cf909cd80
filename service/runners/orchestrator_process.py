"""The orchestrator process of ``ttc serve``: the StudyScheduler and its studies, away from the API.

Study orchestration (search, model fits, Optuna, Ray's driver) used to share the API's process
and event loop: 4 running studies took GET /v1/studies/{id} from p99 206 ms to 525 ms. Here it
has a process of its own, at a lower CPU priority (``TTC_ORCHESTRATOR_NICE``), at which the local
Ray it starts runs its probes, so API reads win the CPU whenever both want it. The DB leases
already make any number of orchestrators and API workers safe side by side.

It stops, leaving its studies resumable and their leases released, on SIGTERM/SIGINT or when
the ``ttc serve`` process that started it goes away (its parent pid changes).
"""

from __future__ import annotations

import logging
import os
import signal
import threading

from service.db import Database
from service.db.optuna_mirror import dispose_optuna_storages
from service.runners.scheduler import StudyScheduler
from service.settings import Settings, get_settings
from worker.ray_backend.connect import ensure_ray

log = logging.getLogger(__name__)

PARENT_CHECK_SECONDS = 1.0


def run(settings: Settings, parent_pid: int | None = None) -> None:
    """Run studies until asked to stop (or the parent process is gone)."""
    # Ray first, at full priority, its probes niced (started at nice 10 beside two busy jobs, Ray's
    # node timed out during start-up); then this process lowers its own priority.
    ensure_ray(settings.ray_address, worker_niceness=settings.orchestrator_nice)
    if settings.orchestrator_nice:
        os.nice(settings.orchestrator_nice)
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    db = Database(settings.database_url, reconnect=True, retry_seconds=settings.database_retry_seconds)
    db.migrate()
    scheduler = StudyScheduler(db, settings)
    scheduler.start()
    log.info("orchestrator %s running studies (pid %d)", scheduler.owner, os.getpid())
    try:
        while not stop.wait(PARENT_CHECK_SECONDS):
            if parent_pid is not None and os.getppid() != parent_pid:
                log.warning("the ttc serve process %d is gone; stopping", parent_pid)
                break
    finally:
        scheduler.shutdown()
        db.dispose()
        dispose_optuna_storages()


def main() -> None:
    # Timestamped: an operator reading a study's log needs to know when each step happened.
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    parent = os.environ.get("TTC_ORCHESTRATOR_PARENT")
    run(get_settings(), int(parent) if parent else None)


if __name__ == "__main__":
    main()
