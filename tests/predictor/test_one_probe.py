"""``ttc predict``'s single probe is held to the plan's confidence rules (issue 11 §4): a probe
that reached the target is a measurement; one whose curve is far from the target gives no number."""

from __future__ import annotations

import numpy as np

from predictor.one_probe import predict_from_probe
from predictor.types import Config, ProbeResult

STEP = 1e-3  # seconds per iteration


def probe(losses: np.ndarray, target: float) -> ProbeResult:
    iterations = np.arange(1, len(losses) + 1) * 5
    curve = [(int(k), float(k * STEP), float(loss)) for k, loss in zip(iterations, losses, strict=True)]
    reached = next((k for k, _, loss in curve if loss <= target), None)
    end = int(iterations[-1])
    return ProbeResult(Config("sync", 1, 1), end, end * STEP, curve, step_seconds=[STEP] * end,
                       reached_iteration=reached, reached_seconds=None if reached is None else reached * STEP)


def test_a_probe_that_reached_the_target_is_a_measurement() -> None:
    losses = 1.0 / (1.0 + 0.05 * np.arange(1, 41) * 5)
    prediction, confidence = predict_from_probe(probe(losses, target=0.2), 0.2)
    assert confidence.level == "high"
    assert prediction is not None and prediction.to_dict()["ttc_p50"] == prediction.ttc_seconds
    assert prediction.ttc_low < prediction.ttc_seconds < prediction.ttc_high  # a new seed's spread


def test_a_short_probe_far_from_its_target_still_gives_a_forecast() -> None:
    """40 evaluations of a slow power law, a target 30× further along: the point is not supported
    (confidence none, with its reason), but the forecast is printed whatever its width (issue 34)."""
    k = np.arange(1, 41) * 5
    losses = k ** -0.5 + np.random.default_rng(0).normal(0.0, 0.002, len(k))
    prediction, confidence = predict_from_probe(probe(losses, target=0.01), 0.01)
    assert prediction is not None and prediction.evidence_iterations == 200
    assert confidence.level == "none" and confidence.reason
    public = prediction.to_dict()
    assert public["ttc_p50"] is not None and public["ttc_p10"] <= public["ttc_p50"]
    assert public["ttc_p10"] >= public["evidence_seconds"]  # never below what was measured
    assert public["seconds_per_iteration"] is not None  # the speed was measured
