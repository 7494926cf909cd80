"""The one place this codebase connects to Ray (probe launcher, scheduler, CLI, Ray runs).

``ensure_ray`` joins the address given, or ``RAY_ADDRESS`` when set (a GCS address, or ``ray://``
for Ray Client), or else starts a Ray of its own with this machine's CPUs (``address="local"``): a
Ray that someone else started on the machine with ``ray start`` is never joined by accident, since
Ray's own default would attach to it. A process that is already connected stays as it is. The
job carries the allowlisted workload modules and ttc's settings to every node
(``worker.ray_backend.runtime_env``).

A Ray started here runs its workers at the niceness of the process that starts it
(LOCAL_SYSTEM_CONFIG): the study process's ``TTC_ORCHESTRATOR_NICE``, the CLI's own. Ray's
default adds 15 to that, and a probe at nice 15 beside two CPU-bound jobs at nice 0 gets about 3%
of a core: one probe of 100 iterations of digits-mlp took 4 min 18 s, and the dashboard's browser
test failed on a loaded machine.
"""

from __future__ import annotations

import logging
import os

import ray

from worker.ray_backend.runtime_env import job_runtime_env

log = logging.getLogger(__name__)

LOCAL_SYSTEM_CONFIG = {"worker_niceness": 0}  # added to the starting process's niceness (Ray's: 15)


def ensure_ray(address: str | None = None) -> None:
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS") or "local"
    log.info("connecting to Ray at %s", "a new local instance" if address == "local" else address)
    ray.init(
        address=address,
        runtime_env=job_runtime_env(),  # users' workload modules and ttc's settings travel with the job
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=False,
        configure_logging=False,
        _system_config=LOCAL_SYSTEM_CONFIG if address == "local" else None,
    )
