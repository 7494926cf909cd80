"""Optuna's view of a finished study, made to agree with ttc's plan (issue 14 §4).

During the search each trial is told the risk-aware score its config had *then*; the plan is chosen
later, on every config's final score, with the 5% margin a change from the baseline needs
(predictor.search). So when the plan is made the Optuna study is rewritten once: every trial keeps
its params, curve (intermediate values) and attributes, and takes the value the plan was chosen on
(predictor.ranking.decision_values). Optuna's ``best_trial`` — and optuna-dashboard's "Best Trial" —
is then the plan's latest probe, and the plan itself is in the study's user attributes.

A trial the plan's choice gave no value (diverged, failed, no prediction of reaching the target, or
a probe from scratch before the warm-up, not comparable with the forks) is left without one: Optuna
records it as PRUNED, its reason in the ``ttc_reason`` user attribute. A plan without a risk-aware
score (no prediction at all, or an interval open above) is valued below every other trial: at
predictor.ranking.UNBOUNDED, or just under the least value given, whichever is lower.

Finished trials cannot be re-told in Optuna, so the study is deleted and re-created under the same
name from the rewritten trials (public API only; works on RDB and in-memory storages alike).

The Optuna storage of the service's own database (one per process) and the name of a ttc study's
Optuna study are here too: the study runner writes through them, the dashboard reads.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from predictor.ranking import TIE, UNBOUNDED, decision_values
from predictor.types import Plan, json_safe
from service.db.reconnect import RECONNECT_SECONDS, wait_for_server
from service.db.session import POOL, is_sqlite, sqlite_engine_kwargs, use_sqlite_begin

if TYPE_CHECKING:
    from predictor.search import ColdStartSearch

PLAN_ATTR = "ttc_plan"  # study user attribute: the plan's JSON (Plan.to_dict)
EARLIER_EPOCH = ("measured from scratch before the warm-up: not comparable with the forks the plan "
                 "was chosen among")


def plan_config_key(search: ColdStartSearch, plan: Plan) -> str | None:
    """The config key the plan was chosen as (the plan's own config may carry a run length)."""
    rows = [r["config_key"] for r in plan.ranking if r.get("status") == "plan"]
    if rows:
        return rows[0]
    last = plan.evidence[-1] if plan.evidence else None
    return next((p.config.key() for p in search.study.probes if p.probe_key == last), None)


def agreeing_values(search: ColdStartSearch, plan: Plan) -> dict[str, float | None]:
    """Probe key → the trial's value: the plan's decision value; for a plan given none, a value
    below every other (it is still the plan)."""
    values = decision_values(search.study, plan_config_key(search, plan))
    if plan.evidence and values.get(plan.evidence[-1]) is None:
        least = min((v for v in values.values() if v is not None), default=UNBOUNDED)
        values[plan.evidence[-1]] = min(least / (1 + TIE), UNBOUNDED)
    return values


def _reasons(plan: Plan) -> dict[str, dict[str, Any]]:
    """Probe key → its config's ranking row (status, reason, rank)."""
    rows = {}
    for rank, row in enumerate(plan.ranking):
        for key in row.get("probe_keys", []):
            rows[key] = {"ttc_status": row["status"], "ttc_reason": row["reason"], "ttc_rank": rank}
    return rows


def _rewritten(trial: FrozenTrial, values: dict[str, float | None], rows: dict[str, dict[str, Any]]
               ) -> FrozenTrial:
    key = trial.user_attrs.get("probe_key")
    value = values.get(key) if key is not None else None
    attrs = dict(trial.user_attrs)
    if key in rows:
        attrs |= rows[key]
    if value is not None:
        state = TrialState.COMPLETE
    elif trial.state is TrialState.FAIL:
        state = TrialState.FAIL
    else:
        state = TrialState.PRUNED
        if key not in rows:
            attrs["ttc_status"] = "earlier epoch"
            attrs["ttc_reason"] = attrs.get("prune_reason") or (
                "never finished" if not trial.state.is_finished() else EARLIER_EPOCH)
    return FrozenTrial(
        number=trial.number, state=state, value=value, datetime_start=trial.datetime_start,
        datetime_complete=trial.datetime_complete or trial.datetime_start,
        params=trial.params, distributions=trial.distributions, user_attrs=attrs,
        system_attrs=trial.system_attrs, intermediate_values=trial.intermediate_values, trial_id=trial.number,
    )


def agree(search: ColdStartSearch, plan: Plan, storage: str | optuna.storages.BaseStorage,
          study_name: str) -> optuna.Study:
    """Rewrite ``study_name`` in ``storage`` (the search's study) so Optuna's best trial is the plan.

    Returns the re-created study; ``search.optuna_study`` is pointed at it.
    """
    trials = search.optuna_study.get_trials(deepcopy=False)
    values, rows = agreeing_values(search, plan), _reasons(plan)
    rewritten = [_rewritten(t, values, rows) for t in trials]
    optuna.delete_study(study_name=study_name, storage=storage)
    study = optuna.create_study(study_name=study_name, storage=storage, direction="minimize")
    study.add_trials(rewritten)
    study.set_user_attr(PLAN_ATTR, json_safe(plan.to_dict()))
    search.optuna_study = study
    return study


_storages: dict[str, optuna.storages.RDBStorage] = {}
_storages_lock = threading.Lock()


def optuna_storage(database_url: str, retry_seconds: float = RECONNECT_SECONDS) -> optuna.storages.RDBStorage:
    """Optuna's RDB storage in the service's own database, one per process (one connection pool).

    On SQLite its writes also ``BEGIN IMMEDIATE`` so concurrent studies queue instead of failing.
    On PostgreSQL a new connection waits up to ``retry_seconds`` for the server (the first caller's).
    """
    with _storages_lock:
        if database_url not in _storages:
            _storages[database_url] = _make_storage(database_url, retry_seconds)
        return _storages[database_url]


def dispose_optuna_storages() -> None:
    """Close the pools of every Optuna storage this process opened (shutdown, tests)."""
    with _storages_lock:
        for storage in _storages.values():
            storage.engine.dispose()
        _storages.clear()


def _make_storage(database_url: str, retry_seconds: float) -> optuna.storages.RDBStorage:
    kwargs = {**POOL, **(sqlite_engine_kwargs() if is_sqlite(database_url) else {"pool_pre_ping": True})}
    storage = optuna.storages.RDBStorage(database_url, engine_kwargs=kwargs)
    if is_sqlite(database_url):
        use_sqlite_begin(storage.engine, "BEGIN IMMEDIATE")
    else:
        wait_for_server(storage.engine, retry_seconds)  # a study outlives a database restart
    return storage


LEGACY_PREFIX = "ttc-"  # Optuna studies were named ``ttc-<id>`` before issue 14


def optuna_study_name(study_id: str) -> str:
    """The Optuna study of a ttc study is named with the bare ttc id (issue 14): users find it with
    ``optuna.load_study(study_name=<ttc id>, storage=<TTC_DATABASE_URL>)``."""
    return study_id


def load_optuna_study(database_url: str, study_id: str) -> optuna.Study:
    """The Optuna study of ``study_id``, also under its legacy ``ttc-<id>`` name; KeyError if none."""
    storage = optuna_storage(database_url)
    for name in (optuna_study_name(study_id), LEGACY_PREFIX + study_id):
        with contextlib.suppress(KeyError):
            return optuna.load_study(study_name=name, storage=storage)
    raise KeyError(f"no Optuna study for ttc study {study_id!r}")
