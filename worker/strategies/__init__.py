"""Data-parallel strategies (DESIGN.md §4): one abstract base, one module each, every backend.

Each strategy is written once against :class:`~worker.strategies.cluster.Cluster`; the simulated
backend (:mod:`worker.simulated`) and the Ray backend (:mod:`worker.ray_backend`) implement it.
"""

from __future__ import annotations

from worker.strategies.async_groups import AsyncGroupsStrategy
from worker.strategies.base import Strategy
from worker.strategies.cluster import Cluster, GradientStep, ParameterServer, PendingSum
from worker.strategies.daso import DasoStrategy
from worker.strategies.dbs import DbsStrategy
from worker.strategies.hsgd import HsgdStrategy
from worker.strategies.sync import SyncStrategy

REGISTRY: dict[str, type[Strategy]] = {
    cls.name: cls
    for cls in (SyncStrategy, AsyncGroupsStrategy, DasoStrategy, HsgdStrategy, DbsStrategy)
}


def strategy_class(name: str) -> type[Strategy]:
    if name not in REGISTRY:
        raise ValueError(f"strategy={name!r} is not implemented; have {sorted(REGISTRY)}")
    return REGISTRY[name]


def make_strategy(cluster: Cluster, seed: int) -> Strategy:
    """The config's strategy on ``cluster``, its replicas initialised from ``seed``."""
    return strategy_class(cluster.config.strategy)(cluster, seed)


__all__ = [
    "REGISTRY",
    "AsyncGroupsStrategy",
    "Cluster",
    "DasoStrategy",
    "DbsStrategy",
    "GradientStep",
    "HsgdStrategy",
    "ParameterServer",
    "PendingSum",
    "Strategy",
    "SyncStrategy",
    "make_strategy",
    "strategy_class",
]
