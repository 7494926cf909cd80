"""/v1/studies/{id}/events: progress as Server-Sent Events, read from the events table.

Events are rows, so the stream survives restarts: a client reconnects with ``Last-Event-ID`` (or
``?after=N``) and continues where it stopped. The stream ends after the study's final state, or
after ``TTC_EVENT_STREAM_SECONDS`` (a connection is not held forever; the client reconnects). Open
streams are capped per study and in all (``service.api.stream_slots``): past a cap, a 429. A
stream outlives a database outage (it keeps polling, with keepalives); a new one meanwhile is a 503.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse
from sqlalchemy.exc import DBAPIError
from starlette.concurrency import run_in_threadpool

from service.api.deps import DatabaseDep, SettingsDep, StudyId, study_or_404
from service.api.errors import NOT_FOUND, error_response
from service.api.stream_slots import StreamSlots
from service.db import TERMINAL_STATES, Database, study_store
from service.db.outage import is_outage

router = APIRouter(prefix="/v1/studies", tags=["studies"])

POLL_SECONDS = 0.5
KEEPALIVE_SECONDS = 15.0
MAX_EVENT_ID = 2**31 - 1  # event ids are 32-bit integers on PostgreSQL; a larger cursor is a 422
SSE_EVENT = {"type": "object", "properties": {"id": {"type": "string"}, "event": {"type": "string"},
                                              "data": {"type": "string", "description": "JSON"}}}
TOO_MANY_STREAMS = {429: error_response("too many open event streams on this study "
                                        "(TTC_MAX_EVENT_STREAMS_PER_STUDY) or in all "
                                        "(TTC_MAX_EVENT_STREAMS); try again after Retry-After seconds")}


def _fetch(db: Database, study_id: str, after: int) -> tuple[list[tuple[int, str, dict]], str]:
    with db.read() as session:
        state = study_or_404(session, study_id).state
        events = study_store.events_after(session, study_id=study_id, after=after)
        return [(e.id, e.kind, e.data) for e in events], state


def stream_slots(request: Request) -> StreamSlots:
    """The app's stream counts, made on first use from its settings."""
    state = request.app.state
    if getattr(state, "event_streams", None) is None:
        settings = state.settings
        state.event_streams = StreamSlots(settings.max_event_streams_per_study, settings.max_event_streams)
    return state.event_streams


def _frame(event_id: int, kind: str, data: dict) -> str:
    return f"id: {event_id}\nevent: {kind}\ndata: {json.dumps(data, default=str)}\n\n"


@router.get("/{study_id}/events", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {"schema": SSE_EVENT}}}, **NOT_FOUND,
                       **TOO_MANY_STREAMS})
async def study_events(
    request: Request,
    study_id: StudyId,
    db: DatabaseDep,
    settings: SettingsDep,
    after: Annotated[int, Query(ge=0, le=MAX_EVENT_ID, description="only events with a larger id")] = 0,
    follow: Annotated[bool, Query(description="keep streaming until the study ends")] = True,
    last_event_id: Annotated[int, Header(ge=0, le=MAX_EVENT_ID, description="as 'after'")] = 0,
) -> StreamingResponse:
    cursor = max(after, last_event_id)
    first = await run_in_threadpool(_fetch, db, study_id, cursor)  # 404 before the stream starts
    ends = asyncio.get_running_loop().time() + settings.event_stream_seconds

    async def stream() -> AsyncIterator[str]:
        nonlocal cursor
        events, state = first
        quiet = 0.0
        try:
            while asyncio.get_running_loop().time() < ends:
                for event_id, kind, data in events:
                    cursor = event_id
                    yield _frame(event_id, kind, data)
                if events:
                    quiet = 0.0
                elif state in TERMINAL_STATES or not follow:
                    return
                elif quiet >= KEEPALIVE_SECONDS:
                    quiet = 0.0
                    yield ": keepalive\n\n"
                await asyncio.sleep(0 if events else POLL_SECONDS)
                quiet += POLL_SECONDS
                try:
                    events, state = await run_in_threadpool(_fetch, db, study_id, cursor)
                except DBAPIError as exc:  # the database is away: hold the stream, poll again
                    if not is_outage(exc):
                        raise
                    events = []
        finally:
            release()

    body = stream()
    release = stream_slots(request).hold(study_id, body)
    return StreamingResponse(body, media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
