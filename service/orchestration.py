"""StudyRunner: the loop of DESIGN.md §2 — ask, probe on Ray, commit, tell, plan.

Every probe result is committed the moment it arrives. A study that is run again (after a crash)
replays its committed probes into the search instead of re-running them; probes that were in
flight are asked again by the search and retried in their own rows.

Optuna's study is a mirror of the committed probes, never the source of truth: when a study
resumes, its Optuna study is rebuilt from scratch by the replay, so it holds exactly one trial
per probe told (no duplicates of replayed probes, no trials left RUNNING by the crash).
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import optuna

from predictor import ColdStartSearch, Plan, ProbeRequest, ProbeResult, TargetUnreachable
from predictor.types import by_length
from service import crud
from service.db import Database
from service.db.session import POOL, is_sqlite, sqlite_engine_kwargs, use_sqlite_begin
from worker.launcher import ProbeLauncher
from worker.probe import target_value
from worker.spec import Spec, parse_spec

log = logging.getLogger(__name__)


class StudyCancelled(RuntimeError):
    """The study was cancelled (or its lease lost) before it produced a plan."""


@dataclass
class Progress:
    """What a progress display needs after each probe."""

    study_id: str
    probes_done: int
    max_probes: int
    best_ttc: float
    elapsed: float
    last: ProbeResult | None = None


_storages: dict[str, optuna.storages.RDBStorage] = {}
_storages_lock = threading.Lock()


def optuna_storage(database_url: str) -> optuna.storages.RDBStorage:
    """Optuna's RDB storage in the service's own database, one per process (one connection pool).

    On SQLite its writes also ``BEGIN IMMEDIATE`` so concurrent studies queue instead of failing.
    """
    with _storages_lock:
        if database_url not in _storages:
            _storages[database_url] = _make_storage(database_url)
        return _storages[database_url]


def dispose_optuna_storages() -> None:
    """Close the pools of every Optuna storage this process opened (shutdown, tests)."""
    with _storages_lock:
        for storage in _storages.values():
            storage.engine.dispose()
        _storages.clear()


def _make_storage(database_url: str) -> optuna.storages.RDBStorage:
    kwargs = {**POOL, **(sqlite_engine_kwargs() if is_sqlite(database_url) else {"pool_pre_ping": True})}
    storage = optuna.storages.RDBStorage(database_url, engine_kwargs=kwargs)
    if is_sqlite(database_url):
        use_sqlite_begin(storage.engine, "BEGIN IMMEDIATE")
    return storage


def optuna_study_name(study_id: str) -> str:
    return f"ttc-{study_id}"


def _fresh_optuna_study(database_url: str, study_id: str, resumed: bool) -> optuna.Study:
    storage = optuna_storage(database_url)
    name = optuna_study_name(study_id)
    if resumed:
        with contextlib.suppress(KeyError):
            optuna.delete_study(study_name=name, storage=storage)
    return optuna.create_study(study_name=name, storage=storage, direction="minimize", load_if_exists=True)


class StudyRunner:
    def __init__(
        self,
        db: Database,
        ray_address: str | None = None,
        on_progress: Callable[[Progress], None] | None = None,
        on_probe: Callable[[ProbeResult], None] | None = None,
    ) -> None:
        self.db = db
        self.ray_address = ray_address
        self.on_progress = on_progress
        self.on_probe = on_probe

    def submit(self, spec: Spec) -> str:
        with self.db.transaction() as session:
            return crud.create_study(session, spec=spec.model_dump(mode="json")).id

    def run(self, study_id: str, stop: threading.Event | None = None) -> Plan:
        """Run (or resume) a study to its plan.

        Raises TargetUnreachable when no probe reaches the target, StudyCancelled when cancelled
        or ``stop`` is set (the study then stays resumable unless it was cancelled).
        """
        stop = stop or threading.Event()
        with self.db.transaction() as session:
            study = crud.get_study(session, study_id=study_id)
            if study is None:
                raise KeyError(f"no study {study_id!r}")
            spec = parse_spec(study.spec)
            replay = crud.finished_probes(session, study_id=study_id)
            resumed = study.state == "running"
            crud.set_state(session, study_id=study_id, state="running")
            if resumed:
                crud.add_event(session, study_id=study_id, kind="resumed", data={"replayed": len(replay)})
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        search = ColdStartSearch(
            spec.search_space(),
            spec.budget_limits(),
            target_value(spec),
            study=_fresh_optuna_study(self.db.url, study_id, resumed),
        )
        launcher = ProbeLauncher(spec, self.ray_address)
        launcher.start()
        started = time.monotonic()
        budget = spec.budget
        while requests := search.ask():
            fresh = []
            for request in requests:
                if request.key in replay:
                    search.tell(replay[request.key])
                else:
                    fresh.append(request)
            if fresh:
                self._probe(study_id, search, launcher, fresh, started, stop)
            if self._stopping(study_id, stop):
                if stop.is_set():
                    raise StudyCancelled(f"study {study_id} stopped; it will resume")
                self._finish(study_id, "cancelled", "cancelled on request")
                raise StudyCancelled(f"study {study_id} was cancelled")
            if time.monotonic() - started > budget.deadline_seconds:
                log.warning("study %s hit its deadline of %ss", study_id, budget.deadline_seconds)
                search.stop()
        try:
            plan = search.plan(study_id)
        except TargetUnreachable as exc:
            self._finish(study_id, "unreachable", str(exc))
            raise
        with self.db.transaction() as session:
            crud.set_plan(session, study_id=study_id, plan=plan)
        return plan

    def fail(self, study_id: str, error: str) -> None:
        """Record an internal error that ended the study."""
        self._finish(study_id, "failed", error)

    def _finish(self, study_id: str, state: str, error: str) -> None:
        with self.db.transaction() as session:
            crud.set_state(session, study_id=study_id, state=state, error=error)

    def _stopping(self, study_id: str, stop: threading.Event) -> bool:
        if stop.is_set():
            return True
        with self.db.read() as session:
            return crud.cancel_requested(session, study_id=study_id)

    def _probe(
        self, study_id: str, search: ColdStartSearch, launcher: ProbeLauncher, requests: list[ProbeRequest],
        started: float, stop: threading.Event,
    ) -> None:
        probe_ids = {}
        with self.db.transaction() as session:
            for request in requests:
                probe_ids[request.config.key()] = crud.start_probe(
                    session, study_id=study_id, config=request.config, key=request.key).id
        for (seconds, iterations), configs in by_length(requests).items():
            for result in launcher.run(configs, seconds, iterations):
                search.tell(result)
                prediction = search.predictions.get(result.config.key())
                with self.db.transaction() as session:
                    crud.finish_probe(
                        session,
                        probe_id=probe_ids[result.config.key()],
                        result=result,
                        predicted_ttc=prediction.ttc_seconds if prediction else None,
                    )
                if self.on_probe is not None:
                    self.on_probe(result)
                if self.on_progress is not None:
                    best = min((p.ttc_seconds for p in search.predictions.values()), default=math.inf)
                    self.on_progress(Progress(study_id, len(search.probes), search.budget.max_probes,
                                              best, time.monotonic() - started, result))
                if self._stopping(study_id, stop):
                    return  # the probes still in flight stay unfinished rows, retried on resume
