"""One trial's page: its loss curve with the fitted curve and its 80% band, its seconds/iteration,
and why it was pruned or lost.

The fit is predictor.reference_curve's: the power law with a floor, l(k) = a·(k+1)^(−p) + c, over
the current regime ([k/4, k]) of the probe's whole lineage (its parents' segments, then its own),
with the residual-bootstrap resamples for the band. It is drawn up to the iteration the target is
predicted at, unless that lies past predictor.confidence.MAX_EXTRAPOLATION× the measured
iterations: there the prediction is *beyond the evidence*, said so, and the curve stops at a few
times the evidence instead of stretching the axis.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from predictor.confidence import MAX_EXTRAPOLATION
from predictor.reference_curve import ReferenceCurve
from predictor.step_times import steady_mean
from predictor.types import Config, json_safe
from service.dashboard import views
from service.dashboard.plan_view import shown_plan
from service.db import Probe, Study

FIT_POINTS = 80
SHOWN_PAST_EVIDENCE = 4.0  # without a target in reach, the fit is drawn to this multiple of the evidence


def _lineage(probe: Probe, by_key: dict[str, Probe]) -> list[Probe]:
    """The probe's ancestors (root first), then the probe."""
    chain, seen = [probe], {probe.key}
    parent = (probe.result or {}).get("parent")
    while parent in by_key and parent not in seen:
        chain.insert(0, by_key[parent])
        seen.add(parent)
        parent = (by_key[parent].result or {}).get("parent")
    return chain


def _points(chain: list[Probe]) -> list[tuple[int, float, float]]:
    points: dict[int, tuple[int, float, float]] = {}
    for probe in chain:
        for k, seconds, loss in (probe.result or {}).get("curve") or []:
            if loss is not None and math.isfinite(loss):
                points[int(k)] = (int(k), float(seconds), float(loss))
    return [points[k] for k in sorted(points)]


def _target(study: Study) -> float | None:
    value = (study.spec.get("target") or {}).get("value")
    return float(value) if value is not None else None


def fitted_curve(points: list[tuple[int, float, float]], target: float | None, to_target: float | None
                 ) -> dict[str, Any]:
    """The fit over the lineage's curve, its band, and how far it may be drawn."""
    fit = ReferenceCurve.fit(points, target) if points else None
    if fit is None:
        return {"message": "too few points past the curve's first quarter to fit (at least 6 are needed)"}
    end = max(points[-1][0], 1)
    extrapolation = to_target / end if to_target is not None and math.isfinite(to_target) else math.inf
    beyond = extrapolation > MAX_EXTRAPOLATION
    horizon = end * SHOWN_PAST_EVIDENCE if beyond else max(to_target * 1.05, end * 1.2)
    k = np.linspace(max(end / 4, 1.0), horizon, FIT_POINTS)
    central = fit.family.loss(k, *fit.params)
    band = np.array([fit.family.loss(k, *s) for s in fit.samples]) if fit.samples else central[None, :]
    low, high = np.percentile(band, [10, 90], axis=0)
    if beyond:
        note = ("the target is not predicted within the evidence" if not math.isfinite(extrapolation) else
                f"the target is predicted at {to_target:.4g} iterations, {extrapolation:.0f}× the {end} "
                f"measured: beyond evidence (no number is given past {MAX_EXTRAPOLATION:.0f}×)")
    else:
        note = (f"the target is predicted at {to_target:.4g} iterations "
                f"({extrapolation:.2g}× the {end} measured)")
    return json_safe({
        "formula": "l(k) = a·(k+1)^(−p) + c", "a": fit.params.a, "p": fit.params.shape, "c": fit.params.c,
        "k": k.tolist(), "loss": central.tolist(), "low": np.minimum(low, central).tolist(),
        "high": np.maximum(high, central).tolist(), "measured_until": end,
        "beyond_evidence": beyond, "extrapolation": extrapolation, "note": note,
    })


def _ranking_row(study: Study, config_key: str) -> dict[str, Any] | None:
    for rank, row in enumerate((shown_plan(study.plan) or {}).get("ranking") or []):
        if row.get("config_key") == config_key:
            return {**row, "rank": rank + 1}
    return None


def _why(probe: Probe, row: dict[str, Any] | None, optuna_attrs: dict[str, Any]) -> list[str]:
    """Every reason recorded for setting the trial aside, most specific first."""
    reasons = []
    if (prune := views.prune_reason(probe)) is not None:
        reasons.append(f"set aside when it finished: {prune}")
    if optuna_attrs.get("prune_reason") and optuna_attrs["prune_reason"] != prune:
        reasons.append(f"Optuna: {optuna_attrs['prune_reason']}")
    if row is not None and row.get("status") != "plan":
        reasons.append(f"{row['status']} in the plan's ranking: {row['reason']}")
    elif row is None and optuna_attrs.get("ttc_reason"):
        reasons.append(f"{optuna_attrs.get('ttc_status', 'not ranked')}: {optuna_attrs['ttc_reason']}")
    return reasons


def trial_detail(study: Study, probes: list[Probe], number: int, optuna_attrs: dict[str, Any] | None = None
                 ) -> dict[str, Any]:
    """Everything the trial page draws; KeyError when the study has no trial ``number``."""
    probe = next((p for p in probes if p.number == number), None)
    if probe is None:
        raise KeyError(f"study {study.id!r} has no trial {number}")
    optuna_attrs = optuna_attrs or {}
    row = views.trial(probe, views.cluster_devices(study))
    result = probe.result or {}
    chain = _lineage(probe, {p.key: p for p in probes})
    steps = result.get("step_seconds") or []
    config_key = Config.from_dict(probe.config).key()
    ranked = _ranking_row(study, config_key)
    return {
        "study": {"id": study.id, "state": study.state, "target": _target(study),
                  "workload": views.workload(study)},
        "trial": {k: v for k, v in row.items() if k != "curve"},
        "config_key": config_key,
        "iterations": result.get("iterations"), "seconds": json_safe(result.get("seconds")),
        "start_iteration": result.get("start_iteration", 0),
        "steady_seconds_per_iteration": json_safe(steady_mean(steps) if steps else None),
        "lineage": [{"number": p.number, "key": p.key, "curve": [[c[0], json_safe(c[2])]
                                                               for c in (p.result or {}).get("curve") or []]}
                    for p in chain],
        "fit": fitted_curve(_points(chain), _target(study), row["iterations_to_target"]),
        "ranking": ranked,
        "optuna": {k: json_safe(v) for k, v in optuna_attrs.items() if k != "config"},
        "why": _why(probe, ranked, optuna_attrs),
        "is_plan": bool(ranked and ranked.get("status") == "plan"),
    }
