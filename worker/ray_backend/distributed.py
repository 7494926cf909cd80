"""``torch.distributed`` inside the device actors: the world group and its subgroups.

Every rank must create every subgroup, in the same order (a ``new_group`` requirement), even the
ones it is not a member of. The node subgroups carry intra-node reductions and the leader
subgroup the inter-node traffic of hierarchical schemes (HSGD, DASO). Each group gets the same
timeout, so a dead peer surfaces as an error within ``timeout_s`` instead of a hang.
"""

from __future__ import annotations

import logging
from datetime import timedelta

import torch
import torch.distributed as dist

from worker.ray_backend.actor import WorkerContext
from worker.ray_backend.config import collective_backend

log = logging.getLogger(__name__)


def setup_process_groups(context: WorkerContext, host: str, port: int, timeout_s: float) -> str:
    """Join the world group over TCP at rank 0's ``host:port``; build node and leader subgroups."""
    backend = collective_backend(torch.cuda.is_available())
    timeout = timedelta(seconds=timeout_s)
    if context.device.type == "cuda":
        torch.cuda.set_device(context.device)
    dist.init_process_group(
        backend,
        init_method=f"tcp://{host}:{port}",
        rank=context.rank,
        world_size=context.world_size,
        timeout=timeout,
    )
    layout = context.layout
    for node in range(layout.nodes):
        group = dist.new_group(layout.node_ranks(node), timeout=timeout)
        if node == context.node:
            context.node_group = group
    leaders = dist.new_group(layout.leader_ranks, timeout=timeout)
    if context.rank in layout.leader_ranks:
        context.leader_group = leaders
    context.backend = backend
    context.timeout_s = timeout_s
    dist.barrier()  # every rank has built every group (and connected its pairs) before first use
    log.debug("rank %d joined %s world of %d", context.rank, backend, context.world_size)
    return backend


def new_groups(context: WorkerContext, ranks: list[list[int]]) -> object | None:
    """Create one subgroup per rank list on every rank; return the one holding this rank."""
    mine = None
    for members in ranks:
        group = dist.new_group(members, timeout=timedelta(seconds=context.timeout_s))
        if context.rank in members:
            mine = group
    return mine


def teardown_process_groups(context: WorkerContext) -> None:
    """Leave every process group (subgroups included) so the actor can exit cleanly."""
    context.state.clear()
    if dist.is_initialized():
        dist.destroy_process_group()
    context.node_group = context.leader_group = None
