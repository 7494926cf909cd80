"""POST /v1/predict runs its probes outside the API process (issue 36, item 8): in a child at the
orchestrator's niceness, started at the first predict and reused, never a Ray in the API process."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.runners import predict_process
from service.settings import Settings
from tests.service.service_helpers import tiny_spec


@pytest.fixture(autouse=True)
def fresh_predict_process() -> Iterator[None]:
    predict_process.shutdown()  # a child started by an earlier test has that test's settings
    yield
    predict_process.shutdown()


def test_predict_runs_in_a_niced_child_never_in_the_api_process(
    ray_address: str, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def not_here(*_: object) -> None:
        raise AssertionError("the API process connected to Ray")

    monkeypatch.setattr("worker.ray_backend.connect.ensure_ray", not_here)  # a spawned child has its own
    monkeypatch.setattr("worker.launcher.ensure_ray", not_here)
    monkeypatch.setenv("TTC_ORCHESTRATOR_NICE", "7")
    config = {"strategy": "sync", "nodes": 1, "devices_per_node": 2, "batch_size": 32, "lr": 0.1}
    app = create_app(Settings(database_url=database_url, ray_address=ray_address), run_studies=False)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        first = client.post("/v1/predict", json={"spec": tiny_spec(), "configs": [config]})
        child = predict_process.child_pid()
        second = client.post("/v1/predict", json={"spec": tiny_spec(), "configs": [config, config]})
    assert first.status_code == 200, first.text
    assert first.json()[0]["probe"]["iterations"] > 0
    assert second.status_code == 200 and len(second.json()) == 2
    assert child is not None and child != os.getpid() and predict_process.child_pid() == child  # reused
    assert os.getpriority(os.PRIO_PROCESS, child) - os.getpriority(os.PRIO_PROCESS, 0) == 7
