"""Request latency into Prometheus, as plain ASGI middleware.

Plain ASGI (not ``@app.middleware``) because it adds no task or thread hop per request, which
matters at the latency target of the API benchmark.
"""

from __future__ import annotations

import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.metrics import Metrics


class TimingMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_and_record)
        finally:
            route = scope.get("route")
            self.metrics.request_seconds.labels(
                scope["method"], getattr(route, "path", "unmatched"), str(status)
            ).observe(time.perf_counter() - started)

