"""A stopped ``ProbeLauncher.run`` ends without the results still running; it force-cancels their
tasks only when asked (a training leaves its short segments to finish: Ray 2.60's driver aborts
when a force-cancel races a completing task's reply)."""

from __future__ import annotations

import threading
import time

import pytest
import ray

from predictor.types import Config, ProbeRequest
from worker.launcher import ProbeLauncher
from worker.spec import parse_spec


@ray.remote(num_cpus=0, num_returns=2)
def _slow_probe(*_: object) -> tuple[dict, None]:
    time.sleep(5)
    return {}, None


@pytest.mark.parametrize("cancel_running", [True, False])
def test_a_stopped_run_cancels_its_tasks_only_when_asked(
    cancel_running: bool, ray_local: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("worker.launcher._probe_task", _slow_probe)
    cancelled: list[ray.ObjectRef] = []
    monkeypatch.setattr("worker.launcher.ray.cancel", lambda ref, **_: cancelled.append(ref))
    launcher = ProbeLauncher(parse_spec({"workload": {"name": "digits-mlp"}}))
    stop = threading.Event()
    stop.set()
    request = ProbeRequest(Config("sync", 1, 1, batch_size=16, lr=0.1), 1.0, 10)
    assert list(launcher.run([request], stop, cancel_running=cancel_running)) == []
    assert len(cancelled) == (1 if cancel_running else 0)


@ray.remote(num_cpus=0)
def _done() -> int:
    return 0


def test_cancel_leaves_alone_a_task_whose_result_has_arrived(
    ray_local: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only tasks still running are force-cancelled: a cancel racing a completion aborts the driver."""
    cancelled: list[ray.ObjectRef] = []
    monkeypatch.setattr("worker.launcher.ray.cancel", lambda ref, **_: cancelled.append(ref))
    launcher = ProbeLauncher(parse_spec({"workload": {"name": "digits-mlp"}}))
    request = ProbeRequest(Config("sync", 1, 1, batch_size=16, lr=0.1), 1.0, 10)
    finished, running = _done.remote(), _slow_probe.remote()[0]
    ray.wait([finished], timeout=30)
    launcher._pending = {finished: (request, finished), running: (request, running)}
    launcher.cancel()
    assert cancelled == [running] and launcher._pending == {}
