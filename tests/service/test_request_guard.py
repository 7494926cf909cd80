"""Body size counted on the stream, chunked or not, and the token checked before the body is read
(issue 15, found 1: a 239 KB chunked spec was accepted; a 50 MB chunked body without a token was
parsed in full before the 401)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator

from fastapi import FastAPI
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.service.service_helpers import tiny_spec

LIMIT = 64_000
CHUNK = 16_384


def _chunks(payload: bytes) -> Iterator[bytes]:
    for start in range(0, len(payload), CHUNK):
        yield payload[start:start + CHUNK]


def test_a_chunked_body_over_the_limit_is_413(api: TestClient) -> None:
    spec = tiny_spec()
    spec["search"]["learning_rates"] = [0.1] * 64
    body = json.dumps(spec).encode() + b" " * 239_000  # still valid JSON, 239 KB, no Content-Length
    response = api.post("/v1/studies", content=_chunks(body), headers={"Content-Type": "application/json"})
    assert response.status_code == 413
    assert f"limit of {LIMIT}" in response.json()["detail"]
    assert api.get("/v1/studies").json()["count"] == 0


def test_a_chunked_body_under_the_limit_is_accepted(api: TestClient) -> None:
    body = json.dumps(tiny_spec()).encode()
    response = api.post("/v1/studies", content=_chunks(body), headers={"Content-Type": "application/json"})
    assert response.status_code == 202


class _EndlessBody:
    """An ASGI ``receive`` that streams chunk after chunk and counts what the app pulled."""

    def __init__(self) -> None:
        self.bytes_read = 0

    async def __call__(self) -> dict:
        self.bytes_read += CHUNK
        return {"type": "http.request", "body": b" " * CHUNK, "more_body": True}


def _post_endless(app: FastAPI, token: str | None) -> tuple[int, int]:
    """POST /v1/studies with an endless chunked body straight into the ASGI app: (status, bytes read)."""
    headers = [(b"host", b"localhost"), (b"content-type", b"application/json"),
               (b"transfer-encoding", b"chunked")]
    if token:
        headers.append((b"authorization", f"Bearer {token}".encode()))
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": "/v1/studies", "raw_path": b"/v1/studies", "root_path": "",
             "query_string": b"", "headers": headers, "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
             "app": app, "state": {}}
    body = _EndlessBody()
    started: list[int] = []

    async def send(message: dict) -> None:
        if message["type"] == "http.response.start":
            started.append(message["status"])

    # A thread of its own: another test's event loop may still be running on this one.
    worker = threading.Thread(target=lambda: asyncio.run(app(scope, body, send)))
    worker.start()
    worker.join(timeout=60)
    return started[0], body.bytes_read


def test_no_token_is_401_before_one_byte_of_the_body_is_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'ttc.db'}", api_token="s3cret"),
                     run_studies=False)
    assert _post_endless(app, token=None) == (401, 0)
    assert _post_endless(app, token="wrong")[0] == 401


def test_an_endless_chunked_body_is_cut_off_at_the_limit(tmp_path) -> None:  # type: ignore[no-untyped-def]
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'ttc.db'}", api_token="s3cret",
                              max_spec_bytes=LIMIT), run_studies=False)
    status, read = _post_endless(app, token="s3cret")
    assert status == 413
    assert read <= LIMIT + CHUNK
