"""Started worker groups kept between one study's probes, so that a probe on an allocation the
study has already run skips starting its device actors.

A fresh group costs a process per device, torch's import, the placement group and the
``torch.distributed`` rendezvous: 10–20 s per probe on a 2-core machine, a third of a study's wall
time on Ray (``docs/results/real_timings.md``). A probe's run leaves nothing behind on its actors
but the process groups (``runs.uninstall``), so the next probe of the same layout and actor
settings can run on them.

Probes run side by side where the cluster has room. A probe whose group is busy elsewhere and
for which the cluster has no room right now waits for that group (handed over when its probe
ends) instead of for a second copy. When nothing may reuse a group it goes: after a failure (the
retry gets fresh actors), when another allocation needs the resources (an idle group is never
kept while a probe waits to place a new one), and after ``idle_seconds`` unused.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter

from worker.ray_backend.config import RayBackendConfig
from worker.ray_backend.placement import RankLayout
from worker.ray_backend.worker_group import WorkerGroup

log = logging.getLogger(__name__)

IDLE_SECONDS = 60.0  # a study's next probe usually follows within seconds (a fit, an Optuna ask)
ROOM_SECONDS = 2.0  # how long a placement may take to count as room "right now"
Key = tuple[RankLayout, RayBackendConfig]


class GroupPool:
    """Groups handed out by (layout, actor settings), kept while idle; thread-safe."""

    def __init__(self, prefix: str, idle_seconds: float = IDLE_SECONDS) -> None:
        self.prefix = prefix  # of every group's name: what a caller removes after killing the pool's owner
        self.idle_seconds = idle_seconds
        self.reused = 0
        self._idle: list[tuple[WorkerGroup, float]] = []  # group, idle since (monotonic)
        self._busy: Counter[Key] = Counter()
        self._waiting: Counter[Key] = Counter()  # probes waiting for a busy group of their key
        self._placing = 0  # probes placing a new group
        self._changed = threading.Condition()

    def acquire(self, layout: RankLayout, config: RayBackendConfig, fresh: bool = False) -> WorkerGroup:
        """An idle started group of ``layout`` and ``config`` (unless ``fresh``), or, once every idle
        group is shut down, a new one placed on the cluster (its actors' start is the run's, timed
        as its launch). Raises TimeoutError when no room is found within the start timeout."""
        key = (layout, config)
        while True:
            with self._changed:
                if not fresh and (group := self._take_idle(key)) is not None:
                    self.reused += 1
                    self._busy[key] += 1
                    return group
                stale, self._idle = [group for group, _ in self._idle], []
                busy_elsewhere = self._busy[key] > 0 and not fresh
                self._waiting[key] += busy_elsewhere  # its release is kept for this probe
                self._placing += 1
            try:
                for group in stale:
                    group.shutdown()
                group = WorkerGroup(layout, config, prefix=self.prefix)
                try:
                    group.place(ROOM_SECONDS if busy_elsewhere else None)
                except TimeoutError:
                    if not busy_elsewhere:
                        raise
                else:
                    with self._changed:
                        self._busy[key] += 1
                    return group
            finally:
                with self._changed:
                    self._placing -= 1
                    self._waiting[key] -= busy_elsewhere
                    self._changed.notify_all()
            self._await_handover(key)

    def release(self, group: WorkerGroup, reusable: bool) -> None:
        """Keep ``group`` for the next probe, or shut it down: a failed run's actors are suspect,
        and an idle group must not hold what a probe placing a new one waits for."""
        key = _key(group)
        with self._changed:
            self._busy[key] -= 1
            keep = reusable and group.started and (self._placing == 0 or self._waiting[key] > 0)
            if keep:
                self._idle.append((group, time.monotonic()))
                self._changed.notify_all()
        if not keep:
            group.shutdown()
            with self._changed:
                self._changed.notify_all()

    def reap(self) -> None:
        """Shut down the groups idle longer than ``idle_seconds``."""
        now = time.monotonic()
        with self._changed:
            old = [group for group, since in self._idle if now - since > self.idle_seconds]
            self._idle = [(group, since) for group, since in self._idle if now - since <= self.idle_seconds]
        for group in old:
            log.info("shutting down %s: idle for over %.0fs", group.name, self.idle_seconds)
            group.shutdown()

    def close(self) -> None:
        """Shut down every idle group."""
        with self._changed:
            idle, self._idle = [group for group, _ in self._idle], []
        for group in idle:
            group.shutdown()

    def _take_idle(self, key: Key) -> WorkerGroup | None:
        for index, (group, _) in enumerate(self._idle):
            if _key(group) == key:
                del self._idle[index]
                return group
        return None

    def _await_handover(self, key: Key) -> None:
        """Wait until a group of ``key`` is idle, or none is busy (then place one)."""
        with self._changed:
            self._waiting[key] += 1
            try:
                while self._busy[key] > 0 and not any(_key(g) == key for g, _ in self._idle):
                    self._changed.wait()
            finally:
                self._waiting[key] -= 1


def _key(group: WorkerGroup) -> Key:
    return group.layout, group.config
