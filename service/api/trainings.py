"""/v1/studies/{id}/train and /training: ``ttc train`` over REST (issue 13).

POST attaches a training to a study: the scheduler then tunes it (if it is not tuned yet) and runs
the plan's lineage to the target, re-planned at checkpoints. GET reports the result so far: the
phases of the run, the tuning spent, and the timeline the dashboard draws.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, HTTPException, status

from service.api.deps import DatabaseDep, JsonDep, SchedulerDep, StudyId, TokenDep, study_or_404
from service.api.errors import MUTATING, NOT_FOUND, error_response
from service.api.schemas import TrainingCreate, TrainingPublic
from service.db import Training, measurement_store, study_store

router = APIRouter(prefix="/v1/studies", tags=["trainings"])

TRAINABLE = ("pending", "running", "done")


def public(training: Training, segments: int) -> TrainingPublic:
    return TrainingPublic(
        study_id=training.study_id, state=training.state, error=training.error,
        max_iterations=training.max_iterations, max_overhead=training.max_overhead,
        result=training.result, timeline=training.timeline, segments=segments,
        created_at=training.created_at, updated_at=training.updated_at,
    )


@router.post("/{study_id}/train", status_code=status.HTTP_202_ACCEPTED, dependencies=[TokenDep, JsonDep],
             responses={**MUTATING, **NOT_FOUND,
                        409: error_response("the study cannot be trained, or already has a training")})
def train_study(
    study_id: StudyId, db: DatabaseDep, scheduler: SchedulerDep,
    body: Annotated[TrainingCreate | None, Body(openapi_examples={
        "defaults": {"summary": "the spec's overhead budget", "value": {}},
        "bounded": {"summary": "a bounded run", "value": {"max_iterations": 20000, "max_overhead": 0.1}},
    })] = None,
) -> TrainingPublic:
    """Train the study's job to its target: its tune first (unless done), then the run from the
    plan's lineage. Follow it at ``GET /v1/studies/{id}/training``."""
    body = body or TrainingCreate()
    with db.transaction() as session:
        study = study_or_404(session, study_id)
        if study.state not in TRAINABLE:
            detail = f"study {study_id} is {study.state}" + (f" ({study.error})" if study.error else "")
            raise HTTPException(status.HTTP_409_CONFLICT, f"{detail}: only a pending, running or done "
                                                          "study can be trained; submit the spec again")
        try:
            training = study_store.create_training(session, study_id=study_id,
                                                   max_iterations=body.max_iterations,
                                                   max_overhead=body.max_overhead)
        except ValueError as exc:
            raise HTTPException(status.HTTP_409_CONFLICT,
                                f"{exc}; follow it at GET /v1/studies/{study_id}/training") from None
        result = public(training, 0)
    if scheduler is not None:
        scheduler.wake()
    return result


@router.get("/{study_id}/training",
            responses={**NOT_FOUND, 409: error_response("the study has no training (yet)")})
def get_training(study_id: StudyId, db: DatabaseDep) -> TrainingPublic:
    """The training's state, its result so far (the phases of the run) and its timeline."""
    with db.read() as session:
        study_or_404(session, study_id)
        training = study_store.get_training(session, study_id=study_id)
        if training is None:
            raise HTTPException(status.HTTP_409_CONFLICT, f"study {study_id} has no training; "
                                                           f"POST /v1/studies/{study_id}/train starts one")
        return public(training, measurement_store.count_training_segments(session, study_id=study_id))
