"""Named workloads and the allowlist for user factories (``TTC_WORKLOAD_MODULES``)."""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable

from worker.workloads.base import Workload
from worker.workloads.charlm import charlm
from worker.workloads.digits import digits_cnn, digits_mlp
from worker.workloads.million import million_regression
from worker.workloads.teacher import plateau_committee, teacher_classification, teacher_regression

WorkloadFactory = Callable[[int], Workload]
ALLOWLIST_ENV = "TTC_WORKLOAD_MODULES"

BUILTIN: dict[str, WorkloadFactory] = {
    "digits-mlp": digits_mlp,
    "digits-cnn": digits_cnn,
    "charlm": charlm,
    "teacher-regression": teacher_regression,
    "teacher-classification": teacher_classification,
    "plateau-committee": plateau_committee,
    "million-regression": million_regression,
}


def allowed_modules() -> set[str]:
    """Modules whose factories users may name; a comma-separated environment setting."""
    raw = os.environ.get(ALLOWLIST_ENV, "")
    return {item.strip() for item in raw.split(",") if item.strip()}


def resolve_factory(name: str | None = None, factory: str | None = None) -> WorkloadFactory:
    """Return the factory for a built-in ``name`` or an allowlisted ``module:function``."""
    if name is not None:
        if name not in BUILTIN:
            raise ValueError(f"workload.name={name!r} is not one of {sorted(BUILTIN)}")
        return BUILTIN[name]
    if factory is None:
        raise ValueError("workload needs either 'name' or 'factory'")
    module_name, sep, function = factory.partition(":")
    if not sep or not module_name or not function:
        raise ValueError(f"workload.factory={factory!r} must look like 'package.module:function'")
    if module_name not in allowed_modules():
        raise ValueError(
            f"workload.factory={factory!r}: module {module_name!r} is not allowlisted; "
            f"add it to the {ALLOWLIST_ENV} setting (comma-separated module names)"
        )
    try:
        found = getattr(importlib.import_module(module_name), function)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"workload.factory={factory!r} cannot be loaded: {exc}") from exc
    if not callable(found):
        raise ValueError(f"workload.factory={factory!r} is not callable")
    return found


def build_workload(seed: int, name: str | None = None, factory: str | None = None) -> Workload:
    workload = resolve_factory(name, factory)(seed)
    if not isinstance(workload, Workload):
        raise ValueError(f"workload factory returned {type(workload).__name__}, expected Workload")
    return workload


_LOADED: dict[tuple[int, str | None, str | None], Workload] = {}


def load_workload(seed: int, name: str | None = None, factory: str | None = None) -> Workload:
    """The workload, built once per process (drivers, device actors and probe tasks each keep
    their own); its data is deterministic in the seed, so every process holds the same samples."""
    key = (seed, name, factory)
    if key not in _LOADED:
        _LOADED[key] = build_workload(seed, name, factory)
    return _LOADED[key]
