"""TrainingRunner: ``ttc train`` in the service (issue 13) — the study's tune, then the run.

A training is the study's tune, exactly as ``ttc tune`` runs it (``StudyRunner``), then the
``TrainingPlanner`` loop from the plan's lineage: the run continues the study's best state in
checkpoint segments and forks a few neighbours at re-plan points. Every segment (run segment or
fork) is committed with its end state the moment it arrives, together with the Training result so
far (its phases) and the timeline, so a service killed mid-run loses at most the segment in flight.

Resuming is a replay, as for a study: the search is rebuilt from the study's committed probes
(``replay_search``), and the planner is told the committed segments in place of running them; the
first request never committed continues from the last committed checkpoint, read back from the
database (``DatabaseStates``). The planner is deterministic given what it is told, so the replay
asks for the same segments in the same order and nothing before the last checkpoint runs again.
A database outage of any length holds a finished segment in memory until it commits; one that
ends this run elsewhere is a pause the scheduler resumes (service.db.outage), never a failure.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable

from sqlalchemy.orm import Session

from predictor import ColdStartSearch, ProbeRequest, ProbeResult, TargetUnreachable
from predictor.lineages import merge
from predictor.training import TrainingPlanner, TrainingResult, same_segment
from service.db import ACTIVE_STATES, Database, measurement_store, study_store
from service.db.priors import finished_runs
from service.runners import held_lease
from service.runners.checkpoints import DatabaseStates, dump_state
from service.runners.study_runner import StudyCancelled, StudyRunner, replay_search, tell_replayed
from service.runners.training_timeline import timeline
from worker.launcher import ProbeLauncher
from worker.spec import Spec, parse_spec

log = logging.getLogger(__name__)

DEFAULT_MAX_ITERATIONS = 100_000  # the run gives up here without reaching the target


class TrainingFailed(RuntimeError):
    """A run segment failed on the cluster; the training can be started again (it resumes)."""


class TrainingRunner:
    def __init__(
        self,
        db: Database,
        ray_address: str | None = None,
        studies: StudyRunner | None = None,
        on_segment: Callable[[ProbeResult, str, TrainingPlanner], None] | None = None,
    ) -> None:
        self.db = db
        self.ray_address = ray_address
        self.studies = studies or StudyRunner(db, ray_address)
        self.on_segment = on_segment

    def submit(self, spec: Spec, max_iterations: int = DEFAULT_MAX_ITERATIONS,
               max_overhead: float | None = None, owner: str | None = None,
               lease_seconds: float = 30.0) -> str:
        """A new study with its training attached (``ttc train``); ``owner`` takes its lease in
        the same transaction (a local run: held_lease)."""
        with self.db.transaction() as session:
            study_id = study_store.create_study(session, spec=spec.model_dump(mode="json")).id
            study_store.create_training(session, study_id=study_id, max_iterations=max_iterations,
                                        max_overhead=max_overhead)
            if owner is not None:
                held_lease.take(session, study_id, owner, lease_seconds)
            return study_id

    def run(self, study_id: str, stop: threading.Event | None = None) -> TrainingResult:
        """Run (or resume) the study's training to its end.

        Raises TargetUnreachable when the study finds no plan, StudyCancelled when the study was
        cancelled or ``stop`` is set (the training then stays resumable), TrainingFailed when a
        run segment failed on the cluster.
        """
        stop = stop or threading.Event()
        with self.db.transaction() as session:
            training = study_store.get_training(session, study_id=study_id)
            study = study_store.get_study(session, study_id=study_id)
            if training is None or study is None:
                raise KeyError(f"study {study_id!r} has no training")
            spec, study_state = parse_spec(study.spec), study.state
            cancelled = study.cancel_requested and study_state not in ACTIVE_STATES  # while nobody ran it
            max_iterations, max_overhead = training.max_iterations, training.max_overhead
            replay = measurement_store.training_segments(session, study_id=study_id)
            if training.state == "running":
                study_store.add_event(session, study_id=study_id, kind="training_resumed",
                                      data={"replayed": len(replay)})
            study_store.set_training_state(session, study_id=study_id, state="running")
        if cancelled:
            self._cancel(study_id)
        search, launcher, predicted = self._study(study_id, spec, study_state, stop)
        tuned_now = launcher is not None  # else the study was done before: its search is rebuilt
        launcher = launcher or ProbeLauncher(spec, self.ray_address,
                                             state_source=DatabaseStates(self.db, study_id))
        try:
            return self._train(study_id, search, launcher, tuned_now, predicted, replay, max_iterations,
                               max_overhead, stop)
        finally:
            launcher.close()

    def _train(
        self, study_id: str, search: ColdStartSearch, launcher: ProbeLauncher, started: bool,
        predicted: float | None, replay: dict[str, ProbeResult], max_iterations: int,
        max_overhead: float | None, stop: threading.Event,
    ) -> TrainingResult:
        """The run from the study's plan to its end (``run`` once the study is done). ``started``:
        the launcher tuned the study; a fresh one connects with the first segment to run."""
        planner = TrainingPlanner(search.study, max_iterations=max_iterations)
        if not started and not replay and planner.run and not planner.done:
            self._check_start_state(study_id, planner.run[-1].probe_key)
        if max_overhead is not None:
            planner.budget = dataclasses.replace(planner.budget, max_overhead=max_overhead)
        while requests := planner.ask():
            fresh = tell_replayed(requests, _with_longer_committed(requests, replay), planner.tell)
            if fresh:
                if not started:
                    launcher.start()
                    started = True
                self._segments(study_id, planner, launcher, fresh, requests, predicted, stop)
            if stop.is_set():
                if self._cancel_requested(study_id):  # the scheduler sets ``stop`` for a cancel too
                    self._cancel(study_id)
                raise StudyCancelled(f"training of study {study_id} stopped; it will resume")
        result = planner.result()
        progress = self._progress(planner, predicted)
        keep = {planner.run[-1].probe_key} if planner.run else set()

        def finish(session: Session) -> None:
            study_store.set_training_progress(session, study_id=study_id, result=progress[0],
                                              timeline=progress[1])
            state = "done" if result.reached else "unreachable"
            study_store.set_training_state(session, study_id=study_id, state=state,
                                           error=None if result.reached else _why_not(planner))
            # the final checkpoint stays
            measurement_store.prune_states(session, study_id=study_id, keep=keep)

        self.db.write_outlasting(finish, stop)
        return result

    def fail(self, study_id: str, state: str, error: str) -> None:
        """End the training (and its study, when the study had not finished: a server would
        otherwise claim the unfinished study and run it) with ``state``."""
        def end(session: Session) -> None:
            study = study_store.get_study(session, study_id=study_id)
            if study is not None and study.state in ACTIVE_STATES and state in ("failed", "cancelled"):
                measurement_store.cancel_unfinished_probes(session, study_id=study_id)
                study_store.set_state(session, study_id=study_id, state=state, error=error)
            study_store.set_training_state(session, study_id=study_id, state=state, error=error)

        self.db.write(end)

    # -- the study -------------------------------------------------------------------------------------
    def _study(
        self, study_id: str, spec: Spec, state: str, stop: threading.Event
    ) -> tuple[ColdStartSearch, ProbeLauncher | None, float | None]:
        """The study's finished search (tuned now, or rebuilt from its committed probes), the
        launcher that tuned it (``None`` when rebuilt) and the plan's predicted TTC."""
        if state in ACTIVE_STATES:
            try:
                search, plan, launcher = self.studies.run_search(study_id, stop)
            except TargetUnreachable as exc:
                self.fail(study_id, "unreachable", f"the study found no plan: {exc}")
                raise
            except StudyCancelled:
                if self._study_state(study_id) == "cancelled":
                    self.fail(study_id, "cancelled", "the study was cancelled")
                raise
            return search, launcher, plan.predicted.ttc_seconds
        if state != "done":
            self.fail(study_id, "cancelled" if state == "cancelled" else "failed", f"the study is {state}")
            raise StudyCancelled(f"study {study_id} is {state}; nothing to train")
        with self.db.read() as session:
            replay = measurement_store.finished_probes(session, study_id=study_id)
            study = study_store.get_study(session, study_id=study_id)
            plan = study.plan or {}
            priors = finished_runs(session, study.spec, exclude=study_id)
        search = replay_search(spec, replay, priors)
        return search, None, (plan.get("predicted") or {}).get("ttc_seconds")

    def _check_start_state(self, study_id: str, key: str) -> None:
        """The run continues the plan's lineage tip, never from scratch: a study tuned before its
        probes' states were kept (or whose states were deleted) cannot be trained."""
        with self.db.read() as session:
            found = key in measurement_store.state_keys(session, study_id=study_id)
        if not found:
            error = (f"the end state of the plan's probe {key} was not kept (the study was tuned before "
                     "ttc kept probe states); train the spec afresh: POST /v1/studies then "
                     "/v1/studies/{id}/train, or ttc train SPEC")
            self.fail(study_id, "failed", error)
            raise TrainingFailed(error)

    def _cancel_requested(self, study_id: str) -> bool:
        def read() -> bool:
            with self.db.read() as session:
                return study_store.cancel_requested(session, study_id=study_id)

        return self.db.reconnecting(read)

    def _cancel(self, study_id: str) -> None:
        self.fail(study_id, "cancelled", "cancelled on request")
        raise StudyCancelled(f"training of study {study_id} was cancelled")

    def _study_state(self, study_id: str) -> str | None:
        with self.db.read() as session:
            study = study_store.get_study(session, study_id=study_id)
            return study.state if study else None

    # -- the run -----------------------------------------------------------------------------------------
    def _segments(
        self, study_id: str, planner: TrainingPlanner, launcher: ProbeLauncher, requests: list[ProbeRequest],
        batch: list[ProbeRequest], predicted: float | None, stop: threading.Event,
    ) -> None:
        """Run ``requests`` (the part of the planner's ``batch`` not yet committed); commit each
        result, its end state and the progress as it arrives."""
        by_key = {r.key: r for r in requests}
        # the states a later request may start from: the run's tip, the batch's parent, and every
        # result of the batch (a re-plan may switch to any fork of it, replayed ones included)
        needed = {r.key for r in batch} | {r.parent for r in batch if r.parent}
        for result in launcher.run(requests, stop, cancel_running=False):  # each ends within a checkpoint
            request = by_key[result.probe_key]
            role = "fork" if request.forks else "run"
            if result.error and role == "run":
                self.fail(study_id, "failed", f"run segment {request.key} failed: {result.error}")
                raise TrainingFailed(result.error)
            planner.tell(result)
            state = None if result.error else dump_state(launcher.state(result.probe_key))
            keep = needed | {planner.run[-1].probe_key}
            result_json, timeline_json = self._progress(planner, predicted)

            def commit(session: Session, request: ProbeRequest = request, result: ProbeResult = result,
                       role: str = role, state: bytes | None = state, keep: set[str] = keep,
                       result_json: dict = result_json, timeline_json: dict = timeline_json) -> None:
                measurement_store.record_training_segment(session, study_id=study_id, request=request,
                                                          result=result, role=role)
                if state is not None:
                    measurement_store.put_state(session, study_id=study_id, key=result.probe_key, data=state)
                study_store.set_training_progress(session, study_id=study_id, result=result_json,
                                                  timeline=timeline_json)
                measurement_store.prune_states(session, study_id=study_id, keep=keep)

            self.db.write_outlasting(commit, stop)  # a database outage holds the segment in memory
            if self.on_segment is not None:
                self.on_segment(result, role, planner)
            # once ``stop`` is set, the launcher ends and leaves the segments still running to finish

    @staticmethod
    def _progress(planner: TrainingPlanner, predicted: float | None) -> tuple[dict, dict]:
        return planner.result().to_dict(), timeline(planner, predicted)


def _with_longer_committed(requests: list[ProbeRequest], replay: dict[str, ProbeResult]
                           ) -> dict[str, ProbeResult]:
    """``replay`` plus, for a run segment asked under a lower ``max_iterations`` than the one it was
    committed under, the committed segment in its place: it already ran, and its parent's state
    may be gone."""
    extra = {}
    for request in requests:
        if request.key not in replay and not request.forks:
            committed = next((r for r in replay.values() if same_segment([request], r) is not None), None)
            if committed is not None:
                extra[request.key] = committed
    return {**replay, **extra}


def _why_not(planner: TrainingPlanner) -> str:
    view = merge(planner.run)
    if view.diverged:
        return f"the run diverged at iteration {view.end_iteration}"
    if view.error:
        return f"the run failed: {view.error}"
    return f"the target was not reached within {planner.max_iterations} iterations"
