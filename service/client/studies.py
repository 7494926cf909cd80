"""``ttc tune --server``: submit a study over REST and follow its SSE events to the end.

The stream is resumed with ``Last-Event-ID`` when the connection drops (a service restart), so a
client sees every event exactly once while the study resumes server-side.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import httpx

from service.db.models import TERMINAL_STATES
from worker.spec import Spec

log = logging.getLogger(__name__)

RECONNECT_SECONDS = 120.0


class RemoteError(RuntimeError):
    """The server refused or could not be reached; ``bad_input`` marks a rejected spec (422)."""

    def __init__(self, message: str, bad_input: bool = False) -> None:
        super().__init__(message)
        self.bad_input = bad_input


@dataclass
class Outcome:
    study_id: str
    state: str
    error: str | None
    plan: dict[str, Any] | None


def explain(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except ValueError:
        return response.text[:500]
    if isinstance(detail, list):
        return "\n".join(
            f"{'.'.join(str(p) for p in e.get('loc', [])[1:]) or '(spec)'}: {e.get('msg')}" for e in detail
        )
    return str(detail)


def post_accepted(client: httpx.Client, server: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """POST ``body`` and return the 202's JSON; anything else is a RemoteError a user can act on."""
    try:
        response = client.post(path, json=body)
    except httpx.TransportError as exc:
        raise RemoteError(f"cannot reach {server}: {exc}") from None
    if response.status_code == 422:
        raise RemoteError(explain(response), bad_input=True)
    if response.status_code != 202:
        raise RemoteError(f"{server} answered {response.status_code}: {explain(response)}")
    return response.json()


def _events(client: httpx.Client, study_id: str, after: int) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """Parse one SSE connection into (id, event, data) triples."""
    with client.stream("GET", f"/v1/studies/{study_id}/events", params={"after": after},
                       timeout=httpx.Timeout(10.0, read=None)) as response:
        response.raise_for_status()
        event_id, kind, data = 0, "message", ""
        for line in response.iter_lines():
            if line.startswith("id:"):
                event_id = int(line[3:].strip())
            elif line.startswith("event:"):
                kind = line[6:].strip()
            elif line.startswith("data:"):
                data += line[5:].strip()
            elif not line and data:
                yield event_id, kind, json.loads(data)
                kind, data = "message", ""


def tune_remote(
    server: str,
    spec: Spec,
    token: str | None = None,
    on_event: Callable[[str, dict[str, Any]], None] | None = None,
) -> Outcome:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=30.0) as client:
        study_id = post_accepted(client, server, "/v1/studies", spec.model_dump(mode="json"))["id"]
        if on_event is not None:
            on_event("submitted", {"study_id": study_id})
        state, error, cursor = "pending", None, 0
        lost_since: float | None = None
        while state not in TERMINAL_STATES:
            try:
                for event_id, kind, data in _events(client, study_id, cursor):
                    cursor, lost_since = event_id, None
                    if kind == "state":
                        state, error = data["state"], data.get("error")
                    if on_event is not None:
                        on_event(kind, data)
            except (httpx.TransportError, httpx.HTTPStatusError) as exc:
                lost_since = lost_since or time.monotonic()
                if time.monotonic() - lost_since > RECONNECT_SECONDS:
                    raise RemoteError(f"lost {server} for {RECONNECT_SECONDS:.0f}s: {exc}") from None
                log.warning("event stream interrupted (%s); reconnecting", exc)
                time.sleep(1.0)
        plan = client.get(f"/v1/studies/{study_id}/plan").json() if state == "done" else None
        return Outcome(study_id, state, error, plan)
