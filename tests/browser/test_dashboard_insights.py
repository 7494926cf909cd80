"""The dashboard's views for issue 14 §5 in headless Chromium: the plan's ranking table, parameter
importances, parallel coordinates, a trial page (loss curve, fitted curve and band, s/it, why it
lost), and predictions past the evidence marked as such — on a seeded study (deterministic, no
Ray), then on a real one. Screenshots land in ``test-artifacts/`` (copied to docs/images/)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.app import create_app
from service.db import TERMINAL_STATES
from service.settings import Settings
from tests.service.dashboard_seed import seed_study
from tests.service.service_helpers import wait_for

pytestmark = pytest.mark.browser

CHARTS_DRAWN = "window.Chart && Object.values(Chart.instances).length >= {n}"
STALL_SECONDS = 240  # a real study may take long on busy cores; it fails only when it stops advancing
RICH_SPEC = {  # long enough to tune: several configs ranked, importances computable
    "workload": {"name": "digits-mlp"},
    "target": {"metric": "train_loss", "value": 0.002, "eval_every": 2},
    "cluster": {"backend": "simulated", "nodes": 4, "devices_per_node": 4, "device": {"name": "v100"},
                "network": {"intra_gbps": 300, "inter_gbps": 100, "latency_us": 2}},
    "search": {"strategies": ["sync", "async_groups", "hsgd", "dbs"], "batch_sizes": [8, 16],
               "learning_rates": [0.01, 0.03, 0.1], "momenta": [0.0, 0.3, 0.9]},
    "budget": {"probe_seconds": 0.002, "max_probes": 16, "probe_max_iterations": 20, "max_overhead": 5.0},
    "seed": 0,
}


@pytest.fixture(scope="module")
def seeded_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """The API alone (no scheduler, no Ray) over a seeded study, in a thread; (base URL, study id)."""
    import uvicorn

    url = f"sqlite:///{tmp_path_factory.mktemp('seeded') / 'ttc.db'}"
    study_id, _ = seed_study(url)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(Settings(database_url=url), run_studies=False),
                                           host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}", study_id
    server.should_exit = True
    thread.join(10)


def _study_page(page, base: str, study_id: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(f"{base}/studies/{study_id}")
    page.locator("#plan-card[data-ready]").wait_for()
    page.locator("#parallel svg, #parallel .empty-note").first.wait_for()
    page.wait_for_function(CHARTS_DRAWN.format(n=4))


def test_seeded_study_ranking_importances_parallel_and_beyond_evidence(  # type: ignore[no-untyped-def]
        seeded_url: tuple[str, str], page, artifacts: Path) -> None:
    base, study_id = seeded_url
    _study_page(page, base, study_id)
    plan = httpx.get(f"{base}/v1/studies/{study_id}/plan", timeout=10).json()
    rows = page.locator("#ranking tbody tr")
    assert rows.count() == len(plan["ranking"])
    assert rows.first.get_attribute("data-status") == "plan"
    assert "beyond evidence" in rows.nth(2).inner_text()  # the evidence supports no number there
    # importances: one bar per varying param, from Optuna's evaluator
    bars = page.locator("#importances .bar-row")
    assert bars.count() >= 2 and "PED-ANOVA" in page.locator("#importances").inner_text()
    # parallel coordinates: one line per trial with a value (the diverged one has none)
    assert page.locator("#parallel polyline").count() == 5
    assert page.locator("#parallel .pc-axis").last.get_attribute("data-axis") == "value"
    # the trial predicted 5e8 iterations past 400 measured: marked, not plotted on the log axis
    assert "beyond evidence" in page.locator('#trials tr[data-trial="3"]').inner_text()
    landscape = page.evaluate("""() => {
        const chart = Object.values(Chart.instances).find((c) => c.canvas.id === 'chart-landscape');
        return { labels: chart.data.datasets.map((d) => d.label), max: chart.scales.y.max };
    }""")
    assert "beyond evidence" in landscape["labels"]
    assert landscape["max"] < 100  # seconds: the 5e4 s extrapolation no longer sets the axis
    page.locator("#ranking-card").screenshot(path=artifacts / "dashboard-ranking.png")
    page.locator("#importances-card").screenshot(path=artifacts / "dashboard-importances-seeded.png")
    page.locator("#parallel-card").screenshot(path=artifacts / "dashboard-parallel-coordinates-seeded.png")
    page.screenshot(path=artifacts / "dashboard-beyond-evidence.png", full_page=True)


def test_seeded_trial_page_curve_fit_band_and_why(seeded_url: tuple[str, str], page, artifacts: Path) -> None:  # type: ignore[no-untyped-def]
    base, study_id = seeded_url
    _study_page(page, base, study_id)
    page.locator('#trials tr[data-trial="2"] a').click()
    page.wait_for_url(f"**/studies/{study_id}/trials/2")
    page.wait_for_function(CHARTS_DRAWN.format(n=1))
    labels = page.evaluate("Object.values(Chart.instances)[0].data.datasets.map((d) => d.label)")
    assert {"trial #2", "fit", "80% band", "target"} <= set(labels)
    assert "predicted slower" in page.locator("#why").inner_text()
    assert "s / iteration" in page.locator("#facts").inner_text()
    page.screenshot(path=artifacts / "dashboard-trial-lost.png", full_page=True)

    page.goto(f"{base}/studies/{study_id}/trials/3")
    page.wait_for_function(CHARTS_DRAWN.format(n=1))
    assert "beyond evidence" in page.locator("#fit-note").inner_text()
    assert "beyond evidence" in page.locator("#facts").inner_text()
    page.goto(f"{base}/studies/{study_id}/trials/4")
    page.wait_for_function(CHARTS_DRAWN.format(n=1))
    assert "diverged" in page.locator("#why").inner_text()


@pytest.mark.slow  # a real study through the service's scheduler and Ray: about a minute
@pytest.mark.timeout(1800)  # quiet, a minute; on a loaded machine much longer, so its wait is on progress
def test_real_study_views(service_url: str, page, artifacts: Path) -> None:  # type: ignore[no-untyped-def]
    """A study run by the service: its ranking's first row is the plan and links to a trial page that
    says so; importances and parallel coordinates are drawn from its Optuna study."""
    study_id = httpx.post(f"{service_url}/v1/studies", json=RICH_SPEC, timeout=10).json()["id"]
    page.goto(f"{service_url}/studies/{study_id}")
    study = f"{service_url}/v1/studies/{study_id}"
    wait_for(lambda: httpx.get(study, timeout=30).json()["state"] in TERMINAL_STATES, STALL_SECONDS,
             interval=1.0, what="the study's end", progress=lambda: httpx.get(f"{study}/trials").text)
    page.locator("#plan-card[data-ready]").wait_for()
    page.locator("#live").wait_for(state="hidden")
    page.locator("#parallel svg, #parallel .empty-note").first.wait_for()
    plan = httpx.get(f"{service_url}/v1/studies/{study_id}/plan", timeout=10).json()
    insights = httpx.get(f"{service_url}/dashboard/api/studies/{study_id}/insights", timeout=30).json()
    assert insights["source"] == "optuna"
    rows = page.locator("#ranking tbody tr")
    assert rows.count() == len(plan["ranking"]) >= 1
    assert rows.first.get_attribute("data-config") == plan["ranking"][0]["config_key"]
    assert page.locator("#parallel polyline").count() == len(insights["parallel"]["lines"])
    assert page.locator("#parallel polyline.best").count() >= 1
    if "importances" in insights["importances"]:
        assert page.locator("#importances .bar-row").count() == len(insights["importances"]["importances"])
    else:
        assert insights["importances"]["message"] in page.locator("#importances").inner_text()
    page.screenshot(path=artifacts / "dashboard-study-insights.png", full_page=True)
    page.locator("#importances-card").screenshot(path=artifacts / "dashboard-importances.png")
    page.locator("#parallel-card").screenshot(path=artifacts / "dashboard-parallel-coordinates.png")

    rows.first.locator("a").click()
    page.wait_for_url(f"**/studies/{study_id}/trials/*")
    page.wait_for_function(CHARTS_DRAWN.format(n=1))
    assert page.locator('#why[data-plan="yes"]').count() == 1
    page.screenshot(path=artifacts / "dashboard-trial-plan.png", full_page=True)
    if len(plan["ranking"]) > 1:
        page.go_back()
        rows.nth(1).locator("a").click()
        page.wait_for_function(CHARTS_DRAWN.format(n=1))
        assert page.locator("#why li").count() >= 1
        page.screenshot(path=artifacts / "dashboard-trial-lost-real.png", full_page=True)
