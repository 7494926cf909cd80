"""Started worker groups kept between one study's probes, so that a probe on an allocation the
study has already run skips starting its device actors.

A fresh group costs a process per device, torch's import, the placement group and the
``torch.distributed`` rendezvous: 10–20 s per probe on a 2-core machine, a third of a study's wall
time on Ray (``docs/results/real_timings.md``). A probe's run leaves nothing behind on its actors
but the process groups (``runs.uninstall``), so the next probe of the same layout and actor
settings can run on them.

When nothing may reuse a group it goes: after a failure (the retry gets fresh actors), when
another layout needs the resources, and after ``idle_seconds`` unused (another study may be
waiting for the CPUs).
"""

from __future__ import annotations

import logging
import threading
import time

from worker.ray_backend.config import RayBackendConfig
from worker.ray_backend.placement import RankLayout
from worker.ray_backend.worker_group import WorkerGroup

log = logging.getLogger(__name__)

IDLE_SECONDS = 60.0  # a study's next probe usually follows within seconds (a fit, an Optuna ask)


class GroupPool:
    """Idle started groups, handed out by (layout, actor settings); thread-safe.

    Its caller runs at most as many probes at once as copies of the spec's cluster fit in the Ray
    cluster (``feasibility.copies_that_fit``), and a group is only started after every idle one is
    shut down, so idle groups never hold resources a new group of this pool is waiting for.
    """

    def __init__(self, prefix: str, idle_seconds: float = IDLE_SECONDS) -> None:
        self.prefix = prefix  # of every group's name: what a caller removes after killing the pool's owner
        self.idle_seconds = idle_seconds
        self.reused = 0
        self._idle: list[tuple[WorkerGroup, float]] = []  # group, idle since (monotonic)
        self._lock = threading.Lock()

    def acquire(self, layout: RankLayout, config: RayBackendConfig, fresh: bool = False) -> WorkerGroup:
        """An idle started group of ``layout`` and ``config`` (unless ``fresh``), or a new unstarted
        one once every idle group is shut down (its start is the run's, timed as its launch)."""
        with self._lock:
            if not fresh:
                for index, (group, _) in enumerate(self._idle):
                    if group.layout == layout and group.config == config:
                        del self._idle[index]
                        self.reused += 1
                        return group
            stale, self._idle = [group for group, _ in self._idle], []
        for group in stale:
            group.shutdown()
        return WorkerGroup(layout, config, prefix=self.prefix)

    def release(self, group: WorkerGroup, reusable: bool) -> None:
        """Keep ``group`` for the next probe, or shut it down (a failed run's actors are suspect)."""
        if reusable and group.started:
            with self._lock:
                self._idle.append((group, time.monotonic()))
        else:
            group.shutdown()

    def reap(self) -> None:
        """Shut down the groups idle longer than ``idle_seconds``."""
        now = time.monotonic()
        with self._lock:
            old = [group for group, since in self._idle if now - since > self.idle_seconds]
            self._idle = [(group, since) for group, since in self._idle if now - since <= self.idle_seconds]
        for group in old:
            log.info("shutting down %s: idle for over %.0fs", group.name, self.idle_seconds)
            group.shutdown()

    def close(self) -> None:
        """Shut down every idle group."""
        with self._lock:
            idle, self._idle = [group for group, _ in self._idle], []
        for group in idle:
            group.shutdown()
