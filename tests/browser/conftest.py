"""Browser-test fixtures: the service in a subprocess on a free loopback port, headless Chromium.

Chromium comes from Debian's packages (``.ci/install-browser``), never from ``playwright install``;
without it, or without Playwright, every test here is skipped.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run",
]
STARTUP_SECONDS = 240  # importing torch and Ray on 2 busy cores can take minutes
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def browser():  # type: ignore[no-untyped-def]
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing; run .ci/install-browser")
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    yield context.new_page()
    context.close()


@pytest.fixture
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="module")
def service_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``uvicorn service.app:create_app`` with its scheduler and a fresh SQLite file, one per module
    (its local Ray takes the longest to start)."""
    tmp_path = tmp_path_factory.mktemp("service")
    port = _free_port()
    env = {
        **os.environ,
        "TTC_DATABASE_URL": f"sqlite:///{tmp_path / 'ttc.db'}",
        "TTC_POLL_SECONDS": "0.2",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    log = (tmp_path / "service.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "uvicorn", "--factory", "service.app:create_app",
         "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"],
        env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            try:
                httpx.get(f"{url}/v1/studies", timeout=2).raise_for_status()
                break
            except httpx.HTTPError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the service did not start:\n{(tmp_path / 'service.log').read_text()}")
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
