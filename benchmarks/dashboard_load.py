"""How fast a study page with 50 trials loads on loopback (issue 7: under 1 s).

Seeds a SQLite database with one finished study of 50 synthetic probes (600-point loss curves,
as a 3000-iteration probe evaluated every 5 iterations stores) and two executed runs, serves it
with ``create_app(run_studies=False)`` in a thread, then times:
  - ``http``: GET of the page's HTML and of its JSON (``/dashboard/api/studies/{id}``), median;
  - ``browser``: headless Chromium, a fresh context (cold cache) per load, from navigation until
    all 50 table rows and the four charts are drawn.
Prints one JSON object. Run: ``python benchmarks/dashboard_load.py [--loads 5] [--screenshot PNG]``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn
from finished_study import seed

from service.app import create_app
from service.db import Database
from service.settings import Settings

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run",
]
READY = (
    "document.querySelectorAll('#trials tbody tr').length === {n}"
    " && document.querySelector('#plan-card[data-ready]')"
)


def _serve(url: str) -> tuple[uvicorn.Server, int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(Settings(database_url=url), run_studies=False),
                                           host="127.0.0.1", port=port, log_level="warning"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server, port


def _http(base: str, study_id: str, loads: int) -> dict[str, float]:
    timings: dict[str, list[float]] = {"html": [], "json": []}
    pages = {"html": f"/studies/{study_id}", "json": f"/dashboard/api/studies/{study_id}"}
    with httpx.Client(base_url=base) as client:
        for _ in range(loads):
            for name, path in pages.items():
                started = time.perf_counter()
                client.get(path).raise_for_status()
                timings[name].append(time.perf_counter() - started)
        size = len(client.get(f"/dashboard/api/studies/{study_id}").content)
    medians = {f"{k}_median_s": round(statistics.median(v), 4) for k, v in timings.items()}
    return medians | {"json_bytes": size}


def _browser(base: str, study_id: str, trials: int, loads: int, screenshot: Path | None) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    seconds = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        for attempt in range(loads):
            context = browser.new_context(viewport={"width": 1400, "height": 900})
            page = context.new_page()
            started = time.perf_counter()
            page.goto(f"{base}/studies/{study_id}", wait_until="commit")
            page.wait_for_function(READY.format(n=trials), polling="raf")
            seconds.append(time.perf_counter() - started)
            if screenshot and attempt == loads - 1:
                page.screenshot(path=screenshot, full_page=True)
            context.close()
        browser.close()
    return {"page_load_median_s": round(statistics.median(seconds), 4),
            "page_load_max_s": round(max(seconds), 4)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--screenshot", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'ttc.db'}"
        db = Database(url)
        db.migrate()
        study_id = seed(db, args.trials)
        server, port = _serve(url)
        base = f"http://127.0.0.1:{port}"
        try:
            report = {"trials": args.trials, "loads": args.loads, **_http(base, study_id, args.loads),
                      **_browser(base, study_id, args.trials, args.loads, args.screenshot),
                      "load_average_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}
        finally:
            server.should_exit = True
            db.dispose()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
