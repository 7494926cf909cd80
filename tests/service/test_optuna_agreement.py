"""Optuna agrees with ttc (issue 14 §4): a study run by the service is found under its bare ttc id,
its best trial is the plan's config, and the plan is in the study's user attributes."""

from __future__ import annotations

import optuna
import pytest

from predictor.trial_space import TRIAL_PARAMS as PARAMS
from predictor.types import json_safe
from service.db import Database
from service.db.optuna_mirror import PLAN_ATTR, load_optuna_study, optuna_storage
from service.runners.study_runner import StudyRunner
from tests.service.service_helpers import tiny_spec
from worker.spec import parse_spec

SPECS = {
    "tiny": tiny_spec(),
    "two rates, five probes": tiny_spec(max_probes=5),
    "reachable target": {**tiny_spec(max_probes=4), "target": {"metric": "train_loss", "value": 0.6,
                                                               "eval_every": 5}},
}


@pytest.mark.slow
def test_optuna_best_trial_is_the_plan_for_each_spec(tmp_path, ray_address: str) -> None:  # type: ignore[no-untyped-def]
    database_url = f"sqlite:///{tmp_path / 'ttc.db'}"
    db = Database(database_url)
    db.migrate()
    runner = StudyRunner(db, ray_address)
    for name, spec in SPECS.items():
        study_id = runner.submit(parse_spec(spec))
        plan = runner.run(study_id).to_dict()
        study = optuna.load_study(study_name=study_id, storage=database_url)  # as a user would
        assert study.best_trial.params == {p: plan["config"][p] for p in PARAMS}, name
        assert study.user_attrs[PLAN_ATTR] == json_safe(plan), name
        assert len(study.trials) == plan["probes"]["count"], name
    db.dispose()


def test_a_legacy_ttc_prefixed_study_still_loads(tmp_path) -> None:  # type: ignore[no-untyped-def]
    database_url = f"sqlite:///{tmp_path / 'ttc.db'}"
    Database(database_url).migrate()
    storage = optuna_storage(database_url)
    optuna.create_study(study_name="ttc-old1", storage=storage).enqueue_trial({"x": 1})
    assert load_optuna_study(database_url, "old1").study_name == "ttc-old1"
    optuna.create_study(study_name="new1", storage=storage)
    assert load_optuna_study(database_url, "new1").study_name == "new1"
    with pytest.raises(KeyError):
        load_optuna_study(database_url, "none")
