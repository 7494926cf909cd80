"""Domain types shared by every layer: configurations, probe measurements, predictions, plans.

Plain dataclasses (no pydantic) so that ``predictor`` stays importable with numpy/scipy/optuna
only (DESIGN.md §3). Their ``to_dict``/``from_dict`` spell the JSON contracts of DESIGN.md §7.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from dataclasses import dataclass, field
from typing import Any

from predictor.step_times import steady_mean

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


def config_key_of(probe_key: str) -> str:
    """The config key a probe key (``ProbeRequest.key``) starts with."""
    return probe_key.split("@")[0]


@dataclass(frozen=True)
class ProbeRequest:
    """A config to probe and for how long, from scratch or from another probe's end state.

    ``parent`` names the probe (its ``key``) whose final state this one starts from: the same
    config continues that probe (a warm-up growing, a finalist lengthened: successive halving's
    next rung); another config forks from it (the model's weights, a fresh optimizer), so each
    candidate is measured at the loss level where a long run spends its time (issue 11). A
    probe's ``key`` names one segment of one lineage, so every segment is its own record.

    ``seed_offset``: the probe runs on the spec's seed plus this (its initialisation, data order and
    data): a check that a rate chosen on one seed also trains on another (predictor.search).
    ``timing``: the probe times an allocation for the hardware model and is no lineage's evidence
    (predictor.timing_round); its key says so, so it never stands for a probe of the
    same config from scratch.
    """

    config: Config
    seconds: float
    max_iterations: int
    parent: str | None = None
    start_iteration: int = 0  # iterations of the lineage before this segment (0 from scratch)
    seed_offset: int = 0
    timing: bool = False

    @property
    def key(self) -> str:
        base = self.config.key()
        aside = f"@seed+{self.seed_offset}" if self.seed_offset else ""
        if self.timing:
            aside += f"@timing{self.max_iterations}"
        if self.parent is None:
            return base + aside
        origin = hashlib.sha1(self.parent.encode()).hexdigest()[:6]
        return f"{base}@{self.start_iteration}+{self.max_iterations}#{origin}{aside}"

    @property
    def forks(self) -> bool:
        """Starts another config from the parent's model (rather than continuing the parent)."""
        return self.parent is not None and self.config.key() != config_key_of(self.parent)

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config.to_dict(), "seconds": self.seconds,
                "max_iterations": self.max_iterations, "parent": self.parent,
                "start_iteration": self.start_iteration, "seed_offset": self.seed_offset,
                "timing": self.timing}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeRequest:
        return cls(Config.from_dict(data["config"]), float(data["seconds"]), int(data["max_iterations"]),
                   data.get("parent"), int(data.get("start_iteration", 0)), int(data.get("seed_offset", 0)),
                   bool(data.get("timing", False)))

    def failed(self, reason: str) -> ProbeResult:
        """The result of a probe that could not run: no measurement, the reason kept."""
        return ProbeResult(self.config, 0, 0.0, [], error=reason, key=self.key, parent=self.parent,
                           start_iteration=self.start_iteration)


@dataclass
class ProbeResult:
    """What a probe measures — the only thing the predictor ever sees of a run (DESIGN.md §5).

    ``curve`` holds (iteration, seconds, eval_loss) at each evaluation; ``step_seconds`` the
    duration of recent iterations; ``grad_sq_small``/``grad_sq_big`` the squared norms of a
    per-worker and of the averaged gradient with their batch sizes (McCandlish et al.'s
    noise-scale estimator). ``reached_iteration`` is set when the convergence rule fired.

    A probe is one segment of a lineage (``parent`` … this probe): ``iterations`` and ``seconds``
    are this segment's own (its cost), while ``curve`` and ``reached_*`` count from the lineage's
    start, so a fork's time to the target includes the warm-up it was forked from.
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
    key: str | None = None  # the request's key (one segment of one lineage)
    parent: str | None = None
    start_iteration: int = 0
    start_seconds: float = 0.0
    calls: int = 0  # backend calls that ran chunks of steps (Ray: one per evaluation interval)
    call_seconds: float = 0.0  # their wall seconds outside the steps, not in ``seconds``
    launch_seconds: float = 0.0  # wall seconds to start the run (Ray: its actors), not in ``wall_seconds``

    @property
    def seconds_per_iteration(self) -> float:
        return self.seconds / max(self.iterations, 1)

    @property
    def steady_seconds_per_iteration(self) -> float:
        """Mean s/it of the settled steps (predictor.step_times): the rate after the device's and
        the strategy's own start-up (DASO's blocking warm-up, DBS's first, unbalanced epoch)."""
        return steady_mean(self.step_seconds) if self.step_seconds else self.seconds_per_iteration

    @property
    def probe_key(self) -> str:
        return self.key or self.config.key()

    @property
    def end_iteration(self) -> int:
        return self.start_iteration + self.iterations

    @property
    def end_seconds(self) -> float:
        return self.start_seconds + self.seconds

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
    """Predicted TTC with an 80% interval, as a product of its two factors (DESIGN.md §1).

    ``evidence_iterations`` is how far the lineage behind the estimate was measured (warm-up and
    probes): ``iterations / evidence_iterations`` is how far the estimate extrapolates.
    ``evidence_seconds`` is how long that lineage ran, where it is the run predicted and did not
    reach the target: a lower bound of the TTC that needs no extrapolation (predictor.no_number).

    A plan's prediction is a *forecast* (predictor.forecast): ``ttc_low``/``ttc_seconds``/
    ``ttc_high`` are the p10/p50/p90 of the TTC on a fresh seed, and ``sources`` the shares of
    the interval's width that come from the seed, the curve's shape and the hardware (empty for
    the search's internal predictions, which rank configs and are not forecasts).
    """

    ttc_seconds: float
    ttc_low: float
    ttc_high: float
    seconds_per_iteration: float
    iterations: float
    evidence_iterations: float = math.nan
    evidence_seconds: float = math.nan
    sources: tuple[tuple[str, float], ...] = ()

    @property
    def extrapolation(self) -> float:
        """Predicted iterations over measured ones (1 when the target was reached in a probe)."""
        if not (self.evidence_iterations > 0):
            return math.inf
        return max(self.iterations / self.evidence_iterations, 1.0)

    def scaled(self, factor: float) -> Prediction:
        """``factor``× the iterations, hence the TTC and both ends of its interval."""
        return dataclasses.replace(
            self, ttc_seconds=self.ttc_seconds * factor, ttc_low=self.ttc_low * factor,
            ttc_high=self.ttc_high * factor, iterations=self.iterations * factor,
        )

    def after(self, elapsed: float) -> Prediction:
        """The TTC and both ends of its interval counted from ``elapsed`` seconds on."""
        return dataclasses.replace(self, ttc_seconds=self.ttc_seconds - elapsed,
                                   ttc_low=self.ttc_low - elapsed, ttc_high=self.ttc_high - elapsed)

    def to_dict(self) -> dict[str, Any]:
        """The JSON of DESIGN.md §7: ``ttc_p10``/``ttc_p50``/``ttc_p90`` beside their aliases
        ``ttc_low``/``ttc_seconds``/``ttc_high``, and ``sources`` (null when not a forecast)."""
        data = dataclasses.asdict(self)
        data |= {"ttc_p10": self.ttc_low, "ttc_p50": self.ttc_seconds, "ttc_p90": self.ttc_high,
                 "sources": dict(self.sources) or None}
        return json_safe(data)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Prediction:
        """Inverse of ``to_dict``: a missing bound (``None``) is unbounded."""
        return cls(
            ttc_seconds=_or(data.get("ttc_p50", data["ttc_seconds"]), math.inf),
            ttc_low=_or(data.get("ttc_p10", data["ttc_low"]), 0.0),
            ttc_high=_or(data.get("ttc_p90", data["ttc_high"]), math.inf),
            seconds_per_iteration=_or(data["seconds_per_iteration"], math.nan),
            iterations=_or(data["iterations"], math.inf),
            evidence_iterations=_or(data.get("evidence_iterations"), math.nan),
            evidence_seconds=_or(data.get("evidence_seconds"), math.nan),
            sources=tuple((data.get("sources") or {}).items()),
        )


CONFIDENCE_LEVELS = ("high", "medium", "low", "none")


@dataclass(frozen=True)
class Confidence:
    """How far the evidence supports the plan's prediction; ``none``: no number is given."""

    level: str
    reason: str

    def __post_init__(self) -> None:
        if self.level not in CONFIDENCE_LEVELS:
            raise ValueError(f"confidence level={self.level!r} is not one of {list(CONFIDENCE_LEVELS)}")

    @property
    def supported(self) -> bool:
        return self.level != "none"

    @property
    def confident(self) -> bool:
        """Measured, or a steady curve whose 80% interval spans at most ×3 (predictor.confidence)."""
        return self.level in ("high", "medium")


@dataclass(frozen=True)
class Phase:
    """A stretch of training with one config: the plan's warm-up, or one phase of ``ttc train``."""

    config: Config
    iterations: int

    def to_dict(self) -> dict[str, Any]:
        return {"config": self.config.to_dict(), "iterations": self.iterations}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Phase:
        return cls(Config.from_dict(data["config"]), int(data["iterations"]))


@dataclass
class Plan:
    """The answer of a study (DESIGN.md §7 *Plan*).

    ``warmup``: the plan's run first trains ``warmup.iterations`` with ``warmup.config`` (the
    shared warm-up its candidates were forked from), then switches to ``config``; its predicted
    TTC counts both. ``worth_tuning`` is False when the job is too short for tuning to pay: the
    plan is then the best measured config. With ``confidence.level == "none"`` the evidence cannot
    support a number, and the prediction's TTC fields are written as null.
    """

    study_id: str
    config: Config
    predicted: Prediction
    baseline_config: Config
    baseline_predicted_ttc_seconds: float
    probe_count: int
    probe_cluster_seconds: float
    evidence: list[str] = field(default_factory=list)
    warmup: Phase | None = None
    worth_tuning: bool = True
    worth_tuning_reason: str = ""
    confidence: Confidence = field(default_factory=lambda: Confidence("low", "not assessed"))
    ranking: list[dict[str, Any]] = field(default_factory=list)  # predictor.ranking rows, best first
    target: dict[str, Any] | None = None  # predictor.forecast: where the target sits on the curve
    priors: int = 0  # finished runs of the same job that the forecast read (predictor.curve_priors)

    def to_dict(self) -> dict[str, Any]:
        predicted = self.predicted.to_dict()
        return {
            "study_id": self.study_id,
            "config": self.config.to_dict(),
            "warmup": self.warmup.to_dict() if self.warmup else None,
            "predicted": predicted,
            "baseline": {
                "config": self.baseline_config.to_dict(),
                "predicted_ttc_seconds": json_safe(self.baseline_predicted_ttc_seconds),
            },
            "probes": {"count": self.probe_count, "cluster_seconds": self.probe_cluster_seconds},
            "worth_tuning": self.worth_tuning,
            "worth_tuning_reason": self.worth_tuning_reason,
            "confidence": {"level": self.confidence.level, "reason": self.confidence.reason},
            "evidence": self.evidence,
            "ranking": self.ranking,
            "target": json_safe(self.target),
            "priors": self.priors,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        confidence = data.get("confidence") or {"level": "low", "reason": "not recorded"}
        return cls(
            study_id=data["study_id"],
            config=Config.from_dict(data["config"]),
            predicted=Prediction.from_dict(data["predicted"]),
            baseline_config=Config.from_dict(data["baseline"]["config"]),
            baseline_predicted_ttc_seconds=_or(data["baseline"]["predicted_ttc_seconds"], math.inf),
            probe_count=data["probes"]["count"],
            probe_cluster_seconds=data["probes"]["cluster_seconds"],
            evidence=list(data.get("evidence", [])),
            warmup=Phase.from_dict(data["warmup"]) if data.get("warmup") else None,
            worth_tuning=bool(data.get("worth_tuning", True)),
            worth_tuning_reason=str(data.get("worth_tuning_reason", "")),
            confidence=Confidence(confidence["level"], confidence["reason"]),
            ranking=list(data.get("ranking", [])),
            target=data.get("target"),
            priors=int(data.get("priors", 0)),
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
    node_options: tuple[int, ...] = ()  # node counts allowed; empty: 1, 2, 4, … and all

    @property
    def devices(self) -> int:
        return self.nodes * self.devices_per_node

    def node_counts(self) -> list[int]:
        """The node counts the search may use: the allowed ones within the cluster, else 1, 2, 4, …
        up to and including the cluster's node count."""
        if self.node_options:
            return [n for n in self.node_options if 1 <= n <= self.nodes] or [self.nodes]
        counts, n = [], 1
        while n < self.nodes:
            counts.append(n)
            n *= 2
        return counts + [self.nodes]

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
    """Limits of a study (DESIGN.md §7): per-probe length in cluster seconds and iterations, probe
    count, wall deadline, optionally the cluster-seconds all probes together may spend, and
    ``max_overhead``: the share of the plan's predicted TTC the whole study may cost."""

    probe_seconds: float = 20.0
    max_probes: int = 48
    deadline_seconds: float = 3600.0
    probe_max_iterations: int = 100
    max_cluster_seconds: float | None = None
    max_overhead: float = 0.1
