"""The device actor: one Ray actor per device, a thin shell that runs functions shipped to it.

As in Ray Train's worker group, the actor knows nothing about training; module-level functions
(``fn(context, *args)``) are sent to it and receive its :class:`WorkerContext`, which carries the
rank, the rank layout and the ``torch.distributed`` process groups set up by
:mod:`worker.ray_backend.distributed`.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import ray
import torch

from worker.ray_backend.placement import RankLayout

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class WorkerContext:
    """What a shipped function may use on its actor; ``state`` holds objects between calls."""

    rank: int
    layout: RankLayout
    device: torch.device
    backend: str = ""
    timeout_s: float = 60.0  # bound of every collective, also of subgroups made later
    node_group: Any = None  # torch.distributed ProcessGroup of this node's ranks
    leader_group: Any = None  # ProcessGroup of every node's local rank 0 (None elsewhere)
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def world_size(self) -> int:
        return self.layout.world_size

    @property
    def node(self) -> int:
        return self.layout.node_of(self.rank)

    @property
    def local_rank(self) -> int:
        return self.rank % self.layout.devices_per_node


class DeviceWorker:
    """One device: sets its torch threads from its Ray CPU share, then runs shipped functions."""

    def __init__(self, rank: int, layout: RankLayout, threads: int) -> None:
        torch.set_num_threads(threads)
        cuda = torch.cuda.is_available()
        device = torch.device("cuda", 0) if cuda else torch.device("cpu")
        self.context = WorkerContext(rank, layout, device)
        log.debug("device actor rank %d on %s with %d thread(s)", rank, device, threads)

    def rendezvous_address(self) -> tuple[str, int]:
        """This node's IP and a free port, for rank 0 to host the process-group store."""
        with socket.socket() as probe:
            probe.bind(("", 0))
            port = probe.getsockname()[1]
        return ray.util.get_node_ip_address(), port

    def execute(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return fn(self.context, *args, **kwargs)
