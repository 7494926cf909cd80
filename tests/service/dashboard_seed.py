"""A finished study seeded through ``service.db.study_store`` and ``service.db.measurement_store``
as a runner would record it, for the dashboard's tests (JSON and browser): six probes — one
reached the target, one predicted far past its evidence, one diverged — and a plan whose ranking
has a row the evidence supports no number for."""

from __future__ import annotations

from predictor.types import Confidence, Config, Plan, Prediction, ProbeResult
from service.db import Database, measurement_store, study_store

TARGET = 0.05


def _config(index: int) -> Config:
    strategy, groups = (("sync", 1), ("async_groups", 2))[index % 2]
    return Config(strategy, 2, 2, groups=groups, batch_size=(16, 32)[index // 2 % 2], lr=0.03 * (1 + index),
                  momentum=0.9 if groups == 1 else 0.0)


def _curve(rate: float, end: int = 400) -> list[tuple[int, float, float]]:
    return [(k, k * 1e-4, 0.02 + 1.0 / (1 + rate * k) ** 0.7) for k in range(0, end + 1, 5)]


def seed_study(database_url: str) -> tuple[str, list[str]]:
    """The study's id and its six configs' keys (probe keys are ``p0`` … ``p5``)."""
    db = Database(database_url)
    db.migrate()
    configs = [_config(i) for i in range(6)]
    with db.transaction() as session:
        sid = study_store.create_study(session, spec={"workload": {"name": "digits-mlp"},
                                                      "target": {"metric": "train_loss", "value": TARGET},
                                                      "cluster": {"nodes": 2, "devices_per_node": 2}}).id
        for i, config in enumerate(configs):
            reached = 300 if i == 5 else None
            result = ProbeResult(config, 400, 0.04, _curve(0.02 * (i + 1)), [1e-4] * 64,
                                 reached_iteration=reached, reached_seconds=0.03 if reached else None,
                                 diverged=i == 4, key=f"p{i}")
            predicted = {0: 0.5, 1: 0.2, 2: 0.08, 3: 5e4, 4: None, 5: 0.03}[i]  # 3: 5e8 iterations
            probe = measurement_store.start_probe(session, study_id=sid, config=config, key=f"p{i}")
            measurement_store.finish_probe(session, probe_id=probe.id, result=result, predicted_ttc=predicted)

        def row(i: int, score: float, ttc: float | None, level: str, status: str, reason: str) -> dict:
            return {"config_key": configs[i].key(), "config": configs[i].to_dict(), "probe_keys": [f"p{i}"],
                    "score": score, "predicted": {"ttc_seconds": ttc}, "status": status, "reason": reason,
                    "confidence": {"level": level, "reason": "seeded"}}

        ranking = [
            row(5, 0.03, 0.03, "high", "plan", "the lowest risk-aware score"),
            row(2, 0.09, 0.08, "medium", "lost", "predicted slower: 0.08 s against the plan's 0.03 s"),
            row(3, 6e4, None, "none", "lost", "predicted slower: 5e+04 s against the plan's 0.03 s"),
        ]
        plan = Plan(sid, configs[5], Prediction(0.03, 0.03, 0.03, 1e-4, 300, 400), configs[0], 0.5, 6, 0.2,
                    evidence=["p5"], confidence=Confidence("high", "measured"), ranking=ranking)
        study_store.set_plan(session, study_id=sid, plan=plan)
    db.dispose()
    return sid, [c.key() for c in configs]
