"""Shared test helpers: tiny specs and a ``ttc serve`` subprocess."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI
from fastapi.testclient import TestClient

LOCAL_URL = "http://localhost"


def tiny_spec(**budget: Any) -> dict[str, Any]:
    """A study of a few short probes on a 1×2 simulated cluster (seconds per probe on a CPU); its
    target is beyond the first probe, so the study uses its whole probe budget."""
    return {
        "workload": {"name": "digits-mlp"},
        "target": {"metric": "train_loss", "value": 0.02, "eval_every": 5},
        "cluster": {"backend": "simulated", "nodes": 1, "devices_per_node": 2},
        "search": {"strategies": ["sync", "async_groups"], "batch_sizes": [32],
                   "learning_rates": [0.1, 0.3], "momenta": [0.9]},
        "budget": {"probe_seconds": 0.5, "max_probes": 3, "probe_max_iterations": 50, **budget},
    }


def spec_with(path: tuple[str, ...], value: object) -> dict[str, Any]:
    """``tiny_spec`` with the field at ``path`` (keys from the top) set to ``value``."""
    spec = tiny_spec()
    node = spec
    for key in path[:-1]:
        node = node.setdefault(key, {})
    node[path[-1]] = value
    return spec


def mid_study_spec() -> dict[str, Any]:
    """A study long enough to be interrupted: a target beyond the first probe and a generous
    overhead share, so the sweep's second batch runs two probes at once and a fault can land with
    probes finished and one in flight."""
    spec = tiny_spec(max_probes=7, probe_max_iterations=300, max_overhead=10.0)
    spec["search"].update(learning_rates=[0.05, 0.1, 0.3], momenta=[0.6, 0.9])
    spec["target"]["value"] = 0.002
    return spec


def local_client(app: FastAPI) -> TestClient:
    """A test client that calls the service by a name it answers to (TTC_ALLOWED_HOSTS' loopback
    default), as a browser or the CLI on the same machine does."""
    return TestClient(app, base_url=LOCAL_URL)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ServiceProcess:
    """``ttc serve`` in a child process, so a test can SIGKILL it like a crashed host.

    Its orchestrator runs at nice 0 unless a test says otherwise: these tests are about
    correctness, not priority. At the default nice 10 beside two CPU-bound jobs at nice 0 (a loaded
    CI machine) the studies' fits get about 5% of a core, and the slow step that takes 15 minutes
    on quiet cores did not finish in 70 (22 of 36 tests).
    """

    def __init__(self, database_url: str, ray_address: str, log: Path, *args: str, **env: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ, "TTC_DATABASE_URL": database_url, "TTC_RAY_ADDRESS": ray_address,
            "TTC_LEASE_SECONDS": "3", "TTC_POLL_SECONDS": "0.5", "TTC_ORCHESTRATOR_NICE": "0", **env,
        }
        self.log = log
        self.args = args
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> ServiceProcess:
        with self.log.open("ab") as sink:
            self.process = subprocess.Popen(
                [sys.executable, "-c", "from service.cli.main import main; main()", "serve",
                 "--port", str(self.port), *self.args],
                env=self.env, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"service exited with {self.process.returncode}; see {self.log}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        raise TimeoutError(f"service not healthy within {timeout}s; see {self.log}")

    def kill(self) -> None:
        """SIGKILL to every process of ``ttc serve`` at once, as when its host dies: no shutdown hook
        runs, leases stay until they expire. Killing the API process alone left the orchestrator to
        notice within a second and stop gracefully, committing a segment after the test had read
        what was committed (a CI failure of the training-restart test on PostgreSQL)."""
        assert self.process is not None
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()


def wait_for(predicate, timeout: float, interval: float = 0.1, what: str = "condition",  # type: ignore[no-untyped-def]
             progress=None):
    """Poll ``predicate`` until it is truthy. With ``progress`` (a callable whose value changes as the
    awaited work advances), ``timeout`` is the longest wait *without progress*: a study on starved
    cores is slow but not stuck, and only a stall should fail the test."""
    seen = progress() if progress else None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
        if progress and (now := progress()) != seen:
            seen, deadline = now, time.monotonic() + timeout
    stalled = " without progress" if progress else ""
    raise TimeoutError(f"{what} not reached within {timeout}s{stalled}")
