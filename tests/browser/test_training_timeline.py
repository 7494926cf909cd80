"""The training card in headless Chromium (issue 13): a study trained through REST shows its run's
loss against cluster-seconds with its phases, and the phases table matches the Training result.
Skipped, as the other browser tests, without Chromium or Playwright."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.service.training_helpers import training_spec

pytestmark = pytest.mark.browser
TRAINING_SECONDS = 240_000  # ms for Playwright: Ray's start on 2 busy cores dominates


def test_study_page_draws_the_training_timeline(service_url: str, page, artifacts: Path) -> None:  # type: ignore[no-untyped-def]
    spec = training_spec(target=0.0005)
    study_id = httpx.post(f"{service_url}/v1/studies", json=spec, timeout=10).json()["id"]
    assert httpx.post(f"{service_url}/v1/studies/{study_id}/train", json={"max_overhead": 0.2},
                      timeout=10).status_code == 202
    page.goto(f"{service_url}/studies/{study_id}")
    page.locator("#training-card:not([hidden])").wait_for(timeout=TRAINING_SECONDS)
    page.locator("#training-card[data-ready]").wait_for(timeout=TRAINING_SECONDS)
    page.locator("#training-state .badge.done").wait_for(timeout=TRAINING_SECONDS)
    training = httpx.get(f"{service_url}/v1/studies/{study_id}/training", timeout=10).json()
    phases = training["result"]["phases"]
    assert page.locator("#phases tbody tr").count() == len(phases)
    assert "Reached the target" in page.locator("#training-summary").inner_text()
    drawn = page.evaluate("Chart.getChart('chart-training').data.datasets.map(d => d.label)")
    assert sum(label.startswith("phase ") for label in drawn) == len(phases)
    assert sum(label.startswith("switch ") for label in drawn) == len(phases) - 1
    assert any(label.startswith("target") for label in drawn)
    page.screenshot(path=artifacts / "dashboard-training-timeline.png", full_page=True)
