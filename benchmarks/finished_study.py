"""A finished study with synthetic probes, a plan and two runs: what the service benchmarks serve.

Probes carry 600-point loss curves (a 3000-iteration probe evaluated every 5 iterations), so a
benchmark reads rows as large as a real study's.
"""

from __future__ import annotations

import itertools
import math

from predictor.types import Config, Plan, Prediction, ProbeResult
from service.db import Database, measurement_store, study_store

SPEC = {
    "workload": {"name": "digits-mlp"}, "target": {"metric": "train_loss", "value": 0.05},
    "cluster": {"backend": "simulated", "nodes": 4, "devices_per_node": 4, "device": {"name": "v100"}},
}


def _configs(count: int) -> list[Config]:
    strategies = (("sync", 1), ("async_groups", 2), ("async_groups", 4), ("async_groups", 8))
    grid = itertools.product((16, 32, 64), (0.01, 0.03, 0.1, 0.3), (0.0, 0.6, 0.9), strategies)
    return [Config(s, 4, 4, groups=g, batch_size=b, lr=lr, momentum=m)
            for b, lr, m, (s, g) in itertools.islice(grid, count)]


def _probe(config: Config, index: int) -> tuple[ProbeResult, float | None]:
    """A synthetic probe: Optimus-shaped loss 1/(a·k+b)+c, s/it growing with batch, some diverged."""
    per_iteration = 1e-4 * (1 + config.batch_size / 32) / (1 + 0.3 * math.log2(config.groups))
    a, diverged = config.lr * (1 + config.momentum) / 3, index % 11 == 7
    curve = [(k, k * per_iteration, (float("nan") if diverged and k > 1500 else 1 / (a * k + 0.5) + 0.01))
             for k in range(0, 3000, 5)]
    result = ProbeResult(config, 3000, 3000 * per_iteration, curve, diverged=diverged)
    predicted = None if diverged else per_iteration * (1 / (0.05 - 0.01) - 0.5) / a
    return result, predicted


def seed(db: Database, trials: int) -> str:
    with db.transaction() as session:
        study_id = study_store.create_study(session, spec={**SPEC, "budget": {"max_probes": trials}}).id
        best: tuple[float, Config] | None = None
        for index, config in enumerate(_configs(trials)):
            probe_id = measurement_store.start_probe(session, study_id=study_id, config=config).id
            result, predicted = _probe(config, index)
            measurement_store.finish_probe(session, probe_id=probe_id, result=result, predicted_ttc=predicted)
            if predicted is not None and (best is None or predicted < best[0]):
                best = (predicted, config)
        assert best is not None
        baseline = _configs(1)[0]
        prediction = Prediction(best[0], best[0] * 0.7, best[0] * 1.4, 1e-4, best[0] / 1e-4)
        study_store.set_plan(session, study_id=study_id, plan=Plan(
            study_id, best[1], prediction, baseline, _probe(baseline, 0)[1] or 1.0, trials, trials * 0.4))
        for label, config, predicted, measured in (("plan", best[1], best[0], best[0] * 1.12),
                                                   ("baseline", baseline, _probe(baseline, 0)[1], 0.3)):
            measurement_store.record_run(session, study_id=study_id, config=config, result={
                "label": label, "config": config.to_dict(), "reached": True, "ttc_seconds": measured,
                "predicted_ttc_seconds": predicted})
    return study_id
