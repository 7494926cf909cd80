"""Training jobs ttc can tune: model factory, in-memory data, loss and default target."""

from worker.workloads.base import Workload
from worker.workloads.registry import BUILTIN, build_workload, load_workload, resolve_factory

__all__ = ["BUILTIN", "Workload", "build_workload", "load_workload", "resolve_factory"]
