"""One launcher's Ray-backend probes, run in one actor that keeps their worker groups started.

A probe launched as a Ray task starts its own device actors and ends them: a fresh process per
device per probe. A ``ProbeHost`` runs a launcher's probes (at most one per device the Ray
cluster holds, as many as have room: ``GroupPool``) and keeps each finished probe's group for
the next probe of that allocation.

It asks for no CPU: like a probe task's driver part, it spends its time waiting on the device
actors (and the parameter server of ``async_groups`` runs in it, as it ran in the task). The
device actors die with it, their owner; their placement groups do not (Ray removes a
non-detached placement group only with its job), so whoever kills a host removes its groups
by name prefix: :func:`remove_placement_groups`.
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from typing import Any

import ray
from ray.util.placement_group import PlacementGroup, remove_placement_group

from worker.lineage import State, run_wire_segment
from worker.ray_backend.config import SETTINGS_ENV
from worker.ray_backend.feasibility import copies_that_fit
from worker.ray_backend.group_pool import GroupPool
from worker.ray_backend.placement import RankLayout
from worker.ray_backend.worker_group import ACTOR_PREFIX

log = logging.getLogger(__name__)

REAP_SECONDS = 5.0  # how often idle groups are checked against the pool's idle limit


class ProbeHost:
    """Runs probes on pooled worker groups; ``close`` shuts the idle ones down."""

    def __init__(self, prefix: str) -> None:
        self.pool = GroupPool(prefix)
        self._closed = threading.Event()
        threading.Thread(target=self._reap, name="idle-group-reaper", daemon=True).start()

    @ray.method(num_returns=2)
    def probe(self, spec: dict[str, Any], request: dict[str, Any], parent: State | None
              ) -> tuple[dict[str, Any], State]:
        return run_wire_segment(spec, request, parent, self.pool)

    def reused(self) -> int:
        """How many probes ran on a group an earlier probe had started."""
        return self.pool.reused

    def close(self) -> None:
        self._closed.set()
        self.pool.close()

    def _reap(self) -> None:
        while not self._closed.wait(REAP_SECONDS):
            try:
                self.pool.reap()
            except ray.exceptions.RayError:
                log.exception("shutting down an idle worker group failed; its actors die with this host")


def start_host() -> tuple[Any, str]:
    """A new probe host and the name prefix of every group it will start."""
    prefix = f"{ACTOR_PREFIX}-{uuid.uuid4().hex[:8]}"
    settings = {name: os.environ[name] for name in SETTINGS_ENV if name in os.environ}  # as read here
    host = ray.remote(ProbeHost).options(
        name=f"{prefix}-host", num_cpus=0, max_concurrency=copies_that_fit(RankLayout(1, 1)), max_restarts=0,
        runtime_env={"env_vars": settings},  # merged into the job's (its workload modules stay)
    ).remote(prefix)
    return host, prefix


def remove_placement_groups(prefix: str) -> int:
    """Remove every live placement group named with ``prefix``; how many there were."""
    removed = 0
    for group_id, entry in ray.util.placement_group_table().items():
        if entry["name"].startswith(prefix) and entry["state"] != "REMOVED":
            remove_placement_group(PlacementGroup(ray.PlacementGroupID(bytes.fromhex(group_id))))
            removed += 1
    return removed
