"""The one place this codebase connects to Ray (probe launcher, scheduler, CLI, Ray runs).

``ensure_ray`` joins the address given, or ``RAY_ADDRESS`` when set (a GCS address, or ``ray://``
for Ray Client), or else starts a Ray of its own with this machine's CPUs (``address="local"``): a
Ray that someone else started on the machine with ``ray start`` is never joined by accident, since
Ray's own default would attach to it. A process that is already connected stays as it is. The
job carries the allowlisted workload modules and ttc's settings to every node
(``worker.ray_backend.runtime_env``).

A Ray started here runs its workers ``worker_niceness`` above the process that starts it (Ray's
default adds 15: a probe at nice 15 beside two CPU-bound jobs at nice 0 gets about 3% of a core,
and one probe of 100 iterations of digits-mlp took 4 min 18 s on a loaded machine). A process that
lowers its own priority connects first and passes its niceness here: Ray's own processes then
start at full priority (started at nice 10 beside two busy jobs, Ray's node timed out during
start-up) and only the probes run niced.
"""

from __future__ import annotations

import logging
import os

import ray

from worker.ray_backend.runtime_env import job_runtime_env

log = logging.getLogger(__name__)


def ensure_ray(address: str | None = None, worker_niceness: int = 0) -> None:
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
        _system_config={"worker_niceness": worker_niceness} if address == "local" else None,
    )
