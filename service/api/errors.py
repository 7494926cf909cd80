"""Error bodies: the 422 handler, and the responses each route documents in the OpenAPI schema.

FastAPI's own 422 handler echoes the offending input, and a NaN or Infinity there cannot be
encoded as strict JSON: the client got a 500 for the very value the 422 was about. Here such
numbers are written as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``, so the message
still names the field and shows the value.
"""

from __future__ import annotations

import math
from typing import Any

from fastapi import Request, status
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from service.api.schemas import ErrorMessage
from worker.spec import did_you_mean


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    body_field = getattr(request.scope.get("route"), "body_field", None)
    body = getattr(getattr(body_field, "field_info", None), "annotation", None)
    hinted = [{**e, "msg": e["msg"] + did_you_mean(e, body, under=("body",))} for e in exc.errors()]
    errors = jsonable_encoder(_finite(hinted))
    return JSONResponse({"detail": errors}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


def error_response(description: str) -> dict[str, Any]:
    return {"model": ErrorMessage, "description": description}


UNAUTHORIZED = {401: error_response("the service has an API token and the call lacks 'Bearer <token>'")}
TOO_LARGE = {413: error_response("the request body is larger than TTC_MAX_SPEC_BYTES (chunked or not)")}
NOT_FOUND = {404: error_response("no study with this id")}
UNREADABLE = {400: error_response("the body is not UTF-8 JSON")}
MUTATING = {**UNAUTHORIZED, **TOO_LARGE, **UNREADABLE}
