"""A multi-node Ray cluster on this machine, started with ``ray start`` as an operator would.

Each node is its own ``ray start --block`` process group with its own CPUs, ports and temp dir;
``stop()`` ends those groups (SIGTERM, then SIGKILL) and any process that still carries this
cluster's marker in its environment, so nothing outlives a test, also when it fails.

Addresses: every node is told to use 127.0.0.2, a loopback address. (Ray turns "127.0.0.1" into
the machine's outward address whenever it may form a cluster; a loopback address other than
that one it takes as given.) So nodes, drivers and Ray Client all talk over loopback. Ray's GCS
and raylet gRPC servers still bind all interfaces (Ray has no flag to narrow them), so the
cluster also requires a token (``RAY_AUTH_MODE=token``, random per cluster).

The nodes' environment is the test's minus ttc's settings and ``PYTHONPATH``, plus the repository
on ``PYTHONPATH`` — ttc installed on the nodes, as in the deploy image — and nothing else: user
code and ``TTC_WORKLOAD_MODULES`` must arrive with the job. Being on the same machine, the nodes
could still read the user's files by path (Ray even adds a driver's working directory to its
workers' ``sys.path``); ``hidden`` prevents that as other machines would: the nodes run in a mount
namespace of their own where that directory is an empty tmpfs (``unshare``; needs root).
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[2]
RAY = str(Path(sys.executable).parent / "ray")  # the CLI an operator runs, from this environment
MARKER = "TTC_TEST_RAY_CLUSTER"
NODE_IP = "127.0.0.2"
WORKER_PORTS = 12  # worker processes a node may start (probe tasks, device actors, spares)
READY_SCRIPT = """
import json, sys, time, ray
ray.init(address=sys.argv[1], log_to_driver=False, configure_logging=False)
deadline = time.monotonic() + float(sys.argv[3])
while time.monotonic() < deadline:
    alive = [n for n in ray.nodes() if n["Alive"]]
    if len(alive) >= int(sys.argv[2]):
        print(json.dumps({n["NodeID"]: n["Resources"].get("CPU", 0) for n in alive}))
        sys.exit(0)
    time.sleep(0.5)
sys.exit(f"fewer than {sys.argv[2]} alive Ray nodes after {sys.argv[3]} s")
"""


@dataclass
class RayNodes:
    """The running cluster: where to reach it and the environment a client needs (the token)."""

    port: int
    client_port: int
    client_env: dict[str, str]
    temp_dir: Path
    marker: str
    groups: list[subprocess.Popen[bytes]] = field(default_factory=list)
    node_cpus: dict[str, float] = field(default_factory=dict)

    @property
    def gcs_address(self) -> str:
        return f"{NODE_IP}:{self.port}"

    @property
    def client_address(self) -> str:
        return f"ray://{NODE_IP}:{self.client_port}"


class Ports:
    """Distinct free ports: all are held open while drawn, so none is handed out twice."""

    def __init__(self, count: int) -> None:
        sockets = [socket.socket() for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        self._free = [sock.getsockname()[1] for sock in sockets]
        for sock in sockets:
            sock.close()

    def take(self) -> int:
        return self._free.pop()

    def flags(self, *names: str) -> list[str]:
        return [arg for name in names for arg in (f"--{name}", str(self.take()))]


def _node_env(marker: str, token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TTC_", "RAY_")) and k != "PYTHONPATH"}
    return {**env, "PYTHONPATH": str(REPOSITORY), "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token,
            "RAY_USAGE_STATS_ENABLED": "0", MARKER: marker}


def start_nodes(cpus: list[int], log_dir: Path, hidden: Path, timeout: float = 180.0) -> RayNodes:
    """Start one head and ``len(cpus) - 1`` worker nodes that cannot see ``hidden``; wait until alive."""
    marker, token = secrets.token_hex(8), secrets.token_hex(16)
    temp_dir = Path(tempfile.mkdtemp(prefix="ttc-ray-", dir="/tmp"))  # short: socket paths are capped
    env = _node_env(marker, token)
    ports = Ports(len(cpus) * (WORKER_PORTS + 8) + 3)
    nodes = RayNodes(ports.take(), ports.take(), {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token},
                     temp_dir, marker)
    common = ["--block", "--disable-usage-stats", "--node-ip-address", NODE_IP,
              "--object-store-memory", str(80 * 1024**2), "--temp-dir", str(temp_dir)]
    try:
        for index, count in enumerate(cpus):
            worker_ports = ",".join(str(ports.take()) for _ in range(WORKER_PORTS))
            args = [*_without(hidden), RAY, "start", *common, "--num-cpus", str(count),
                    "--worker-port-list", worker_ports,
                    *ports.flags("node-manager-port", "object-manager-port", "metrics-export-port",
                            "dashboard-agent-listen-port", "dashboard-agent-grpc-port",
                            "runtime-env-agent-port")]
            if index == 0:
                args += ["--head", "--port", str(nodes.port), "--ray-client-server-port",
                         str(nodes.client_port), "--include-dashboard", "false",
                         *ports.flags("dashboard-port")]
            else:
                args += ["--address", nodes.gcs_address]
            with (log_dir / f"ray-node-{index}.log").open("ab") as sink:
                nodes.groups.append(subprocess.Popen(
                    args, env=env, stdout=sink, stderr=subprocess.STDOUT, cwd=temp_dir,
                    start_new_session=True))
            if index == 0:
                _wait_listening(nodes.groups[0], nodes.port, timeout)  # a worker gives up on a late GCS
        nodes.node_cpus = _wait_alive(nodes, len(cpus), timeout)
    except BaseException:
        stop_nodes(nodes)
        raise
    return nodes


def _without(hidden: Path) -> list[str]:
    """A command prefix: run in a private mount namespace with an empty tmpfs over ``hidden``."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount -t tmpfs tmpfs "$0" && exec "$@"', str(hidden)]


def _wait_listening(head: subprocess.Popen[bytes], port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if head.poll() is not None:
            raise RuntimeError(f"the Ray head exited with {head.returncode}; see ray-node-0.log")
        with contextlib.suppress(OSError), socket.create_connection((NODE_IP, port), timeout=1):
            return
        time.sleep(0.5)
    raise RuntimeError(f"the Ray head's GCS is not listening on {NODE_IP}:{port} after {timeout:.0f} s")


def _wait_alive(nodes: RayNodes, count: int, timeout: float) -> dict[str, float]:
    env = _node_env(nodes.marker, nodes.client_env["RAY_AUTH_TOKEN"])
    done = subprocess.run([sys.executable, "-c", READY_SCRIPT, nodes.gcs_address, str(count), str(timeout)],
                          env=env, cwd=nodes.temp_dir, capture_output=True, text=True, timeout=timeout + 60)
    if done.returncode != 0:
        raise RuntimeError(f"Ray nodes not ready: {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def stop_nodes(nodes: RayNodes, grace: float = 10.0) -> None:
    """End every process of the cluster: its node groups, then any straggler carrying its marker."""
    for group in nodes.groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    for group in nodes.groups:
        try:
            group.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group.pid, signal.SIGKILL)
            group.wait(timeout=10)
    for pid in _marked_processes(nodes.marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _marked_processes(marker: str) -> list[int]:
    """Processes whose environment holds this cluster's marker (Ray workers it started)."""
    needle = f"{MARKER}={marker}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if needle in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
    return found
