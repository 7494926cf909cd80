"""The dashboard's JSON and assets, ``ttc studies list/show``, and the ``--max-ttc`` gate — no Ray:
studies are seeded through ``service.db.study_store`` and ``service.db.measurement_store`` as a
runner would record them."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from predictor.types import Confidence, Config, Plan, Prediction, ProbeResult
from service.app import create_app
from service.cli import main as cli
from service.cli.main import app
from service.db import Database, measurement_store, study_store
from service.settings import Settings
from tests.service.service_helpers import local_client

QUICKSTART = Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml"
SYNC = Config("sync", 2, 2, batch_size=32, lr=0.1)
ASYNC = Config("async_groups", 2, 2, groups=2, batch_size=32, lr=0.3, momentum=0.0)


def _plan(study_id: str, ttc: float) -> Plan:
    return Plan(study_id, ASYNC, Prediction(ttc, ttc / 2, ttc * 2, 1e-4, ttc / 1e-4), SYNC, 2 * ttc, 2, 0.5)


@pytest.fixture
def study_id(database_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A finished study: one probe that reached the target, one that diverged, a plan, one run."""
    monkeypatch.setenv("TTC_DATABASE_URL", database_url)  # what the CLI reads
    db = Database(database_url)
    db.migrate()
    curve = [(k, k * 1e-4, 1 / (0.1 * k + 1)) for k in range(0, 600, 5)]
    with db.transaction() as session:
        sid = study_store.create_study(session, spec={"workload": {"name": "digits-mlp"},
                                                      "cluster": {"nodes": 2, "devices_per_node": 2},
                                                      "budget": {"max_probes": 6}}).id
        reached = ProbeResult(ASYNC, 600, 0.06, curve, reached_iteration=95, reached_seconds=0.0095)
        diverged = ProbeResult(SYNC, 40, 0.01, curve[:8], diverged=True)
        for config, result, ttc in ((ASYNC, reached, 0.0095), (SYNC, diverged, None)):
            probe = measurement_store.start_probe(session, study_id=sid, config=config)
            measurement_store.finish_probe(session, probe_id=probe.id, result=result, predicted_ttc=ttc)
        study_store.set_plan(session, study_id=sid, plan=_plan(sid, 0.0095))
        measurement_store.record_run(session, study_id=sid, config=ASYNC,
                                     result={"label": "plan", "reached": True, "ttc_seconds": 0.011,
                                "predicted_ttc_seconds": 0.0095})
    db.dispose()
    return sid


def test_dashboard_json_shapes_trials_for_tables_and_charts(database_url: str, study_id: str) -> None:
    with local_client(create_app(Settings(database_url=database_url), run_studies=False)) as client:
        listing = client.get("/dashboard/api/studies").json()["data"]
        detail = client.get(f"/dashboard/api/studies/{study_id}").json()
        assert client.get(f"/studies/{study_id}").headers["content-type"].startswith("text/html")
        assert client.get("/dashboard/static/vendor/chart.umd.min.js").status_code == 200
        assert client.get("/dashboard/static/../routes.py").status_code == 404
        assert client.get("/dashboard/api/studies/nope").status_code == 404
        db = Database(database_url)
        with db.transaction() as session:  # a new run is a new version of the page's data
            measurement_store.record_run(session, study_id=study_id, config=SYNC,
                                         result={"label": "baseline"})
        db.dispose()
        assert len(client.get(f"/dashboard/api/studies/{study_id}").json()["runs"]) == 2
    assert listing[0] | {"created_at": None} == {
        "id": study_id, "state": "done", "workload": "digits-mlp", "error": None, "created_at": None,
        "probes_done": 2, "probes_running": 0, "max_probes": 6, "best_predicted_ttc": 0.0095,
        "probe_cluster_seconds": 0.5,
    }
    reached, diverged = detail["trials"]
    assert (reached["iterations_to_target"], reached["reached"], reached["prune_reason"]) == (95, True, None)
    assert reached["seconds_per_iteration"] == pytest.approx(1e-4)
    assert len(reached["curve"]) <= 120 and reached["curve"][-1][0] == 595  # thinned, last point kept
    assert (diverged["prune_reason"], diverged["predicted_ttc"]) == ("diverged", None)
    assert detail["runs"] == [{"label": "plan", "key": ASYNC.key(), "predicted_ttc": 0.0095,
                               "measured_ttc": 0.011, "reached": True}]


def test_studies_list_and_show_read_the_database(study_id: str) -> None:
    runner = CliRunner()
    listed = runner.invoke(app, ["studies", "list", "--json"])
    assert listed.exit_code == 0, listed.output
    assert [s["id"] for s in json.loads(listed.output)["data"]] == [study_id]
    shown = runner.invoke(app, ["studies", "show", study_id])
    assert shown.exit_code == 0, shown.output
    assert "Plan for study" in shown.output and "diverged" in shown.output
    assert runner.invoke(app, ["studies", "show", "nope"]).exit_code == 2


@pytest.mark.parametrize(("max_ttc", "code"), [(10.0, 0), (1.0, 3)])
def test_max_ttc_gate(max_ttc: float, code: int, database_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "_tune_locally", lambda *args: _plan("s1", 5.0).to_dict())
    result = CliRunner().invoke(app, ["tune", str(QUICKSTART), "--json", "--max-ttc", str(max_ttc)])
    assert result.exit_code == code, result.output
    assert json.loads(result.stdout)["predicted"]["ttc_seconds"] == 5.0  # the plan is printed either way


@pytest.mark.parametrize(("max_ttc", "code", "says"), [(1.0, 3, "takes longer than --max-ttc 1s"),
                                                       (9.0, 3, "P(TTC ≤ 9s) = 0.50"),
                                                       (20.0, 0, "")])
def test_max_ttc_gate_reads_the_forecast_probability(
        max_ttc: float, code: int, says: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A long run whose point the evidence does not support (confidence none) passes the gate when
    P(TTC ≤ limit) ≥ 0.8 on its forecast (before issue 34 such a plan failed whatever the limit);
    below the median it fails; a run measured past the limit fails as a fact, whatever the forecast."""
    plan = Plan("s1", ASYNC, Prediction(9.0, 6.0, 15.0, 1e-4, 9e4, 3000.0, 5.0), SYNC,
                math.inf, 2, 0.5, confidence=Confidence("none", "the curve has not settled"))
    monkeypatch.setattr(cli, "_tune_locally", lambda *args: plan.to_dict())
    result = CliRunner().invoke(app, ["tune", str(QUICKSTART), "--json", "--max-ttc", str(max_ttc)])
    assert result.exit_code == code, result.output
    assert says in result.output


def test_gate_probability_is_a_flag(monkeypatch: pytest.MonkeyPatch) -> None:
    """``--gate-probability`` sets the probability the gate requires: 0.5 lets the median through."""
    plan = Plan("s1", ASYNC, Prediction(9.0, 6.0, 15.0, 1e-4, 9e4, 3000.0), SYNC, math.inf, 2, 0.5)
    monkeypatch.setattr(cli, "_tune_locally", lambda *args: plan.to_dict())
    runner = CliRunner()
    assert runner.invoke(app, ["tune", str(QUICKSTART), "--max-ttc", "9.5"]).exit_code == 3
    passed = runner.invoke(app, ["tune", str(QUICKSTART), "--max-ttc", "9.5", "--gate-probability", "0.5"])
    assert passed.exit_code == 0, passed.output
    assert "gate       passed: P(TTC ≤ 9.5s) = 0.5" in passed.output


def test_the_ttc_entry_point_returns_the_exit_code(tmp_path: Path) -> None:
    """The installed ``ttc`` runs ``main()``, not CliRunner: CI gates read its real exit status."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("workload: {name: no-such-workload}\n")
    done = subprocess.run([sys.executable, "-c", "from service.cli.main import main; main()",
                           "tune", str(bad)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
