"""``ttc train``'s ETA: at each checkpoint, the forecast of the time left to the target.

The run's own lineage is the longest curve the job has: its forecast (predictor.forecast, on
the run's curve at the run's measured speed) narrows as the run goes, because the extrapolation
shortens and the curve's shape past the evidence matters less. As a plan's forecast mixes the
pooled model's reading of its config (predictor.ttc_model) with the ensemble's, the ETA mixes
the run's latest such reading: the plan's, then each re-plan's of the config the run goes on
with. The reading's draws the run has outlived drop out, but the rest keep its upper tail, so
where the reading is wide the ETA's upper end stays wide: on heldout_classification, whose target
is in the flat region, its re-plan at iteration 3,865 read 0.073 / 0.307 / 1.46 s and the ETA's p90
stayed 0.80-0.84 s left to the end, but the ensemble alone read the crossing early and missed 13 of
the 20 checkpoints after the study, all of which the mix covered.
On the public long scenarios the ensemble alone read the crossing early (regression's ETA
at mid-run 65% early, its re-plan's reading 14%): a run's switch of batch or rate bends its curve
where no family bends. Recorded per checkpoint so the dashboard's timeline and the training
result can show how the ETA moved.

Where a finished run of the same job reached this target, the time left is read along that
run's path instead (predictor.prior_path): its crossing is sharper than any extrapolation of a
curve, the warm-up's transient included.

A run whose step size changed is read on the optimizer's clock (predictor.step_clock) as well as
in iterations, and the two forecasts are averaged quantile by quantile in log seconds, their
geometric mean (Vincentization: Lichtendahl, Grushka-Cockayne and Winkler 2013): a doubled rate
moves the curve less than twice as far per step (digits_mlp: ×1.4 over the 200 iterations after
the switch), so neither clock alone is right, and the average lies between them. Only where the
target is after the knee: in the flat region the loss's level is set by its noise, which a higher
rate raises, and a clock of distance travelled says nothing about it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from predictor.forecast import Anchor, forecast, hardware_sd
from predictor.he_model import seconds_per_iteration
from predictor.lineages import merge
from predictor.prior_path import FinishedRun, prior_path_eta
from predictor.se_model import FORM_SIGMA
from predictor.step_clock import on_clock, step_clock
from predictor.types import Prediction, ProbeResult, json_safe

TRANSIENT_FORM = 0.8
"""Model-form error (log-sd per e-fold past the evidence) of the ETA in the warm-up when no finished
run of the job is a prior. The warm-up's curve is in its transient, where no family's extrapolation
holds: at the forecast's FORM_SIGMA (0.25) the ETA's 80% interval covered 45% of the time left on
the public runs (calibration seeds 4-5, 42 warm-up checkpoints), at 0.6 74%, at 0.8 86% (median
p90/p10 60: wide, and said so rather than withheld). Chosen there as the smallest of 0.25, 0.4,
0.6, 0.8, 1.0, 1.5 covering at least 75% (benchmarks/eta_replay.py); no held-out scenario or truth
seed was read. With a prior its shape past the evidence carries the forecast, at FORM_SIGMA."""


def eta_at(segments: Sequence[ProbeResult], target: float, priors: tuple[FinishedRun, ...] = (),
           reading: Prediction | None = None, form: float = FORM_SIGMA,
           transient: bool = False, after_knee: bool = False) -> dict[str, Any] | None:
    """The ETA entry at the end of the run's lineage ``segments`` (first segment first): the
    iteration, the run's own seconds so far (its tuning is counted apart, in the result's
    ``tuning_cluster_seconds``) and the p10/p50/p90 of the run's seconds left; None when the speed
    is unknown, the run has reached the target, or its curve is too short to fit and there is no
    reading (nothing to read: heldout_digits_cnn's first 50 iterations held five evaluations, and
    the ETA read never, with a negative time left at p10). No quantile of the time left is below
    zero: the run has not reached the target. ``priors``: finished runs of the same job; where one
    ran to this target, the time left is read along its path (predictor.prior_path), else they
    are the ensemble's members. ``reading``: the pooled model's latest TTC of
    the run (the plan's, or a re-plan's), mixed in where it is finite; ``form`` and
    ``transient``: the model-form error per e-fold past the evidence, and whether the curve is in
    its transient (predictor.forecast.Anchor), which only the study's warm-up is; ``after_knee``:
    the plan's target is after the knee (a prior's path is then read on the step clock)."""
    run, tip = merge(list(segments)), segments[-1]
    speed = seconds_per_iteration(tip)
    if speed is None or run.reached_iteration is not None:
        return None
    path = prior_path_eta(priors, segments, target, speed.value, hardware_sd(speed), warmup=transient,
                          after_knee=after_knee)
    if path is not None:
        return _entry(run, path)
    curves = tuple(prior.curve for prior in priors)
    end = float(run.end_iteration)
    point = Prediction(math.inf, 0.0, math.inf, speed.value, math.inf, end, run.end_seconds)
    if reading is not None and math.isfinite(reading.ttc_seconds):
        point = replace(reading, seconds_per_iteration=speed.value, evidence_iterations=end,
                        evidence_seconds=run.end_seconds)
    anchor = Anchor(run.curve, end, end, run.end_seconds, speed.value, speed, form=form, transient=transient)
    counted = forecast(point, anchor, target, priors=curves)
    if not counted.fitted and not math.isfinite(point.ttc_seconds):
        return None
    quantiles = _quantiles(counted.prediction)
    knots = step_clock(segments) if counted.after_knee else None
    if knots is not None:  # the two readings' geometric mean, quantile by quantile
        clocked = on_clock(knots, np.array([k for k, _, _ in run.curve], dtype=float))
        curve = [(float(c), seconds, loss) for c, (_, seconds, loss) in zip(clocked, run.curve, strict=True)]
        clock = float(on_clock(knots, end))
        stepped = replace(anchor, curve=curve, end=clock, origin=clock)
        steps = forecast(point, stepped, target, priors=curves).prediction
        quantiles = np.sqrt(quantiles * _quantiles(steps))
    return _entry(run, tuple(max(float(value) - run.end_seconds, 0.0) for value in quantiles))


def _entry(run: ProbeResult, left: tuple[float, ...]) -> dict[str, Any]:
    """The ETA entry of the run ``run`` (its lineage merged) with p10/p50/p90 seconds ``left``."""
    return json_safe({"iteration": run.end_iteration, "seconds": run.end_seconds,
                      "remaining_p10": left[0], "remaining_p50": left[1], "remaining_p90": left[2]})


def _quantiles(predicted: Prediction) -> np.ndarray:
    """The forecast's p10/p50/p90 (an open p90 is infinite)."""
    return np.array([predicted.ttc_low, predicted.ttc_seconds, predicted.ttc_high], dtype=float)


def warmup_eta(chain: Sequence[ProbeResult], target: float,
               priors: tuple[FinishedRun, ...] = ()) -> dict[str, Any] | None:
    """The ETA at a segment of the study's warm-up, which ``ttc train`` continues: read as at any
    checkpoint, with no pooled reading yet (no plan), without a prior at TRANSIENT_FORM, and never
    as "never": the warm-up goes on until its curve leaves its transient, where a flat stretch is
    a plateau (public regression, seed 5: its ETA at 3,200 iterations read the target never
    reached; the run reached it)."""
    return eta_at(chain, target, priors, form=FORM_SIGMA if priors else TRANSIENT_FORM, transient=True)
