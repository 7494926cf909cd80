"""``POST /v1/predict``'s probes, run in a process of their own, as studies run in the orchestrator's.

The route used to call ``run_configs.predict_config`` in the API process: its first predict started
a local Ray there (a Ray driver's threads and the workers' imports in the process that answers
reads, at the API's CPU priority), and the first ``GET /v1/studies`` after 44 concurrent predicts
waited 30.8 s (issue 36). Each API process now starts one child at its first predict, at the
orchestrator's niceness (``TTC_ORCHESTRATOR_NICE``), at which the local Ray it starts runs its
probes. The child serves each caller on a thread of its own (``multiprocessing.managers``), so
predicts still run side by side; it connects to Ray once, before serving. It exits with the API
process that started it. A probe's error, or the ``SpecError`` of a cluster that cannot hold the
spec, comes back as raised.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
from multiprocessing.managers import BaseManager
from typing import Any

from predictor.types import Config
from worker.spec import Spec

log = logging.getLogger(__name__)

PARENT_CHECK_SECONDS = 1.0


class Predictions:
    """Lives in the child: the predictions themselves (``run_configs.predict_config``)."""

    def predict(self, spec: dict[str, Any], configs: list[dict[str, Any]],
                ray_address: str | None) -> list[dict[str, Any]]:
        from service.runners.run_configs import predict_config

        return predict_config(Spec.model_validate(spec), [Config.from_dict(c) for c in configs], ray_address)


class _Manager(BaseManager):
    pass


_Manager.register("Predictions", Predictions)


def _start_child(nice: int, ray_address: str | None, parent: int) -> None:
    """The child's set-up, before it serves: Ray (its probes niced), lower priority, and a watch on
    its parent."""
    from worker.ray_backend.connect import ensure_ray

    ensure_ray(ray_address, worker_niceness=nice)  # once, here: ray.init is not re-entrant
    if nice:
        os.nice(nice)

    def follow_parent() -> None:
        while os.getppid() == parent:
            threading.Event().wait(PARENT_CHECK_SECONDS)
        import ray

        ray.shutdown()  # the local Ray this process started goes with it
        os._exit(0)

    threading.Thread(target=follow_parent, name="follow-parent", daemon=True).start()


class PredictProcess:
    """The API process's handle on its child, started at the first predict (and again if it died)."""

    def __init__(self, nice: int) -> None:
        self.nice = nice
        self._lock = threading.Lock()
        self._manager: _Manager | None = None
        self._predictions: Any = None
        self._ray_address: str | None = None

    def predict(self, spec: Spec, configs: list[Config], ray_address: str | None) -> list[dict[str, Any]]:
        predictions = self._started(ray_address)
        return predictions.predict(spec.model_dump(mode="json"), [c.to_dict() for c in configs], ray_address)

    def _started(self, ray_address: str | None) -> Any:
        with self._lock:
            alive = self._manager is not None and self._child().is_alive()
            if alive and ray_address != self._ray_address:
                self.shutdown()
                alive = False
            if not alive:
                manager = _Manager(ctx=multiprocessing.get_context("spawn"))  # never fork a serving process
                manager.start(_start_child, (self.nice, ray_address, os.getpid()))
                self._manager, self._predictions = manager, manager.Predictions()  # type: ignore[attr-defined]
                self._ray_address = ray_address
                log.info("predict process started (pid %d, nice +%d)", self._child().pid, self.nice)
            return self._predictions

    def _child(self) -> multiprocessing.process.BaseProcess:
        """The child process (BaseManager keeps it without a public name)."""
        return self._manager._process  # type: ignore[union-attr]

    def shutdown(self) -> None:
        if self._manager is not None:
            self._predictions = None
            self._manager.shutdown()
            self._manager = None


_process: PredictProcess | None = None
_process_lock = threading.Lock()


def predict_config(spec: Spec, configs: list[Config], ray_address: str | None) -> list[dict[str, Any]]:
    """``run_configs.predict_config``, run in this API process's predict process (started on first use,
    at ``TTC_ORCHESTRATOR_NICE``)."""
    global _process
    with _process_lock:
        if _process is None:
            from service.settings import get_settings

            _process = PredictProcess(get_settings().orchestrator_nice)
    return _process.predict(spec, configs, ray_address)


def child_pid() -> int | None:
    """The pid of this process's predict process, None when none runs."""
    with _process_lock:
        if _process is None or _process._manager is None:
            return None
        return _process._child().pid


def shutdown() -> None:
    """Stop this process's predict process (the next predict starts a fresh one)."""
    global _process
    with _process_lock:
        if _process is not None:
            _process.shutdown()
            _process = None
