"""Response bodies, one per use (the request body of POST /v1/studies is ``worker.spec.Spec``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from worker.spec import Spec


class StudyCreated(BaseModel):
    id: str
    state: str
    links: dict[str, str]


class StudySummary(BaseModel):
    id: str
    state: str
    workload: str | None
    error: str | None = None
    created_at: datetime
    updated_at: datetime


class StudyList(BaseModel):
    data: list[StudySummary]
    count: int = Field(description="studies matching the filter, all pages together")


class StudyPublic(StudySummary):
    spec: dict[str, Any]
    plan: dict[str, Any] | None
    cancel_requested: bool
    probes: dict[str, int] = Field(description="probe count by state")


class TrialPublic(BaseModel):
    number: int
    key: str
    state: str
    attempts: int
    config: dict[str, Any]
    predicted_ttc: float | None
    final_loss: float | None
    iterations: int | None
    seconds: float | None
    error: str | None
    created_at: datetime
    finished_at: datetime | None


class TrialList(BaseModel):
    data: list[TrialPublic]
    count: int


class PredictRequest(BaseModel):
    """One short probe per config under the spec's probe budget, then the TTC model's prediction."""

    spec: Spec
    configs: list[dict[str, Any]] = Field(min_length=1, max_length=16)


class PredictResult(BaseModel):
    config: dict[str, Any]
    predicted: dict[str, float] | None
    probe: dict[str, Any]


class Health(BaseModel):
    status: str
    database: str
    ray: str
    running_studies: int
