"""/v1/studies: submit, list, inspect, cancel (DESIGN.md §7 *REST*)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, HTTPException, Query, status
from fastapi.exceptions import RequestValidationError

from service.api.deps import (
    DatabaseDep,
    JsonDep,
    QueryInt,
    SchedulerDep,
    SettingsDep,
    StudyId,
    TokenDep,
    study_or_404,
)
from service.api.errors import MUTATING, NOT_FOUND, error_response
from service.api.examples import SPEC_EXAMPLES
from service.api.schemas import (
    PlanPublic,
    StudyCreated,
    StudyList,
    StudyPublic,
    StudyState,
    StudySummary,
    TrialList,
    TrialPublic,
)
from service.db import Probe, Study, measurement_store, study_store
from service.settings import Settings
from worker.guardrails import probe_resource_errors
from worker.spec import Spec

MAX_OFFSET = 2**31 - 1  # a row count no database here reaches; larger values are a 422, not an overflow

router = APIRouter(prefix="/v1/studies", tags=["studies"])


def check_limits(spec: Spec, settings: Settings) -> None:
    """The service's own limits on a spec, reported like any field error (422)."""
    errors = []
    devices = spec.cluster.nodes * spec.cluster.devices_per_node
    if devices > settings.max_cluster_devices:
        errors.append({
            "type": "limit", "loc": ["body", "cluster"], "input": devices,
            "msg": f"nodes × devices_per_node = {devices} exceeds this service's limit of "
                   f"{settings.max_cluster_devices} devices",
        })
    if spec.budget.max_probes > settings.max_study_probes:
        errors.append({
            "type": "limit", "loc": ["body", "budget", "max_probes"], "input": spec.budget.max_probes,
            "msg": f"max_probes {spec.budget.max_probes} exceeds this service's limit of "
                   f"{settings.max_study_probes}",
        })
    errors += probe_resource_errors(spec, max_probe_bytes=settings.max_probe_memory_mb * 2**20)
    if errors:
        raise RequestValidationError(errors)


def summary(study: Study) -> StudySummary:
    return StudySummary(
        id=study.id, state=study.state, workload=workload_name(study.spec), error=study.error,
        created_at=study.created_at, updated_at=study.updated_at,
    )


def workload_name(spec: dict) -> str | None:
    workload = spec.get("workload") or {}
    return workload.get("name") or workload.get("factory")


def trial(probe: Probe) -> TrialPublic:
    result = probe.result or {}
    curve = result.get("curve") or []
    return TrialPublic(
        number=probe.number, key=probe.key, state=probe.state, attempts=probe.attempts,
        config=probe.config, predicted_ttc=probe.predicted_ttc,
        final_loss=curve[-1][2] if curve else None, iterations=result.get("iterations"),
        seconds=result.get("seconds"), error=result.get("error"),
        created_at=probe.created_at, finished_at=probe.finished_at,
    )


@router.post("", status_code=status.HTTP_202_ACCEPTED, dependencies=[TokenDep, JsonDep],
             responses=MUTATING)
def submit_study(
    spec: Annotated[Spec, Body(openapi_examples=SPEC_EXAMPLES)],
    db: DatabaseDep, settings: SettingsDep, scheduler: SchedulerDep,
) -> StudyCreated:
    """Accept a study; it runs in the background. Follow it at ``/v1/studies/{id}/events``."""
    check_limits(spec, settings)
    with db.transaction() as session:
        study_id = study_store.create_study(session, spec=spec.model_dump(mode="json")).id
    if scheduler is not None:
        scheduler.wake()
    base = f"/v1/studies/{study_id}"
    return StudyCreated(id=study_id, state="pending", links={
        "self": base, "events": f"{base}/events", "plan": f"{base}/plan", "trials": f"{base}/trials",
    })


@router.get("")
def list_studies(
    db: DatabaseDep,
    state: StudyState | None = None,
    limit: Annotated[QueryInt, Query(ge=1, le=500)] = 100,
    offset: Annotated[QueryInt, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> StudyList:
    with db.read() as session:
        rows, count = study_store.list_studies(session, state=state, limit=limit, offset=offset)
        return StudyList(data=[summary(s) for s in rows], count=count)


@router.get("/{study_id}", responses=NOT_FOUND)
async def get_study(study_id: StudyId, db: DatabaseDep) -> StudyPublic:
    """On the event loop: two indexed reads cost less than the thread-pool hop around them."""
    with db.read_connection() as connection:
        found = study_store.study_detail(connection, study_id=study_id)
    if found is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no study {study_id!r}")
    return StudyPublic(**found, workload=workload_name(found["spec"]))


@router.get("/{study_id}/trials", responses=NOT_FOUND)
def list_trials(study_id: StudyId, db: DatabaseDep) -> TrialList:
    with db.read() as session:
        study_or_404(session, study_id)
        rows = [trial(p) for p in measurement_store.list_probes(session, study_id=study_id)]
        return TrialList(data=rows, count=len(rows))


@router.get("/{study_id}/plan", responses={**NOT_FOUND, 409: error_response("the study has no plan (yet)")})
def get_plan(study_id: StudyId, db: DatabaseDep) -> PlanPublic:
    """The Plan JSON of DESIGN.md §7; 409 while the study has none (yet)."""
    with db.read() as session:
        study = study_or_404(session, study_id)
        if study.plan is None:
            detail = f"study {study_id} has no plan: it is {study.state}"
            detail += f" ({study.error})" if study.error else ""
            raise HTTPException(status.HTTP_409_CONFLICT, detail)
        return study.plan


@router.post("/{study_id}/cancel", status_code=status.HTTP_202_ACCEPTED, dependencies=[TokenDep, JsonDep],
             responses={**MUTATING, **NOT_FOUND,
                        409: error_response("the study, and its training if any, has already finished")})
def cancel_study(study_id: StudyId, db: DatabaseDep) -> StudySummary:
    """Stop a study: at once when pending; when running, its probes in flight are cancelled on Ray
    within seconds (the orchestrator checks for cancel requests at every heartbeat). A done study's
    unfinished training (``POST /v1/studies/{id}/train``) is cancelled the same way."""
    with db.transaction() as session:
        study = study_or_404(session, study_id)
        if not study_store.cancellable(session, study_id=study_id):
            raise HTTPException(status.HTTP_409_CONFLICT,
                                f"study {study_id} has already finished: {study.state}")
        return summary(study_store.request_cancel(session, study_id=study_id))
