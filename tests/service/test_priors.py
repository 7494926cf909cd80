"""A new study reads the finished runs of the same job as priors for its forecast (issue 34 §4)."""

from __future__ import annotations

from service.db import Database, study_store
from service.db.priors import finished_curves

JOB = {"workload": {"name": "digits-mlp"}, "target": {"metric": "train_loss", "value": 0.1}}


def _trained(db: Database, spec: dict, state: str = "done", points: int = 20) -> str:
    with db.transaction() as session:
        study_id = study_store.create_study(session, spec=spec).id
        study_store.create_training(session, study_id=study_id, max_iterations=1000)
        timeline = {"points": [[k * 0.01, k * 10, 1.0 / (1 + k)] for k in range(points)]}
        study_store.set_training_progress(session, study_id=study_id, result={}, timeline=timeline)
        study_store.set_training_state(session, study_id=study_id, state=state)
    return study_id


def test_finished_runs_of_the_same_job_are_its_priors(database_url: str) -> None:
    db = Database(database_url)
    db.migrate()
    done = _trained(db, JOB)
    _trained(db, JOB, state="failed")  # not finished: no prior
    _trained(db, {**JOB, "workload": {"name": "charlm"}})  # another job
    _trained(db, JOB, points=3)  # too short to say anything of a shape
    current = _trained(db, {**JOB, "target": {"metric": "train_loss", "value": 0.05}}, state="running")
    with db.read() as session:
        priors = finished_curves(session, JOB | {"seed": 3}, exclude=current)
        own = finished_curves(session, JOB, exclude=done)
    db.dispose()
    assert len(priors) == 1 and priors[0][:2] == [(10.0, 0.5), (20.0, 1 / 3)]  # iteration 0 dropped
    assert own == ()  # a study is never its own prior
