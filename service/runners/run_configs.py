"""``ttc run`` / ``ttc predict``: train given configurations on Ray and report measured TTC.

``--config`` accepts a plan (its config, optionally its baseline too), one config, or a JSON
list of configs — inline JSON or a file holding it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from predictor import Config, Plan, ProbeRequest, ProbeResult
from predictor.lineages import merge
from predictor.one_probe import predict_from_probe
from predictor.types import Phase
from service.db import Database, measurement_store
from worker.errors import cluster_fault
from worker.launcher import ProbeLauncher
from worker.probe import target_value
from worker.spec import ConfigSpec, Spec, format_validation_error


class ConfigArgumentError(ValueError):
    """A ``--config`` value that is neither a plan, a config, nor a list of configs."""


@dataclass(frozen=True)
class RunTarget:
    """A config to train to the target; a plan's carries its warm-up phase, run first."""

    config: Config
    label: str = "config"
    predicted_ttc_seconds: float | None = None
    study_id: str | None = None
    warmup: Phase | None = None


def _load(argument: str) -> Any:
    """Inline JSON first, then a file: a long JSON list is no valid path (ENAMETOOLONG), and a
    file named like a JSON document is rarer than the document itself."""
    try:
        return json.loads(argument)
    except json.JSONDecodeError as inline:
        inline_error = inline
    path = Path(argument)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigArgumentError(
            f"--config is neither valid JSON ({inline_error}) nor a readable file ({exc.strerror})"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigArgumentError(f"file {path} is not valid JSON: {exc}") from None


def parse_config_argument(argument: str, with_baseline: bool) -> list[RunTarget]:
    data = _load(argument)
    try:
        if isinstance(data, dict) and "predicted" in data and "config" in data:
            plan = Plan.from_dict(data)
            predicted = plan.predicted.ttc_seconds if plan.confidence.supported else None
            targets = [RunTarget(plan.config, "plan", predicted, plan.study_id, plan.warmup)]
            if with_baseline:
                targets.append(
                    RunTarget(plan.baseline_config, "baseline", plan.baseline_predicted_ttc_seconds,
                              plan.study_id)
                )
            return targets
        items = data if isinstance(data, list) else [data]
        if not items or not all(isinstance(item, dict) for item in items):
            raise ConfigArgumentError("--config must hold a plan, a config object or a list of them")
        return [RunTarget(_bounded_config(item, i), f"config {i}") for i, item in enumerate(items)]
    except (TypeError, KeyError, ValueError) as exc:
        if isinstance(exc, ConfigArgumentError):
            raise
        raise ConfigArgumentError(str(exc)) from None


def _bounded_config(item: dict[str, Any], index: int) -> Config:
    """Every number finite and within the REST API's bounds (``ConfigSpec``), then Config's own rules."""
    try:
        return ConfigSpec.model_validate(item).to_config()
    except ValidationError as exc:
        raise ConfigArgumentError(f"--config item {index}:\n{format_validation_error(exc)}") from None


def check_fits(spec: Spec, config: Config) -> None:
    cluster = spec.cluster
    if config.nodes > cluster.nodes or config.devices_per_node > cluster.devices_per_node:
        raise ConfigArgumentError(
            f"config needs {config.nodes}×{config.devices_per_node} devices; the spec's cluster has "
            f"{cluster.nodes}×{cluster.devices_per_node}"
        )


def run_result(target: RunTarget, result: ProbeResult) -> dict[str, Any]:
    """The run-result contract of DESIGN.md §7, plus the prediction it is checked against."""
    reached = result.reached_seconds is not None
    iterations = result.reached_iteration if reached else result.iterations
    payload: dict[str, Any] = {
        "label": target.label,
        "config": result.config.to_dict(),
        "reached": reached,
        "ttc_seconds": result.reached_seconds,
        "iterations": iterations,
        "final_loss": result.final_loss,
        "seconds_per_iteration": result.seconds_per_iteration,
        "wall_seconds": result.wall_seconds,
    }
    if result.error:
        payload["error"] = result.error
    if target.predicted_ttc_seconds is not None:
        payload["predicted_ttc_seconds"] = target.predicted_ttc_seconds
    return payload


def execute_configs(
    spec: Spec,
    targets: list[RunTarget],
    ray_address: str | None,
    max_seconds: float,
    max_iterations: int,
) -> list[dict[str, Any]]:
    """Train every target in parallel on Ray — a plan's warm-up first, then its config forked from
    the warm-up's end; the run results (TTC from the run's start), in the order of ``targets``."""
    for target in targets:
        check_fits(spec, target.config)
        if target.warmup is not None:
            check_fits(spec, target.warmup.config)
    first: dict[str, ProbeRequest] = {}  # by target label
    for target in targets:
        phase = target.warmup or Phase(target.config, max_iterations)
        first[target.label] = ProbeRequest(phase.config, max_seconds, phase.iterations)
    with ProbeLauncher(spec, ray_address) as launcher:
        results = {r.probe_key: r for r in launcher.run(list({q.key: q for q in first.values()}.values()))}
        forks: dict[str, ProbeRequest] = {}
        for target in targets:
            warm = results[first[target.label].key]
            ended = warm.reached_iteration is not None or warm.diverged or warm.error
            if target.warmup is not None and not ended:
                forks[target.label] = ProbeRequest(
                    target.config, max(max_seconds - warm.end_seconds, 0.0),
                    max(max_iterations - warm.end_iteration, 0), warm.probe_key, warm.end_iteration)
        results |= {r.probe_key: r for r in launcher.run(list({q.key: q for q in forks.values()}.values()))}
    out = []
    for target in targets:
        segments = [results[first[target.label].key]]
        if target.label in forks:
            segments.append(results[forks[target.label].key])
        out.append(run_result(target, merge(segments)))
    return out


def record_runs(db: Database, targets: list[RunTarget], results: list[dict[str, Any]]) -> None:
    """Keep each measured result as a run of its target's study (unlinked when that is unknown)."""
    with db.transaction() as session:
        for target, payload in zip(targets, results, strict=True):
            measurement_store.record_run(session, study_id=target.study_id, config=target.config,
                                         result=payload)


def predict_config(spec: Spec, configs: list[Config], ray_address: str | None) -> list[dict[str, Any]]:
    """One probe per config (the spec's probe budget), then the TTC model's prediction with how
    far the probe supports it (predictor.one_probe: no number where it supports none)."""
    for config in configs:
        check_fits(spec, config)
    target = target_value(spec)
    predictions = {}
    requests = [ProbeRequest(c, spec.budget.probe_seconds, spec.budget.probe_max_iterations) for c in configs]
    with ProbeLauncher(spec, ray_address) as launcher:
        results = list(launcher.run(requests))
    for result in results:
        prediction, confidence = predict_from_probe(result, target)
        predictions[result.config.key()] = {
            "config": result.config.to_dict(),
            "predicted": prediction.to_dict() if prediction else None,
            "confidence": {"level": confidence.level, "reason": confidence.reason},
            "probe": {"iterations": result.iterations, "seconds": result.seconds,
                      "final_loss": result.final_loss, "diverged": result.diverged, "error": result.error,
                      "cluster_fault": bool(result.error) and cluster_fault(result.error)},
        }
    return [predictions[c.key()] for c in configs]


__all__ = ["ConfigArgumentError", "RunTarget", "execute_configs", "parse_config_argument", "record_runs"]
