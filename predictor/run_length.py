"""A DASO plan carries the length of the run it plans (Heat's cooldown needs to know when the run ends)."""

from __future__ import annotations

import math

from predictor.types import Confidence, Config, Phase, Prediction


def with_run_length(config: Config, prediction: Prediction, warmup: Phase | None,
                     confidence: Confidence) -> Config:
    """A DASO plan states how many iterations its run is predicted to take (``total_iterations``),
    so Heat's cooldown — blocking syncs over the last epochs — triggers in a run to a target."""
    if config.strategy != "daso" or not confidence.supported or not math.isfinite(prediction.iterations):
        return config
    planned = prediction.iterations - (warmup.iterations if warmup else 0)
    return config.replace(options={**config.options, "total_iterations": max(int(planned), 1)})
