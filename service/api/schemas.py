"""Response bodies, one per use (the request body of POST /v1/studies is ``worker.spec.Spec``).

The plan, trial and predict bodies are typed field by field (DESIGN.md §7 *Config*, *Plan*), so
the OpenAPI document says what a client gets and a fuzzer can check every response against it.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from service.db.models import ACTIVE_STATES, TERMINAL_STATES
from worker.spec import ConfigSpec, Spec

StudyState = Literal[ACTIVE_STATES + TERMINAL_STATES]  # type: ignore[valid-type]
ProbeState = Literal["running", "complete", "diverged", "failed", "cancelled"]


def _utc(moment: datetime) -> datetime:
    """SQLite returns the stored UTC times without their zone; RFC 3339 (and clients) need one."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


UtcDatetime = Annotated[datetime, AfterValidator(_utc)]


class ErrorMessage(BaseModel):
    """401, 404, 409 and 413 bodies."""

    detail: str


class StudyCreated(BaseModel):
    id: str
    state: StudyState
    links: dict[str, str]


class StudySummary(BaseModel):
    id: str
    state: StudyState
    workload: str | None
    error: str | None = None
    created_at: UtcDatetime
    updated_at: UtcDatetime


class StudyList(BaseModel):
    data: list[StudySummary]
    count: int = Field(description="studies matching the filter, all pages together")


class ForecastSources(BaseModel):
    """Shares of the forecast's spread (log-variance) by cause; they add up to 1."""

    seed: float
    shape: float
    hardware: float


class PredictedTTC(BaseModel):
    """A TTC forecast on a fresh seed; ``None`` stands for an unbounded value (strict JSON has no
    Infinity). ``ttc_seconds``/``ttc_low``/``ttc_high`` are aliases of p50/p10/p90."""

    ttc_seconds: float | None
    ttc_low: float | None
    ttc_high: float | None
    ttc_p10: float | None = None
    ttc_p50: float | None = None
    ttc_p90: float | None = Field(None, description="null only where the loss levelled off above the target")
    sources: ForecastSources | None = None
    seconds_per_iteration: float | None
    iterations: float | None
    evidence_iterations: float | None = None  # measured on the lineage: iterations / this = extrapolation
    evidence_seconds: float | None = None  # the run measured this long without reaching: TTC is above it


class SuggestedTarget(BaseModel):
    value: float
    ttc_p10: float | None
    ttc_p50: float | None
    ttc_p90: float | None


class TargetPosition(BaseModel):
    """Where the target sits on the plan's curve: after the knee, or in the flat region (its slope
    small against the loss's noise), with the lowest target after the knee and its forecast."""

    value: float
    after_knee: bool
    seed_spread: float | None = Field(None, description="log-sd of iterations-to-target across seeds")
    reason: str
    suggested: SuggestedTarget | None = None


class Baseline(BaseModel):
    config: ConfigSpec
    predicted_ttc_seconds: float | None


class ProbeSpend(BaseModel):
    count: int
    cluster_seconds: float


class PlanPublic(BaseModel):
    """The Plan JSON of DESIGN.md §7; fields added to the plan later pass through unchanged."""

    model_config = ConfigDict(extra="allow")

    study_id: str
    config: ConfigSpec
    predicted: PredictedTTC
    baseline: Baseline
    probes: ProbeSpend
    evidence: list[str] = Field(default_factory=list, description="probe keys the plan rests on")
    target: TargetPosition | None = None
    priors: int = Field(0, description="finished runs of the same job (workload and target metric) "
                                       "that the forecast read as priors")


class StudyPublic(StudySummary):
    spec: dict[str, Any]
    plan: PlanPublic | None
    cancel_requested: bool
    probes: dict[str, int] = Field(description="probe count by state")


class TrialPublic(BaseModel):
    number: int
    key: str
    state: ProbeState
    attempts: int
    config: ConfigSpec
    predicted_ttc: float | None
    final_loss: float | None
    iterations: int | None
    seconds: float | None
    error: str | None
    created_at: UtcDatetime
    finished_at: UtcDatetime | None


class TrialList(BaseModel):
    data: list[TrialPublic]
    count: int


class PredictRequest(BaseModel):
    """One short probe per config under the spec's probe budget, then the TTC model's prediction."""

    model_config = ConfigDict(extra="forbid")

    spec: Spec
    configs: list[ConfigSpec] = Field(min_length=1, max_length=16)


class ProbeSummary(BaseModel):
    iterations: int
    seconds: float
    final_loss: float | None
    diverged: bool


class ConfidenceOut(BaseModel):
    """How far the evidence supports the prediction; at ``none`` its TTC fields are null."""

    level: Literal["none", "low", "medium", "high"]
    reason: str


class PredictResult(BaseModel):
    config: ConfigSpec
    predicted: PredictedTTC | None
    confidence: ConfidenceOut
    probe: ProbeSummary


class Health(BaseModel):
    status: Literal["ok", "unhealthy"]
    database: str
    ray: str
    running_studies: int


class RunResult(BaseModel):
    """A measured run (DESIGN.md §7 *Run result*) as ``ttc run`` reports it, with its prediction."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)  # as the spec's

    config: ConfigSpec
    reached: bool
    ttc_seconds: float | None = Field(None, ge=0)
    iterations: int = Field(ge=0, le=10**12)
    final_loss: float | None = None
    seconds_per_iteration: float | None = Field(None, ge=0)
    wall_seconds: float | None = Field(None, ge=0)
    label: str = Field("config", pattern=r"^[A-Za-z0-9 _.-]{1,64}$")
    predicted_ttc_seconds: float | None = Field(None, ge=0)
    error: str | None = Field(None, max_length=4000, pattern=r"^[^\x00]*$")


class RunCreate(BaseModel):
    """POST /v1/runs: record a run measured elsewhere; ``study_id`` links it to its plan's study."""

    model_config = ConfigDict(extra="forbid", strict=True)

    study_id: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]{1,64}$")  # as a study id in a path
    result: RunResult


class RunRecorded(BaseModel):
    id: int
    study_id: str | None = Field(description="None when the study is not on this service (unlinked)")


TrainingState = Literal["pending", "running", "done", "unreachable", "failed", "cancelled"]


class TrainingCreate(BaseModel):
    """POST /v1/studies/{id}/train: how long the run may go, and its re-planning budget. Strict, as
    the spec is: ``true`` is not an iteration count, nor ``"5"``."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, strict=True)

    max_iterations: int = Field(100_000, ge=1, le=10**9,
                                description="the run stops here when the target is not reached")
    max_overhead: float | None = Field(
        None, gt=0, le=10, description="re-planning (with the study) may cost at most this share of the "
                                       "run's cluster-seconds; default: the spec's budget.max_overhead")


class TrainingPhasePublic(BaseModel):
    """One stretch of the run with one config (DESIGN.md §7 *Training result*)."""

    config: ConfigSpec
    iterations: int
    cluster_seconds: float
    loss_in: float | None
    loss_out: float | None
    reason: str


class EtaPublic(BaseModel):
    """``ttc train``'s forecast at one checkpoint: seconds so far and the p10/p50/p90 of those left."""

    iteration: int
    seconds: float | None
    remaining_p10: float | None
    remaining_p50: float | None
    remaining_p90: float | None = Field(description="null only where the loss levelled off above the target")


class TrainingResultPublic(BaseModel):
    """The Training result JSON of DESIGN.md §7; while the run goes on, its phases so far."""

    reached: bool
    ttc_seconds: float | None = Field(description="every cluster-second from the first probe to the target")
    tuning_cluster_seconds: float
    iterations: int
    final_loss: float | None
    phases: list[TrainingPhasePublic]
    eta: list[EtaPublic] = Field(default_factory=list, description="time left, forecast at each checkpoint")


class TrainingPublic(BaseModel):
    study_id: str
    state: TrainingState
    error: str | None
    max_iterations: int
    max_overhead: float | None
    result: TrainingResultPublic | None = Field(description="None until the run's first segment")
    timeline: dict[str, Any] | None = Field(
        description="loss against the run's cluster-seconds: points, phases, re-plan points")
    segments: int = Field(description="run segments and re-plan forks committed so far")
    created_at: UtcDatetime
    updated_at: UtcDatetime
