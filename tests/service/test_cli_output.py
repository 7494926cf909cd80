"""CLI output in CI logs: whole lines off a terminal, failures said whole, no Ray noise on stderr."""

from __future__ import annotations

import io
import logging
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from predictor import TargetUnreachable
from predictor.types import Confidence, Config, Plan, Prediction, ProbeResult
from service.cli import main as cli
from service.cli.output import make_console, quiet_ray
from service.cli.plan import print_plan
from service.db import Database, measurement_store, study_store
from service.runners import study_runner

LONG_PLAN_CONFIG = Config("async_groups", 4, 4, groups=4, batch_size=64, lr=0.03, momentum=0.6)
TIDY = Path(__file__).resolve().parents[2] / "examples" / "quickstart.yaml"


def test_a_console_off_a_terminal_never_wraps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COLUMNS", raising=False)
    sink = io.StringIO()
    monkeypatch.setattr(sys, "stdout", sink)
    make_console().print("word " * 60, highlight=False)
    assert sink.getvalue().count("\n") == 1


def test_columns_still_wins_when_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    sink = io.StringIO()
    monkeypatch.setattr(sys, "stdout", sink)
    make_console().print("word " * 60, highlight=False)
    assert sink.getvalue().count("\n") > 1


def test_studies_show_in_a_log_keeps_the_plan_and_table_whole(database_url: str, tmp_path: Path) -> None:
    """The issue's log: "· sgd" alone on a line and headers cut to "pr", from a pipe at 80 columns."""
    db = Database(database_url)
    db.migrate()
    with db.transaction() as session:
        study = study_store.create_study(session, spec={"workload": {"name": "digits-mlp"}}).id
        failed = ProbeResult(LONG_PLAN_CONFIG, 0, 0.0, [],
                             error="ValidationError: hidden: Input should be greater than 0 (got 0) [type=x]")
        probe = measurement_store.start_probe(session, study_id=study, config=LONG_PLAN_CONFIG)
        measurement_store.finish_probe(session, probe_id=probe.id, result=failed, predicted_ttc=None)
        study_store.set_plan(session, study_id=study, plan=Plan(
            study, LONG_PLAN_CONFIG, Prediction(1.5, 1.0, 2.0, 1e-3, 1500.0), LONG_PLAN_CONFIG, 1.5, 1, 0.1))
    db.dispose()
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"} | {"TTC_DATABASE_URL": database_url}
    command = [sys.executable, "-c", "from service.cli.main import main; main()", "studies", "show", study]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("  config     async_groups · 4×4 devices") and line.endswith("· sgd")
               for line in lines), done.stdout
    assert any("prune reason" in line for line in lines), done.stdout
    assert any(line.rstrip().endswith("(got 0) [type=x]") for line in lines), done.stdout  # not markup


def test_a_plan_prints_its_forecast_with_its_measured_bound_and_spread(capsys: pytest.CaptureFixture[str]
                                                                       ) -> None:
    """A forecast is printed whatever its width (issue 34), with the measured lower bound, where the
    width comes from, the confidence's reason, where the target sits and how many finished runs of
    the job it read."""
    forecast = Prediction(0.09, 0.05, 0.2, 1e-3, 9000.0, 3250.0, 0.0321,
                          sources=(("seed", 0.2), ("shape", 0.7), ("hardware", 0.1)))
    plan = Plan("s", LONG_PLAN_CONFIG, forecast, LONG_PLAN_CONFIG, math.inf, 9, 0.004,
                confidence=Confidence("none", "the curve has not settled"),
                target={"value": 0.1, "after_knee": False, "reason": "target 0.1 is in the flat region",
                        "suggested": {"value": 0.12, "ttc_p10": 0.03, "ttc_p50": 0.04, "ttc_p90": 0.05}},
                priors=2)
    print_plan(plan.to_dict())
    lines = capsys.readouterr().out.splitlines()
    assert ("  predicted  TTC 0.09s (p10–p90: 0.05s–0.2s) = 0.001 s/it × 9e+03 it; at least 0.0321s: "
            "its run measured 3250 it without reaching the target") in lines
    assert "  spread     from seed 20% · shape 70% · hardware 10%" in lines
    assert "  confidence none: the curve has not settled" in lines
    assert "  target     target 0.1 is in the flat region" in lines
    assert "  suggested  target 0.12, after the knee: TTC 0.04s (p10–p90: 0.03s–0.05s)" in lines
    assert "  priors     the forecast read 2 finished runs of this job" in lines
    print_plan(Plan.from_dict({**plan.to_dict(), "priors": 0}).to_dict())  # a first study of its job
    assert not any(line.startswith("  priors") for line in capsys.readouterr().out.splitlines())


class FailingRunner:
    """Stands in for StudyRunner: every probe fails on the cluster, so no probe reaches the target."""

    def __init__(self, db: Database, ray_address: str | None, on_progress=None, on_probe=None) -> None:  # type: ignore[no-untyped-def]
        self.on_probe = on_probe
        self.failed: list[tuple[str, str]] = []

    def submit(self, spec: object, owner: str | None = None, lease_seconds: float = 30.0) -> str:
        return "s1"

    def run(self, study_id: str, stop: object = None) -> Plan:
        for lr in (0.1, 0.3):
            error = f"ValidationError: hidden: Input should be greater than 0 (got 0) [lr={lr}]"
            self.on_probe(ProbeResult(Config("sync", 1, 2, lr=lr), 0, 0.0, [], error=error))
        raise TargetUnreachable("none of 2 probes is predicted to reach the target")


def test_probe_failures_are_printed_whole_and_a_study_of_failures_is_not_unreachable(
    database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TTC_DATABASE_URL", database_url)
    monkeypatch.setattr(study_runner, "StudyRunner", FailingRunner)
    result = CliRunner().invoke(cli.app, ["tune", str(TIDY)])
    assert result.exit_code == cli.EXIT_INTERNAL, result.output
    stderr = " ".join(result.stderr.split())
    assert ("probe failed: sync/n1x2/g1/b32/lr0.1/m0.9/sgd: ValidationError: hidden: Input should be "
            "greater than 0 (got 0) [lr=0.1]") in stderr
    assert "every probe failed on the cluster (2); the first: ValidationError" in stderr
    assert "none of 2 probes" not in stderr


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_ray_token_warning_is_quieted_errors_are_not() -> None:
    """Ray's own warning function, before and after the CLI quiets Ray's loggers."""
    from ray._private.authentication import authentication_token_setup as setup

    ray_logger, records = logging.getLogger("ray"), Records()
    level = ray_logger.level
    logging.getLogger(setup.__name__).addHandler(records)
    try:
        ray_logger.setLevel(logging.INFO)  # as Ray's import leaves it
        setup._warn_token_auth_enabled()
        assert any("Token authentication is enabled" in m for m in records.messages)  # on every command
        records.messages.clear()
        quiet_ray()
        setup._warn_token_auth_enabled()
        logging.getLogger(setup.__name__).error("a Ray error still shows")
        assert records.messages == ["a Ray error still shows"]
    finally:
        ray_logger.setLevel(level)
        logging.getLogger(setup.__name__).removeHandler(records)
