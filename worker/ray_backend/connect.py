"""The one place this codebase connects to Ray (probe launcher, scheduler, CLI, Ray runs).

``ensure_ray`` joins ``RAY_ADDRESS`` when set (a GCS address, or ``ray://`` for Ray Client), or
the address given, or starts a local Ray with this machine's CPUs; a process that is already
connected stays as it is. The job carries the allowlisted workload modules and ttc's settings to
every node (``worker.ray_backend.runtime_env``).
"""

from __future__ import annotations

import logging
import os

import ray

from worker.ray_backend.runtime_env import job_runtime_env

log = logging.getLogger(__name__)


def ensure_ray(address: str | None = None) -> None:
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    log.info("connecting to Ray at %s", address or "a new local instance")
    ray.init(
        address=address,
        runtime_env=job_runtime_env(),  # users' workload modules and ttc's settings travel with the job
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=False,
        configure_logging=False,
    )
