"""Latency of ``GET /v1/studies/{id}`` at N concurrent clients on loopback; prints JSON.

Starts ``ttc serve`` on a throwaway SQLite database (or uses ``--url``), seeds one finished study
of 50 probes with a plan, then runs two phases, side by side in one run:

- ``saturated``: N keep-alive clients, each sending its next request the moment the last one
  answered. A throughput test: by Little's law latency ≈ N / throughput.
- ``polling``: N clients each sending one request every ``--interval`` seconds, at random phases
  (dashboards and CI jobs polling a study).
- ``polling_4_studies``: the polling load again while 4 studies run (their probes on a local Ray
  that the orchestrator process starts at a lower CPU priority); ``busy_vs_idle_p99`` is its p99
  over the idle polling phase's. The studies are then cancelled: ``cancel_seconds`` is how long
  until all 4 read ``cancelled`` (their probes are cancelled on Ray by then).
- ``floor``: the saturated load against a FastAPI route that returns a constant, served by
  uvicorn alone: what this machine can do at all right now. ``saturated_vs_floor`` (throughput
  ratio) is the figure to compare across runs; host speed here varies by ~1.7× hour to hour.

Each phase stops after ``--requests`` requests or ``--seconds``, whichever comes first. The load
generator is a minimal HTTP/1.1 client on uvloop (about 0.1 ms of CPU per request): a general
client such as httpx spends ~9 ms of CPU per request, which on 2 cores starves the server it
measures. Both processes' CPU per request are reported.

    python benchmarks/api_latency.py                      # 50 clients; ≤ 20000 requests, ≤ 15 s a phase
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import uvloop
from finished_study import seed

from service.db import Database

TARGET_P99_MS = 50.0


@dataclass
class Phase:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0


async def _client(host: str, port: int, path: str, phase: Phase, stop: float, limit: int,
                  interval: float) -> None:
    """One keep-alive connection; ``interval`` 0 sends back-to-back, else once per interval."""
    reader, writer = await asyncio.open_connection(host, port)
    request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode()
    if interval:
        await asyncio.sleep(random.uniform(0, interval))
    try:
        while time.monotonic() < stop and len(phase.latencies) + phase.errors < limit:
            started = time.perf_counter()
            writer.write(request)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = int(head.lower().split(b"content-length:")[1].split(b"\r\n")[0])
            await reader.readexactly(length)
            if status == 200:
                phase.latencies.append(time.perf_counter() - started)
            else:
                phase.errors += 1
            if interval:
                await asyncio.sleep(max(0.0, interval - (time.perf_counter() - started)))
    finally:
        writer.close()


def run_phase(base: str, path: str, clients: int, requests: int, seconds: float, interval: float,
              server_pid: int | None) -> dict[str, float | int | None]:
    host, port = base.removeprefix("http://").split(":")
    phase = Phase()
    client_cpu, server_cpu, began = _cpu_self(), _cpu_of(server_pid), time.perf_counter()

    async def load() -> None:
        stop = time.monotonic() + seconds
        await asyncio.gather(*(_client(host, int(port), path, phase, stop, requests, interval)
                               for _ in range(clients)))

    uvloop.run(load())
    wall = time.perf_counter() - began
    done = max(1, len(phase.latencies))
    ms = sorted(1000 * v for v in phase.latencies)
    server_used = None if server_cpu is None else _cpu_of(server_pid) - server_cpu  # type: ignore[operator]
    return {
        "requests": len(ms), "errors": phase.errors, "seconds": round(wall, 2),
        "throughput_rps": round(len(ms) / wall, 1),
        "p50_ms": round(_percentile(ms, 0.50), 2), "p99_ms": round(_percentile(ms, 0.99), 2),
        "max_ms": round(ms[-1], 2), "mean_ms": round(statistics.fmean(ms), 2),
        "p99_vs_target": round(_percentile(ms, 0.99) / TARGET_P99_MS, 3),
        "server_cpu_ms_per_request": None if server_used is None else round(1000 * server_used / done, 3),
        "client_cpu_ms_per_request": round(1000 * (_cpu_self() - client_cpu) / done, 3),
    }


def _percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _cpu_self() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _cpu_of(pid: int | None) -> float | None:
    """User + system CPU seconds of another process (Linux ``/proc``); None where unreadable."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


FLOOR_APP = """
import uvicorn
from fastapi import FastAPI
app = FastAPI()
@app.get("/healthz")
async def constant() -> dict:
    return {"id": "0123456789ab", "state": "done"}
uvicorn.run(app, host="127.0.0.1", port={port}, log_level="warning")
"""


BUSY_STUDIES = 4
BUSY_SPEC = {  # probes of minutes each: the studies are still running when the phase ends (a
    # target no probe reaches, and an overhead share that does not end the study first)
    "workload": {"name": "digits-mlp"},
    "target": {"metric": "train_loss", "value": 1e-6},
    "cluster": {"backend": "simulated", "nodes": 2, "devices_per_node": 2},
    "search": {"strategies": ["sync", "async_groups"], "batch_sizes": [32]},
    "budget": {"probe_seconds": 86400, "max_probes": 8, "probe_max_iterations": 1_000_000,
               "max_overhead": 10.0},
}


def start_studies(base: str, count: int) -> list[str]:
    """Submit ``count`` studies and wait until all of them hold a lease and have probes running."""
    ids = []
    for _ in range(count):
        submitted = httpx.post(f"{base}/v1/studies", json=BUSY_SPEC)
        if submitted.status_code != 202:
            raise SystemExit(f"the busy study was refused ({submitted.status_code}): {submitted.text}")
        ids.append(submitted.json()["id"])
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        shown = [httpx.get(f"{base}/v1/studies/{i}").json() for i in ids]
        if all(s["probes"].get("running") for s in shown):
            return ids
        time.sleep(1)
    raise SystemExit(f"{count} studies did not all start probing within 300 s")


def cancel_studies(base: str, ids: list[str]) -> float:
    asked = time.monotonic()
    for study_id in ids:
        httpx.post(f"{base}/v1/studies/{study_id}/cancel").raise_for_status()
    while any(httpx.get(f"{base}/v1/studies/{i}").json()["state"] != "cancelled" for i in ids):
        if time.monotonic() - asked > 120:
            raise SystemExit("the studies were not cancelled within 120 s")
        time.sleep(0.1)
    return round(time.monotonic() - asked, 2)


def start_server(database_url: str, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TTC_DATABASE_URL": database_url}
    env.pop("TTC_API_TOKEN", None)
    command = ["-c", "from service.cli.main import main; main()", "serve", "--port", str(port)]
    return _started(subprocess.Popen([sys.executable, *command], env=env, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL), port)


def start_floor(port: int) -> subprocess.Popen[bytes]:
    code = FLOOR_APP.replace("{port}", str(port))
    return _started(subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL), port)


def _started(process: subprocess.Popen[bytes], port: int) -> subprocess.Popen[bytes]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"the server on port {port} did not start within 60 s")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--requests", type=int, default=20000, help="a phase stops after this many")
    parser.add_argument("--seconds", type=float, default=15.0, help="a phase stops after this long")
    parser.add_argument("--interval", type=float, default=0.5, help="a polling client's period")
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
            db = Database(database_url)
            db.migrate()
            study_id = seed(db, trials=50)
            db.dispose()
            server = start_server(database_url, args.port)
            base = f"http://127.0.0.1:{args.port}"
        path = f"/v1/studies/{study_id}"
        try:
            httpx.get(base + path).raise_for_status()  # warm-up; fails loudly on a wrong --study
            pid = server.pid if server else None
            phases = {name: run_phase(base, path, args.clients, args.requests, args.seconds, interval, pid)
                      for name, interval in (("saturated", 0.0), ("polling", args.interval))}
            busy = start_studies(base, BUSY_STUDIES)
            phases["polling_4_studies"] = run_phase(base, path, args.clients, args.requests, args.seconds,
                                                    args.interval, pid)
            phases["polling_4_studies"]["cancel_seconds"] = cancel_studies(base, busy)
        finally:
            if server is not None:
                server.terminate()
                server.wait(20)
    floor = start_floor(args.port + 1)
    try:
        phases["floor"] = run_phase(f"http://127.0.0.1:{args.port + 1}", "/healthz", args.clients,
                                    args.requests, args.seconds, 0.0, floor.pid)
    finally:
        floor.terminate()
        floor.wait(20)
    ratio = phases["saturated"]["throughput_rps"] / max(phases["floor"]["throughput_rps"], 1e-9)
    busy_p99 = phases["polling_4_studies"]["p99_ms"]
    print(json.dumps({
        "route": "GET /v1/studies/{id}", "clients": args.clients, "polling_interval_s": args.interval,
        "target_p99_ms": TARGET_P99_MS, **phases, "saturated_vs_floor": round(ratio, 3),
        "busy_vs_idle_p99": round(busy_p99 / max(phases["polling"]["p99_ms"], 1e-9), 2),
        "load_average_1m": round(os.getloadavg()[0], 2), "cpus": os.cpu_count(),
    }))


if __name__ == "__main__":
    main()
