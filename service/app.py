"""The FastAPI app: ``create_app()`` wires settings, database, scheduler, metrics and routers.

The dashboard (``service.dashboard``) is mounted at ``/`` when that package exposes ``router``.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from optuna.exceptions import StorageInternalError
from sqlalchemy.exc import DBAPIError

from service.api import ROUTERS
from service.api.docs import docs_router
from service.api.errors import validation_error
from service.api.unavailable import database_unavailable
from service.db import Database, measurement_store, study_store
from service.db.optuna_mirror import dispose_optuna_storages
from service.metrics import Metrics
from service.middleware.allow_header import AllowHeader
from service.middleware.head_as_get import HeadAsGet
from service.middleware.request_guard import RequestGuard
from service.middleware.timing import TimingMiddleware
from service.runners.scheduler import StudyScheduler
from service.settings import Settings, get_settings

log = logging.getLogger(__name__)


def _dashboard_router():  # type: ignore[no-untyped-def]
    try:
        module = importlib.import_module("service.dashboard")
    except ModuleNotFoundError as exc:
        if exc.name != "service.dashboard":
            raise
        return None
    return getattr(module, "router", None)


def create_app(settings: Settings | None = None, *, run_studies: bool = True) -> FastAPI:
    """The service. ``run_studies=False`` serves the API only (no scheduler, no Ray)."""
    settings = settings or get_settings()
    db = Database(settings.database_url)

    def study_counts() -> dict[str, int]:
        with db.read() as session:
            return study_store.count_by_state(session)

    def probe_counts() -> dict[str, int]:
        with db.read() as session:
            return measurement_store.count_probes_by_state(session)

    metrics = Metrics(study_counts, probe_counts)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db.migrate()
        scheduler = StudyScheduler(db, settings, metrics) if run_studies else None
        app.state.scheduler = scheduler
        if scheduler is not None:
            scheduler.start()  # resumes every unfinished study whose lease is free or expired
        try:
            yield
        finally:
            if scheduler is not None:
                scheduler.shutdown()
            db.dispose()
            dispose_optuna_storages()

    app = FastAPI(
        title="ttc",
        version="0.1.0",
        summary="Time-to-convergence optimizer: probe, predict, plan.",
        lifespan=lifespan,
        docs_url=None,  # served offline by docs_router, not from a CDN
        redoc_url=None,
    )
    app.state.settings, app.state.db, app.state.metrics, app.state.scheduler = settings, db, metrics, None

    app.add_exception_handler(RequestValidationError, validation_error)
    for unreachable in (DBAPIError, StorageInternalError):  # the database is away: 503, not 500
        app.add_exception_handler(unreachable, database_unavailable)
    app.add_middleware(AllowHeader, routes=lambda: app.routes)
    app.add_middleware(HeadAsGet)
    # Added last, runs first: latency is recorded for refused requests too.
    app.add_middleware(RequestGuard, api_token=settings.api_token, max_body_bytes=settings.max_spec_bytes,
                       allowed_hosts=settings.allowed_host_names,
                       body_timeout_seconds=settings.body_timeout_seconds)
    app.add_middleware(TimingMiddleware, metrics=metrics)
    for router in ROUTERS:
        app.include_router(router)
    app.include_router(docs_router(app.openapi_url or "/openapi.json", app.title))
    dashboard = _dashboard_router()
    if dashboard is not None:
        app.include_router(dashboard)
    return app
