"""Open event streams are capped per study and in all: past a cap a 429 with Retry-After, and a
slot frees when its client goes away (issue 36, item 7)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack

import httpx
import pytest

from service.api.stream_slots import StreamSlots
from service.app import create_app
from service.db import Database, study_store
from service.settings import Settings
from tests.service.live_app import serving
from tests.service.service_helpers import tiny_spec, wait_for


@pytest.fixture
def service(db: Database) -> Iterator[tuple[str, list[str]]]:
    """The API (no studies run) with at most 2 streams per study and 3 in all, and 3 pending studies."""
    with db.transaction() as session:
        studies = [study_store.create_study(session, spec=tiny_spec()).id for _ in range(3)]
    settings = Settings(database_url=db.url, max_event_streams_per_study=2, max_event_streams=3)
    app = create_app(settings, run_studies=False)
    with serving(app) as url:
        yield url, studies


def test_streams_past_a_cap_are_429_until_one_closes(service: tuple[str, list[str]]) -> None:
    url, (first, second, third) = service
    with httpx.Client(base_url=url, timeout=10) as client, ExitStack() as streams:
        def follow(study_id: str) -> httpx.Response:
            return streams.enter_context(client.stream("GET", f"/v1/studies/{study_id}/events"))

        held = [follow(first), follow(first)]
        assert [r.status_code for r in held] == [200, 200]
        refused = client.get(f"/v1/studies/{first}/events")
        assert refused.status_code == 429 and refused.headers["Retry-After"] == "5"
        assert "TTC_MAX_EVENT_STREAMS_PER_STUDY" in refused.json()["detail"]
        assert follow(second).status_code == 200  # another study has slots of its own
        refused = client.get(f"/v1/studies/{third}/events")
        assert refused.status_code == 429 and "TTC_MAX_EVENT_STREAMS)" in refused.json()["detail"]
        held[0].close()

        def accepted() -> httpx.Response | None:
            response = client.get(f"/v1/studies/{third}/events", params={"follow": "false"})
            return response if response.status_code == 200 else None

        assert wait_for(accepted, timeout=10, interval=0.2, what="the closed stream's slot freed")


def test_a_finished_stream_frees_its_slot(service: tuple[str, list[str]]) -> None:
    url, (first, _, _) = service
    for _ in range(5):  # more than the cap, one after another
        assert httpx.get(f"{url}/v1/studies/{first}/events", params={"follow": "false"}).status_code == 200


def test_a_stream_dropped_before_its_first_byte_frees_its_slot() -> None:
    slots = StreamSlots(per_study=1, total=1)

    async def stream() -> Iterator[str]:  # type: ignore[misc]
        yield ""

    body = stream()
    slots.hold("a", body)
    assert slots.count("a") == 1 and slots.count() == 1
    del body  # never iterated: Starlette dropped it
    assert slots.count() == 0
    slots.hold("a", stream())  # taken and dropped at once
    assert slots.count() == 0


def test_the_429_is_in_the_openapi_schema(api) -> None:  # type: ignore[no-untyped-def]
    responses = api.get("/openapi.json").json()["paths"]["/v1/studies/{study_id}/events"]["get"]["responses"]
    assert "429" in responses
