"""Time to convergence = seconds/iteration × iterations (DESIGN.md §1), with its 80% interval.

``predict_ttc`` reads one probe on its own. ``TtcModel`` pools every probe of a study so it can
also predict configurations that were never probed: seconds/iteration from the fitted HE model
(predictor.he_model), iterations from the probe with the same recipe (strategy, groups, learning
rate, momentum, optimizer) nearest in global batch, rescaled by the gradient noise scale
(predictor.noise_scale, McCandlish et al. 2018).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from predictor.he_model import Z80, HeModel, seconds_per_iteration
from predictor.noise_scale import noise_scale, steps_ratio
from predictor.se_model import Estimate, iterations_to_target
from predictor.types import Config, Prediction, ProbeResult

TRANSFER_SIGMA = 0.15  # extra log-uncertainty when iterations are carried to another batch size


def predict_ttc(result: ProbeResult, target: float) -> Prediction | None:
    """Predicted TTC of the probed config; None when the probe says nothing usable."""
    speed = seconds_per_iteration(result)
    iterations = iterations_to_target(result, target)
    if speed is None or iterations is None:
        return None
    return _combine(speed, iterations, result.reached_seconds)


def _combine(speed: Estimate, iterations: Estimate, reached_seconds: float | None = None) -> Prediction:
    if reached_seconds is not None:
        # The probe itself crossed the target: its measured time is the estimate.
        ttc = reached_seconds
        return Prediction(ttc, min(speed.low * iterations.low, ttc),
                          max(speed.high * iterations.high, ttc), speed.value, iterations.value)
    high = speed.high * iterations.high if math.isfinite(iterations.high) else math.inf
    return Prediction(speed.value * iterations.value, speed.low * iterations.low, high,
                      speed.value, iterations.value)


def recipe(config: Config) -> tuple:
    """What statistical efficiency depends on besides the global batch."""
    return (config.strategy, config.groups, round(config.lr, 12), round(config.momentum, 6), config.optimizer)


class TtcModel:
    """Pooled HE and SE models of one study; ``predict`` works for any config of its space."""

    def __init__(
        self, results: Sequence[ProbeResult], target: float, cache: dict[str, Estimate | None] | None = None
    ) -> None:
        """``cache`` keeps each probe's curve fit across refits (a probe's curve never changes)."""
        self.target = target
        cache = {} if cache is None else cache
        self.results = {r.config.key(): r for r in results}
        self.he = HeModel.fit(list(results))
        self.b_noise = noise_scale(list(results))
        self.iterations: dict[str, Estimate] = {}
        for key, r in self.results.items():
            if key not in cache:
                cache[key] = iterations_to_target(r, target)
            estimate = cache[key]
            if estimate is not None and math.isfinite(estimate.value):
                self.iterations[key] = estimate

    def speed(self, config: Config) -> Estimate | None:
        """Measured mean s/it for a probed config (interval from the HE fit), else the HE model."""
        if self.he is None:
            return None
        result = self.results.get(config.key())
        if result is not None and result.iterations > 0:
            mean, sigma = result.seconds_per_iteration, self.he.sigma
            return Estimate(mean, mean * math.exp(-Z80 * sigma), mean * math.exp(Z80 * sigma))
        return self.he.predict([config])[0]

    def steps(self, config: Config) -> Estimate | None:
        """Iterations to the target: the probe's own, else a same-recipe probe's rescaled by B_noise."""
        if config.key() in self.iterations:
            return self.iterations[config.key()]
        donors = [
            (abs(math.log(r.config.global_batch / config.global_batch)), key)
            for key, r in self.results.items()
            if key in self.iterations and recipe(r.config) == recipe(config)
        ]
        if not donors:
            return None
        donor_key = min(donors)[1]
        donor, estimate = self.results[donor_key].config, self.iterations[donor_key]
        ratio = 1.0 if self.b_noise is None else float(
            steps_ratio(donor.global_batch, config.global_batch, self.b_noise)
        )
        widen = math.exp(Z80 * TRANSFER_SIGMA)
        return Estimate(estimate.value * ratio, estimate.low * ratio / widen, estimate.high * ratio * widen)

    def predict(self, config: Config) -> Prediction | None:
        speed, steps = self.speed(config), self.steps(config)
        if speed is None or steps is None:
            return None
        result = self.results.get(config.key())
        return _combine(speed, steps, result.reached_seconds if result is not None else None)

    def predict_many(self, configs: Sequence[Config]) -> np.ndarray:
        """Predicted TTC of each config (inf where the models say nothing)."""
        out = [self.predict(c) for c in configs]
        return np.array([p.ttc_seconds if p is not None else math.inf for p in out])
