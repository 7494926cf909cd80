"""Probes leave the service only as Ray tasks, so one machine and a real cluster run one code path.

``ensure_ray`` connects to ``RAY_ADDRESS`` when set, or starts a local Ray with this machine's
CPUs. Each probe is a task asking for one CPU, so probes run in parallel up to the CPUs Ray has.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from typing import Any

import ray

from predictor.types import Config, ProbeResult
from worker.spec import Spec

log = logging.getLogger(__name__)


def ensure_ray(address: str | None = None) -> None:
    if ray.is_initialized():
        return
    address = address or os.environ.get("RAY_ADDRESS") or None
    log.info("connecting to Ray at %s", address or "a new local instance")
    ray.init(
        address=address,
        include_dashboard=False,
        logging_level=logging.WARNING,
        log_to_driver=False,
        configure_logging=False,
    )


@ray.remote(num_cpus=1, max_retries=1)
def _probe_task(
    spec: dict[str, Any], config: dict[str, Any], max_seconds: float, max_iterations: int
) -> dict[str, Any]:
    import torch

    from worker.probe import run_config

    torch.set_num_threads(1)
    parsed = Spec.model_validate(spec)
    return run_config(parsed, Config.from_dict(config), max_seconds, max_iterations).to_dict()


class ProbeLauncher:
    """Submits configurations as Ray tasks and yields results as each one finishes."""

    def __init__(self, spec: Spec, address: str | None = None) -> None:
        self.spec = spec
        self.address = address

    def start(self) -> None:
        ensure_ray(self.address)

    def run(self, configs: list[Config], max_seconds: float, max_iterations: int) -> Iterator[ProbeResult]:
        """Run ``configs`` concurrently; a failed task comes back as a result with ``error`` set."""
        spec = self.spec.model_dump(mode="json")
        pending = {
            _probe_task.remote(spec, c.to_dict(), max_seconds, max_iterations): c for c in configs
        }
        while pending:
            done, _ = ray.wait(list(pending), num_returns=1)
            config = pending.pop(done[0])
            try:
                yield ProbeResult.from_dict(ray.get(done[0]))
            except ray.exceptions.RayError as exc:
                reason = _reason(exc)
                log.warning("probe %s failed: %s", config.key(), reason)
                yield ProbeResult(config, 0, 0.0, [], error=reason)

    def cancel(self) -> None:
        """Nothing to release: tasks finish on their own; kept for a symmetric lifecycle."""


def _reason(exc: ray.exceptions.RayError) -> str:
    """The root cause of a failed task in one line (the full traceback stays in Ray's logs)."""
    cause = getattr(exc, "cause", None) or exc
    lines = str(cause).strip().splitlines() or [""]
    return f"{type(cause).__name__}: {lines[-1]}"[:500]
