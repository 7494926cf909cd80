"""A 405's ``Allow`` names every method of the path (RFC 9110 §15.5.6), not those of one route.

FastAPI declares ``GET /v1/studies`` and ``POST /v1/studies`` as two routes, and its 405 lists the
methods of the first one the path matched: ``DELETE /v1/studies`` answered ``Allow: POST``. Here the
header is rebuilt from every route whose path matches, with ``HEAD`` wherever ``GET`` is
(``service.middleware.head_as_get``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


class AllowHeader:
    def __init__(self, app: ASGIApp, routes: Callable[[], Sequence[BaseRoute]]) -> None:
        self.app = app
        self.routes = routes  # read per request: routers are included after the middleware is added

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_allow(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 405:
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"allow"]
                message = {**message, "headers": [*headers, (b"allow", self.allowed(scope).encode())]}
            await send(message)

        await self.app(scope, receive, with_allow)

    def allowed(self, scope: Scope) -> str:
        """The methods some route takes at this path: each is tried against every route (routers
        included by FastAPI answer ``matches`` for their whole subtree)."""
        routes = self.routes()
        methods = [method for method in METHODS
                   if any(route.matches({**scope, "method": method})[0] == Match.FULL for route in routes)]
        return ", ".join(methods + (["HEAD"] if "GET" in methods else []))
