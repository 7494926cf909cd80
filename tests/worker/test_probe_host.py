"""A launcher's ``backend: ray`` probes reuse their device actors (``worker.ray_backend.probe_host``):
a probe on a reused group trains exactly as on fresh actors, whatever ran there before; a group
goes when its layout is not wanted or its actors fail; cancel and close leave nothing behind."""

from __future__ import annotations

import threading
import time

import pytest
import ray

from predictor.types import Config, ProbeRequest, ProbeResult
from tests.worker.test_ray_backend import (  # noqa: F401 (fixtures)
    leaked_ttc_actors,
    live_placement_groups,
    ray_cluster,
    small_actors,
    spec,
)
from worker.launcher import ProbeLauncher
from worker.ray_backend.worker_group import ACTOR_PREFIX

pytestmark = pytest.mark.usefixtures("ray_cluster")
SYNC = Config("sync", 2, 1, batch_size=16, lr=0.1, momentum=0.9)
ASYNC = Config("async_groups", 2, 1, groups=2, batch_size=16, lr=0.05, momentum=0.5)


def _one(launcher: ProbeLauncher, config: Config, iterations: int = 20) -> ProbeResult:
    (result,) = launcher.run([ProbeRequest(config, 1e9, iterations)])
    assert result.error is None, result.error
    return result


def _losses(result: ProbeResult) -> list[float]:
    return [point[2] for point in result.curve]


def _nothing_left() -> None:
    assert leaked_ttc_actors() == []
    deadline = time.monotonic() + 15
    while live_placement_groups() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert live_placement_groups() == []


def test_a_probe_on_reused_actors_trains_as_on_fresh_ones_whatever_ran_there() -> None:
    with ProbeLauncher(spec("ray")) as launcher:
        fresh = _one(launcher, SYNC)
        _one(launcher, ASYNC)  # the parameter server's groups on the same actors
        again = _one(launcher, SYNC)
        assert launcher.groups_reused() == 2
        assert len(live_placement_groups()) == 1  # the idle group, kept for the next probe
    assert _losses(again) == _losses(fresh) and again.iterations == fresh.iterations == 20
    assert again.launch_seconds > 0  # installing the strategy still counts as its launch
    _nothing_left()


def test_another_layout_shuts_the_idle_group_down_first() -> None:
    with ProbeLauncher(spec("ray")) as launcher:
        _one(launcher, SYNC)
        _one(launcher, Config("sync", 1, 1, batch_size=16, lr=0.1, momentum=0.9))
        assert launcher.groups_reused() == 0
        assert len(live_placement_groups()) == 1  # the 1 × 1 group only
    _nothing_left()


def test_a_reused_group_whose_actor_died_is_replaced_and_the_probe_completes() -> None:
    with ProbeLauncher(spec("ray")) as launcher:
        fresh = _one(launcher, SYNC)
        (victim,) = [a for a in ray.util.list_named_actors(all_namespaces=True)
                     if a["name"].startswith(ACTOR_PREFIX) and a["name"].endswith("-rank1")]
        ray.kill(ray.get_actor(victim["name"], namespace=victim["namespace"]))
        retried = _one(launcher, SYNC)
        assert launcher.groups_reused() == 1  # taken, failed, discarded: the retry ran on fresh actors
        assert len(live_placement_groups()) == 1
    assert _losses(retried) == _losses(fresh)
    _nothing_left()


def test_cancel_kills_the_host_and_frees_the_cluster_then_a_new_run_starts_afresh() -> None:
    launcher = ProbeLauncher(spec("ray", target=1e-9))
    launcher.start()
    stop = threading.Event()
    runner, seen = _long_probe_training(launcher, stop)
    stop.set()
    runner.join(timeout=30)
    assert not runner.is_alive() and seen == []
    _nothing_left()
    _one(launcher, SYNC, iterations=5)  # a new host
    launcher.close()
    _nothing_left()


def _long_probe_training(launcher: ProbeLauncher, stop: threading.Event | None = None
                         ) -> tuple[threading.Thread, list[ProbeResult]]:
    """A probe of ten minutes running in a thread, once its group is placed and training."""
    seen: list[ProbeResult] = []
    request = ProbeRequest(SYNC, 600.0, 10**6)
    runner = threading.Thread(target=lambda: seen.extend(launcher.run([request], stop)))
    runner.start()
    deadline = time.monotonic() + 120
    while not live_placement_groups() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(1.0)
    return runner, seen


@pytest.fixture(autouse=True)
def _no_leftovers_from_before() -> None:
    """Each test counts placement groups from zero (an earlier module's may be going away)."""
    _nothing_left()


def test_a_probe_host_that_died_is_replaced_by_the_next_run() -> None:
    with ProbeLauncher(spec("ray", target=1e-9)) as launcher:
        runner, seen = _long_probe_training(launcher)
        (host,) = [a for a in ray.util.list_named_actors(all_namespaces=True) if a["name"].endswith("-host")]
        ray.kill(ray.get_actor(host["name"], namespace=host["namespace"]))  # as when its node is lost
        runner.join(timeout=60)
        assert not runner.is_alive() and len(seen) == 1 and seen[0].error
        _nothing_left()  # its placement group went with it
        assert _one(launcher, SYNC, iterations=5).error is None  # on a new host
    _nothing_left()
