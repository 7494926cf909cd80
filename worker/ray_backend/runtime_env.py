"""What travels with the job to the Ray cluster: the users' workload code and ttc's settings.

A probe task validates the spec and builds the workload on whichever Ray node runs it, so that
node needs (1) the factory's module and (2) the settings that decide what a spec may do —
above all the allowlist ``TTC_WORKLOAD_MODULES``. Neither is on a node by default: the modules
live where ``ttc`` runs, the settings in its environment. Ray's job-level ``runtime_env`` carries
both (``py_modules``: each allowlisted module's file or package directory, uploaded once per
content; ``env_vars``: the settings) to every task and actor of the job — the probe tasks, their
device actors, the parameter server. Job level, because Ray uploads local code only there (a
task's runtime_env takes URIs), and because the allowlist, not one spec, says what may run: a
service running many studies connects once. Installed packages are not shipped: they come with
the nodes' image, like ttc itself.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import site
import sysconfig
from pathlib import Path
from typing import Any

from worker.ray_backend.config import SETTINGS_ENV
from worker.workloads.registry import ALLOWLIST_ENV, allowed_modules

log = logging.getLogger(__name__)

OWN_PACKAGES = frozenset({"predictor", "worker", "service"})  # on every node with ttc installed
EXCLUDES = ["__pycache__", "*.pyc", ".git", ".venv"]
SETTINGS = (ALLOWLIST_ENV, *SETTINGS_ENV)


def job_runtime_env() -> dict[str, Any] | None:
    """The ``runtime_env`` for ``ray.init``; None when nothing needs to travel."""
    env: dict[str, Any] = {}
    settings = {name: os.environ[name] for name in SETTINGS if name in os.environ}
    if settings:
        env["env_vars"] = settings
    modules = set()
    for module in sorted(allowed_modules()):
        try:
            path = local_module_path(module)
        except ValueError as exc:
            log.warning("%s; the Ray nodes must have it installed", exc)
            continue
        if path is not None:
            modules.add(str(path))
    if modules:
        env["py_modules"] = sorted(modules)
        env["excludes"] = EXCLUDES
        log.info("shipping workload code to the Ray workers: %s", ", ".join(sorted(modules)))
    return env or None


def local_module_path(module: str) -> Path | None:
    """The file or package directory that makes ``module`` importable, when it is not installed.

    ``py_modules`` ships a top-level package (a directory) or a single ``.py`` file, so a dotted
    name ships its top-level package whole. None for ttc's own packages, for anything under
    site-packages or the standard library, and for compiled modules (those belong in the image).
    """
    top = module.partition(".")[0]
    if top in OWN_PACKAGES:
        return None
    found = importlib.util.find_spec(top)
    if found is None:
        raise ValueError(f"allowlisted workload module {module!r} cannot be found on this machine's path")
    if found.submodule_search_locations:
        path = Path(next(iter(found.submodule_search_locations)))
    elif found.origin and found.origin.endswith(".py"):
        path = Path(found.origin)
    else:
        log.warning("workload module %r (%s) is not Python source; the Ray nodes must have it installed",
                    top, found.origin)
        return None
    return None if _installed(path) else path.resolve()


def _installed(path: Path) -> bool:
    paths = sysconfig.get_paths()
    roots = {*site.getsitepackages(), site.getusersitepackages(),
             *(paths[name] for name in ("stdlib", "platstdlib", "purelib", "platlib"))}
    resolved = path.resolve()
    return any(resolved.is_relative_to(Path(root).resolve()) for root in roots if root)
