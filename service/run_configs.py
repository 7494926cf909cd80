"""``ttc run`` / ``ttc predict``: train given configurations on Ray and report measured TTC.

``--config`` accepts a plan (its config, optionally its baseline too), one config, or a JSON
list of configs — inline JSON or a file holding it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from predictor import Config, Plan, ProbeResult, predict_ttc
from service import crud
from service.db import Database
from worker.launcher import ProbeLauncher
from worker.probe import target_value
from worker.spec import Spec


class ConfigArgumentError(ValueError):
    """A ``--config`` value that is neither a plan, a config, nor a list of configs."""


@dataclass(frozen=True)
class RunTarget:
    config: Config
    label: str = "config"
    predicted_ttc_seconds: float | None = None
    study_id: str | None = None


def _load(argument: str) -> Any:
    path = Path(argument)
    text = path.read_text() if path.is_file() else argument
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        source = f"file {path}" if path.is_file() else "--config"
        raise ConfigArgumentError(f"{source} is neither an existing file nor valid JSON: {exc}") from None


def parse_config_argument(argument: str, with_baseline: bool) -> list[RunTarget]:
    data = _load(argument)
    try:
        if isinstance(data, dict) and "predicted" in data and "config" in data:
            plan = Plan.from_dict(data)
            targets = [RunTarget(plan.config, "plan", plan.predicted.ttc_seconds, plan.study_id)]
            if with_baseline:
                targets.append(
                    RunTarget(plan.baseline_config, "baseline", plan.baseline_predicted_ttc_seconds,
                              plan.study_id)
                )
            return targets
        items = data if isinstance(data, list) else [data]
        if not items or not all(isinstance(item, dict) for item in items):
            raise ConfigArgumentError("--config must hold a plan, a config object or a list of them")
        return [RunTarget(Config.from_dict(item), f"config {i}") for i, item in enumerate(items)]
    except (TypeError, KeyError, ValueError) as exc:
        if isinstance(exc, ConfigArgumentError):
            raise
        raise ConfigArgumentError(str(exc)) from None


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
    db: Database,
    ray_address: str | None,
    max_seconds: float,
    max_iterations: int,
) -> list[dict[str, Any]]:
    """Train every target in parallel on Ray; each measured result is recorded as a run."""
    for target in targets:
        check_fits(spec, target.config)
    launcher = ProbeLauncher(spec, ray_address)
    launcher.start()
    unique = {t.config.key(): t.config for t in targets}  # a plan may equal its baseline
    measured = {r.config.key(): r for r in launcher.run(list(unique.values()), max_seconds, max_iterations)}
    results = []
    for target in targets:
        payload = run_result(target, measured[target.config.key()])
        with db.transaction() as session:
            crud.record_run(session, study_id=target.study_id, config=target.config, result=payload)
        results.append(payload)
    return results


def predict_config(spec: Spec, configs: list[Config], ray_address: str | None) -> list[dict[str, Any]]:
    """One probe per config (the spec's probe budget), then the TTC model's prediction."""
    for config in configs:
        check_fits(spec, config)
    launcher = ProbeLauncher(spec, ray_address)
    launcher.start()
    target = target_value(spec)
    predictions = {}
    for result in launcher.run(configs, spec.budget.probe_seconds, spec.budget.probe_max_iterations):
        prediction = predict_ttc(result, target)
        predictions[result.config.key()] = {
            "config": result.config.to_dict(),
            "predicted": prediction.to_dict() if prediction else None,
            "probe": {"iterations": result.iterations, "seconds": result.seconds,
                      "final_loss": result.final_loss, "diverged": result.diverged},
        }
    return [predictions[c.key()] for c in configs]


__all__ = ["ConfigArgumentError", "RunTarget", "execute_configs", "parse_config_argument"]
