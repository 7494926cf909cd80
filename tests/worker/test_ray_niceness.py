"""A Ray that ttc starts runs its probes at the niceness asked for, not 15 above it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("ray")

CHILD = """
import os, ray
from worker.ray_backend.connect import ensure_ray
ensure_ray(worker_niceness=3)
os.nice(3)
print(os.nice(0), ray.get(ray.remote(lambda: os.nice(0)).remote()))
"""


def test_probes_run_at_the_niceness_of_the_process_that_niced_itself_after_starting_ray() -> None:
    """Ray's default adds 15: beside two CPU-bound jobs at nice 0 a probe got 3% of a core."""
    env_free = {"RAY_ADDRESS": "", "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env_free})
    assert done.returncode == 0, done.stderr[-2000:]
    driver, worker = (int(n) for n in done.stdout.split()[-2:])
    assert driver == worker == 3
