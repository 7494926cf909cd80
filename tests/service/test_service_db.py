"""The database layer on SQLite and PostgreSQL: migrations, leases, probe rows, events."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import inspect

from predictor.types import Config, ProbeRequest, ProbeResult
from service.db import Database, measurement_store, study_store
from service.db.migrate import VERSION_TABLE


def test_migrations_create_every_table_and_are_idempotent(db: Database) -> None:
    db.migrate()  # second run: a no-op
    tables = set(inspect(db.engine).get_table_names())
    assert {"ttc_studies", "ttc_probes", "ttc_runs", "ttc_events", "ttc_leases", VERSION_TABLE} <= tables


def test_processes_starting_together_migrate_a_fresh_database_in_turn(database_url: str) -> None:
    """API workers and the orchestrator start at once on one empty database: each migrates, and
    none fails on another's half-created tables (on PostgreSQL two once created the version
    table at the same moment, and a service exited at start-up)."""
    databases = [Database(database_url) for _ in range(4)]
    try:
        with ThreadPoolExecutor(len(databases)) as pool:
            list(pool.map(Database.migrate, databases))
        assert VERSION_TABLE in set(inspect(databases[0].engine).get_table_names())
    finally:
        for database in databases:
            database.dispose()


def test_lease_is_exclusive_until_it_expires(db: Database) -> None:
    with db.transaction() as session:
        study_id = study_store.create_study(session, spec={"workload": {"name": "digits-mlp"}}).id
    with db.transaction() as session:
        assert study_store.acquire_lease(session, study_id=study_id, owner="a", seconds=0.5)
    with db.transaction() as session:
        assert not study_store.acquire_lease(session, study_id=study_id, owner="b", seconds=0.5)
        assert study_store.renew_lease(session, study_id=study_id, owner="a", seconds=0.5)
    time.sleep(0.7)
    with db.transaction() as session:
        assert study_store.acquire_lease(session, study_id=study_id, owner="b", seconds=30)
    with db.transaction() as session:
        assert not study_store.renew_lease(session, study_id=study_id, owner="a", seconds=30)
        study_store.release_lease(session, study_id=study_id, owner="b")
    with db.transaction() as session:
        assert study_store.acquire_lease(session, study_id=study_id, owner="a", seconds=30)


def test_a_probe_in_flight_is_retried_in_its_row_and_a_finished_one_never(db: Database) -> None:
    config = Config("sync", 1, 2, batch_size=32, lr=0.1)
    with db.transaction() as session:
        study_id = study_store.create_study(session, spec={}).id
        first = measurement_store.start_probe(session, study_id=study_id, config=config).id
    with db.transaction() as session:  # the crash: the row stays unfinished; the resumed study retries
        retry = measurement_store.start_probe(session, study_id=study_id, config=config)
        assert (retry.id, retry.attempts) == (first, 2)
        measurement_store.finish_probe(session, probe_id=retry.id,
                                       result=ProbeResult(config, 10, 1.0, [(10, 1.0, 0.5)]),
                                       predicted_ttc=3.0)
    with db.transaction() as session:
        try:
            measurement_store.start_probe(session, study_id=study_id, config=config)
        except ValueError as exc:
            assert "never re-run" in str(exc)
        else:
            raise AssertionError("a finished probe was started again")
    with db.read() as session:
        finished = measurement_store.finished_probes(session, study_id=study_id)
        assert [r.config for r in finished.values()] == [config]


def test_a_continued_probe_is_its_own_row_of_the_same_config(db: Database) -> None:
    """A probe continued from its own end state (a lineage's next segment) keeps both results, each
    with its lineage fields; resume replays each by its probe key."""
    config = Config("sync", 1, 2, batch_size=32, lr=0.1)
    short = ProbeResult(config, 10, 1.0, [(10, 1.0, 0.5)], key=config.key())
    continued = ProbeRequest(config, 4.0, 30, parent=config.key(), start_iteration=10)
    longer = ProbeResult(config, 30, 3.0, [(10, 1.0, 0.5), (40, 4.0, 0.3)], key=continued.key,
                         parent=config.key(), start_iteration=10, start_seconds=1.0)
    with db.transaction() as session:
        study_id = study_store.create_study(session, spec={}).id
        for key, result in ((config.key(), short), (continued.key, longer)):
            probe = measurement_store.start_probe(session, study_id=study_id, config=config, key=key)
            measurement_store.finish_probe(session, probe_id=probe.id, result=result, predicted_ttc=None)
    with db.read() as session:
        finished = measurement_store.finished_probes(session, study_id=study_id)
    assert list(finished) == [config.key(), continued.key]
    replayed = finished[continued.key]
    assert (replayed.iterations, replayed.parent, replayed.start_iteration, replayed.end_iteration) == (
        30, config.key(), 10, 40)


def test_events_are_ordered_and_resumable_after_an_id(db: Database) -> None:
    with db.transaction() as session:
        study_id = study_store.create_study(session, spec={}).id
        study_store.set_state(session, study_id=study_id, state="running")
        study_store.request_cancel(session, study_id=study_id)
    with db.read() as session:
        events = study_store.events_after(session, study_id=study_id)
        assert [e.data.get("state") for e in events] == ["pending", "running"]
        assert study_store.events_after(session, study_id=study_id, after=events[0].id)[0].id == events[1].id
        assert study_store.cancel_requested(session, study_id=study_id)


def test_a_study_finished_after_it_was_listed_is_not_claimed_again(db: Database) -> None:
    """The scheduler lists unfinished studies, then takes leases: one that finished in between
    (its runner committed "done", then released the lease) must not run a second time."""
    from service.runners.scheduler import StudyScheduler
    from service.settings import Settings

    with db.transaction() as session:
        study_id = study_store.create_study(session, spec={}).id
        study_store.set_state(session, study_id=study_id, state="done")
    scheduler = StudyScheduler(db, Settings(database_url=db.url))
    assert not scheduler._acquire(study_id)
    with db.read() as session:
        assert study_store.lease_expires_at(session, study_id=study_id) is None
    with db.transaction() as session:
        study_store.set_state(session, study_id=study_id, state="running")
    assert scheduler._acquire(study_id)


def test_a_run_of_a_plan_from_another_database_is_recorded_unlinked(db: Database) -> None:
    config = Config("sync", 1, 2, batch_size=32, lr=0.1)
    with db.transaction() as session:
        run = measurement_store.record_run(session, study_id="elsewhere01", config=config,
                                           result={"reached": True})
        assert run.study_id is None and run.result == {"reached": True}
