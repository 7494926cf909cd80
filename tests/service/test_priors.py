"""A new study reads the finished runs of the same job as priors for its forecast (issue 34 §4)."""

from __future__ import annotations

from service.db import Database, study_store
from service.db.priors import finished_runs

JOB = {"workload": {"name": "digits-mlp"}, "target": {"metric": "train_loss", "value": 0.1}}


CONFIG = {"strategy": "sync", "nodes": 1, "devices_per_node": 1, "batch_size": 32, "lr": 0.01}
RESULT = {"reached": True, "iterations": 190,
          "phases": [{"config": CONFIG, "iterations": 100},
                     {"config": CONFIG | {"devices_per_node": 2}, "iterations": 90}]}


def _trained(db: Database, spec: dict, state: str = "done", points: int = 20) -> str:
    with db.transaction() as session:
        study_id = study_store.create_study(session, spec=spec).id
        study_store.create_training(session, study_id=study_id, max_iterations=1000)
        timeline = {"points": [[k * 0.01, k * 10, 1.0 / (1 + k)] for k in range(points)], "target": 0.1}
        study_store.set_training_progress(session, study_id=study_id, result=RESULT, timeline=timeline)
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
        priors = finished_runs(session, JOB | {"seed": 3}, exclude=current)
        own = finished_runs(session, JOB, exclude=done)
    db.dispose()
    assert len(priors) == 1 and priors[0].curve[:2] == [(10.0, 0.5), (20.0, 1 / 3)]  # iteration 0 dropped
    # its path, for the ETA (predictor.prior_path): each phase's first iteration, global batch and
    # step size, lr / (1 − momentum)
    step = 0.01 / (1 - 0.9)
    assert priors[0].phases == ((0, 32, step), (100, 64, step))
    assert priors[0].crossing(0.1) == 190 and priors[0].crossing(0.05) is None
    assert own == ()  # a study is never its own prior
