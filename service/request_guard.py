"""What a request must pass before any route reads its body: the API token, then the body size.

Plain ASGI, outside FastAPI's routing, because FastAPI reads and parses a request's whole body
before it resolves a route's dependencies: a token checked as a dependency is checked only after
an attacker's 50 MB body is in memory. Here a mutating ``/v1`` call without the token is refused
before one byte of its body is read, and a body is counted as it streams in, so a chunked upload
(no ``Content-Length``) is cut off at the limit like a declared one.
"""

from __future__ import annotations

import hmac
import json

from fastapi import HTTPException, status
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
PROTECTED_PREFIX = "/v1/"


def token_accepted(expected: str | None, authorization: str | None) -> bool:
    """``Authorization: Bearer <expected>``, compared in constant time; anything goes without a token."""
    if expected is None:
        return True
    scheme, _, given = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(given.encode(), expected.encode())


def too_large_detail(size: int | str, limit: int) -> str:
    return f"request body of {size} bytes exceeds the limit of {limit}"


class RequestGuard:
    def __init__(self, app: ASGIApp, api_token: str | None, max_body_bytes: int) -> None:
        self.app = app
        self.api_token = api_token
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        if scope["method"] not in SAFE_METHODS and scope["path"].startswith(PROTECTED_PREFIX):
            authorization = headers.get(b"authorization", b"").decode("latin-1")
            if not token_accepted(self.api_token, authorization):
                await _answer(send, status.HTTP_401_UNAUTHORIZED, "missing or wrong API token",
                              [(b"www-authenticate", b"Bearer")])
                return
        length = headers.get(b"content-length", b"")
        if length.isdigit() and int(length) > self.max_body_bytes:
            await _answer(send, status.HTTP_413_CONTENT_TOO_LARGE,
                          too_large_detail(int(length), self.max_body_bytes))
            return
        await self.app(scope, self._counted(receive), send)

    def _counted(self, receive: Receive) -> Receive:
        """``receive`` that raises 413 once the body streamed so far passes the limit.

        FastAPI re-raises an ``HTTPException`` from reading the body as that response, so the
        route never sees a body over the limit, whatever the client declared.
        """
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE,
                                        too_large_detail(f"more than {self.max_body_bytes}",
                                                         self.max_body_bytes))
            return message

        return counted


async def _answer(send: Send, code: int, detail: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               *(extra or [])]
    await send({"type": "http.response.start", "status": code, "headers": headers})
    await send({"type": "http.response.body", "body": body})
