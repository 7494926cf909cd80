"""What a request must pass before any route reads its body: its ``Host``, the API token (or, with
no token, a same-origin sender: ``service.middleware.request_intent``), then the body's size and pace.

Plain ASGI, outside FastAPI's routing, because FastAPI reads and parses a request's whole body
before it resolves a route's dependencies: a token checked as a dependency is checked only after
an attacker's 50 MB body is in memory. Here a mutating ``/v1`` call without the token is refused
before one byte of its body is read, and a body is counted as it streams in, so a chunked upload
(no ``Content-Length``) is cut off at the limit like a declared one. A body must also arrive whole
within ``body_timeout_seconds``: a client that declares 5,000 bytes and sends 12 would otherwise
hold a connection (and a worker thread waiting on it) for as long as it likes.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import time

from fastapi import HTTPException, status
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.middleware.request_intent import cross_site_reason, host_allowed

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
    def __init__(self, app: ASGIApp, api_token: str | None, max_body_bytes: int,
                 allowed_hosts: tuple[str, ...], body_timeout_seconds: float) -> None:
        self.app = app
        self.api_token = api_token
        self.max_body_bytes = max_body_bytes
        self.allowed_hosts = allowed_hosts
        self.body_timeout_seconds = body_timeout_seconds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        host = headers.get("host", "")
        if not host_allowed(host, self.allowed_hosts):
            await _answer(send, status.HTTP_400_BAD_REQUEST,
                          f"host {host!r} is not one this service answers to (TTC_ALLOWED_HOSTS)")
            return
        if scope["method"] not in SAFE_METHODS and scope["path"].startswith(PROTECTED_PREFIX):
            if not token_accepted(self.api_token, headers.get("authorization", "")):
                await _answer(send, status.HTTP_401_UNAUTHORIZED, "missing or wrong API token",
                              [(b"www-authenticate", b"Bearer")])
                return
            refused = None if self.api_token else cross_site_reason(
                headers.get("origin"), headers.get("sec-fetch-site"), host)
            if refused:
                await _answer(send, status.HTTP_403_FORBIDDEN,
                              f"{refused}; with no TTC_API_TOKEN only same-origin writes are taken")
                return
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self.max_body_bytes:
            await _answer(send, status.HTTP_413_CONTENT_TOO_LARGE,
                          too_large_detail(int(length), self.max_body_bytes))
            return
        await self.app(scope, self._counted(receive), send)

    def _counted(self, receive: Receive) -> Receive:
        """``receive`` that raises 413 once the body streamed so far passes the limit, and 408
        (closing the connection) when the body is not whole ``body_timeout_seconds`` after the
        route began to read it.

        FastAPI re-raises an ``HTTPException`` from reading the body as that response, so the
        route never sees a body over the limit, whatever the client declared. Once the body is
        whole, ``receive`` only waits for the client to leave (an event stream listens for
        that for an hour) and is no longer timed.
        """
        received = 0
        deadline: float | None = None
        whole = False

        async def counted() -> Message:
            nonlocal received, deadline, whole
            if whole:
                return await receive()
            deadline = deadline or time.monotonic() + self.body_timeout_seconds
            try:
                message = await asyncio.wait_for(receive(), max(deadline - time.monotonic(), 0.0))
            except TimeoutError:
                raise HTTPException(
                    status.HTTP_408_REQUEST_TIMEOUT,
                    f"the request body did not arrive whole within {self.body_timeout_seconds:g} s",
                    headers={"Connection": "close"}) from None
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                whole = not message.get("more_body", False)
                if received > self.max_body_bytes:
                    raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE,
                                        too_large_detail(f"more than {self.max_body_bytes}",
                                                         self.max_body_bytes))
            return message

        return counted


async def _answer(send: Send, code: int, detail: str, extra: list[tuple[bytes, bytes]] | None = None) -> None:
    """A refusal before the body is read: the connection closes, rather than wait for that body."""
    body = json.dumps({"detail": detail}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
               (b"connection", b"close"), *(extra or [])]
    await send({"type": "http.response.start", "status": code, "headers": headers})
    await send({"type": "http.response.body", "body": body})
