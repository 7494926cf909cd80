"""Domain types shared by every layer: configurations, probe measurements, predictions, plans.

Plain dataclasses (no pydantic) so that ``predictor`` stays importable with numpy/scipy/optuna
only (DESIGN.md §3). Their ``to_dict``/``from_dict`` spell the JSON contracts of DESIGN.md §7.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

STRATEGIES = ("sync", "async_groups", "daso", "hsgd", "dbs")


def json_safe(value: Any) -> Any:
    """NaN and ±inf as ``None``: strict JSON (and PostgreSQL's JSON type) has no such numbers."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    return value


def _or(value: float | None, default: float) -> float:
    return default if value is None else value
OPTIMIZERS = ("sgd", "lars")


@dataclass(frozen=True)
class Config:
    """One point of the search space (DESIGN.md §7 *Config*). ``batch_size`` is per device."""

    strategy: str
    nodes: int
    devices_per_node: int
    groups: int = 1
    batch_size: int = 32
    lr: float = 0.1
    momentum: float = 0.9
    optimizer: str = "sgd"
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        errors = []
        if self.strategy not in STRATEGIES:
            errors.append(f"strategy={self.strategy!r} is not one of {list(STRATEGIES)}")
        if self.optimizer not in OPTIMIZERS:
            errors.append(f"optimizer={self.optimizer!r} is not one of {list(OPTIMIZERS)}")
        for name in ("nodes", "devices_per_node", "groups", "batch_size"):
            if getattr(self, name) < 1:
                errors.append(f"{name}={getattr(self, name)!r} must be >= 1")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            errors.append(f"lr={self.lr!r} must be a positive finite number")
        if not 0.0 <= self.momentum < 1.0:
            errors.append(f"momentum={self.momentum!r} must be in [0, 1)")
        if self.groups > 1 and self.devices % self.groups:
            errors.append(f"groups={self.groups} must divide the {self.devices} devices")
        if self.groups > 1 and self.strategy != "async_groups":
            errors.append(f"groups={self.groups} is only meaningful for strategy 'async_groups'")
        if errors:
            raise ValueError("invalid config: " + "; ".join(errors))

    @property
    def devices(self) -> int:
        return self.nodes * self.devices_per_node

    @property
    def global_batch(self) -> int:
        """Samples in one update of the global model (one group's batch under asynchrony)."""
        return self.batch_size * self.devices // self.groups

    def key(self) -> str:
        """A stable, human-readable identity used to deduplicate probes."""
        opts = ",".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        return (
            f"{self.strategy}/n{self.nodes}x{self.devices_per_node}/g{self.groups}/b{self.batch_size}"
            f"/lr{self.lr:.4g}/m{self.momentum:.3g}/{self.optimizer}" + (f"/{opts}" if opts else "")
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Config:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"invalid config: unknown field(s) {unknown}; expected {sorted(known)}")
        return cls(**data)

    def replace(self, **changes: Any) -> Config:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class ProbeRequest:
    """A config to probe and for how long. ``extension`` > 1 re-probes a finalist that many times
    longer: the same config under its own ``key``, so both probes stay on record."""

    config: Config
    seconds: float
    max_iterations: int
    extension: int = 1

    @property
    def key(self) -> str:
        base = self.config.key()
        return base if self.extension == 1 else f"{base}@x{self.extension}"


def by_length(requests: list[ProbeRequest]) -> dict[tuple[float, int], list[Config]]:
    """Requests grouped by probe length (seconds, max iterations), shortest first: one launch each."""
    groups: dict[tuple[float, int], list[Config]] = {}
    for request in sorted(requests, key=lambda r: (r.seconds, r.max_iterations)):
        groups.setdefault((request.seconds, request.max_iterations), []).append(request.config)
    return groups


@dataclass
class ProbeResult:
    """What a probe measures — the only thing the predictor ever sees of a run (DESIGN.md §5).

    ``curve`` holds (iteration, seconds, eval_loss) at each evaluation; ``step_seconds`` the
    duration of recent iterations; ``grad_sq_small``/``grad_sq_big`` the squared norms of a
    per-worker and of the averaged gradient with their batch sizes (McCandlish et al.'s
    noise-scale estimator). ``reached_iteration`` is set when the convergence rule fired.
    """

    config: Config
    iterations: int
    seconds: float
    curve: list[tuple[int, float, float]]
    step_seconds: list[float] = field(default_factory=list)
    reached_iteration: int | None = None
    reached_seconds: float | None = None
    diverged: bool = False
    grad_sq_small: float | None = None
    grad_sq_big: float | None = None
    batch_small: int | None = None
    batch_big: int | None = None
    wall_seconds: float = 0.0
    error: str | None = None

    @property
    def seconds_per_iteration(self) -> float:
        return self.seconds / max(self.iterations, 1)

    @property
    def final_loss(self) -> float:
        return self.curve[-1][2] if self.curve else math.nan

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["config"] = self.config.to_dict()
        return json_safe(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeResult:
        data = dict(data)
        data["config"] = Config.from_dict(data["config"])
        data["curve"] = [(k, seconds, _or(loss, math.nan)) for k, seconds, loss in data.get("curve", [])]
        return cls(**data)


@dataclass(frozen=True)
class Prediction:
    """Predicted TTC with an 80% interval, as a product of its two factors (DESIGN.md §1)."""

    ttc_seconds: float
    ttc_low: float
    ttc_high: float
    seconds_per_iteration: float
    iterations: float

    def scaled(self, factor: float) -> Prediction:
        """``factor``× the iterations, hence the TTC and both ends of its interval."""
        return dataclasses.replace(
            self, ttc_seconds=self.ttc_seconds * factor, ttc_low=self.ttc_low * factor,
            ttc_high=self.ttc_high * factor, iterations=self.iterations * factor,
        )

    def to_dict(self) -> dict[str, float | None]:
        return json_safe(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, data: dict[str, float | None]) -> Prediction:
        """Inverse of ``to_dict``: a missing bound (``None``) is unbounded."""
        return cls(
            ttc_seconds=_or(data["ttc_seconds"], math.inf),
            ttc_low=_or(data["ttc_low"], 0.0),
            ttc_high=_or(data["ttc_high"], math.inf),
            seconds_per_iteration=_or(data["seconds_per_iteration"], math.nan),
            iterations=_or(data["iterations"], math.inf),
        )


@dataclass
class Plan:
    """The answer of a study (DESIGN.md §7 *Plan*)."""

    study_id: str
    config: Config
    predicted: Prediction
    baseline_config: Config
    baseline_predicted_ttc_seconds: float
    probe_count: int
    probe_cluster_seconds: float
    evidence: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "study_id": self.study_id,
            "config": self.config.to_dict(),
            "predicted": self.predicted.to_dict(),
            "baseline": {
                "config": self.baseline_config.to_dict(),
                "predicted_ttc_seconds": json_safe(self.baseline_predicted_ttc_seconds),
            },
            "probes": {"count": self.probe_count, "cluster_seconds": self.probe_cluster_seconds},
            "evidence": self.evidence,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        return cls(
            study_id=data["study_id"],
            config=Config.from_dict(data["config"]),
            predicted=Prediction.from_dict(data["predicted"]),
            baseline_config=Config.from_dict(data["baseline"]["config"]),
            baseline_predicted_ttc_seconds=_or(data["baseline"]["predicted_ttc_seconds"], math.inf),
            probe_count=data["probes"]["count"],
            probe_cluster_seconds=data["probes"]["cluster_seconds"],
            evidence=list(data.get("evidence", [])),
        )


@dataclass(frozen=True)
class SearchSpace:
    """What the search may choose from; derived from the spec's ``search`` and ``cluster``."""

    nodes: int
    devices_per_node: int
    strategies: tuple[str, ...] = ("sync", "async_groups")
    batch_sizes: tuple[int, ...] = (16, 32, 64)
    learning_rates: tuple[float, ...] = (0.01, 0.03, 0.1, 0.3)
    momenta: tuple[float, ...] = (0.0, 0.3, 0.6, 0.9)
    groups: tuple[int, ...] = ()

    @property
    def devices(self) -> int:
        return self.nodes * self.devices_per_node

    def group_counts(self) -> tuple[int, ...]:
        """Omnivore's g ladder: powers of two dividing the device count (or the given list)."""
        if self.groups:
            return tuple(g for g in self.groups if self.devices % g == 0)
        ladder, g = [], 1
        while g <= self.devices:
            if self.devices % g == 0:
                ladder.append(g)
            g *= 2
        return tuple(ladder)


@dataclass(frozen=True)
class Budget:
    """Limits of a study: per-probe length in cluster seconds, probe count, wall deadline, and
    optionally the cluster-seconds all probes together may spend (DESIGN.md §7)."""

    probe_seconds: float = 20.0
    max_probes: int = 48
    deadline_seconds: float = 3600.0
    probe_max_iterations: int = 3000
    max_cluster_seconds: float | None = None
