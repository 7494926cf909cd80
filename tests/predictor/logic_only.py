"""Cheaper statistics for the tests of a study's or a run's logic, not of its intervals' quality."""

from __future__ import annotations

import numpy as np
import pytest

from predictor import forecast
from predictor.curve_ensemble import Ensemble

BOOTSTRAP = 8  # resamples of the pooled model's and the reference curve's bootstraps
PASSAGE_DRAWS, PASSAGE_SEEDS = 50, 6  # first passages: mean-curve draws × seeds (the product's 200 × 24)


def logic_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """A small bootstrap, and first passages simulated on 50 mean-curve draws × 6 seeds. A forecast
    is recorded at every warm-up segment and checkpoint (the ETA) and with every plan, but decides
    nothing the search or the run does; its simulation was half of these tests' CPU time. Each
    forecast still runs whole; its accuracy is test_forecast's and test_eta's."""
    monkeypatch.setattr("predictor.se_model.BOOTSTRAP_SAMPLES", BOOTSTRAP)
    monkeypatch.setattr("predictor.reference_curve.BOOTSTRAP_SAMPLES", BOOTSTRAP)
    full = forecast.crossings

    def fewer(model: Ensemble, k: np.ndarray, losses: np.ndarray, target: float, start: float,
              horizon: float, rng: np.random.Generator, samples: int = 200,
              seeds: int = forecast.SEEDS) -> np.ndarray:
        return full(model, k, losses, target, start, horizon, rng, min(samples, PASSAGE_DRAWS),
                    min(seeds, PASSAGE_SEEDS))

    monkeypatch.setattr(forecast, "crossings", fewer)
