"""The study page on a plan that says "not worth tuning", and on studies with nothing to rank:
cards with nothing to draw say why in one line, and the ranking's "why it lost" compares no point
values when every config is beyond the evidence (issue 36, item 9). No Ray."""

from __future__ import annotations

import optuna
from fastapi.testclient import TestClient
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState

from predictor.ranking import UNBOUNDED
from service.app import create_app
from service.dashboard import insights
from service.dashboard.plan_view import BEYOND_ALL, shown_plan
from service.db import Database, study_store
from service.settings import Settings
from tests.service.dashboard_seed import seed_study


def _trial(value: float | None, state: TrialState = TrialState.COMPLETE) -> optuna.trial.FrozenTrial:
    return optuna.trial.create_trial(state=state, value=value, params={"lr": 0.1},
                                     distributions={"lr": FloatDistribution(0.01, 1)})


def test_cards_say_why_no_trial_has_a_value() -> None:
    unbounded = [_trial(UNBOUNDED * (1 + i)) for i in range(16)]  # a long study, every config beyond evidence
    for card in (insights.importances(unbounded), insights.parallel_coordinates(unbounded)):
        assert card["message"].startswith("No trial has a score: no config's prediction is bounded")
        assert "16 valued trials" in card["message"] and "\n" not in card["message"]
    pruned = [_trial(None, state) for state in (TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING)]
    assert insights.parallel_coordinates(pruned)["message"] == \
        "No trial has a value yet (3 trials: 1 running, 1 pruned, 1 fail)."
    assert insights.importances([])["message"] == "No trial yet."


def _ranking(*rows: tuple[str, float | None, str]) -> dict:
    return {"ranking": [{"config_key": f"c{i}", "status": status, "reason": reason,
                         "predicted": {"ttc_seconds": ttc}} for i, (status, ttc, reason) in enumerate(rows)]}


def test_why_it_lost_compares_no_points_when_every_config_is_beyond_evidence() -> None:
    beyond = _ranking(("plan", None, "no prediction is bounded above"),
                      ("lost", None, "predicted slower: 9 s"), ("pruned", None, "predicted slower: 12 s"),
                      ("failed", None, "OSError: boom"))
    reasons = [row["reason"] for row in shown_plan(beyond)["ranking"]]
    assert reasons == ["no prediction is bounded above", BEYOND_ALL, BEYOND_ALL, "OSError: boom"]
    one_number = _ranking(("plan", 3.0, "the lowest risk-aware score"),
                          ("lost", None, "predicted slower: 9 s"))
    assert shown_plan(one_number) == one_number  # a supported number: the comparison means something
    assert shown_plan(None) is None


def test_the_study_page_json_carries_not_worth_tuning_and_its_reason(database_url: str) -> None:
    study_id, _ = seed_study(database_url)
    db = Database(database_url)
    reason = "a probe reached the target in 0.03 s; the 6 probes already cost more than tuning may spend"
    with db.transaction() as session:
        study = study_store.get_study(session, study_id=study_id)
        study.plan = {**study.plan, "worth_tuning": False, "worth_tuning_reason": reason}
    db.dispose()
    with TestClient(create_app(Settings(database_url=database_url), run_studies=False),
                    base_url="http://127.0.0.1") as client:
        plan = client.get(f"/dashboard/api/studies/{study_id}").json()["plan"]
    assert (plan["worth_tuning"], plan["worth_tuning_reason"]) == (False, reason)


def test_a_trial_page_says_why_it_lost_without_points_when_every_config_is_beyond_evidence(
        database_url: str) -> None:
    study_id, _ = seed_study(database_url)
    db = Database(database_url)
    with db.transaction() as session:
        study = study_store.get_study(session, study_id=study_id)
        ranking = [{**row, "predicted": {"ttc_seconds": None}} for row in study.plan["ranking"]]
        study.plan = {**study.plan, "ranking": ranking}
    db.dispose()
    with TestClient(create_app(Settings(database_url=database_url), run_studies=False),
                    base_url="http://127.0.0.1") as client:
        trials = client.get(f"/dashboard/api/studies/{study_id}").json()["trials"]
        number = next(t["number"] for t in trials if t["key"] == "p2")  # lost: "predicted slower: 0.08 s …"
        why = client.get(f"/dashboard/api/studies/{study_id}/trials/{number}").json()["why"]
    assert any(BEYOND_ALL in reason for reason in why) and not any("predicted slower" in r for r in why)
