"""The dashboard in headless Chromium against a live service running a tiny real study.

One flow, because the study is the slow part: the studies list, a running study whose trial
rows appear without a reload, the plan card once it finishes, the table's sort and filter.
Screenshots of every page land in ``test-artifacts/``.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.browser

TINY_SPEC = {
    "workload": {"name": "digits-mlp"},
    "target": {"metric": "train_loss", "value": 0.1, "eval_every": 5},
    "cluster": {"backend": "simulated", "nodes": 2, "devices_per_node": 2, "device": {"name": "v100"}},
    "search": {"batch_sizes": [32]},
    "budget": {"probe_seconds": 0.5, "max_probes": 6, "probe_max_iterations": 100},
    "seed": 0,
}
STUDY_SECONDS = 240_000  # ms for Playwright: Ray's start on 2 busy cores dominates


def _trial_rows(page) -> int:  # type: ignore[no-untyped-def]
    return page.locator("#trials tbody tr").count()


def test_studies_list_running_study_and_plan(service_url: str, page, artifacts: Path) -> None:  # type: ignore[no-untyped-def]
    study_id = httpx.post(f"{service_url}/v1/studies", json=TINY_SPEC, timeout=10).json()["id"]

    page.goto(service_url + "/")
    row = page.locator(f'#studies tr[data-study="{study_id}"]')
    row.wait_for()
    assert "digits-mlp" in row.inner_text()
    page.screenshot(path=artifacts / "dashboard-studies.png", full_page=True)

    row.locator("a").click()
    page.wait_for_url(f"**/studies/{study_id}")
    page.locator("#live:not([hidden])").wait_for(timeout=STUDY_SECONDS)
    page.locator("#trials tbody tr").first.wait_for(timeout=STUDY_SECONDS)
    first = _trial_rows(page)
    # Live: more rows arrive over the event stream, with no reload of the page.
    more_rows_or_plan = (
        f"document.querySelectorAll('#trials tbody tr').length > {first}"
        " || document.querySelector('#plan-card[data-ready]')"
    )
    page.wait_for_function(more_rows_or_plan, timeout=STUDY_SECONDS)
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
    page.screenshot(path=artifacts / "dashboard-study-running.png", full_page=True)

    page.locator("#plan-card[data-ready]").wait_for(timeout=STUDY_SECONDS)
    plan = httpx.get(f"{service_url}/v1/studies/{study_id}/plan", timeout=10).json()
    assert plan["config"]["strategy"] in page.locator("#plan-config").inner_text()
    assert "×" in page.locator("#plan-body").inner_text()  # the speedup over the baseline
    assert _trial_rows(page) == plan["probes"]["count"]
    page.locator("#live").wait_for(state="hidden")
    page.screenshot(path=artifacts / "dashboard-study-done.png", full_page=True)

    page.goto(service_url + "/")
    page.locator(f'#studies tr[data-study="{study_id}"][data-state="done"]').wait_for()
    page.screenshot(path=artifacts / "dashboard-studies-done.png", full_page=True)


def test_trials_table_sorts_and_filters(service_url: str, page, artifacts: Path) -> None:  # type: ignore[no-untyped-def]
    spec = {**TINY_SPEC, "budget": {**TINY_SPEC["budget"], "max_probes": 4}}
    study_id = httpx.post(f"{service_url}/v1/studies", json=spec, timeout=10).json()["id"]
    page.goto(f"{service_url}/studies/{study_id}")
    page.locator("#plan-card[data-ready]").wait_for(timeout=STUDY_SECONDS)

    page.locator('th[data-sort="predicted_ttc"]').click()
    rows = page.locator("#trials tbody tr")
    numbers = [int(n) for n in rows.evaluate_all("rows => rows.map(r => r.dataset.trial)")]
    trials = httpx.get(f"{service_url}/v1/studies/{study_id}/trials", timeout=10).json()["data"]
    ttc = {t["number"]: t["predicted_ttc"] for t in trials}
    ranked = [n for n in numbers if ttc[n] is not None]
    assert ranked == sorted(ranked, key=lambda n: ttc[n])
    assert numbers[: len(ranked)] == ranked  # blanks sort last

    strategy = trials[0]["config"]["strategy"]
    page.locator("#filter").fill(strategy)
    shown = page.locator("#trials tbody tr")
    assert shown.count() == sum(t["config"]["strategy"] == strategy for t in trials)
    page.locator("#filter").fill("no-such-config")
    assert shown.count() == 0
    page.screenshot(path=artifacts / "dashboard-trials-filtered.png")
