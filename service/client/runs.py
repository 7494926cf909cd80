"""``ttc run --server``: measured runs are recorded by a ttc service instead of the local database.

The training itself runs where ``ttc run`` is (its Ray cluster, ``RAY_ADDRESS``); only the
results travel, to ``POST /v1/runs``. The service is asked first (a one-row study listing: it
needs the database the runs go to, not the service's Ray), so an unreachable one is reported
before minutes of training, not after.
"""

from __future__ import annotations

from typing import Any

import httpx

from predictor.types import json_safe
from service.client.studies import RemoteError, explain
from service.runners.run_configs import RunTarget


def _client(server: str, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=30.0)


def check_service(server: str) -> None:
    """Raise :class:`RemoteError` unless ``server`` answers a read of its study list."""
    with _client(server, None) as client:
        try:
            response = client.get("/v1/studies", params={"limit": 1})
        except httpx.TransportError as exc:
            raise RemoteError(f"cannot reach {server}: {exc}") from None
    if response.status_code != 200:
        raise RemoteError(f"{server} answered {response.status_code} to /v1/studies: {explain(response)}")


def record_runs_remote(
    server: str, token: str | None, targets: list[RunTarget], results: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """POST each result with its study id; the service's answers (run id, linked study id)."""
    recorded = []
    with _client(server, token) as client:
        for target, result in zip(targets, results, strict=True):
            body = {"study_id": target.study_id, "result": json_safe(result)}
            try:
                response = client.post("/v1/runs", json=body)
            except httpx.TransportError as exc:
                raise RemoteError(f"cannot reach {server}: {exc}") from None
            if response.status_code != 201:
                raise RemoteError(f"{server} answered {response.status_code}: {explain(response)}",
                                  bad_input=response.status_code == 422)
            recorded.append(response.json())
    return recorded
