"""Cancel stops a running study's Ray work, not only its state (issue 15, found 3: cancel took ~2
minutes to mark the study, the Ray workers kept running, three probe rows stayed ``running``)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import httpx
import pytest
import ray

from service.db import Database, measurement_store
from tests.service.service_helpers import ServiceProcess, tiny_spec, wait_for

log = logging.getLogger(__name__)


def _idle(total_cpus: float) -> bool:
    """No task or actor of any study holds a CPU of the session's Ray."""
    return ray.available_resources().get("CPU", 0) >= total_cpus


@pytest.mark.slow
def test_cancel_stops_the_probes_on_ray_and_leaves_no_probe_running(
    database_url: str, ray_address: str, tmp_path: Path
) -> None:
    total = ray.cluster_resources()["CPU"]
    db = Database(database_url)
    db.migrate()
    spec = tiny_spec(probe_seconds=86_400, probe_max_iterations=1_000_000)  # minutes per probe
    service = ServiceProcess(database_url, ray_address, tmp_path / "service.log").start()
    try:
        study_id = httpx.post(f"{service.url}/v1/studies", json=spec).json()["id"]

        def probes_running() -> bool:
            with db.read() as session:
                counts = measurement_store.count_probes_by_state(session, study_id=study_id)
                running = counts.get("running", 0)
            return running >= 1 and not _idle(total)

        wait_for(probes_running, timeout=120, interval=0.2, what="a probe running on Ray")
        asked = time.monotonic()
        assert httpx.post(f"{service.url}/v1/studies/{study_id}/cancel").status_code == 202
        wait_for(lambda: _idle(total), timeout=60, interval=0.1, what="Ray idle after the cancel")
        idle_after = time.monotonic() - asked

        def state() -> str:
            return httpx.get(f"{service.url}/v1/studies/{study_id}").json()["state"]

        wait_for(lambda: state() == "cancelled", timeout=60, interval=0.1, what="the study cancelled")
        with db.read() as session:
            probes = measurement_store.count_probes_by_state(session, study_id=study_id)
        assert "running" not in probes and probes.get("cancelled", 0) >= 1
        assert httpx.post(f"{service.url}/v1/studies/{study_id}/cancel").status_code == 409
        log.info("cancel to no Ray work: %.1f s; probes by state after: %s", idle_after, probes)
    finally:
        service.stop()
        db.dispose()
