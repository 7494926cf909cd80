"""StudyRunner: the loop of DESIGN.md §2 — ask, probe on Ray, commit, tell, plan.

Every probe result is committed the moment it arrives. A study that is run again (after a crash)
replays its committed probes into the search instead of re-running them; probes that were in
flight are asked again by the search and retried in their own rows.

Each probe's end state (its checkpoint) is committed with its result, so a resumed study continues
or forks from it instead of losing the lineage; once the plan stands, only the state ``ttc train``
continues from (the plan's lineage tip) is kept.

The database may go away mid-study for any length of time (service.db.outage): probe rows and
results are held in memory and committed when it is back; a call into Optuna's storage that
fails for it ends this run with the outage's error, which the scheduler takes as a pause (the
study resumes from its committed probes, re-running the uncommitted ones under their own keys).

Optuna's study is a mirror of the committed probes, never the source of truth: when a study
resumes, its Optuna study is rebuilt from scratch by the replay, so it holds exactly one trial
per probe told (no duplicates of replayed probes, no trials left RUNNING by the crash). It is
named with the bare ttc id, and once the plan is made it is rewritten to agree with it
(service.db.optuna_mirror): each trial's value is the score the plan was chosen on, so Optuna's best
trial is the plan, and the plan's JSON is its ``ttc_plan`` user attribute.
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import optuna
from sqlalchemy.orm import Session

from predictor import ColdStartSearch, Plan, ProbeRequest, ProbeResult, TargetUnreachable
from predictor.prior_path import FinishedRun
from service.db import Database, measurement_store, study_store
from service.db.optuna_mirror import LEGACY_PREFIX, agree, optuna_storage, optuna_study_name
from service.db.priors import finished_runs
from service.runners import held_lease
from service.runners.checkpoints import DatabaseStates, dump_state
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
    eta: dict[str, Any] | None = None  # ``ttc train``'s ETA read at ``last``, a warm-up segment (Study)


def _fresh_optuna_study(db: Database, study_id: str, resumed: bool) -> optuna.Study:
    storage = optuna_storage(db.url, db.retry_seconds)
    name = optuna_study_name(study_id)
    if resumed:
        for stale in (name, LEGACY_PREFIX + study_id):
            with contextlib.suppress(KeyError):
                optuna.delete_study(study_name=stale, storage=storage)
    return optuna.create_study(study_name=name, storage=storage, direction="minimize", load_if_exists=True)


def tell_replayed(requests: list[ProbeRequest], replay: dict[str, ProbeResult],
                  tell: Callable[[ProbeResult], None]) -> list[ProbeRequest]:
    """Tell the results already committed for ``requests`` (a resume replays, never re-runs);
    return the requests that still have to run."""
    fresh = []
    for request in requests:
        if request.key in replay:
            tell(replay[request.key])
        else:
            fresh.append(request)
    return fresh


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

    def submit(self, spec: Spec, owner: str | None = None, lease_seconds: float = 30.0) -> str:
        """A new study; ``owner`` takes its lease in the same transaction (a local run: held_lease)."""
        with self.db.transaction() as session:
            study_id = study_store.create_study(session, spec=spec.model_dump(mode="json")).id
            if owner is not None:
                held_lease.take(session, study_id, owner, lease_seconds)
            return study_id

    def run(self, study_id: str, stop: threading.Event | None = None) -> Plan:
        """Run (or resume) a study to its plan.

        Raises TargetUnreachable when no probe reaches the target, StudyCancelled when cancelled
        or ``stop`` is set (the study then stays resumable unless it was cancelled).
        """
        _, plan, launcher = self.run_search(study_id, stop)
        launcher.close()
        return plan

    def run_search(
        self, study_id: str, stop: threading.Event | None = None
    ) -> tuple[ColdStartSearch, Plan, ProbeLauncher]:
        """``run``, also giving the finished search and the launcher (which still holds the probes'
        states in Ray's object store, and their device actors): what ``ttc train`` continues
        from, and closes."""
        stop = stop or threading.Event()
        with self.db.transaction() as session:
            study = study_store.get_study(session, study_id=study_id)
            if study is None:
                raise KeyError(f"no study {study_id!r}")
            spec = parse_spec(study.spec)
            priors = finished_runs(session, study.spec, exclude=study_id)
            replay = measurement_store.finished_probes(session, study_id=study_id)
            resumed = study.state == "running"
            cancelled = study.cancel_requested  # while no runner held it (its service had died)
            study_store.set_state(session, study_id=study_id, state="running")
            if resumed:
                study_store.add_event(session, study_id=study_id, kind="resumed",
                                      data={"replayed": len(replay)})
        if cancelled:
            self._finish(study_id, "cancelled", "cancelled on request")
            raise StudyCancelled(f"study {study_id} was cancelled")
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        search = ColdStartSearch(
            spec.search_space(),
            spec.budget_limits(),
            target_value(spec),
            optuna_study=_fresh_optuna_study(self.db, study_id, resumed),
            priors=priors,
        )
        launcher = ProbeLauncher(spec, self.ray_address, state_source=DatabaseStates(self.db, study_id))
        try:
            return self._search(study_id, spec, search, launcher, replay, stop)
        except BaseException:
            launcher.close()
            raise

    def _search(
        self, study_id: str, spec: Spec, search: ColdStartSearch, launcher: ProbeLauncher,
        replay: dict[str, ProbeResult], stop: threading.Event,
    ) -> tuple[ColdStartSearch, Plan, ProbeLauncher]:
        """The probes to the plan, and its record: ``run_search`` once the study is set up."""
        launcher.start()
        started = time.monotonic()
        budget = spec.budget
        while requests := search.ask():
            fresh = tell_replayed(requests, replay, search.tell)
            if replayed := [replay[r.key] for r in requests if r.key in replay]:
                self._record_predicted(study_id, search, replayed, stop)  # a stop may have left them out
            if fresh:
                self._probe(study_id, search, launcher, fresh, started, stop)
            if self._stopping(study_id, stop):
                if self._cancel_requested(study_id):  # the scheduler sets ``stop`` for a cancel too
                    self._finish(study_id, "cancelled", "cancelled on request")
                    raise StudyCancelled(f"study {study_id} was cancelled")
                raise StudyCancelled(f"study {study_id} stopped; it will resume")
            if time.monotonic() - started > budget.deadline_seconds:
                log.warning("study %s hit its deadline of %ss", study_id, budget.deadline_seconds)
                search.stop()
        try:
            plan = search.plan(study_id)
        except TargetUnreachable as exc:
            self._finish(study_id, "unreachable", str(exc))
            raise
        agree(search, plan, optuna_storage(self.db.url, self.db.retry_seconds), optuna_study_name(study_id))
        keep = plan_tip_keys(search)

        def finish(session: Session) -> None:
            study_store.set_plan(session, study_id=study_id, plan=plan)
            measurement_store.prune_states(session, study_id=study_id, keep=keep)

        self.db.write_outlasting(finish, stop)
        return search, plan, launcher

    def fail(self, study_id: str, error: str) -> None:
        """Record an internal error that ended the study."""
        self._finish(study_id, "failed", error)

    def cancel(self, study_id: str, reason: str) -> None:
        """End a study its own process stopped (a local run interrupted): not left to a server."""
        self._finish(study_id, "cancelled", reason)

    def _finish(self, study_id: str, state: str, error: str) -> None:
        """End the study; probes it left in flight (cancelled on Ray) end with it, as ``cancelled``."""
        def finish(session: Session) -> None:
            measurement_store.cancel_unfinished_probes(session, study_id=study_id)
            study_store.set_state(session, study_id=study_id, state=state, error=error)

        self.db.write_outlasting(finish)

    def _cancel_requested(self, study_id: str, stop: threading.Event | None = None) -> bool:
        def read() -> bool:
            with self.db.read() as session:
                return study_store.cancel_requested(session, study_id=study_id)

        return self.db.outlasting(read, stop)

    def _stopping(self, study_id: str, stop: threading.Event) -> bool:
        return stop.is_set() or self._cancel_requested(study_id, stop)

    def _probe(
        self, study_id: str, search: ColdStartSearch, launcher: ProbeLauncher, requests: list[ProbeRequest],
        started: float, stop: threading.Event,
    ) -> None:
        def start(session: Session) -> dict[str, int]:
            return {q.key: measurement_store.start_probe(session, study_id=study_id, config=q.config,
                                                         key=q.key).id
                    for q in requests}

        probe_ids = self.db.write_outlasting(start, stop)
        if stop.is_set():
            return  # the rows stay unfinished: retried on resume, or cancelled with the study
        try:
            self._collect(study_id, search, launcher, requests, probe_ids, started, stop)
        except BaseException:
            launcher.cancel()  # this run is over (an outage in Optuna's storage, say): free the cluster
            raise

    def _collect(
        self, study_id: str, search: ColdStartSearch, launcher: ProbeLauncher, requests: list[ProbeRequest],
        probe_ids: dict[str, int], started: float, stop: threading.Event,
    ) -> None:
        """Commit each result as it arrives; tell the search the batch once all of it has run.

        Telling refits the models. Where the study's process shares the machine with the device
        actors (a local Ray), a refit during the batch's other probes takes a core from them and
        their measured steps read slow. The batch was asked at once, so telling it whole changes
        no request; a crash between the two writes leaves committed results, replayed on resume.
        """
        arrived: list[ProbeResult] = []
        for result in launcher.run(requests, stop):
            state = None if result.error else dump_state(launcher.state(result.probe_key))

            def finish(session: Session, result: ProbeResult = result, state: bytes | None = state) -> None:
                measurement_store.finish_probe(session, probe_id=probe_ids[result.probe_key], result=result,
                                               predicted_ttc=None)
                if state is not None:
                    measurement_store.put_state(session, study_id=study_id, key=result.probe_key, data=state)

            self.db.write_outlasting(finish, stop)
            arrived.append(result)
            if self.on_probe is not None:
                self.on_probe(result)
            self._progress(study_id, search, len(arrived), started, result)
            if self._stopping(study_id, stop):
                return  # the study stops with its search; what ran is committed and replayed on resume
        for result in arrived:
            search.tell(result)
        if arrived:
            self._record_predicted(study_id, search, arrived, stop)
            self._progress(study_id, search, 0, started, arrived[-1])

    def _record_predicted(self, study_id: str, search: ColdStartSearch, told: list[ProbeResult],
                          stop: threading.Event) -> None:
        """The search's predicted TTC of each told result's config, on its probe row."""
        predicted = {}
        for result in told:
            prediction = search.study.predictions.get(result.config.key())
            predicted[result.probe_key] = prediction.ttc_seconds if prediction else None

        def record(session: Session) -> None:
            measurement_store.set_predicted(session, study_id=study_id, predicted=predicted)

        self.db.write_outlasting(record, stop)

    def _progress(self, study_id: str, search: ColdStartSearch, untold: int, started: float,
                  last: ProbeResult) -> None:
        """``untold``: results committed that the search has not been told yet."""
        if self.on_progress is None:
            return
        best = min((p.ttc_seconds for p in search.study.predictions.values()), default=math.inf)
        eta = None if untold else search.study.warmup_eta.get(last.probe_key)
        self.on_progress(Progress(study_id, len(search.study.probes) + untold, search.budget.max_probes,
                                  best, time.monotonic() - started, last, eta))


def plan_tip_keys(search: ColdStartSearch) -> set[str]:
    """The probe ``ttc train`` continues from: the tip of the plan's lineage (empty without one)."""
    from predictor.training import TrainingPlanner

    try:
        planner = TrainingPlanner(search.study)
    except TargetUnreachable:
        return set()
    return {planner.run[-1].probe_key} if planner.run else set()


def replay_search(spec: Spec, replay: dict[str, ProbeResult],
                  priors: tuple[FinishedRun, ...] = ()) -> ColdStartSearch:
    """A finished study's search rebuilt from its committed probes, without running any: asked
    requests are answered from ``replay`` until one was never run (the study stopped there, at
    its deadline or probe budget), and Optuna's mirror stays in memory (the stored one is kept)."""
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    search = ColdStartSearch(spec.search_space(), spec.budget_limits(), target_value(spec), priors=priors)
    while requests := search.ask():
        missing = [r for r in requests if r.key not in replay]
        for request in requests:
            if request.key in replay:
                search.tell(replay[request.key])
        if missing:
            search.stop()
    return search
