"""Dependencies as ``Annotated`` aliases, so routes declare what they need in one word.

The app-state getters are ``async def``: FastAPI runs a plain ``def`` dependency in the thread
pool, and that hop costs more than the lookup itself on every request.
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BeforeValidator
from sqlalchemy.orm import Session

from service.db import Database, Study, study_store
from service.metrics import Metrics
from service.middleware.request_guard import token_accepted
from service.middleware.request_intent import declares_json
from service.runners.scheduler import StudyScheduler
from service.settings import Settings

# Ids are 12 hex digits; any word-ish id up to 64 characters is looked up (and may be a 404), while
# NUL, '%', '/', spaces and the like are a 422 before any database sees them.
STUDY_ID_PATTERN = r"^[A-Za-z0-9_-]{1,64}$"
StudyId = Annotated[str, Path(pattern=STUDY_ID_PATTERN, examples=["3f2a9c41d0b7"],
                              description="a study's id, as POST /v1/studies returned it")]


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


_bearer = HTTPBearer(auto_error=False, description="TTC_API_TOKEN, when the service has one")


def require_token(
    settings: SettingsDep, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
) -> None:
    """With ``TTC_API_TOKEN`` set, a mutating call must send ``Authorization: Bearer <token>``.

    ``service.middleware.request_guard`` refuses such a call before its body is read; this dependency states
    the requirement in the OpenAPI document (a bearer security scheme) and checks it again.
    """
    given = None if credentials is None else f"{credentials.scheme} {credentials.credentials}"
    if not token_accepted(settings.api_token, given):
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED, "missing or wrong API token",
            headers={"WWW-Authenticate": "Bearer"},
        )


TokenDep = Depends(require_token)


def require_json(request: Request) -> None:
    """A write's body is JSON (``service.middleware.request_intent``): an HTML form or a
    ``text/plain`` body, the kinds a page on another site can send without the browser asking this
    service first, is a 415."""
    has_body = request.headers.get("content-length", "0") != "0" or "transfer-encoding" in request.headers
    if not declares_json(request.headers.get("content-type"), has_body):
        raise HTTPException(status.HTTP_415_UNSUPPORTED_MEDIA_TYPE,
                            "send the body as JSON, with 'Content-Type: application/json'")


JsonDep = Depends(require_json)


def _digits(value: object) -> object:
    """A query's integer is written in digits: Python's ``int()`` (and so pydantic) also reads
    ``1_0`` as 10 and `` 10 `` as 10, forms no client means as a number."""
    if isinstance(value, str) and not re.fullmatch(r"-?[0-9]+", value):
        raise ValueError("write the integer in decimal digits only")
    return value


QueryInt = Annotated[int, BeforeValidator(_digits)]


def study_or_404(session: Session, study_id: str) -> Study:
    study = study_store.get_study(session, study_id=study_id)
    if study is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no study {study_id!r}")
    return study
