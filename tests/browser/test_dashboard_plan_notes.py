"""The study page in headless Chromium on a plan that says "not worth tuning" and whose every config
is beyond the evidence (issue 36, item 9): the plan card says so and why, and the ranking's "why it
lost" compares no point values. (The empty cards' one-line reasons: tests/service/
test_dashboard_empty_cards.py.)"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from service.app import create_app
from service.dashboard.plan_view import BEYOND_ALL
from service.db import Database, study_store
from service.settings import Settings
from tests.service.dashboard_seed import seed_study
from tests.service.live_app import serving

pytestmark = pytest.mark.browser
REASON = "a probe reached the target in 0.03 s; the 6 probes already cost more than tuning may spend"


@pytest.fixture(scope="module")
def not_worth_tuning(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The seeded study, its plan made "not worth tuning" with no supported number; (URL, id)."""
    url = f"sqlite:///{tmp_path_factory.mktemp('not-worth') / 'ttc.db'}"
    study_id, _ = seed_study(url)
    db = Database(url)
    with db.transaction() as session:
        study = study_store.get_study(session, study_id=study_id)
        ranking = [{**row, "predicted": {"ttc_seconds": None}} for row in study.plan["ranking"]]
        study.plan = {**study.plan, "worth_tuning": False, "worth_tuning_reason": REASON, "ranking": ranking}
    db.dispose()
    with serving(create_app(Settings(database_url=url), run_studies=False)) as base:
        yield base, study_id


def test_the_plan_card_says_not_worth_tuning_and_no_point_is_compared(  # type: ignore[no-untyped-def]
        not_worth_tuning: tuple[str, str], page) -> None:
    base, study_id = not_worth_tuning
    page.goto(f"{base}/studies/{study_id}")
    page.locator("#plan-card[data-ready]").wait_for()
    note = page.locator("#plan-not-worth").inner_text()
    assert "not worth tuning" in note.lower() and REASON in note
    lost = page.locator('#ranking tbody tr[data-status="lost"]')
    assert lost.count() == 2
    for i in range(lost.count()):
        assert BEYOND_ALL in lost.nth(i).inner_text() and "predicted slower" not in lost.nth(i).inner_text()
