"""A group of device actors with a symmetric API: ``execute``, ``execute_async``, ``execute_single``.

The constructor only records what to build (easy to test); ``start()`` reserves the placement
group, creates one actor per device in its node's bundle and joins them into ``torch.distributed``
process groups; ``shutdown()`` lets the actors leave their groups, then ``ray.kill``s them and
frees the placement group, whatever state they are in.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

import ray
from ray.util.placement_group import PlacementGroup, remove_placement_group

from worker.ray_backend.actor import DeviceWorker
from worker.ray_backend.config import RayBackendConfig
from worker.ray_backend.distributed import setup_process_groups, teardown_process_groups
from worker.ray_backend.placement import RankLayout, on_node, reserve

log = logging.getLogger(__name__)
T = TypeVar("T")
ACTOR_PREFIX = "ttc-device"


class WorkerGroup:
    """``layout.world_size`` device actors, rank r on node r // devices_per_node."""

    def __init__(self, layout: RankLayout, config: RayBackendConfig | None = None,
                 prefix: str = ACTOR_PREFIX) -> None:
        self.layout = layout
        self.config = config or RayBackendConfig()
        self.name = f"{prefix}-{uuid.uuid4().hex[:8]}"  # of its actors and its placement group
        self.actors: list[Any] = []
        self.backend = ""
        self._placement: PlacementGroup | None = None

    @property
    def started(self) -> bool:
        return bool(self.actors)

    def gpus_per_worker(self) -> float:
        """One GPU per actor when asked for, or — by default — when the cluster has enough."""
        use_gpu = self.config.use_gpu
        if use_gpu is None:
            use_gpu = ray.cluster_resources().get("GPU", 0) >= self.layout.world_size
        return 1.0 if use_gpu else 0.0

    def place(self, timeout_s: float | None = None) -> None:
        """Reserve the nodes (``start`` does, unless done before); raise TimeoutError when the
        cluster has no room for them within ``timeout_s`` (default: the start timeout)."""
        if self._placement is None:
            self._placement = reserve(self.layout, self.config.cpus_per_worker, self.gpus_per_worker(),
                                      timeout_s or self.config.start_timeout_s, self.name)

    def start(self) -> None:
        """Reserve nodes, create the actors and join them into process groups."""
        if self.started:
            raise RuntimeError(f"worker group {self.name} is already started")
        cpus, gpus = self.config.cpus_per_worker, self.gpus_per_worker()
        timeout = self.config.collective_timeout_s
        try:
            self.place()
            remote = ray.remote(DeviceWorker)
            self.actors = [
                remote.options(
                    name=f"{self.name}-rank{rank}",
                    num_cpus=cpus,
                    num_gpus=gpus,
                    max_restarts=0,
                    scheduling_strategy=on_node(self._placement, self.layout.node_of(rank)),
                ).remote(rank, self.layout, self.config.threads_per_worker)
                for rank in range(self.layout.world_size)
            ]
            ready = [actor.__ray_ready__.remote() for actor in self.actors]
            ray.get(ready, timeout=self.config.start_timeout_s)  # every process up before any rendezvous
            host, port = ray.get(self.actors[0].rendezvous_address.remote(), timeout=timeout)
            backends = self.execute(setup_process_groups, host, port, timeout, timeout=2 * timeout)
        except BaseException:
            self.shutdown()
            raise
        self.backend = backends[0]
        log.info("started %s: %d actor(s) on %d node bundle(s), %s", self.name,
                 self.layout.world_size, self.layout.nodes, self.backend)

    def execute_async(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> list[ray.ObjectRef]:
        """Run ``fn(context, *args, **kwargs)`` on every actor; return the result references."""
        self._require_started()
        return [actor.execute.remote(fn, *args, **kwargs) for actor in self.actors]

    def execute(
        self, fn: Callable[..., T], *args: Any, timeout: float | None = None, **kwargs: Any
    ) -> list[T]:
        """Run ``fn`` on every actor and wait for all results, in rank order."""
        return ray.get(self.execute_async(fn, *args, **kwargs), timeout=timeout)

    def execute_each(self, fn: Callable[..., T], per_rank: list[tuple[Any, ...]]) -> list[T]:
        """Run ``fn(context, *per_rank[r])`` on every rank r at once; results in rank order."""
        self._require_started()
        if len(per_rank) != len(self.actors):
            raise ValueError(f"per_rank has {len(per_rank)} argument tuples for {len(self.actors)} actors")
        pairs = zip(self.actors, per_rank, strict=True)
        return ray.get([actor.execute.remote(fn, *args) for actor, args in pairs])

    def execute_single_async(
        self, rank: int, fn: Callable[..., T], *args: Any, **kwargs: Any
    ) -> ray.ObjectRef:
        self._require_started()
        return self.actors[rank].execute.remote(fn, *args, **kwargs)

    def execute_single(self, rank: int, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run ``fn`` on one actor only (e.g. read the model from rank 0)."""
        return ray.get(self.execute_single_async(rank, fn, *args, **kwargs))

    def shutdown(self) -> None:
        """Graceful first (leave process groups within the grace period), then ``ray.kill``."""
        if self.actors:
            refs = [actor.execute.remote(teardown_process_groups) for actor in self.actors]
            done, _ = ray.wait(refs, num_returns=len(refs), timeout=self.config.shutdown_grace_s)
            for ref in done:
                try:
                    ray.get(ref)
                except ray.exceptions.RayError as exc:
                    log.info("%s: actor could not leave its process group: %s", self.name, exc)
            for actor in self.actors:
                ray.kill(actor, no_restart=True)
            self.actors = []
        if self._placement is not None:
            remove_placement_group(self._placement)
            self._placement = None
        log.debug("shut down %s", self.name)

    def _require_started(self) -> None:
        if not self.started:
            raise RuntimeError(f"worker group {self.name} is not started; call start() first")

    def __enter__(self) -> WorkerGroup:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()
