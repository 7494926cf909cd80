"""Request latency into Prometheus and a body-size limit, as plain ASGI middleware.

Plain ASGI (not ``@app.middleware``) because it adds no task or thread hop per request, which
matters at the latency target of the API benchmark.
"""

from __future__ import annotations

import json
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.metrics import Metrics


class TimingMiddleware:
    def __init__(self, app: ASGIApp, metrics: Metrics, max_body_bytes: int) -> None:
        self.app = app
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope["headers"]).get(b"content-length", b"")
        if length.isdigit() and int(length) > self.max_body_bytes:
            await _too_large(send, int(length), self.max_body_bytes)
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


async def _too_large(send: Send, length: int, limit: int) -> None:
    body = json.dumps({"detail": f"request body of {length} bytes exceeds the limit of {limit}"}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 413, "headers": headers})
    await send({"type": "http.response.body", "body": body})
