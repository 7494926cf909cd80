"""The dashboard's routes: two HTML pages, the JSON they draw, and their static assets.

Pages are static HTML whose scripts fetch ``/dashboard/api/...``; live updates ride on the
REST event stream (``/v1/studies/{id}/events``), so the dashboard adds no second push channel.
Every asset ships in ``static/`` (Chart.js vendored under ``static/vendor/``): no CDN, no internet.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Request, Response, status
from fastapi.responses import FileResponse, JSONResponse

from service.api.deps import DatabaseDep, StudyId, study_or_404
from service.dashboard import insights, trial_view, views
from service.dashboard.cache import RenderedCache
from service.db import measurement_store, study_store

STATIC = Path(__file__).parent / "static"
ASSET_TYPES = {".js": "text/javascript", ".css": "text/css", ".md": "text/markdown"}

router = APIRouter(include_in_schema=False)


def _cache(request: Request) -> RenderedCache:
    state = request.app.state
    if getattr(state, "dashboard_cache", None) is None:
        state.dashboard_cache = RenderedCache()
    return state.dashboard_cache


def _page(name: str) -> FileResponse:
    return FileResponse(STATIC / name, media_type="text/html", headers={"Cache-Control": "no-cache"})


@router.get("/")
def studies_page() -> FileResponse:
    return _page("studies.html")


@router.get("/studies/{study_id}")
def study_page(study_id: StudyId, db: DatabaseDep) -> FileResponse:
    with db.read() as session:
        study_or_404(session, study_id)
    return _page("study.html")


@router.get("/studies/{study_id}/trials/{number}")
def trial_page(study_id: StudyId, number: int, db: DatabaseDep) -> FileResponse:
    with db.read() as session:
        study_or_404(session, study_id)
    return _page("trial.html")


@router.get("/dashboard/static/{path:path}")
def asset(path: str) -> FileResponse:
    """A file under ``static/``; anything else (``..``, NUL and control characters, other types) is a 404."""
    if not path.isprintable():
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no asset {path!r}")
    file = (STATIC / path).resolve()
    if not file.is_relative_to(STATIC.resolve()) or not file.is_file() or file.suffix not in ASSET_TYPES:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no asset {path!r}")
    return FileResponse(file, media_type=ASSET_TYPES[file.suffix], headers={"Cache-Control": "max-age=3600"})


@router.get("/dashboard/api/studies")
def studies(db: DatabaseDep, limit: Annotated[int, Query(ge=1, le=500)] = 200) -> dict[str, Any]:
    with db.read() as session:
        rows, count = study_store.list_studies(session, limit=limit)
        totals = measurement_store.probe_totals(session, study_ids=[s.id for s in rows])
        data = [views.study_summary(s, totals.get(s.id, measurement_store.ProbeTotals())) for s in rows]
    return {"data": data, "count": count}


@router.get("/dashboard/api/studies/{study_id}")
def study(study_id: StudyId, db: DatabaseDep, request: Request) -> Response:
    """Everything the study page draws; rendered once per version of the study (``cache``).

    Built of plain JSON types already, so it skips FastAPI's encoder.
    """
    cache = _cache(request)
    with db.read() as session:
        found = study_or_404(session, study_id)
        last_event = study_store.last_event_id(session, study_id=study_id)
        version = (study_id, last_event, measurement_store.run_count(session, study_id=study_id))
        body = cache.get(version)
        if body is None:
            body = JSONResponse(views.study_detail(
                found,
                measurement_store.list_probes(session, study_id=study_id),
                measurement_store.list_runs(session, study_id=study_id),
                last_event,
                study_store.get_training(session, study_id=study_id),
            )).body
            cache.put(version, body)
    return Response(body, media_type="application/json")


@router.get("/dashboard/api/studies/{study_id}/insights")
def study_insights(study_id: StudyId, db: DatabaseDep, request: Request) -> Response:
    """Parameter importances and parallel coordinates (service.dashboard.insights), per version."""
    cache = _cache(request)
    with db.read() as session:
        found = study_or_404(session, study_id)
        version = ("insights", study_id, study_store.last_event_id(session, study_id=study_id))
        body = cache.get(version)
        if body is None:
            probes = measurement_store.list_probes(session, study_id=study_id)
            body = JSONResponse(insights.insights(db.url, found, probes)).body
            cache.put(version, body)
    return Response(body, media_type="application/json")


@router.get("/dashboard/api/studies/{study_id}/trials/{number}")
def trial(study_id: StudyId, number: int, db: DatabaseDep) -> dict[str, Any]:
    """One trial's page: its curve with the fitted curve and band, s/it, why it was set aside."""
    with db.read() as session:
        found = study_or_404(session, study_id)
        probes = measurement_store.list_probes(session, study_id=study_id)
        probe = next((p for p in probes if p.number == number), None)
        if probe is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"study {study_id!r} has no trial {number}")
        attrs = insights.trial_attrs(db.url, study_id, probe.key)
        return trial_view.trial_detail(found, probes, number, attrs)
