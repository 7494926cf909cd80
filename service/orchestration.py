"""StudyRunner: the loop of DESIGN.md §2 — ask, probe on Ray, commit, tell, plan.

Every probe result is committed the moment it arrives. A study that is run again (after a crash)
replays its committed probes into the search instead of re-running them.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import optuna

from predictor import ColdStartSearch, Plan, ProbeResult, TargetUnreachable
from service import crud
from service.db import Database
from worker.launcher import ProbeLauncher
from worker.probe import target_value
from worker.spec import Spec, parse_spec

log = logging.getLogger(__name__)


@dataclass
class Progress:
    """What a progress display needs after each probe."""

    study_id: str
    probes_done: int
    max_probes: int
    best_ttc: float
    elapsed: float
    last: ProbeResult | None = None


def optuna_storage(database_url: str) -> optuna.storages.BaseStorage:
    """Optuna's RDB storage in the service's own database, so optuna-dashboard sees every study."""
    return optuna.storages.RDBStorage(database_url, engine_kwargs={"pool_pre_ping": True})


class StudyRunner:
    def __init__(
        self,
        db: Database,
        ray_address: str | None = None,
        on_progress: Callable[[Progress], None] | None = None,
    ) -> None:
        self.db = db
        self.ray_address = ray_address
        self.on_progress = on_progress

    def submit(self, spec: Spec) -> str:
        with self.db.transaction() as session:
            return crud.create_study(session, spec=spec.model_dump(mode="json")).id

    def run(self, study_id: str) -> Plan:
        """Run (or resume) a study to its plan; raises TargetUnreachable when there is none."""
        with self.db.transaction() as session:
            study = crud.get_study(session, study_id=study_id)
            if study is None:
                raise KeyError(f"no study {study_id!r}")
            spec = parse_spec(study.spec)
            replay = {r.config.key(): r for r in crud.finished_probes(session, study_id=study_id)}
            crud.set_state(session, study_id=study_id, state="running")
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        search = ColdStartSearch(
            spec.search_space(),
            spec.budget_limits(),
            target_value(spec),
            study=optuna.create_study(
                study_name=f"ttc-{study_id}",
                storage=optuna_storage(self.db.url),
                direction="minimize",
                load_if_exists=True,
            ),
        )
        launcher = ProbeLauncher(spec, self.ray_address)
        launcher.start()
        started = time.monotonic()
        budget = spec.budget
        while configs := search.ask():
            fresh = []
            for config in configs:
                if config.key() in replay:
                    search.tell(replay[config.key()])
                else:
                    fresh.append(config)
            if fresh:
                self._probe(study_id, search, launcher, fresh, started, budget.probe_seconds,
                            budget.probe_max_iterations)
            if time.monotonic() - started > budget.deadline_seconds:
                log.warning("study %s hit its deadline of %ss", study_id, budget.deadline_seconds)
                search.stop()
        try:
            plan = search.plan(study_id)
        except TargetUnreachable as exc:
            with self.db.transaction() as session:
                crud.set_state(session, study_id=study_id, state="unreachable", error=str(exc))
            raise
        with self.db.transaction() as session:
            crud.set_plan(session, study_id=study_id, plan=plan)
        return plan

    def _probe(self, study_id, search, launcher, configs, started, max_seconds, max_iterations) -> None:  # type: ignore[no-untyped-def]
        probe_ids = {}
        with self.db.transaction() as session:
            for config in configs:
                probe_ids[config.key()] = crud.start_probe(session, study_id=study_id, config=config).id
        for result in launcher.run(configs, max_seconds, max_iterations):
            search.tell(result)
            prediction = search.predictions.get(result.config.key())
            with self.db.transaction() as session:
                crud.finish_probe(
                    session,
                    probe_id=probe_ids[result.config.key()],
                    result=result,
                    predicted_ttc=prediction.ttc_seconds if prediction else None,
                )
            if self.on_progress is not None:
                best = min((p.ttc_seconds for p in search.predictions.values()), default=math.inf)
                self.on_progress(Progress(study_id, len(search.results), search.budget.max_probes,
                                          best, time.monotonic() - started, result))
