"""What optuna-dashboard users expect on a study page, computed server-side with Optuna itself:
parameter importances (Optuna's importance evaluators) and a parallel-coordinates view (params →
value) of the study's trials.

The trials are the study's Optuna trials (named with the ttc id; once the plan is made each value is
the score ttc ranked configs by: service.db.optuna_mirror). A study recorded without an Optuna
study (seeded, or imported) is read from ttc's own probes instead, each valued at its predicted TTC.
Only complete trials carry a value; the rest are counted, not drawn.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import optuna
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.trial import FrozenTrial, TrialState

from predictor.ranking import UNBOUNDED
from predictor.trial_space import MAX_BATCH_SIZE
from predictor.trial_space import TRIAL_PARAMS as PARAMS
from predictor.types import json_safe
from service.dashboard import views
from service.db import Probe, Study
from worker.spec import MAX_DEVICES

log = logging.getLogger(__name__)

LOG_PARAMS = {"lr", "batch_size"}
MIN_TRIALS = 4  # fewer complete trials than this: importances would only restate the noise
EVALUATOR = "PED-ANOVA"  # optuna.importance.PedAnovaImportanceEvaluator: needs no scikit-learn


def _probe_trials(probes: list[Probe]) -> list[FrozenTrial]:
    """ttc's probes as Optuna trials, valued at their predicted TTC (no Optuna study recorded)."""
    distributions = {
        "strategy": CategoricalDistribution(["sync", "async_groups", "daso", "hsgd", "dbs"]),
        "nodes": IntDistribution(1, 4096), "devices_per_node": IntDistribution(1, 4096),
        "groups": IntDistribution(1, MAX_DEVICES),
        "batch_size": IntDistribution(1, MAX_BATCH_SIZE), "lr": FloatDistribution(1e-6, 1000.0, log=True),
        "momentum": FloatDistribution(0.0, 0.999), "optimizer": CategoricalDistribution(["sgd", "lars"]),
    }
    trials = []
    for probe in probes:
        if probe.result is None:
            continue
        value = probe.predicted_ttc
        if value is not None and not math.isfinite(value):
            value = None
        trials.append(optuna.trial.create_trial(
            state=TrialState.COMPLETE if value is not None else TrialState.PRUNED, value=value,
            params={name: probe.config[name] for name in PARAMS}, distributions=distributions,
            user_attrs={"probe_key": probe.key, "number": probe.number},
        ))
    return trials


def study_trials(database_url: str, study_id: str, probes: list[Probe]) -> tuple[list[FrozenTrial], str]:
    """The study's trials and where they came from (``optuna`` or ``probes``)."""
    from service.db.optuna_mirror import load_optuna_study

    try:
        return load_optuna_study(database_url, study_id).get_trials(deepcopy=False), "optuna"
    except KeyError:
        return _probe_trials(probes), "probes"


def trial_attrs(database_url: str, study_id: str, probe_key: str) -> dict[str, Any]:
    """The Optuna trial's user attributes (pruner's reason, ttc_status/ttc_reason) and value."""
    from service.db.optuna_mirror import load_optuna_study

    try:
        trials = load_optuna_study(database_url, study_id).get_trials(deepcopy=False)
    except KeyError:
        return {}
    for t in trials:
        if t.user_attrs.get("probe_key") == probe_key:
            return {**t.user_attrs, "optuna_number": t.number, "optuna_state": t.state.name, "value": t.value}
    return {}


def _complete(trials: list[FrozenTrial]) -> list[FrozenTrial]:
    """Trials with a score: a value at predictor.ranking.UNBOUNDED or above only orders trials
    behind a plan that has no score of its own, and explains nothing."""
    return [t for t in trials if t.state is TrialState.COMPLETE and t.value is not None
            and math.isfinite(t.value) and t.value < UNBOUNDED]


def no_value_reason(trials: list[FrozenTrial]) -> str:
    """Why no trial has a value to draw, in one line (a finished study's cards say why they are empty)."""
    unbounded = sum(t.state is TrialState.COMPLETE and t.value is not None and t.value >= UNBOUNDED
                    for t in trials)
    if unbounded:
        return (f"No trial has a score: no config's prediction is bounded (each lies beyond the "
                f"evidence), so its {unbounded} valued trials are only ordered behind the plan.")
    if not trials:
        return "No trial yet."
    states = {state.name.lower(): sum(t.state is state for t in trials) for state in TrialState}
    counts = ", ".join(f"{n} {name}" for name, n in states.items() if n)
    return f"No trial has a value yet ({len(trials)} trials: {counts})."


def _varying(trials: list[FrozenTrial]) -> list[str]:
    """Params present in every trial that take more than one value (a constant explains nothing)."""
    names = [p for p in PARAMS if all(p in t.params for t in trials)]
    return [p for p in names if len({repr(t.params[p]) for t in trials}) > 1]


def importances(trials: list[FrozenTrial], beyond: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``{"importances": [{param, importance}], "evaluator"}`` or ``{"message"}`` saying why not.
    Trials predicted past the evidence (``beyond``, by probe key) are left out: their values are
    extrapolations the predictor gives no number for."""
    valued = _complete(trials)
    complete = [t for t in valued if t.user_attrs.get("probe_key") not in beyond]
    left_out = (f" ({len(valued) - len(complete)} more are predicted beyond the evidence and left out)"
                if len(valued) > len(complete) else "")
    if not valued:
        return {"message": no_value_reason(trials)}
    if len(complete) < MIN_TRIALS:
        return {"message": f"Parameter importances need at least {MIN_TRIALS} trials with a value; this "
                           f"study has {len(complete)} of {len(trials)}{left_out}."}
    varying = _varying(complete)
    if not varying:
        return {"message": f"All {len(complete)} trials with a value share one configuration{left_out}: "
                           "no parameter varied among them, so none can explain the value."}
    optuna.logging.set_verbosity(optuna.logging.WARNING)  # as the runner does: no per-study INFO line
    study = optuna.create_study(direction="minimize")
    study.add_trials(complete)
    try:
        found = optuna.importance.get_param_importances(
            study, evaluator=optuna.importance.PedAnovaImportanceEvaluator(), params=varying)
    except (ValueError, RuntimeError) as exc:  # too few distinct values for the evaluator
        log.info("importances not computed: %s", exc)
        return {"message": f"Optuna could not compute importances on {len(complete)} trials: {exc}"}
    return {"evaluator": EVALUATOR, "trials": len(complete),
            "importances": [{"param": name, "importance": json_safe(value)} for name, value in found.items()]}


def _axis(name: str, values: list[Any]) -> tuple[dict[str, Any], Any]:
    """An axis description and a function mapping a value to [0, 1] on it."""
    if any(isinstance(v, str) for v in values):
        levels = sorted({str(v) for v in values})
        span = max(len(levels) - 1, 1)
        ticks = [{"at": i / span if len(levels) > 1 else 0.5, "label": level}
                 for i, level in enumerate(levels)]
        return {"name": name, "scale": "category", "ticks": ticks}, (
            lambda v: levels.index(str(v)) / span if len(levels) > 1 else 0.5)
    numbers = [float(v) for v in values]
    log_scale = name in LOG_PARAMS or name == "value"
    if log_scale and min(numbers) <= 0:
        log_scale = False
    scale = math.log10 if log_scale else (lambda x: x)
    low, high = scale(min(numbers)), scale(max(numbers))
    width = high - low
    if max(numbers) - min(numbers) <= 1e-6 * max(abs(max(numbers)), abs(min(numbers))):
        width = 0.0  # equal up to the ranking's tie-breaks (predictor.ranking.TIE): one level

    def position(v: Any) -> float:
        return (scale(float(v)) - low) / width if width > 0 else 0.5

    labels = {f"{v:.4g}": v for v in sorted(set(numbers))}
    ticks = [{"at": position(v), "label": label} for label, v in labels.items()]
    if len(ticks) > 6:  # ends and a middle: a dense axis reads better with few labels
        ticks = [ticks[0], ticks[len(ticks) // 2], ticks[-1]]
    return {"name": name, "scale": "log" if log_scale else "linear", "ticks": ticks}, position


def parallel_coordinates(trials: list[FrozenTrial], beyond: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Axes (the varying params, then the value) and each complete trial's position on every axis.

    A trial whose prediction lies past the evidence (``beyond``, by probe key) is drawn above the
    value axis (position null, ``beyond`` true), never setting that axis's range.
    """
    complete = _complete(trials)
    if not complete:
        return {"message": no_value_reason(trials), "axes": [], "lines": []}
    names = _varying(complete) or [p for p in PARAMS if all(p in t.params for t in complete)]
    supported = [t for t in complete if t.user_attrs.get("probe_key") not in beyond] or complete
    axes, positions = [], []
    for name in [*names, "value"]:
        shown = supported if name == "value" else complete
        values = [t.value if name == "value" else t.params[name] for t in shown]
        axis, position = _axis(name, values)
        axes.append(axis)
        positions.append((name, position))
    best = min(t.value for t in supported)
    lines = []
    for t in complete:
        past = t.user_attrs.get("probe_key") in beyond
        at = [json_safe(position(t.params[name])) for name, position in positions[:-1]]
        lines.append({
            "number": t.user_attrs.get("number", t.number), "probe_key": t.user_attrs.get("probe_key"),
            "value": json_safe(t.value), "best": t.value == best and not past, "beyond": past,
            "at": [*at, None if past else json_safe(positions[-1][1](t.value))],
        })
    left_out = len(trials) - len(complete)
    past = sum(line["beyond"] for line in lines)
    note = f"{len(complete)} trials with a value" + (
        f"; {past} beyond evidence drawn above the value axis" if past else "") + (
        f"; {left_out} without one not drawn" if left_out else "")
    return {"axes": axes, "lines": lines, "note": note}


def insights(database_url: str, study: Study, probes: list[Probe]) -> dict[str, Any]:
    trials, source = study_trials(database_url, study.id, probes)
    detail = views.study_detail(study, probes, [], 0)
    beyond = frozenset(t["key"] for t in detail["trials"] if t["beyond_evidence"])
    parallel = parallel_coordinates(trials, beyond)
    numbers = {p.key: p.number for p in probes}
    for line in parallel["lines"]:  # the dashboard's trial pages are numbered by ttc's probes
        line["number"] = numbers.get(line["probe_key"], line["number"])
    return {"source": source, "importances": importances(trials, beyond), "parallel": parallel}
