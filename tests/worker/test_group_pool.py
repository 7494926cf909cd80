"""The pool's policy, on a fake cluster of N device slots (no Ray): a busy group is handed over to
the next probe of its allocation when there is no room for a second; there is room, a second
starts; an idle group is never kept while a probe waits to place another allocation."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from worker.ray_backend import group_pool
from worker.ray_backend.config import RayBackendConfig
from worker.ray_backend.group_pool import GroupPool
from worker.ray_backend.placement import RankLayout

PAIR, ONE = RankLayout(1, 2), RankLayout(1, 1)
CONFIG = RayBackendConfig()


class FakeCluster:
    def __init__(self, slots: int) -> None:
        self.free = slots
        self.changed = threading.Condition()
        self.shut: list[Any] = []


def fake_groups(cluster: FakeCluster) -> type:
    class FakeGroup:
        def __init__(self, layout: RankLayout, config: RayBackendConfig, prefix: str) -> None:
            self.layout, self.config, self.name = layout, config, prefix
            self.placed = self.started = False

        def place(self, timeout_s: float | None = None) -> None:
            with cluster.changed:
                if not cluster.changed.wait_for(lambda: cluster.free >= self.layout.world_size,
                                                timeout_s or 30.0):
                    raise TimeoutError("no room")
                cluster.free -= self.layout.world_size
                self.placed = True

        def start(self) -> None:
            self.started = True

        def shutdown(self) -> None:
            with cluster.changed:
                if self.placed:
                    cluster.free += self.layout.world_size
                    self.placed = self.started = False
                    cluster.shut.append(self)
                cluster.changed.notify_all()

    return FakeGroup


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> FakeCluster:
    fake = FakeCluster(slots=2)
    monkeypatch.setattr(group_pool, "WorkerGroup", fake_groups(fake))
    monkeypatch.setattr(group_pool, "ROOM_SECONDS", 0.2)
    return fake


def _in_thread(pool: GroupPool, layout: RankLayout, got: list[Any]) -> threading.Thread:
    def take() -> None:
        group = pool.acquire(layout, CONFIG)
        group.start()
        got.append(group)

    thread = threading.Thread(target=take)
    thread.start()
    return thread


def test_a_busy_group_is_handed_to_the_next_probe_of_its_allocation_when_no_second_fits(
    cluster: FakeCluster,
) -> None:
    pool = GroupPool("p")
    first = pool.acquire(PAIR, CONFIG)
    first.start()
    got: list[Any] = []
    waiter = _in_thread(pool, PAIR, got)
    time.sleep(0.5)  # its room check has failed: it waits for the busy group
    assert got == []
    pool.release(first, reusable=True)
    waiter.join(timeout=5)
    assert got == [first] and pool.reused == 1 and cluster.shut == []


def test_with_room_a_second_group_starts_beside_the_busy_one(cluster: FakeCluster) -> None:
    pool = GroupPool("p")
    first = pool.acquire(ONE, CONFIG)
    first.start()
    got: list[Any] = []
    _in_thread(pool, ONE, got).join(timeout=5)
    assert len(got) == 1 and got[0] is not first and pool.reused == 0 and cluster.free == 0


def test_an_idle_group_is_not_kept_while_another_allocation_waits_for_room(cluster: FakeCluster) -> None:
    pool = GroupPool("p")
    single = pool.acquire(ONE, CONFIG)
    single.start()
    idle = pool.acquire(ONE, CONFIG)
    idle.start()
    pool.release(idle, reusable=True)
    got: list[Any] = []
    placer = _in_thread(pool, PAIR, got)  # the idle group goes at once; then it waits for `single`
    time.sleep(0.3)
    assert got == [] and idle in cluster.shut
    pool.release(single, reusable=True)  # someone is placing: shut down, not kept
    placer.join(timeout=5)
    assert len(got) == 1 and single in cluster.shut and got[0].layout == PAIR


def test_a_failed_group_is_shut_down_and_a_fresh_acquire_skips_idle_ones(cluster: FakeCluster) -> None:
    pool = GroupPool("p")
    failed = pool.acquire(ONE, CONFIG)
    failed.start()
    pool.release(failed, reusable=False)
    assert failed in cluster.shut
    kept = pool.acquire(ONE, CONFIG)
    kept.start()
    pool.release(kept, reusable=True)
    fresh = pool.acquire(ONE, CONFIG, fresh=True)
    assert fresh is not kept and kept in cluster.shut and pool.reused == 0


def test_idle_groups_go_after_the_idle_limit_and_on_close(cluster: FakeCluster) -> None:
    pool = GroupPool("p", idle_seconds=0.0)
    group = pool.acquire(ONE, CONFIG)
    group.start()
    pool.release(group, reusable=True)
    time.sleep(0.01)
    pool.reap()
    assert group in cluster.shut
    other = pool.acquire(ONE, CONFIG)
    other.start()
    pool.release(other, reusable=True)
    pool.close()
    assert other in cluster.shut and cluster.free == 2
