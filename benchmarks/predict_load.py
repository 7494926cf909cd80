"""Latency of ``GET /v1/studies`` while N ``POST /v1/predict`` run (issue 36, item 8); prints JSON.

Starts ``ttc serve`` on a throwaway SQLite database (one API worker, its orchestrator), reads
``GET /v1/studies`` once every ``--interval`` seconds while idle, then fires ``--predicts``
concurrent predicts of one tiny config each and keeps reading until the last predict answers.
Reported: the reads' latency idle and during the predicts (p50, p95, max, and the first read
after the predicts were sent), each predict's wall seconds and status, and the CPU seconds the API
process itself spent meanwhile (its threads; not the processes it started).

With ``--warm`` one predict runs first, alone, so Ray is started before the measured ones (a
predict in the API process used to start Ray there: concurrent first predicts raced ``ray.init``).

Bounded: each predict times out after ``--timeout`` seconds; the whole run after about twice that.

    python benchmarks/predict_load.py --predicts 8 [--warm]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

SPEC = {
    "workload": {"name": "digits-mlp"},
    "target": {"metric": "train_loss", "value": 0.02, "eval_every": 5},
    "cluster": {"backend": "simulated", "nodes": 1, "devices_per_node": 2},
    "budget": {"probe_seconds": 0.5, "max_probes": 3, "probe_max_iterations": 50},
}
CONFIG = {"strategy": "sync", "nodes": 1, "devices_per_node": 2, "batch_size": 32, "lr": 0.1}


def _summary(ms: list[float]) -> dict[str, float | int | None]:
    if not ms:
        return {"count": 0, "p50": None, "p95": None, "max": None}
    ordered = sorted(ms)
    return {"count": len(ms), "p50": round(statistics.median(ordered), 1),
            "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 1),
            "max": round(ordered[-1], 1)}


def _read(client: httpx.Client) -> float:
    started = time.perf_counter()
    client.get("/v1/studies", timeout=120).raise_for_status()
    return (time.perf_counter() - started) * 1000


def _serve(port: int, database: str, log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "TTC_DATABASE_URL": database}
    command = [sys.executable, "-c", "from service.cli.main import main; main()",
               "serve", "--port", str(port)]
    with log.open("wb") as sink:
        return subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)


def _process_cpu_seconds(pid: int) -> float:
    """User + system seconds of ``pid`` itself, threads included, children not (from /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(v) for v in fields[11:13]) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--predicts", type=int, default=8)
    parser.add_argument("--interval", type=float, default=0.2)
    parser.add_argument("--idle-reads", type=int, default=25)
    parser.add_argument("--timeout", type=float, default=240.0)
    parser.add_argument("--warm", action="store_true", help="one predict first, alone (Ray started)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="ttc-predict-load-"))
    database, log = f"sqlite:///{scratch / 'ttc.db'}", scratch / "serve.log"
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = _serve(port, database, log)
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base) as client:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if client.get("/healthz", timeout=2).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                if time.monotonic() > deadline:
                    raise SystemExit("ttc serve did not become healthy within 120 s")
                time.sleep(0.3)
            warm = None
            if args.warm:
                warm = client.post("/v1/predict", json={"spec": SPEC, "configs": [CONFIG]},
                                   timeout=args.timeout).status_code
            idle = []
            for _ in range(args.idle_reads):
                idle.append(_read(client))
                time.sleep(args.interval)
            cpu_before = _process_cpu_seconds(server.pid)
            results: list[tuple[float, int]] = []

            def predict() -> None:
                started = time.perf_counter()
                try:
                    status = httpx.post(f"{base}/v1/predict", json={"spec": SPEC, "configs": [CONFIG]},
                                        timeout=args.timeout).status_code
                except httpx.TimeoutException:
                    status = 0
                results.append((time.perf_counter() - started, status))

            threads = [threading.Thread(target=predict) for _ in range(args.predicts)]
            for thread in threads:
                thread.start()
            during = []
            first = None
            stop = time.monotonic() + 2 * args.timeout
            while any(t.is_alive() for t in threads) and time.monotonic() < stop:
                during.append(_read(client))
                first = during[0] if first is None else first
                time.sleep(args.interval)
            for thread in threads:
                thread.join(args.timeout)
        seconds = [s for s, _ in results]
        print(json.dumps({
            "predicts": args.predicts,
            "warm_predict_status": warm,
            "reads_idle_ms": _summary(idle),
            "reads_during_predicts_ms": {**_summary(during), "first": round(first, 1) if first else None},
            "predict_seconds": {"p50": round(statistics.median(seconds), 2), "max": round(max(seconds), 2)},
            "predict_status": sorted(status for _, status in results),
            "api_process_cpu_seconds_during": round(_process_cpu_seconds(server.pid) - cpu_before, 2),
            "load_average_1m": os.getloadavg()[0],
            "service_log": str(log),
        }, indent=2))
    finally:
        server.terminate()
        server.wait(60)


if __name__ == "__main__":
    main()
