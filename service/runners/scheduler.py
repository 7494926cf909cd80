"""StudyScheduler: runs studies in threads of the service process, up to a limit, under leases.

One loop thread claims unfinished studies (pending, or running when their lease expired: a
crashed service) and renews the leases of the studies it runs (the heartbeat). Each claimed
study runs in its own thread through ``StudyRunner``, whose probes leave the process only as Ray
tasks. A study with a training attached (``ttc train``) runs through ``TrainingRunner`` instead:
its tune, then its run; a study whose training is unfinished is claimed like an unfinished study,
so a killed service resumes the run from its last checkpoint. Losing a lease (another service took
the study after our heartbeat stalled) stops the study here without touching its state, so exactly
one holder drives it.

A study whose database goes away past what its runner can hold (service.db.outage) is paused, never
failed: its thread ends with the lease still ours, and once the database answers again the loop
claims it like any unfinished study and it resumes from its committed probes.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import uuid

from sqlalchemy.exc import IntegrityError, OperationalError

from predictor import TargetUnreachable
from service.db import ACTIVE_STATES, TRAINING_TERMINAL_STATES, Database, study_store
from service.metrics import Metrics
from service.runners.study_runner import StudyCancelled, StudyRunner
from service.runners.training_runner import TrainingFailed, TrainingRunner
from service.settings import Settings
from worker.ray_backend.connect import ensure_ray

log = logging.getLogger(__name__)


class StudyScheduler:
    def __init__(self, db: Database, settings: Settings, metrics: Metrics | None = None) -> None:
        self.db = db
        self.settings = settings
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.runner = StudyRunner(db, settings.ray_address,
                                  on_probe=metrics.observe_probe if metrics else None)
        self.trainer = TrainingRunner(db, settings.ray_address, self.runner)
        self._running: dict[str, threading.Event] = {}
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._loop: threading.Thread | None = None
        self._ray_ready = False

    def start(self) -> None:
        self._loop = threading.Thread(target=self._run_loop, name="ttc-scheduler", daemon=True)
        self._loop.start()

    def wake(self) -> None:
        """Look for work now (a study was just submitted) instead of at the next poll."""
        self._wake.set()

    def running(self) -> list[str]:
        with self._lock:
            return list(self._running)

    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop claiming, stop the running studies (they stay resumable) and free their leases."""
        self._closing.set()
        self._wake.set()
        with self._lock:
            for stop in self._running.values():
                stop.set()
            threads = list(self._threads.values())
        for thread in threads:
            thread.join(timeout)
        if self._loop is not None:
            self._loop.join(timeout)

    # -- the loop ----------------------------------------------------------------------------------
    def _run_loop(self) -> None:
        period = min(self.settings.poll_seconds, self.settings.lease_seconds / 3)
        while not self._closing.is_set():
            try:
                self._heartbeat()
                self._claim()
            except Exception as exc:  # a database hiccup must not end the scheduler
                if self.db.is_outage(exc):
                    log.warning("scheduler: the database is away; trying again in %gs", period)
                else:
                    log.exception("scheduler tick failed")
            self._wake.wait(period)
            self._wake.clear()

    def _heartbeat(self) -> None:
        """Renew our leases, and stop the studies a client cancelled (their probes with them)."""
        running = self._snapshot()
        for study_id, stop in running.items():
            with self.db.transaction() as session:
                kept = study_store.renew_lease(session, study_id=study_id, owner=self.owner,
                                               seconds=self.settings.lease_seconds)
            if not kept and study_id in self._snapshot():  # not merely a study that just finished
                log.warning("lost the lease of study %s; stopping it here", study_id)
                stop.set()
        with self.db.read() as session:
            cancelled = study_store.cancel_requested_among(session, study_ids=list(running))
        for study_id in cancelled:
            log.info("study %s: cancel requested; stopping its probes", study_id)
            running[study_id].set()

    def _claim(self) -> None:
        with self.db.read() as session:
            candidates = study_store.unfinished_study_ids(session)
            candidates += [s for s in study_store.unfinished_training_ids(session) if s not in candidates]
        for study_id in candidates:
            if self._closing.is_set() or len(self._snapshot()) >= self.settings.max_concurrent_studies:
                return
            if study_id in self._snapshot() or not self._acquire(study_id):
                continue
            self._ensure_ray()
            stop = threading.Event()
            thread = threading.Thread(target=self._work, args=(study_id, stop), name=f"study-{study_id}",
                                      daemon=True)
            with self._lock:
                self._running[study_id] = stop
                self._threads[study_id] = thread
            thread.start()

    def _acquire(self, study_id: str) -> bool:
        """Take the lease of a study that is still unfinished once the lease is ours.

        ``_claim`` lists unfinished studies before taking leases; a study may finish in between,
        and its runner releases the lease only after committing the end state. Checking the
        state after the lease is taken, in the same transaction, keeps it from being run twice.
        """
        try:
            with self.db.transaction() as session:
                if not study_store.acquire_lease(session, study_id=study_id, owner=self.owner,
                                                 seconds=self.settings.lease_seconds):
                    return False
                study = study_store.get_study(session, study_id=study_id)
                if study is not None and study.state in ACTIVE_STATES:
                    return True
                training = study_store.get_training(session, study_id=study_id)
                if training is not None and training.state not in TRAINING_TERMINAL_STATES:
                    return True
                study_store.release_lease(session, study_id=study_id, owner=self.owner)
                return False
        except (IntegrityError, OperationalError):  # another service inserted the lease first
            return False

    def _ensure_ray(self) -> None:
        """Connect once, from this thread, before any study needs Ray (ray.init is not re-entrant)."""
        if not self._ray_ready:
            ensure_ray(self.settings.ray_address)
            self._ray_ready = True

    def _snapshot(self) -> dict[str, threading.Event]:
        with self._lock:
            return dict(self._running)

    # -- one study ---------------------------------------------------------------------------------
    def _work(self, study_id: str, stop: threading.Event) -> None:
        training = False
        try:
            with self.db.read() as session:
                training = study_store.get_training(session, study_id=study_id) is not None
            if training:
                result = self.trainer.run(study_id, stop)
                log.info("training of study %s ended: reached %s in %d iterations", study_id,
                         result.reached, result.iterations)
            else:
                plan = self.runner.run(study_id, stop)
                log.info("study %s done: %s", study_id, plan.config.key())
        except TargetUnreachable as exc:
            log.info("study %s: %s", study_id, exc)
        except (StudyCancelled, TrainingFailed) as exc:
            log.info("study %s: %s", study_id, exc)
        except Exception as exc:
            if self.db.is_outage(exc):
                log.warning("study %s paused: the database is away (%s); it resumes once it is back",
                            study_id, type(exc).__name__)
                return
            log.exception("study %s failed", study_id)
            if not stop.is_set():
                if training:
                    self.trainer.fail(study_id, "failed", f"{type(exc).__name__}: {exc}")
                else:
                    self.runner.fail(study_id, f"{type(exc).__name__}: {exc}")
        finally:
            with self._lock:
                self._running.pop(study_id, None)
                self._threads.pop(study_id, None)
            try:
                with self.db.transaction() as session:
                    study_store.release_lease(session, study_id=study_id, owner=self.owner)
            except Exception:
                log.exception("could not release the lease of study %s", study_id)
            self._wake.set()
