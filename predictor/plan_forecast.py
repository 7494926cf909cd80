"""The plan's forecast: which measured curve it extrapolates, and how that maps to the plan's run.

The forecast (predictor.forecast) reads the longest curve behind the plan — its *anchor*:

* a plan whose run reached the target in a probe: that lineage (the forecast is centred on it);
* a plan forked from the warm-up: the warm-up's lineage, with the warm-up's own recipe continued
  appended (it is the same run); another config's fork is mapped onto it by the model's pace —
  its remaining seconds per warm-up iteration, which carries its rate against the warm-up;
* a plan run from scratch (predictor.from_scratch): the warm-up's lineage, mapped from 0;
* a plan from scratch with no warm-up: its own lineage.
"""

from __future__ import annotations

import math
from dataclasses import replace

from predictor.forecast import Anchor, Curve, Forecast, forecast
from predictor.lineages import Lineages, merge
from predictor.se_model import Estimate
from predictor.ttc_model import ForkPoint, TtcModel
from predictor.types import Config, Phase, Prediction, ProbeResult


def _pace(prediction: Prediction, measured_seconds: float, origin: float, crossing: float,
          speed: Estimate) -> float:
    """Seconds of the plan's run per anchor iteration: the model's, where it has a finite point
    past the origin; else the plan's own speed (the anchor's pace, rate 1)."""
    if math.isfinite(prediction.ttc_seconds) and math.isfinite(crossing) and crossing > origin:
        return max(prediction.ttc_seconds - measured_seconds, 0.0) / (crossing - origin)
    return speed.value


def anchor_of(view: ProbeResult, prediction: Prediction, model: TtcModel, lineages: Lineages,
              fork: ForkPoint | None, warmup_config: Config | None, warmup: Phase | None,
              target: float) -> Anchor | None:
    """The anchor of a plan on ``view`` (its merged lineage) predicted as ``prediction``; None
    where the model has no speed for it."""
    speed = model.speed(view.config)
    if speed is None:
        return None
    warm = (merge(lineages.chain_of(None, warmup_config.key()))
            if fork is not None and warmup_config is not None and lineages.chain_of(None, warmup_config.key())
            else None)
    forked = fork is not None and view.parent == fork.key and warm is not None
    curve = (warm.curve + view.curve) if forked else view.curve
    if view.reached_iteration is not None:
        return Anchor(curve, float(view.reached_iteration), 0.0, 0.0, speed.value, speed,
                      float(view.reached_iteration), view.reached_seconds)
    if fork is None or warm is None:
        end = float(view.end_iteration)
        return Anchor(curve, end, end, view.end_seconds,
                      _pace(prediction, view.end_seconds, end, prediction.iterations, speed), speed)
    reference = float(fork.reference.iteration_at(target)[0])
    if forked and warmup is None and view.config.key() != warmup_config.key():  # run from scratch
        pace = _pace(prediction, 0.0, 0.0, reference, speed)
        return Anchor(warm.curve, float(fork.iteration), 0.0, 0.0, pace, speed)
    if forked and view.config.key() == warmup_config.key():  # the warm-up continued: one run
        end = float(view.end_iteration)
        return Anchor(curve, end, end, view.end_seconds,
                      _pace(prediction, view.end_seconds, end, reference, speed), speed)
    end = float(fork.iteration)
    measured = view.end_seconds if forked else fork.seconds
    return Anchor(warm.curve, end, end, measured, _pace(prediction, measured, end, reference, speed), speed)


def plan_forecast(view: ProbeResult, prediction: Prediction, model: TtcModel | None, lineages: Lineages,
                  fork: ForkPoint | None, warmup_config: Config | None, warmup: Phase | None,
                  target: float, priors: tuple[Curve, ...] = ()) -> Forecast | None:
    """The forecast of a plan on ``view``; None where nothing can be forecast (no speed)."""
    if model is None:
        return None
    anchor = anchor_of(view, prediction, model, lineages, fork, warmup_config, warmup, target)
    if anchor is None:
        return None
    rerun = model.he.rerun if model.he is not None else 0.0
    return forecast(prediction, replace(anchor, rerun=rerun), target, priors=priors)
