"""503 with Retry-After, not 500, for a request that finds the database away (issue 36).

The API's own connections do not wait for a restarting server (an orchestrator's do): a read during
an outage fails at once, and the client is told to come back rather than shown a traceback.
``/healthz`` says the same in its own words.
"""

from __future__ import annotations

from fastapi import Request, status
from fastapi.responses import JSONResponse, Response

from service.db.outage import is_outage

RETRY_AFTER_SECONDS = 5


async def database_unavailable(request: Request, exc: Exception) -> Response:
    if not is_outage(exc):
        raise exc
    return JSONResponse({"detail": "the database is unreachable; try again shortly"},
                        status_code=status.HTTP_503_SERVICE_UNAVAILABLE,
                        headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
