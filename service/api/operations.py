"""/healthz and /metrics: what an orchestrator and Prometheus poll."""

from __future__ import annotations

import sys

from fastapi import APIRouter, Response, status
from fastapi.responses import JSONResponse

from service.api.deps import DatabaseDep, MetricsDep
from service.api.schemas import Health
from service.db import study_store

router = APIRouter(tags=["operations"])


def _ray_status() -> tuple[bool, str]:
    """Ray is connected lazily (with the first study), so 'not connected yet' is healthy.

    Under ``ttc serve`` studies run in the orchestrator process and this process never imports
    Ray; ``/v1/predict`` is what would connect it here.
    """
    ray = sys.modules.get("ray")
    if ray is None or not ray.is_initialized():
        return True, "not connected in this process"
    try:
        cpus = ray.cluster_resources().get("CPU", 0)
    except Exception as exc:  # a dead GCS raises many kinds
        return False, f"error: {type(exc).__name__}: {exc}"
    return True, f"ok ({cpus:g} CPUs)"


@router.get("/healthz", response_model=Health, responses={503: {"model": Health}})
def healthz(db: DatabaseDep) -> JSONResponse:
    """``running_studies`` counts live leases: studies run by any orchestrator, not only this process."""
    running = 0
    try:
        with db.read() as session:
            study_store.ping(session)
            running = study_store.count_live_leases(session)
        database_ok, database = True, "ok"
    except Exception as exc:  # reported in the body and as a 503, for the orchestrator polling it
        database_ok, database = False, f"error: {type(exc).__name__}"
    ray_ok, ray_state = _ray_status()
    healthy = database_ok and ray_ok
    body = Health(status="ok" if healthy else "unhealthy", database=database, ray=ray_state,
                  running_studies=running)
    code = status.HTTP_200_OK if healthy else status.HTTP_503_SERVICE_UNAVAILABLE
    return JSONResponse(body.model_dump(), status_code=code)


@router.get("/metrics", response_class=Response)
def metrics(registry: MetricsDep) -> Response:
    return Response(registry.render(), media_type="text/plain; version=0.0.4; charset=utf-8")
