"""Dependencies as ``Annotated`` aliases, so routes declare what they need in one word.

The app-state getters are ``async def``: FastAPI runs a plain ``def`` dependency in the thread
pool, and that hop costs more than the lookup itself on every request.
"""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, Header, HTTPException, Request, status
from sqlalchemy.orm import Session

from service import crud
from service.db import Database, Study
from service.metrics import Metrics
from service.scheduler import StudyScheduler
from service.settings import Settings


async def _database(request: Request) -> Database:
    return request.app.state.db


async def _settings(request: Request) -> Settings:
    return request.app.state.settings


async def _metrics(request: Request) -> Metrics:
    return request.app.state.metrics


async def _scheduler(request: Request) -> StudyScheduler | None:
    return request.app.state.scheduler


DatabaseDep = Annotated[Database, Depends(_database)]
SettingsDep = Annotated[Settings, Depends(_settings)]
MetricsDep = Annotated[Metrics, Depends(_metrics)]
SchedulerDep = Annotated[StudyScheduler | None, Depends(_scheduler)]


def require_token(settings: SettingsDep, authorization: Annotated[str | None, Header()] = None) -> None:
    """With ``TTC_API_TOKEN`` set, a mutating call must send ``Authorization: Bearer <token>``."""
    if settings.api_token is None:
        return
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.encode(), settings.api_token.encode()):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED, "missing or wrong API token",
            headers={"WWW-Authenticate": "Bearer"},
        )


TokenDep = Depends(require_token)


def study_or_404(session: Session, study_id: str) -> Study:
    study = crud.get_study(session, study_id=study_id)
    if study is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no study {study_id!r}")
    return study
