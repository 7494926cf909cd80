"""Error bodies: the 422 handler, and the responses each route documents in the OpenAPI schema.

FastAPI's own 422 handler echoes the offending input, and a NaN or Infinity there cannot be
encoded as strict JSON: the client got a 500 for the very value the 422 was about. Here such
numbers are written as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``, so the message
still names the field and shows the value; so is a lone surrogate, which no UTF-8 body can hold.
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


def _encodable(value: Any) -> Any:
    """``value`` as strict UTF-8 JSON can hold it: non-finite numbers as strings, and a lone
    surrogate (``"\\ud800"`` is valid JSON, but no UTF-8 text) as its escape."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_encodable(key): _encodable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_encodable(item) for item in value]
    return value


async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
    body_field = getattr(request.scope.get("route"), "body_field", None)
    body = getattr(getattr(body_field, "field_info", None), "annotation", None)
    hinted = [{**e, "msg": e["msg"] + did_you_mean(e, body, under=("body",))} for e in exc.errors()]
    errors = _encodable(jsonable_encoder(hinted))
    return JSONResponse({"detail": errors}, status_code=status.HTTP_422_UNPROCESSABLE_CONTENT)


def error_response(description: str) -> dict[str, Any]:
    return {"model": ErrorMessage, "description": description}


UNAUTHORIZED = {401: error_response("the service has an API token and the call lacks 'Bearer <token>'")}
TOO_LARGE = {413: error_response("the request body is larger than TTC_MAX_SPEC_BYTES (chunked or not)")}
NOT_FOUND = {404: error_response("no study with this id")}
UNREADABLE = {400: error_response("the body is not UTF-8 JSON")}
CROSS_SITE = {403: error_response("no API token is configured and the call comes from a page on another "
                                  "site (Origin, Sec-Fetch-Site)")}
NOT_JSON = {415: error_response("the body is not declared as 'Content-Type: application/json'")}
SLOW_BODY = {408: error_response("the body did not arrive whole within TTC_BODY_TIMEOUT_SECONDS")}
MUTATING = {**UNAUTHORIZED, **TOO_LARGE, **UNREADABLE, **CROSS_SITE, **NOT_JSON, **SLOW_BODY}
