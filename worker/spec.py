"""The job spec (DESIGN.md §7 *Spec*): pydantic models validated at the edges (CLI, REST).

Every field has a default that covers the whole search space, so the smallest valid spec names
only a workload. Error messages name the field path and the offending value.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from predictor.types import STRATEGIES, Budget, SearchSpace
from worker.workloads.registry import resolve_factory

MAX_NODES = 1024
MAX_DEVICES_PER_NODE = 64


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class WorkloadSpec(_Strict):
    name: str | None = None
    factory: str | None = None

    @model_validator(mode="after")
    def _known(self) -> WorkloadSpec:
        if (self.name is None) == (self.factory is None):
            raise ValueError("give exactly one of 'name' (a built-in) or 'factory' (module:function)")
        resolve_factory(self.name, self.factory)
        return self


class TargetSpec(_Strict):
    metric: Literal["train_loss", "eval_loss"] = "train_loss"
    value: float | None = Field(None, gt=0, description="None: the workload's documented default")
    eval_every: int = Field(10, ge=1, le=10_000, description="iterations between evaluations")


class NetworkSpec(_Strict):
    intra_gbps: float = Field(100.0, gt=0)
    inter_gbps: float = Field(10.0, gt=0)
    latency_us: float = Field(10.0, ge=0, description="inter-node latency")
    intra_latency_us: float = Field(2.0, ge=0)


class DeviceSpec(_Strict):
    name: Literal["cpu", "v100", "a100", "h100"] = "v100"


class DisturbanceSpec(_Strict):
    probability: float = Field(0.1, ge=0, le=1, description="chance per device per step to slow down")
    slowdown: float = Field(2.0, ge=1)
    duration_steps: int = Field(50, ge=1)


class ClusterSpec(_Strict):
    backend: Literal["simulated", "ray"] = "simulated"
    nodes: int = Field(1, ge=1, le=MAX_NODES)
    devices_per_node: int = Field(1, ge=1, le=MAX_DEVICES_PER_NODE)
    device: DeviceSpec = DeviceSpec()
    network: NetworkSpec = NetworkSpec()
    node_speed: list[float] | None = None
    disturbance: DisturbanceSpec | None = None
    jitter: float = Field(0.02, ge=0, le=1, description="std of log step-time noise per device")

    @model_validator(mode="after")
    def _speeds(self) -> ClusterSpec:
        if self.node_speed is not None:
            if len(self.node_speed) != self.nodes:
                raise ValueError(
                    f"node_speed has {len(self.node_speed)} entries but nodes={self.nodes}"
                )
            bad = [s for s in self.node_speed if not s > 0]
            if bad:
                raise ValueError(f"node_speed entries must be > 0, got {bad}")
        return self

    def speed_of_node(self, node: int) -> float:
        return 1.0 if self.node_speed is None else self.node_speed[node]


class SearchSpec(_Strict):
    strategies: list[str] = Field(default_factory=lambda: list(STRATEGIES))
    batch_sizes: list[int] = Field(default_factory=lambda: [16, 32, 64])
    learning_rates: list[float] = Field(default_factory=lambda: [0.01, 0.03, 0.1, 0.3])
    momenta: list[float] = Field(default_factory=lambda: [0.0, 0.3, 0.6, 0.9])
    groups: list[int] = Field(default_factory=list, description="empty: powers of two")

    @field_validator("strategies")
    @classmethod
    def _strategies(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in STRATEGIES]
        if unknown or not value:
            raise ValueError(f"unknown strategies {unknown}; choose from {list(STRATEGIES)}")
        return value

    @field_validator("batch_sizes", "groups")
    @classmethod
    def _positive_ints(cls, value: list[int]) -> list[int]:
        if any(v < 1 or v > 65536 for v in value):
            raise ValueError(f"entries must be between 1 and 65536, got {value}")
        return value

    @field_validator("learning_rates")
    @classmethod
    def _learning_rates(cls, value: list[float]) -> list[float]:
        if not value or any(not 0 < v <= 100 for v in value):
            raise ValueError(f"learning rates must be in (0, 100], got {value}")
        return value

    @field_validator("momenta")
    @classmethod
    def _momenta(cls, value: list[float]) -> list[float]:
        if not value or any(not 0 <= v < 1 for v in value):
            raise ValueError(f"momenta must be in [0, 1), got {value}")
        return value


class BudgetSpec(_Strict):
    probe_seconds: float = Field(20.0, gt=0, description="cluster seconds per probe")
    max_probes: int = Field(48, ge=1, le=1000)
    deadline_seconds: float = Field(3600.0, gt=0, description="wall-clock limit of the study")
    probe_max_iterations: int = Field(2000, ge=10, le=1_000_000)


class Spec(_Strict):
    workload: WorkloadSpec
    target: TargetSpec = TargetSpec()
    cluster: ClusterSpec = ClusterSpec()
    search: SearchSpec = SearchSpec()
    budget: BudgetSpec = BudgetSpec()
    seed: int = 0

    def search_space(self) -> SearchSpace:
        return SearchSpace(
            nodes=self.cluster.nodes,
            devices_per_node=self.cluster.devices_per_node,
            strategies=tuple(self.search.strategies),
            batch_sizes=tuple(self.search.batch_sizes),
            learning_rates=tuple(self.search.learning_rates),
            momenta=tuple(self.search.momenta),
            groups=tuple(self.search.groups),
        )

    def budget_limits(self) -> Budget:
        return Budget(**self.budget.model_dump())


class SpecError(ValueError):
    """A spec that cannot be used; the message lists every bad field and value."""


def format_validation_error(exc: ValidationError) -> str:
    lines = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "(spec)"
        got = error.get("input")
        shown = json.dumps(got, default=str) if not isinstance(got, dict) else "{…}"
        message = error["msg"].removeprefix("Value error, ")
        lines.append(f"{where}: {message} (got {shown[:80]})")
    return "\n".join(lines)


def parse_spec(data: Any) -> Spec:
    try:
        return Spec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(format_validation_error(exc)) from None


def load_spec(path: str | Path) -> Spec:
    """Read a YAML or JSON spec file (JSON is YAML) and validate it."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise SpecError(f"cannot read spec {path}: {exc.strerror}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{path} is not valid YAML/JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{path}: a spec is a mapping with at least 'workload', got {type(data).__name__}")
    return parse_spec(data)
