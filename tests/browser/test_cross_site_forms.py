"""Issue 36, found 3: a page on another site cannot cancel, train or create through the browser of
someone who has the service open, when the service has no token (the default). The page submits
plain HTML forms (the only writes a browser sends cross-site without asking the service first)
and a no-CORS ``fetch``; nothing happens, and each answer is a 4xx."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from tests.service.service_helpers import ServiceProcess, tiny_spec

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    tmp_path: Path = tmp_path_factory.mktemp("cross_site")
    process = ServiceProcess(f"sqlite:///{tmp_path / 'ttc.db'}", "", tmp_path / "serve.log", "--no-studies")
    process.env.pop("TTC_API_TOKEN", None)
    process.start()
    try:
        yield process.url
    finally:
        process.stop()


@pytest.fixture(scope="module")
def other_site() -> Iterator[tuple[str, dict[str, str]]]:
    """A real server for the attacker's page, on this machine (a public origin's requests to
    loopback are blocked by Chromium itself, which would test the browser, not the service):
    ``http://localhost:<port>`` is another site than the service's ``http://127.0.0.1:<port>``."""
    page: dict[str, str] = {"html": ""}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            body = page["html"].encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://localhost:{server.server_address[1]}", page
    finally:
        server.shutdown()


def _form(action: str, enctype: str = "application/x-www-form-urlencoded", fields: str = "") -> str:
    return (f'<form method="POST" action="{action}" enctype="{enctype}">{fields}</form>'
            "<script>document.forms[0].submit()</script>")


def _attack(page, other_site: tuple[str, dict[str, str]], html: str, target: str) -> int:  # type: ignore[no-untyped-def]
    """Open a page on another site that sends a write to ``target``; the status the service gave."""
    url, served = other_site
    served["html"] = html
    with page.expect_response(lambda response: response.url == target) as answer:
        page.goto(f"{url}/")
    return answer.value.status


def test_a_cross_site_form_cannot_cancel_train_or_create(  # type: ignore[no-untyped-def]
        page, service: str, other_site: tuple[str, dict[str, str]]) -> None:
    study_id = httpx.post(f"{service}/v1/studies", json=tiny_spec()).json()["id"]
    studies = httpx.get(f"{service}/v1/studies").json()["count"]
    json_in_text = """<input name='{"workload": {"name": "digits-mlp"}, "x": "' value='"}'>"""
    attacks = [
        (_form(f"{service}/v1/studies/{study_id}/cancel"), f"{service}/v1/studies/{study_id}/cancel"),
        (_form(f"{service}/v1/studies/{study_id}/train"), f"{service}/v1/studies/{study_id}/train"),
        (_form(f"{service}/v1/studies", "text/plain", json_in_text), f"{service}/v1/studies"),
        (_form(f"{service}/v1/studies", "multipart/form-data", json_in_text), f"{service}/v1/studies"),
    ]
    for html, target in attacks:
        assert _attack(page, other_site, html, target) == 403, target
    no_cors = (f"<script>fetch('{service}/v1/studies', {{method: 'POST', mode: 'no-cors', "
               f"headers: {{'Content-Type': 'text/plain'}}, body: JSON.stringify({{workload: "
               f"{{name: 'digits-mlp'}}}})}})</script>")
    assert _attack(page, other_site, no_cors, f"{service}/v1/studies") == 403

    study = httpx.get(f"{service}/v1/studies/{study_id}").json()
    assert study["cancel_requested"] is False and study["state"] == "pending"
    assert httpx.get(f"{service}/v1/studies/{study_id}/training").status_code == 409  # none started
    assert httpx.get(f"{service}/v1/studies").json()["count"] == studies  # none created
