"""Latency of ``GET /v1/studies/{id}`` at N concurrent clients on loopback; prints JSON.

Starts ``ttc serve`` on a throwaway SQLite database (or uses ``--url``), seeds one finished study,
then runs N closed-loop clients (each sends its next request ``--interval`` seconds after the last
one answered; 0 = back-to-back, a throughput test) until ``--requests`` requests were made or
``--seconds`` passed, whichever comes first.

    python benchmarks/api_latency.py                      # 50 clients, ≤ 5000 requests, ≤ 60 s
    python benchmarks/api_latency.py --clients 50 --interval 1   # 50 dashboards polling each second
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from service import crud
from service.db import Database


def seed(database_url: str) -> str:
    db = Database(database_url)
    db.migrate()
    with db.transaction() as session:
        study_id = crud.create_study(session, spec={"workload": {"name": "digits-mlp"}}).id
        crud.set_state(session, study_id=study_id, state="cancelled")
    db.dispose()
    return study_id


def start_server(database_url: str, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TTC_DATABASE_URL": database_url, "TTC_API_TOKEN": ""}
    env.pop("TTC_API_TOKEN")
    process = subprocess.Popen(
        [sys.executable, "-c", "from service.cli import main; main()", "serve", "--port", str(port)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("the service did not start within 60 s")


async def load(
    url: str, clients: int, requests: int, seconds: float, interval: float
) -> tuple[list[float], int, float]:
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=10) as client:

        async def one_client() -> None:
            nonlocal errors
            while len(latencies) + errors < requests and time.monotonic() < deadline:
                started = time.perf_counter()
                try:
                    response = await client.get(url)
                    ok = response.status_code == 200
                except httpx.HTTPError:
                    ok = False
                if ok:
                    latencies.append(time.perf_counter() - started)
                else:
                    errors += 1
                await asyncio.sleep(interval)

        await client.get(url)  # warm-up: connection, first query
        began = time.perf_counter()
        await asyncio.gather(*(one_client() for _ in range(clients)))
        return latencies, errors, time.perf_counter() - began


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=5000, help="stop after this many requests")
    parser.add_argument("--seconds", type=float, default=60.0, help="stop after this long")
    parser.add_argument("--interval", type=float, default=0.0, help="a client's pause between requests")
    parser.add_argument("--url", help="a running service's base URL (it must hold study --study)")
    parser.add_argument("--study", help="the study id to GET with --url")
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()

    server = None
    with tempfile.TemporaryDirectory() as scratch:
        if args.url:
            base, study_id = args.url.rstrip("/"), args.study
        else:
            database_url = f"sqlite:///{Path(scratch) / 'bench.db'}"
            study_id = seed(database_url)
            server = start_server(database_url, args.port)
            base = f"http://127.0.0.1:{args.port}"
        try:
            latencies, errors, wall = asyncio.run(
                load(f"{base}/v1/studies/{study_id}", args.clients, args.requests, args.seconds,
                     args.interval)
            )
        finally:
            if server is not None:
                server.terminate()
                server.wait(20)
    ms = [1000 * v for v in latencies]
    print(json.dumps({
        "route": "GET /v1/studies/{id}",
        "clients": args.clients,
        "interval_s": args.interval,
        "requests": len(ms),
        "errors": errors,
        "seconds": round(wall, 2),
        "throughput_rps": round(len(ms) / wall, 1),
        "p50_ms": round(percentile(ms, 0.50), 2),
        "p99_ms": round(percentile(ms, 0.99), 2),
        "mean_ms": round(statistics.fmean(ms), 2),
        "cpus": os.cpu_count(),
    }))


if __name__ == "__main__":
    main()
