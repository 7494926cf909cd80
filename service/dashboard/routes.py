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

from service import crud
from service.api.deps import DatabaseDep, study_or_404
from service.dashboard import queries, views
from service.dashboard.cache import RenderedCache

STATIC = Path(__file__).parent / "static"
ASSET_TYPES = {".js": "text/javascript", ".css": "text/css", ".md": "text/markdown"}

router = APIRouter(include_in_schema=False)


def _page(name: str) -> FileResponse:
    return FileResponse(STATIC / name, media_type="text/html", headers={"Cache-Control": "no-cache"})


@router.get("/")
def studies_page() -> FileResponse:
    return _page("studies.html")


@router.get("/studies/{study_id}")
def study_page(study_id: str, db: DatabaseDep) -> FileResponse:
    with db.read() as session:
        study_or_404(session, study_id)
    return _page("study.html")


@router.get("/dashboard/static/{path:path}")
def asset(path: str) -> FileResponse:
    """A file under ``static/``; anything else (``..``, other types) is a 404."""
    file = (STATIC / path).resolve()
    if not file.is_relative_to(STATIC.resolve()) or not file.is_file() or file.suffix not in ASSET_TYPES:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no asset {path!r}")
    return FileResponse(file, media_type=ASSET_TYPES[file.suffix], headers={"Cache-Control": "max-age=3600"})


@router.get("/dashboard/api/studies")
def studies(db: DatabaseDep, limit: Annotated[int, Query(ge=1, le=500)] = 200) -> dict[str, Any]:
    with db.read() as session:
        rows, count = crud.list_studies(session, limit=limit)
        totals = queries.probe_totals(session, study_ids=[s.id for s in rows])
        data = [views.study_summary(s, totals.get(s.id, queries.ProbeTotals())) for s in rows]
    return {"data": data, "count": count}


@router.get("/dashboard/api/studies/{study_id}")
def study(study_id: str, db: DatabaseDep, request: Request) -> Response:
    """Everything the study page draws; rendered once per version of the study (``cache``).

    Built of plain JSON types already, so it skips FastAPI's encoder.
    """
    state = request.app.state
    if getattr(state, "dashboard_cache", None) is None:
        state.dashboard_cache = RenderedCache()
    cache: RenderedCache = state.dashboard_cache
    with db.read() as session:
        found = study_or_404(session, study_id)
        last_event = queries.last_event_id(session, study_id=study_id)
        version = (study_id, last_event, queries.run_count(session, study_id=study_id))
        body = cache.get(version)
        if body is None:
            body = JSONResponse(views.study_detail(
                found,
                crud.list_probes(session, study_id=study_id),
                queries.list_runs(session, study_id=study_id),
                last_event,
            )).body
            cache.put(version, body)
    return Response(body, media_type="application/json")
