"""``HEAD`` answers as ``GET`` does, without the body (RFC 9110 §9.3.2).

FastAPI's routes take only the methods they declare, so ``HEAD /`` (what uptime checks and
``curl -I`` send) was a 405. Here a HEAD request runs as a GET and its body is dropped: the status
and headers, ``Content-Length`` included, are the GET's. The response ends at its first body
message, so a HEAD of an event stream does not stay open: the server then reports the client
gone and the stream stops.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadAsGet:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return
        ended = False

        async def without_body(message: Message) -> None:
            nonlocal ended
            if message["type"] != "http.response.body":
                await send(message)
            elif not ended:
                ended = True
                await send({"type": "http.response.body", "body": b"", "more_body": False})

        await self.app({**scope, "method": "GET"}, receive, without_body)
