"""/v1/runs: record runs measured elsewhere (``ttc run --server``), next to their predictions.

``ttc run`` trains on the Ray cluster it can reach and the service keeps the record, so the
dashboard's predicted-vs-measured chart fills from runs made anywhere, not only from runs that
share the service's database.
"""

from __future__ import annotations

from fastapi import APIRouter, status
from fastapi.exceptions import RequestValidationError

from service.api.deps import DatabaseDep, JsonDep, TokenDep
from service.api.errors import MUTATING
from service.api.schemas import RunCreate, RunRecorded
from service.db import measurement_store

router = APIRouter(prefix="/v1/runs", tags=["runs"])


@router.post("", status_code=status.HTTP_201_CREATED, dependencies=[TokenDep, JsonDep],
             responses=MUTATING)
def record_run(body: RunCreate, db: DatabaseDep) -> RunRecorded:
    """Store one measured run; a ``study_id`` this service does not know is recorded unlinked."""
    try:
        config = body.result.config.to_config()
    except ValueError as exc:  # cross-field rules: groups dividing the devices
        raise RequestValidationError([{"type": "value_error", "loc": ["body", "result", "config"],
                                       "msg": str(exc), "input": body.result.config.model_dump()}]) from None
    with db.transaction() as session:
        run = measurement_store.record_run(session, study_id=body.study_id, config=config,
                                           result=body.result.model_dump())
        return RunRecorded(id=run.id, study_id=run.study_id)
