"""Pure modelling and search: types, hardware/statistical efficiency models, the optimizer.

Imports numpy, scipy and optuna only (DESIGN.md §3).
"""

from predictor.no_number import TargetUnreachable
from predictor.search import ColdStartSearch
from predictor.ttc_model import predict_ttc
from predictor.types import Budget, Config, Plan, Prediction, ProbeRequest, ProbeResult, SearchSpace

__all__ = [
    "Budget",
    "ColdStartSearch",
    "Config",
    "Plan",
    "Prediction",
    "ProbeRequest",
    "ProbeResult",
    "SearchSpace",
    "TargetUnreachable",
    "predict_ttc",
]
