"""The dashboard's new JSON (issue 14 §5): importances and parallel coordinates computed with Optuna,
a trial's page (curve, fitted curve and band, s/it, why it lost), predictions past the evidence
flagged, and ``ttc studies show`` printing the plan's ranking — on seeded studies, no Ray."""

from __future__ import annotations

import math

import optuna
import pytest
from typer.testing import CliRunner

from service.app import create_app
from service.cli.main import app
from service.dashboard import insights
from service.settings import Settings
from tests.service.dashboard_seed import seed_study
from tests.service.service_helpers import local_client


@pytest.fixture
def seeded(database_url: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, list[str]]:
    monkeypatch.setenv("TTC_DATABASE_URL", database_url)  # what the CLI reads
    return seed_study(database_url)


def test_importances_and_parallel_coordinates(database_url: str, seeded: tuple[str, list[str]]) -> None:
    sid, _ = seeded
    with local_client(create_app(Settings(database_url=database_url), run_studies=False)) as client:
        body = client.get(f"/dashboard/api/studies/{sid}/insights").json()
        assert client.get("/dashboard/api/studies/nope/insights").status_code == 404
    assert body["source"] == "probes"  # seeded: no Optuna study, so ttc's probes are read
    found = body["importances"]["importances"]
    assert {r["param"] for r in found} <= {"strategy", "groups", "batch_size", "lr", "momentum"}
    assert math.isclose(sum(r["importance"] for r in found), 1.0, rel_tol=1e-6)
    parallel = body["parallel"]
    assert [a["name"] for a in parallel["axes"]][-1] == "value"
    assert len(parallel["lines"]) == 5 and "1 without one" in parallel["note"]  # the diverged probe
    assert all(0.0 <= at <= 1.0 for line in parallel["lines"] for at in line["at"] if at is not None)
    beyond = [line for line in parallel["lines"] if line["beyond"]]
    assert [line["probe_key"] for line in beyond] == ["p3"] and beyond[0]["at"][-1] is None
    assert "beyond evidence" in parallel["note"]
    assert max(float(t["label"]) for t in parallel["axes"][-1]["ticks"]) < 1.0  # its 5e4 s sets no axis
    assert [line["probe_key"] for line in parallel["lines"] if line["best"]] == ["p5"]  # 0.03 s


def test_importances_say_why_when_too_few_trials() -> None:
    study = optuna.create_study()
    study.add_trial(optuna.trial.create_trial(
        params={"lr": 0.1}, distributions={"lr": optuna.distributions.FloatDistribution(0.01, 1)}, value=1.0))
    assert "at least" in insights.importances(study.trials)["message"]
    assert insights.parallel_coordinates([])["message"]


def test_the_trial_page_json(database_url: str, seeded: tuple[str, list[str]]) -> None:
    sid, keys = seeded
    with local_client(create_app(Settings(database_url=database_url), run_studies=False)) as client:
        trials = client.get(f"/dashboard/api/studies/{sid}").json()["trials"]
        by_key = {t["key"]: t for t in trials}
        lost = client.get(f"/dashboard/api/studies/{sid}/trials/{by_key['p2']['number']}").json()
        beyond = client.get(f"/dashboard/api/studies/{sid}/trials/{by_key['p3']['number']}").json()
        plan = client.get(f"/dashboard/api/studies/{sid}/trials/{by_key['p5']['number']}").json()
        diverged = client.get(f"/dashboard/api/studies/{sid}/trials/{by_key['p4']['number']}").json()
        assert client.get(f"/studies/{sid}/trials/1").headers["content-type"].startswith("text/html")
        assert client.get(f"/dashboard/api/studies/{sid}/trials/999").status_code == 404
    fit = lost["fit"]
    assert len(fit["k"]) == len(fit["loss"]) == len(fit["low"]) == len(fit["high"])
    assert all(lo <= mid <= hi for lo, mid, hi in zip(fit["low"], fit["loss"], fit["high"], strict=True))
    assert not fit["beyond_evidence"] and lost["trial"]["seconds_per_iteration"] == pytest.approx(1e-4)
    assert any("predicted slower" in why for why in lost["why"])
    assert beyond["fit"]["beyond_evidence"] and beyond["trial"]["beyond_evidence"]
    assert max(beyond["fit"]["k"]) <= 4 * 400 + 1  # the fit stops near the evidence
    assert plan["is_plan"] and not plan["why"]
    assert diverged["why"] == ["set aside when it finished: diverged"]
    flagged = {t["key"] for t in trials if t["beyond_evidence"]}
    assert flagged == {"p3"}


def test_studies_show_prints_the_ranking(seeded: tuple[str, list[str]]) -> None:
    sid, _ = seeded
    shown = CliRunner().invoke(app, ["studies", "show", sid])
    assert shown.exit_code == 0, shown.output
    assert "Ranking" in shown.output
    lines = [line for line in shown.output.splitlines() if "predicted slower" in line]
    assert len(lines) == 2 and "beyond evidence" in lines[1]
