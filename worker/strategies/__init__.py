"""Data-parallel strategies (DESIGN.md §4): one abstract base, one module each."""

from __future__ import annotations

from predictor.types import Config
from worker.simulated.hardware import Hardware
from worker.strategies.async_groups import AsyncGroupsStrategy
from worker.strategies.base import Strategy
from worker.strategies.daso import DasoStrategy
from worker.strategies.dbs import DbsStrategy
from worker.strategies.hsgd import HsgdStrategy
from worker.strategies.sync import SyncStrategy
from worker.workloads import Workload

REGISTRY: dict[str, type[Strategy]] = {
    cls.name: cls
    for cls in (SyncStrategy, AsyncGroupsStrategy, DasoStrategy, HsgdStrategy, DbsStrategy)
}


def make_strategy(config: Config, workload: Workload, hardware: Hardware, seed: int) -> Strategy:
    if config.strategy not in REGISTRY:
        raise ValueError(f"strategy={config.strategy!r} is not implemented; have {sorted(REGISTRY)}")
    return REGISTRY[config.strategy](config, workload, hardware, seed)


__all__ = [
    "REGISTRY",
    "AsyncGroupsStrategy",
    "DasoStrategy",
    "DbsStrategy",
    "HsgdStrategy",
    "Strategy",
    "SyncStrategy",
    "make_strategy",
]
