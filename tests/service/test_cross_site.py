"""Issue 36, found 2 and 3: writes only by intent. The Host is one the service answers to; with no
token a write must come from the service's own origin and be JSON; an empty token is no token (so
compose, which passes an unset variable as ``''``, takes writes); a half-sent body is dropped."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from fastapi.testclient import TestClient

from service.app import create_app
from service.middleware.request_intent import cross_site_reason, host_allowed, host_name
from service.settings import Settings
from tests.service.service_helpers import LOCAL_URL, ServiceProcess, local_client, tiny_spec

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
LOOPBACK = Settings().allowed_host_names


@pytest.fixture
def open_api(tmp_path: Path) -> Iterator[TestClient]:
    """The API with no token configured (the default), as ``ttc serve`` runs it out of the box."""
    with local_client(create_app(Settings(database_url=f"sqlite:///{tmp_path / 'ttc.db'}"),
                                 run_studies=False)) as client:
        yield client


def test_an_empty_token_is_no_token(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """compose passes ``TTC_API_TOKEN: ${TTC_API_TOKEN:-}``: every write was a 401 (found 2)."""
    monkeypatch.setenv("TTC_API_TOKEN", "")
    monkeypatch.setenv("TTC_DATABASE_URL", f"sqlite:///{tmp_path / 'ttc.db'}")
    assert Settings().api_token is None
    with local_client(create_app(run_studies=False)) as client:
        assert client.post("/v1/studies", json=tiny_spec()).status_code == 202


def test_compose_and_kubernetes_name_their_hosts_and_need_no_token() -> None:
    service = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]["ttc"]["environment"]
    assert service["TTC_API_TOKEN"] == "${TTC_API_TOKEN:-}"  # unset: no token (test above)
    compose_hosts = service["TTC_ALLOWED_HOSTS"].removeprefix("${TTC_ALLOWED_HOSTS:-").removesuffix("}")
    assert {"ttc", "localhost"} <= set(compose_hosts.split(","))
    settings = yaml.safe_load((DEPLOY / "kubernetes" / "settings.yaml").read_text())["data"]
    kubernetes_hosts = set(settings["TTC_ALLOWED_HOSTS"].split(","))
    assert {"ttc", "ttc.default.svc.cluster.local", "localhost"} <= kubernetes_hosts
    deployment = next(yaml.safe_load_all((DEPLOY / "kubernetes" / "service.yaml").read_text()))
    probe = deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]
    assert {"name": "Host", "value": "localhost"} in probe["httpHeaders"]  # not the pod's IP: a 400


@pytest.mark.parametrize(("host", "allowed"), [
    ("localhost", True), ("localhost:8000", True), ("127.0.0.1:8000", True), ("[::1]:8000", True),
    ("[::1]", True), ("LOCALHOST", True), ("evil.example", False), ("127.0.0.1.evil.example", False),
    ("", False), ("[::2]:8000", False),
])
def test_loopback_is_the_default_host_allowlist(host: str, allowed: bool) -> None:
    assert host_allowed(host, LOOPBACK) is allowed


def test_host_patterns() -> None:
    assert host_name("[::1]:8000") == "[::1]" and host_name("Example.org:80") == "example.org"
    assert host_allowed("api.example.org", ("*.example.org",))
    assert not host_allowed("example.org", ("*.example.org",))
    assert not host_allowed("evilexample.org", ("*.example.org",))
    assert host_allowed("anything:1", ("*",))


def test_a_request_for_another_host_is_400(open_api: TestClient) -> None:
    """DNS rebinding: a page whose own name resolves to 127.0.0.1 calls the service as itself."""
    for path in ("/v1/studies", "/", "/healthz"):
        assert open_api.get(path, headers={"Host": "rebound.example"}).status_code == 400
    rebound = open_api.post("/v1/studies", json=tiny_spec(), headers={"Host": "rebound.example"})
    assert rebound.status_code == 400
    assert open_api.get("/v1/studies", headers={"Host": "127.0.0.1:8000"}).status_code == 200


def test_allowed_hosts_setting(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'ttc.db'}", allowed_hosts="ttc, *.corp.example")
    with TestClient(create_app(settings, run_studies=False), base_url="http://ttc:8000") as client:
        assert client.get("/v1/studies").status_code == 200
        assert client.get("/v1/studies", headers={"Host": "ttc.corp.example"}).status_code == 200
        assert client.get("/v1/studies", headers={"Host": "localhost"}).status_code == 400


@pytest.mark.parametrize("content_type", [
    "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"])
def test_a_form_or_text_write_is_415(open_api: TestClient, content_type: str) -> None:
    """What a plain HTML form sends; an empty form POST to train started a 100,000-iteration run."""
    study_id = open_api.post("/v1/studies", json=tiny_spec()).json()["id"]
    for path, body in ((f"/v1/studies/{study_id}/train", b""), (f"/v1/studies/{study_id}/cancel", b""),
                       ("/v1/studies", b"{}"), ("/v1/predict", b"{}"), ("/v1/runs", b"{}")):
        response = open_api.post(path, content=body, headers={"Content-Type": content_type})
        assert response.status_code == 415, (path, response.text)
    assert open_api.get(f"/v1/studies/{study_id}/training").status_code == 409  # no training started


def test_a_body_without_a_content_type_is_415(open_api: TestClient) -> None:
    response = open_api.post("/v1/studies", content=b'{"workload": {"name": "digits-mlp"}}')
    assert response.status_code == 415


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"},
    {"Origin": "null"},
    {"Origin": "http://localhost:3000"},  # another server on this machine: another origin
    {"Sec-Fetch-Site": "cross-site"},
    {"Sec-Fetch-Site": "same-site"},
    {"Origin": f"{LOCAL_URL}", "Sec-Fetch-Site": "cross-site"},
])
def test_a_cross_site_write_without_a_token_is_403(open_api: TestClient, headers: dict[str, str]) -> None:
    study_id = open_api.post("/v1/studies", json=tiny_spec()).json()["id"]
    for path, body in ((f"/v1/studies/{study_id}/cancel", None), (f"/v1/studies/{study_id}/train", {}),
                       ("/v1/studies", tiny_spec())):
        assert open_api.post(path, json=body, headers=headers).status_code == 403, (path, headers)
    assert open_api.get(f"/v1/studies/{study_id}").json()["cancel_requested"] is False


def test_same_origin_and_command_line_writes_are_taken(open_api: TestClient) -> None:
    same_origin = {"Origin": LOCAL_URL, "Sec-Fetch-Site": "same-origin"}
    assert open_api.post("/v1/studies", json=tiny_spec(), headers=same_origin).status_code == 202
    study_id = open_api.post("/v1/studies", json=tiny_spec()).json()["id"]  # the CLI: neither header
    assert open_api.post(f"/v1/studies/{study_id}/cancel").status_code == 202  # no body: no type needed


def test_with_a_token_the_token_is_the_proof_of_intent(api: TestClient) -> None:
    """A page on another site cannot read or send the token; a client that has it may be anywhere."""
    elsewhere = {"Origin": "http://tool.example", "Sec-Fetch-Site": "cross-site"}
    assert api.post("/v1/studies", json=tiny_spec(), headers=elsewhere).status_code == 202
    del api.headers["Authorization"]
    assert api.post("/v1/studies", json=tiny_spec(), headers={"Origin": LOCAL_URL}).status_code == 401


def test_cross_site_reasons() -> None:
    assert cross_site_reason(None, None, "localhost:8000") is None
    assert cross_site_reason("http://localhost:8000", "same-origin", "localhost:8000") is None
    assert cross_site_reason("http://localhost:8000", None, "127.0.0.1:8000") is not None
    assert cross_site_reason(None, "none", "localhost") is None


def _half_sent(port: int, declared: int = 5000, sent: int = 12) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(f"POST /v1/studies HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {declared}\r\n\r\n".encode() + b"{" * sent)
    return sock


def _read_until_closed(sock: socket.socket, timeout: float) -> bytes:
    sock.settimeout(timeout)
    received = b""
    while chunk := sock.recv(4096):
        received += chunk
    return received


@pytest.mark.parametrize("token", [None, "s3cret"])
def test_a_half_sent_body_is_dropped(tmp_path: Path, token: str | None) -> None:
    """12 of 5,000 declared bytes, then silence: such connections stayed open for good (found 3).
    Now the service answers 408 and closes the connection once the body timeout has passed; the
    socket's own timeout (30 s) only keeps a regression from hanging the test."""
    env = {"TTC_BODY_TIMEOUT_SECONDS": "1"} | ({"TTC_API_TOKEN": token} if token else {})
    service = ServiceProcess(f"sqlite:///{tmp_path / 'ttc.db'}", "", tmp_path / "serve.log",
                             "--no-studies", **env).start()
    try:
        sockets = [_half_sent(service.port) for _ in range(20)]
        started = time.monotonic()
        answers = [_read_until_closed(sock, timeout=30) for sock in sockets]
        elapsed = time.monotonic() - started
        for sock in sockets:
            sock.close()
    finally:
        service.stop()
    expected = b" 401 " if token else b" 408 "
    status_lines = {answer.split(b"\r\n")[0] for answer in answers}
    assert len(status_lines) == 1 and expected in status_lines.pop(), answers[0]
    print(f"20 half-sent bodies: all closed {elapsed:.2f} s after the last was sent")
