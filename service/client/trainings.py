"""``ttc train --server``: submit the spec, start its training, and follow it until it ends.

The training is followed by polling ``GET /v1/studies/{id}/training`` (the result so far is small);
a dropped connection (a service restart: the training resumes server-side from its last
checkpoint) is retried for ``RECONNECT_SECONDS`` before giving up.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from service.client.studies import RECONNECT_SECONDS, RemoteError, post_accepted
from service.db.models import TRAINING_TERMINAL_STATES
from worker.spec import Spec

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0


@dataclass
class TrainingOutcome:
    study_id: str
    state: str
    error: str | None
    result: dict[str, Any] | None


def train_remote(
    server: str,
    spec: Spec,
    token: str | None = None,
    max_iterations: int | None = None,
    on_update: Callable[[str, dict[str, Any]], None] | None = None,
) -> TrainingOutcome:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=30.0) as client:
        study_id = post_accepted(client, server, "/v1/studies", spec.model_dump(mode="json"))["id"]
        if on_update is not None:
            on_update("submitted", {"study_id": study_id})
        body = {} if max_iterations is None else {"max_iterations": max_iterations}
        training = post_accepted(client, server, f"/v1/studies/{study_id}/train", body)
        lost_since: float | None = None
        segments = 0
        while training["state"] not in TRAINING_TERMINAL_STATES:
            time.sleep(POLL_SECONDS)
            try:
                response = client.get(f"/v1/studies/{study_id}/training")
                response.raise_for_status()
            except (httpx.TransportError, httpx.HTTPStatusError) as exc:
                lost_since = lost_since or time.monotonic()
                if time.monotonic() - lost_since > RECONNECT_SECONDS:
                    raise RemoteError(f"lost {server} for {RECONNECT_SECONDS:.0f}s: {exc}") from None
                log.warning("training status unavailable (%s); retrying", exc)
                continue
            lost_since, training = None, response.json()
            if on_update is not None and training["segments"] != segments:
                segments = training["segments"]
                on_update("progress", training)
        return TrainingOutcome(study_id, training["state"], training["error"], training["result"])
