"""Probes leave the service only through Ray, so one machine and a real cluster run one code path.

``start()`` connects to Ray (:func:`worker.ray_backend.connect.ensure_ray`, the one place that
does). A simulated probe is a task asking for one CPU, so probes run in parallel up to the CPUs
Ray has. A ``backend: ray`` probe runs in the launcher's probe host
(:mod:`worker.ray_backend.probe_host`), which keeps device actors started between probes of one
allocation; ``close()`` releases them.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator
from typing import Any

import ray

from predictor.types import ProbeRequest, ProbeResult
from worker.errors import describe_error
from worker.lineage import State, run_wire_segment
from worker.ray_backend.config import RayBackendConfig
from worker.ray_backend.connect import ensure_ray
from worker.ray_backend.feasibility import check_feasible
from worker.ray_backend.probe_host import remove_placement_groups, start_host
from worker.spec import Spec

log = logging.getLogger(__name__)

CLOSE_SECONDS = 5.0  # for the probe host to shut its idle groups down; then (or while busy) it is killed


@ray.remote(num_cpus=1, max_retries=1, num_returns=2)
def _probe_task(
    spec: dict[str, Any], request: dict[str, Any], parent: State | None
) -> tuple[dict[str, Any], State]:
    return run_wire_segment(spec, request, parent)


class ProbeLauncher:
    """Submits probes as Ray tasks and yields results as each one finishes.

    A probe that continues or forks another starts from that probe's end state, which stays in
    Ray's object store (by probe key) for the probes that follow; ``state_source`` supplies the
    states this launcher did not produce itself (a resumed study's, from its database).
    ``start()`` refuses a ``backend: ray`` spec that the cluster cannot hold
    (``InfeasibleCluster``) before any probe is launched.
    """

    STOP_POLL_SECONDS = 0.5  # how often a waiting ``run`` looks at its ``stop`` event

    def __init__(self, spec: Spec, address: str | None = None,
                 state_source: Callable[[str], State | None] | None = None) -> None:
        self.spec = spec
        self.address = address
        self.state_source = state_source
        self.states: dict[str, ray.ObjectRef] = {}  # probe key → its end state
        self._pending: dict[ray.ObjectRef, tuple[ProbeRequest, ray.ObjectRef]] = {}
        self._host: Any = None  # the probe host of ``backend: ray`` probes, started with the first
        self._host_prefix = ""

    def start(self) -> None:
        ensure_ray(self.address)
        if self.spec.cluster.backend == "ray":
            check_feasible(self.spec)

    def close(self) -> None:
        """Release what the launcher holds on the cluster (the probe host and its idle device
        actors); a later ``run`` starts afresh."""
        if self._host is None:
            return
        try:
            ray.get(self._host.close.remote(), timeout=CLOSE_SECONDS)  # leave process groups cleanly
        except (ray.exceptions.RayError, TimeoutError) as exc:
            log.info("the probe host did not close within %ss (%s); killing it", CLOSE_SECONDS, exc)
        self._kill_host()

    def groups_reused(self) -> int:
        """How many ``backend: ray`` probes ran on device actors an earlier probe had started."""
        return 0 if self._host is None else ray.get(self._host.reused.remote())

    def __enter__(self) -> ProbeLauncher:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _submit(self, spec: dict[str, Any], request: ProbeRequest, parent: ray.ObjectRef | None
                ) -> tuple[ray.ObjectRef, ray.ObjectRef]:
        if self.spec.cluster.backend != "ray" or not RayBackendConfig.from_env().reuse_actors:
            return _probe_task.remote(spec, request.to_dict(), parent)
        if self._host is None:
            self._host, self._host_prefix = start_host()
        return self._host.probe.remote(spec, request.to_dict(), parent)

    def _kill_host(self) -> None:
        """Kill the probe host (its device actors die with it) and remove its placement groups,
        which would otherwise hold their CPUs until the job ends."""
        ray.kill(self._host, no_restart=True)
        removed = remove_placement_groups(self._host_prefix)
        log.debug("killed probe host %s; removed %d placement group(s)", self._host_prefix, removed)
        self._host = None

    def state(self, key: str) -> State:
        """The end state of probe ``key`` (fetched from the object store)."""
        return ray.get(self._state_ref(key))

    def _state_ref(self, key: str) -> ray.ObjectRef:
        if key not in self.states:
            found = self.state_source(key) if self.state_source else None
            if found is None:
                raise KeyError(f"the end state of probe {key!r} is not available")
            self.states[key] = ray.put(found)
        return self.states[key]

    def run(self, requests: list[ProbeRequest], stop: threading.Event | None = None,
            cancel_running: bool = True) -> Iterator[ProbeResult]:
        """Run ``requests`` concurrently; a failed task comes back as a result with ``error`` set.

        Once ``stop`` is set the iterator ends without the results still running. With
        ``cancel_running`` their tasks are cancelled (``cancel``): a cancelled study frees its
        share of the cluster within about a second instead of when its longest probe ends.
        Without it they are left to finish: Ray 2.60's driver aborts when a force-cancel races
        the reply of a task that is just completing ("Tried to complete task that was not
        pending", the race of ray-project/ray#54798 on the completion path), and short segments
        that complete every few seconds, as a training's do, meet that race.
        """
        spec = self.spec.model_dump(mode="json")
        self._pending = {}
        lost = []
        for request in requests:
            try:
                parent = self._state_ref(request.parent) if request.parent else None
            except KeyError as exc:
                lost.append(request.failed(str(exc.args[0])))
                continue
            result_ref, state_ref = self._submit(spec, request, parent)
            self._pending[result_ref] = (request, state_ref)
        yield from lost
        timeout = None if stop is None else self.STOP_POLL_SECONDS
        while self._pending:
            done, _ = ray.wait(list(self._pending), num_returns=1, timeout=timeout)
            if stop is not None and stop.is_set():
                if cancel_running:
                    self.cancel()
                self._pending = {}
                return
            if not done:
                continue
            request, state_ref = self._pending.pop(done[0])
            try:
                result = ProbeResult.from_dict(ray.get(done[0]))
            except ray.exceptions.RayError as exc:
                _discard(state_ref)
                reason = describe_error(exc)
                log.warning("probe %s failed: %s", request.key, reason)
                if isinstance(exc, ray.exceptions.RayActorError) and self._host is not None:
                    self._kill_host()  # the probe host died (its node, say): the next probe starts another
                yield request.failed(reason)
                continue
            self.states[request.key] = state_ref
            yield result

    def cancel(self) -> None:
        """Stop every probe still running. A task is force-cancelled (the worker process exits,
        taking the device actors it created with it: Ray's owner fate-sharing) along with any
        task it started; a probe host still running one is killed (``_kill_host``). A task
        whose result has already arrived is left alone: a force-cancel racing a completion is
        what aborts Ray 2.60's driver (``run``), so the window is kept to tasks still running."""
        refs = list(self._pending)
        _, running = ray.wait(refs, num_returns=len(refs), timeout=0) if refs else ([], [])
        for ref in running:
            log.info("cancelling probe %s", self._pending[ref][0].key)
            if self._host is None:
                ray.cancel(ref, force=True, recursive=True)
        if running and self._host is not None:
            self._kill_host()
        self._pending = {}


def _discard(ref: ray.ObjectRef) -> None:
    """Read a failed task's other return value, which holds the same error, so that Ray does not
    print it again as an unhandled error when the reference is dropped."""
    with contextlib.suppress(ray.exceptions.RayError):
        ray.get(ref)
