"""The Optuna distributions a study's trials are asked with: wide enough for every config the search
may propose, since the search chooses its configs itself and Optuna records them."""

from __future__ import annotations

import optuna

from predictor.types import OPTIMIZERS, STRATEGIES, SearchSpace


def trial_distributions(space: SearchSpace) -> dict[str, optuna.distributions.BaseDistribution]:
    return {
        "strategy": optuna.distributions.CategoricalDistribution(list(STRATEGIES)),
        "nodes": optuna.distributions.IntDistribution(1, max(space.nodes, 1)),
        "groups": optuna.distributions.IntDistribution(1, space.devices),
        "batch_size": optuna.distributions.IntDistribution(1, 65536),
        "lr": optuna.distributions.FloatDistribution(1e-6, 1000.0, log=True),
        "momentum": optuna.distributions.FloatDistribution(0.0, 0.999),
        "optimizer": optuna.distributions.CategoricalDistribution(list(OPTIMIZERS)),
    }
