"""One probe's prediction with its confidence (``ttc predict``, ``POST /v1/predict``).

A single short probe from scratch is the thinnest evidence ttc reads: its curve is often still in
the initial transient, and its extrapolation to the target can run far past what it measured.
It is held to the plan's rules (predictor.confidence): the prediction carries how far it
extrapolates, whether that held when the evidence doubled and when it was tried earlier on the
same curve, the curve's regime, and a level. Its number is a forecast (predictor.forecast),
given whatever the width: the level says how far the point is supported.
"""

from __future__ import annotations

import dataclasses
import math

from predictor.confidence import assess
from predictor.forecast import Anchor, forecast
from predictor.he_model import seconds_per_iteration
from predictor.no_number import with_measured_bound
from predictor.reference_curve import drift, hindcast
from predictor.regime import read_view_regime
from predictor.ttc_model import predict_ttc
from predictor.types import Confidence, Prediction, ProbeResult


def predict_from_probe(result: ProbeResult, target: float) -> tuple[Prediction | None, Confidence]:
    """The probe's TTC forecast (its own curve: predictor.forecast, around the point of
    predictor.ttc_model.predict_ttc) and how far the probe supports that point."""
    prediction = predict_ttc(result, target)
    speed = seconds_per_iteration(result)
    if prediction is not None and speed is not None:
        prediction = dataclasses.replace(prediction, evidence_iterations=float(result.end_iteration))
        prediction = with_measured_bound(prediction, result, None, None)
        end = float(result.end_iteration)
        pace = ((prediction.ttc_seconds - result.end_seconds) / (prediction.iterations - end)
                if math.isfinite(prediction.ttc_seconds) and prediction.iterations > end else speed.value)
        reached = result.reached_iteration
        anchor = Anchor(result.curve, end, end, result.end_seconds, pace, speed,
                        float(reached) if reached is not None else None, result.reached_seconds)
        prediction = forecast(prediction, anchor, target).prediction
    regime = read_view_regime(result)
    if result.reached_iteration is not None:
        return prediction, assess(prediction, True, regime)
    tests = drift(result.curve, target), hindcast(result.curve, target)
    return prediction, assess(prediction, False, regime, *tests)
