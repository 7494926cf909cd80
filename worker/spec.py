"""The job spec (DESIGN.md §7 *Spec*): pydantic models validated at the edges (CLI, REST).

Every field has a default that covers the whole search space, so the smallest valid spec names
only a workload. Error messages name the field path and the offending value.
"""

from __future__ import annotations

import difflib
import json
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from predictor.trial_space import MAX_BATCH_SIZE, MOMENTUM_RANGE
from predictor.types import OPTIMIZERS, STRATEGIES, Budget, Config, SearchSpace
from worker.workloads.registry import BUILTIN, allowed_modules, resolve_factory

MAX_NODES = 1024
MAX_DEVICES_PER_NODE = 64
MAX_DEVICES = MAX_NODES * MAX_DEVICES_PER_NODE  # so at most this many compute groups
MAX_SEED = 2**32 - 1  # numpy's and torch's seeds are 32/64-bit: a larger one overflows inside a probe
MAX_LIST = 64  # entries of one search list: the grid is their product
FACTORY_PATTERN = r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$"
MAX_PROBES = 500  # budget.max_probes; a service may lower it (TTC_MAX_STUDY_PROBES), never raise it
# Smallest and largest learning rate: an lr below 1e-6 moves no weight a float32 can show; the
# trials' distribution (predictor.trial_space.LR_RANGE) holds these and the rates derived from them.
LEARNING_RATE_RANGE = (1e-6, 100.0)
MAX_MOMENTUM = MOMENTUM_RANGE[1]
# Smallest relative speed (of a node, or of a throttled one) and link bandwidth: 5e-324 Gb/s passes
# "> 0" and turns a step into infinite seconds. A thousandth of a device's speed, 1 Mb/s.
MIN_SPEED = 1e-3
MIN_GBPS = 1e-3


class _Strict(BaseModel):
    """Unknown fields are errors, and so are NaN and ±Infinity (``1e400`` parses as Infinity):
    every number reaches the simulator, the predictor and the database, none of which can use them.
    Strict types: ``seed: false`` or ``nodes: "4"`` is an error, as the JSON schema says, not a
    silent conversion."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    @field_validator("*", mode="after")
    @classmethod
    def _no_negative_zero(cls, value: Any) -> Any:
        """``-0.0`` passes ``ge=0`` and then flips a sign downstream (numpy's ``scale < 0``): it is 0."""
        if isinstance(value, float) and value == 0:
            return 0.0
        if isinstance(value, list):
            return [0.0 if isinstance(v, float) and v == 0 else v for v in value]
        return value


def _exactly_one_workload(schema: dict[str, Any]) -> None:
    """The JSON schema says what ``_known`` checks: exactly one of a built-in name or a factory.

    A missing key satisfies ``properties``, so each branch requires its own key and allows the
    other only as ``null`` (``{name: null, factory: null}`` and ``{}`` match neither branch).
    With no module allowlisted no factory is valid, and the schema says so; otherwise it gives the
    form, never the allowlist itself: the document is public, and the modules a service imports
    are nobody else's business (issue 36).
    """
    name = {"type": "string", "enum": sorted(BUILTIN)}
    factory: dict[str, Any] = {
        "type": "string", "pattern": FACTORY_PATTERN,
        "description": "package.module:function, the module allowlisted in TTC_WORKLOAD_MODULES",
    } if allowed_modules() else {"not": {}, "description": "no module is allowlisted (TTC_WORKLOAD_MODULES)"}
    schema["properties"] = {"name": {"anyOf": [name, {"type": "null"}], "title": "Name"},
                            "factory": {"anyOf": [factory, {"type": "null"}], "title": "Factory"}}
    schema["oneOf"] = [
        {"required": ["name"], "properties": {"name": name, "factory": {"type": "null"}}},
        {"required": ["factory"], "properties": {"factory": factory, "name": {"type": "null"}}},
    ]


class WorkloadSpec(_Strict):
    model_config = ConfigDict(json_schema_extra=_exactly_one_workload)

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
    value: float | None = Field(None, gt=0, le=1e6, description="None: the workload's documented default")
    eval_every: int = Field(10, ge=1, le=10_000, description="iterations between evaluations")


class NetworkSpec(_Strict):
    intra_gbps: float = Field(100.0, ge=MIN_GBPS, le=1e5)
    inter_gbps: float = Field(10.0, ge=MIN_GBPS, le=1e5)
    latency_us: float = Field(10.0, ge=0, le=1e6, description="inter-node latency")
    intra_latency_us: float = Field(2.0, ge=0, le=1e6)


class DeviceSpec(_Strict):
    name: Literal["cpu", "v100", "a100", "h100"] = "v100"


class DisturbanceSpec(_Strict):
    probability: float = Field(0.1, ge=0, le=1, description="chance per device per step to slow down")
    slowdown: float = Field(2.0, ge=1, le=1000)
    duration_steps: int = Field(50, ge=1, le=1_000_000)


class ThrottleSpec(_Strict):
    """One node slows down for good partway through a run (thermal throttling, a noisy neighbour):
    a heterogeneity that starts mid-run, so the allocation that was best at the start stops being
    best. Timed on the run's own simulated clock, so a probe forked late in a run sees it too."""

    node: int = Field(ge=0, lt=MAX_NODES, description="the node that slows (0-based)")
    speed: float = Field(ge=MIN_SPEED, le=1, description="its speed from then on, as a share of before")
    after_seconds: float = Field(ge=0, le=1e9, description="simulated seconds into a run")


class ClusterSpec(_Strict):
    backend: Literal["simulated", "ray"] = "simulated"
    nodes: int = Field(1, ge=1, le=MAX_NODES)
    devices_per_node: int = Field(1, ge=1, le=MAX_DEVICES_PER_NODE)
    device: DeviceSpec = DeviceSpec()
    network: NetworkSpec = NetworkSpec()
    node_speed: list[Annotated[float, Field(ge=MIN_SPEED, le=1000)]] | None = Field(
        None, max_length=MAX_NODES, description="relative speed of each node")
    disturbance: DisturbanceSpec | None = None
    throttle: ThrottleSpec | None = None
    jitter: float = Field(0.02, ge=0, le=1, description="std of log step-time noise per device")

    @model_validator(mode="after")
    def _speeds(self) -> ClusterSpec:
        if self.node_speed is not None and len(self.node_speed) != self.nodes:
            raise ValueError(f"node_speed has {len(self.node_speed)} entries but nodes={self.nodes}")
        if self.throttle is not None:
            if self.backend != "simulated":
                raise ValueError("cluster.throttle is a fault of the simulated cluster; a real "
                                 "cluster's slowdowns are measured, not declared: remove it")
            if self.throttle.node >= self.nodes:
                raise ValueError(f"cluster.throttle.node={self.throttle.node} but the cluster has "
                                 f"nodes 0..{self.nodes - 1}")
        return self

    def speed_of_node(self, node: int, at_seconds: float = 0.0) -> float:
        """The node's speed at ``at_seconds`` into a run (its node_speed, throttled from then on)."""
        speed = 1.0 if self.node_speed is None else self.node_speed[node]
        throttle = self.throttle
        if throttle is not None and node == throttle.node and at_seconds >= throttle.after_seconds:
            speed *= throttle.speed
        return speed


class SearchSpec(_Strict):
    strategies: list[str] = Field(default_factory=lambda: list(STRATEGIES), max_length=MAX_LIST)
    batch_sizes: list[int] = Field(default_factory=lambda: [16, 32, 64], max_length=MAX_LIST)
    learning_rates: list[float] = Field(default_factory=lambda: [0.01, 0.03, 0.1, 0.3], max_length=MAX_LIST)
    momenta: list[float] = Field(default_factory=lambda: [0.0, 0.3, 0.6, 0.9], max_length=MAX_LIST)
    groups: list[int] = Field(default_factory=list, max_length=MAX_LIST, description="empty: powers of two")
    nodes: list[int] = Field(default_factory=list, max_length=MAX_LIST,
                             description="node counts the plan may use; empty: 1, 2, 4, … and all")

    @field_validator("strategies")
    @classmethod
    def _strategies(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in STRATEGIES]
        if unknown or not value:
            raise ValueError(f"unknown strategies {unknown}; choose from {list(STRATEGIES)}")
        return value

    @field_validator("batch_sizes", "groups", "nodes")
    @classmethod
    def _positive_ints(cls, value: list[int]) -> list[int]:
        if any(v < 1 or v > MAX_BATCH_SIZE for v in value):
            raise ValueError(f"entries must be between 1 and {MAX_BATCH_SIZE}, got {value}")
        return value

    @field_validator("learning_rates")
    @classmethod
    def _learning_rates(cls, value: list[float]) -> list[float]:
        low, high = LEARNING_RATE_RANGE
        if not value or any(not low <= v <= high for v in value):
            raise ValueError(f"learning rates must be in [{low:g}, {high:g}], got {value}")
        return value

    @field_validator("momenta")
    @classmethod
    def _momenta(cls, value: list[float]) -> list[float]:
        if not value or any(not 0 <= v <= MAX_MOMENTUM for v in value):
            raise ValueError(f"momenta must be in [0, {MAX_MOMENTUM}], got {value}")
        return value


class BudgetSpec(_Strict):
    probe_seconds: float = Field(20.0, gt=0, le=86_400, description="cluster seconds per probe (at most)")
    max_probes: int = Field(48, ge=1, le=MAX_PROBES)
    deadline_seconds: float = Field(3600.0, ge=1, le=30 * 86_400, description="wall-clock limit of the study")
    probe_max_iterations: int = Field(100, ge=10, le=1_000_000, description="iterations per probe")
    max_overhead: float = Field(
        0.1, gt=0, le=10, description="the study may cost at most this share of the plan's predicted TTC")
    max_cluster_seconds: float | None = Field(
        None, gt=0, le=1e12, description="cluster-seconds all probes together may spend (none: no fixed cap)")


class Spec(_Strict):
    workload: WorkloadSpec
    target: TargetSpec = TargetSpec()
    cluster: ClusterSpec = ClusterSpec()
    search: SearchSpec = SearchSpec()
    budget: BudgetSpec = BudgetSpec()
    seed: int = Field(0, ge=0, le=MAX_SEED)

    @model_validator(mode="after")
    def _nodes_in_cluster(self) -> Spec:
        beyond = [n for n in self.search.nodes if n > self.cluster.nodes]
        if beyond:
            raise ValueError(f"search.nodes {beyond} exceed cluster.nodes={self.cluster.nodes}")
        return self

    @model_validator(mode="after")
    def _one_probe_affordable(self) -> Spec:
        """``budget.max_cluster_seconds`` pays for the study's first probe: its probe_seconds on the
        smallest node count, as a share of the cluster (predictor.search prices it so before any
        speed is measured). Below that no probe starts, and the study could only fail."""
        cap = self.budget.max_cluster_seconds
        if cap is None:
            return self
        nodes = self.search_space().node_counts()[0]
        first = self.budget.probe_seconds * nodes / self.cluster.nodes
        if cap < first:
            raise ValueError(
                f"budget.max_cluster_seconds={cap:g} cannot pay for the first probe, which may cost "
                f"{first:g} cluster-seconds (budget.probe_seconds={self.budget.probe_seconds:g} on {nodes} "
                f"of {self.cluster.nodes} nodes): raise it, or lower budget.probe_seconds")
        return self

    def search_space(self) -> SearchSpace:
        return SearchSpace(
            nodes=self.cluster.nodes,
            devices_per_node=self.cluster.devices_per_node,
            strategies=tuple(self.search.strategies),
            batch_sizes=tuple(self.search.batch_sizes),
            learning_rates=tuple(self.search.learning_rates),
            momenta=tuple(self.search.momenta),
            groups=tuple(self.search.groups),
            node_options=tuple(sorted(set(self.search.nodes))),
        )

    def budget_limits(self) -> Budget:
        return Budget(**self.budget.model_dump())


OptionValue = (
    bool | Annotated[int, Field(ge=-10**9, le=10**9)] | Annotated[float, Field(ge=-1e9, le=1e9)]
    | Annotated[str, Field(max_length=64)]
)


class ConfigSpec(_Strict):
    """A Config (DESIGN.md §7) as it crosses an edge (REST, ``--config``): every number bounded.

    Cross-field rules (groups divide the devices, only ``async_groups`` has groups) are
    ``predictor.Config``'s, applied here too, so a body that breaks them is refused at the edge.
    """

    strategy: Literal[STRATEGIES]  # type: ignore[valid-type]
    nodes: int = Field(ge=1, le=MAX_NODES)
    devices_per_node: int = Field(ge=1, le=MAX_DEVICES_PER_NODE)
    groups: int = Field(1, ge=1, le=MAX_DEVICES)
    batch_size: int = Field(32, ge=1, le=MAX_BATCH_SIZE, description="samples per device per step")
    lr: float = Field(0.1, gt=0, le=100)
    momentum: float = Field(0.9, ge=0, lt=1)
    optimizer: Literal[OPTIMIZERS] = "sgd"  # type: ignore[valid-type]
    options: dict[Annotated[str, Field(max_length=64)], OptionValue] = Field(
        default_factory=dict, max_length=16)

    @model_validator(mode="after")
    def _cross_field(self) -> ConfigSpec:
        self.to_config()  # its ValueError names the field: "groups=… does not divide …"
        return self

    def to_config(self) -> Config:
        return Config(**self.model_dump())


class SpecError(ValueError):
    """A spec that cannot be used; the message lists every bad field and value."""


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside a field's annotation (``X``, ``X | None``, ``list[X]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for arg in typing.get_args(annotation) if (m := _model_in(arg))), None)


def did_you_mean(error: dict[str, Any], root: Any, under: tuple[int | str, ...] = ()) -> str:
    """For an unknown-field error at ``under`` + a path inside ``root`` (a model, or an annotation
    holding one): the closest field the model there knows (a typo such as ``learning_rate`` for
    ``learning_rates``), as a hint to append to its message; "" for any other error or none close."""
    loc = tuple(error.get("loc", ()))
    path = loc[len(under):]
    if error.get("type") != "extra_forbidden" or loc[: len(under)] != under or not path:
        return ""
    current = _model_in(root)
    for part in path[:-1]:
        if isinstance(part, int) or current is None:
            continue  # a list's index: the same item model
        field = current.model_fields.get(part)
        current = _model_in(field.annotation) if field else None
    if current is None:
        return ""
    close = difflib.get_close_matches(str(path[-1]), list(current.model_fields), n=1, cutoff=0.75)
    return f"; did you mean {close[0]!r}?" if close else ""


def format_validation_error(exc: ValidationError) -> str:
    models = {m.__name__: m for m in (Spec, ConfigSpec)}
    lines = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "(spec)"
        got = error.get("input")
        shown = json.dumps(got, default=str) if not isinstance(got, dict) else "{…}"
        message = error["msg"].removeprefix("Value error, ") + did_you_mean(error, models.get(exc.title))
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
