"""``ttc tune`` against a two-node Ray cluster started with ``ray start``, as deploy/ wires it.

The user's factory lives in a directory of its own. ``ttc`` runs from there (so it can import
the module, as users expect); the Ray nodes have ttc but neither the module nor
``TTC_WORKLOAD_MODULES``, and cannot see the user's directory (``ray_nodes``: hidden as on
other machines) — module and allowlist must arrive with the job (runtime_env). Every process
that builds the workload writes where it ran and which file it imported, so the test sees the
device actors on both nodes, running the copy Ray shipped.

Through ``RAY_ADDRESS`` as a GCS address (a Ray node in the service's container) and as Ray
Client ``ray://`` (compose and Kubernetes). Figures (wall time, node ids) are printed: run with
``-s`` to see them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.ray_nodes import REPOSITORY, RayNodes, start_nodes, stop_nodes

pytestmark = pytest.mark.slow
TTC = str(Path(sys.executable).parent / "ttc")

USER_MODULE = '''
"""A user's workload module: a two-class problem in 8 dimensions, and a broken variant."""
import json
import os

import torch
from pydantic import BaseModel, Field
from torch import nn

from worker.workloads import Workload
from worker.workloads.base import cross_entropy

EVIDENCE = {evidence!r}


class Params(BaseModel):
    hidden: int = Field(16, gt=0)


def _record() -> None:
    import ray

    if not ray.is_initialized():
        return
    context = ray.get_runtime_context()
    line = {{"node": context.get_node_id(), "actor": context.get_actor_id(), "pid": os.getpid(),
             "file": __file__}}
    with open(EVIDENCE, "a") as sink:
        sink.write(json.dumps(line) + "\\n")


def make(seed: int = 0, hidden: int = 16) -> Workload:
    _record()
    params = Params(hidden=hidden)
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(512, 8, generator=generator)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()

    def build() -> nn.Module:
        return nn.Sequential(nn.Linear(8, params.hidden), nn.ReLU(), nn.Linear(params.hidden, 2))

    return Workload("{name}", build, cross_entropy, x[:448], y[:448], x[448:], y[448:], 0.3)


def broken(seed: int = 0) -> Workload:
    return make(seed, hidden=0)
'''


def spec_text(module: str, function: str = "make", devices_per_node: int = 1) -> str:
    return textwrap.dedent(f"""\
        workload: {{factory: "{module}:{function}"}}
        target: {{metric: train_loss, value: 0.45, eval_every: 5}}
        cluster: {{backend: ray, nodes: 2, devices_per_node: {devices_per_node}, device: {{name: cpu}}}}
        search: {{strategies: [sync], batch_sizes: [32], learning_rates: [0.3], momenta: [0.9], nodes: [2]}}
        budget: {{probe_seconds: 30, max_probes: 1, probe_max_iterations: 30}}
        """)


@pytest.fixture(scope="module")
def userland(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the users' projects live: visible to ttc, not to the Ray nodes."""
    return tmp_path_factory.mktemp("userland")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, userland: Path) -> Iterator[RayNodes]:
    nodes = start_nodes([2, 2], tmp_path_factory.mktemp("ray-logs"), hidden=userland)
    try:
        yield nodes
    finally:
        stop_nodes(nodes)


@pytest.fixture
def user_dir(userland: Path, tmp_path: Path) -> tuple[Path, str]:
    """A project holding only the user's module (unique name: Ray caches modules by name)."""
    name = f"userwl_{uuid.uuid4().hex[:8]}"
    directory = userland / name
    directory.mkdir()
    source = USER_MODULE.format(evidence=str(tmp_path / "evidence.jsonl"), name=name)
    (directory / f"{name}.py").write_text(source)
    return directory, name


def ttc(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 540) -> tuple[int, str, str, float]:
    started = time.monotonic()
    done = subprocess.run([TTC, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr, time.monotonic() - started


def client_env(cluster: RayNodes, address: str, module: str, database: Path) -> dict[str, str]:
    """The user's shell: ttc on PYTHONPATH (installed), the allowlist, the cluster's token."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("TTC_", "RAY_"))}
    return {**base, **cluster.client_env, "PYTHONPATH": str(REPOSITORY), "RAY_ADDRESS": address,
            "TTC_WORKLOAD_MODULES": module, "TTC_RAY_CPUS_PER_WORKER": "1",
            "TTC_DATABASE_URL": f"sqlite:///{database}", "RAY_USAGE_STATS_ENABLED": "0"}


def test_the_user_module_is_not_importable_on_the_nodes_by_itself(cluster: RayNodes, user_dir) -> None:
    """The premise: without runtime_env no node can import the module, not even from a driver that
    runs in the module's directory (Ray adds that to its workers' path)."""
    directory, name = user_dir
    probe = textwrap.dedent(f"""
        import importlib.util, json, sys, ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        ray.init(address=sys.argv[1], log_to_driver=False)
        @ray.remote(num_cpus=0)
        def where():
            return ray.get_runtime_context().get_node_id(), importlib.util.find_spec({name!r}) is not None
        nodes = [n["NodeID"] for n in ray.nodes() if n["Alive"]]
        pinned = [NodeAffinitySchedulingStrategy(n, soft=False) for n in nodes]
        print(json.dumps(ray.get([where.options(scheduling_strategy=s).remote() for s in pinned])))
        """)
    env = client_env(cluster, cluster.gcs_address, name, directory / "unused.db")
    done = subprocess.run([sys.executable, "-c", probe, cluster.gcs_address], cwd=directory, env=env,
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    answers = dict(json.loads(done.stdout.strip().splitlines()[-1]))
    assert set(answers) == set(cluster.node_cpus)
    assert not any(answers.values()), answers


@pytest.mark.parametrize("route", ["gcs", "client"])
def test_tune_runs_user_code_on_both_nodes(cluster: RayNodes, user_dir, route: str, tmp_path: Path) -> None:
    directory, name = user_dir
    (directory / "spec.yaml").write_text(spec_text(name))
    address = cluster.gcs_address if route == "gcs" else cluster.client_address
    env = client_env(cluster, address, name, tmp_path / "ttc.db")
    code, stdout, stderr, wall = ttc(["tune", "spec.yaml", "--json"], directory, env)
    assert code == 0, stderr[-3000:]
    plan = json.loads(stdout)
    assert (plan["config"]["nodes"], plan["config"]["devices_per_node"]) == (2, 1)
    evidence = [json.loads(line) for line in (tmp_path / "evidence.jsonl").read_text().splitlines()]
    actors = [e for e in evidence if e["actor"]]
    assert {e["node"] for e in actors} == set(cluster.node_cpus), evidence  # one device actor per node
    assert all("runtime_resources" in e["file"] for e in evidence), evidence  # Ray's shipped copy
    assert "Token authentication" not in stderr and "WARNING" not in stderr, stderr
    print(f"\ntwo-node tune via {address}: exit 0 in {wall:.1f} s; device actors on nodes "
          f"{sorted({e['node'] for e in actors})}")


def test_a_worker_error_is_reported_whole(cluster: RayNodes, user_dir, tmp_path: Path) -> None:
    """A pydantic error raised in user code on a node reaches the CLI and the prune reason whole."""
    directory, name = user_dir
    (directory / "spec.yaml").write_text(spec_text(name, function="broken"))
    env = client_env(cluster, cluster.gcs_address, name, tmp_path / "ttc.db")
    code, _, stderr, _ = ttc(["tune", "spec.yaml"], directory, env)
    assert code == 1, stderr[-3000:]
    one_line = " ".join(stderr.split())
    assert "ValidationError: hidden: Input should be greater than 0 (got 0)" in one_line, stderr
    assert "For further information" not in stderr, stderr
    code, shown, _, _ = ttc(["studies", "list", "--json"], directory, env)
    study = json.loads(shown)["data"][0]["id"]
    code, shown, _, _ = ttc(["studies", "show", study, "--json"], directory, env)
    reasons = [t["prune_reason"] for t in json.loads(shown)["trials"]]
    assert reasons and all("hidden: Input should be greater than 0" in r for r in reasons), reasons


def test_an_infeasible_spec_exits_2_naming_the_missing(cluster: RayNodes, user_dir, tmp_path: Path) -> None:
    """Two 2-CPU nodes cannot hold two node bundles of 3 devices × 1 CPU: refused before any probe."""
    directory, name = user_dir
    (directory / "spec.yaml").write_text(spec_text(name, devices_per_node=3))
    env = client_env(cluster, cluster.gcs_address, name, tmp_path / "ttc.db")
    code, _, stderr, wall = ttc(["tune", "spec.yaml"], directory, env, timeout=120)
    one_line = " ".join(stderr.split())
    assert code == 2, stderr[-3000:]
    assert "missing: 1 CPU on one machine" in one_line and "cluster.devices_per_node=3" in one_line, stderr
    assert not (tmp_path / "evidence.jsonl").exists()  # no probe ran
    print(f"\ninfeasible spec: exit 2 in {wall:.1f} s")
