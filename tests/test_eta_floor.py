"""The oracle that bounds ``ttc train``'s ETA from below reads runs of one curve exactly
(benchmarks/eta_floor.py)."""

from __future__ import annotations

import math

import pytest

from benchmarks.eta_floor import config_of, score

STEP = 1e-3  # seconds per iteration
EVERY = 5  # iterations between evaluations


def run(seed: int, ahead: int, target: float = 0.05) -> dict[str, object]:
    """The curve 1 / (1 + (k + ahead) / 100), evaluated every EVERY iterations to its first
    confirmed crossing of ``target``: runs of one curve, ``ahead`` iterations apart."""
    curve, k = [], 0
    while True:
        loss = 1.0 / (1.0 + (k + ahead) / 100.0)
        curve.append([k, k * STEP, loss])
        if len(curve) > 1 and curve[-2][2] <= target:
            reached = curve[-2][0]
            return {"seed": seed, "reached_iteration": reached, "reached_seconds": reached * STEP,
                    "curve": curve}
        k += EVERY


def test_runs_of_one_curve_are_read_exactly_by_their_loss_not_by_their_clock() -> None:
    """A run 200 iterations ahead of the others has 200 fewer left at the same loss: matched by
    loss, the others read its time left to an evaluation or two; matched by the clock, not."""
    runs = [run(1, 0), run(2, 0), run(3, 200)]
    entries = [e for e in score(runs) if e["seed"] == 3]
    assert [e["share"] for e in entries] == [0.25, 0.5, 0.75]
    for entry in entries:
        assert entry["loss_error"] * entry["truth"] <= 2 * EVERY * STEP + 1e-12
        assert entry["time_error"] == pytest.approx(200 * STEP / entry["truth"])


def test_a_recorded_plans_key_reads_back_as_its_config() -> None:
    config = config_of("sync/n1x2/g1/b32/lr0.003/m0.9/sgd")
    assert config.key() == "sync/n1x2/g1/b32/lr0.003/m0.9/sgd" and math.isclose(config.lr, 0.003)
    with pytest.raises(ValueError, match="cannot read"):
        config_of("sync/n1x2")
