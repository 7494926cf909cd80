"""Shared fixtures: one local Ray per test session, a throwaway SQLite database per test; and the
order CI's bounded slow step runs in."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from predictor.trial_space import TRIAL_PARAMS as OPTUNA_PARAMS


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """``TTC_TEST_ROTATE=N`` starts the run at the N-th selected test (modulo their count) and wraps
    around: a run stopped at a time budget (.ci/run's slow step) leaves out a tail that changes with
    N, not always the same last tests."""
    rotate = os.environ.get("TTC_TEST_ROTATE")
    if rotate and items:
        shift = int(rotate) % len(items)
        items[:] = items[shift:] + items[:shift]


@pytest.fixture(scope="session")
def ray_local() -> Iterator[None]:
    """A small local Ray shared by every test that launches probes (starting one costs ~10 s); its
    own (``address="local"``) even when a user's ``ray start`` or ``RAY_ADDRESS`` is about."""
    import ray

    if not ray.is_initialized():
        ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
                 configure_logging=False, _system_config={"worker_niceness": 0})
    yield
    ray.shutdown()


@pytest.fixture
def database_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'ttc.db'}"
    monkeypatch.setenv("TTC_DATABASE_URL", url)
    return url


@pytest.fixture(autouse=True)
def optuna_agrees_with_every_plan(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Issue 14 §4, for every study the suite runs in-process: ``optuna.load_study(study_name=<ttc
    id>, storage=<database>).best_trial`` is the plan's config, and the plan is the study's
    ``ttc_plan`` user attribute. Patched only where a test has imported the runner already."""
    import sys

    study_runner = sys.modules.get("service.runners.study_runner")
    if study_runner is None:
        yield
        return
    import optuna

    from predictor.types import json_safe
    from service.db.optuna_mirror import optuna_storage

    mismatches: list[str] = []
    run = study_runner.StudyRunner.run

    def checked_run(self, study_id, stop=None):  # type: ignore[no-untyped-def]
        plan = run(self, study_id, stop)
        study = optuna.load_study(study_name=study_id, storage=optuna_storage(self.db.url))
        expected = {name: plan.config.to_dict()[name] for name in OPTUNA_PARAMS}
        if study.best_trial.params != expected:
            mismatches.append(f"{study_id}: best trial {study.best_trial.params} != plan {expected}")
        if study.user_attrs.get("ttc_plan") != json_safe(plan.to_dict()):
            mismatches.append(f"{study_id}: the study's ttc_plan is not the plan")
        return plan

    monkeypatch.setattr(study_runner.StudyRunner, "run", checked_run)
    yield
    assert not mismatches, "Optuna disagrees with ttc's plan: " + "; ".join(mismatches)
