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
from pydantic import BaseModel

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


def _hinted(error: dict[str, Any], body: Any) -> dict[str, Any]:
    """An unknown field in the body, with the field of the body's model it is closest to."""
    loc = tuple(error.get("loc", ()))
    if error.get("type") != "extra_forbidden" or loc[:1] != ("body",) or not (
            isinstance(body, type) and issubclass(body, BaseModel)):
        return error
    return {**error, "msg": error["msg"] + did_you_mean(body, loc[1:])}


async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    body_field = getattr(request.scope.get("route"), "body_field", None)
    body = getattr(getattr(body_field, "field_info", None), "annotation", None)
    errors = jsonable_encoder(_finite([_hinted(dict(e), body) for e in exc.errors()]))
    return JSONResponse({"detail": errors}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


def error_response(description: str) -> dict[str, Any]:
    return {"model": ErrorMessage, "description": description}


UNAUTHORIZED = {401: error_response("the service has an API token and the call lacks 'Bearer <token>'")}
TOO_LARGE = {413: error_response("the request body is larger than TTC_MAX_SPEC_BYTES (chunked or not)")}
NOT_FOUND = {404: error_response("no study with this id")}
UNREADABLE = {400: error_response("the body is not UTF-8 JSON")}
MUTATING = {**UNAUTHORIZED, **TOO_LARGE, **UNREADABLE}
