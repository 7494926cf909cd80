"""Service configuration from the environment (``TTC_*``), via pydantic-settings."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from worker.spec import MAX_PROBES


def default_database_url() -> str:
    return f"sqlite:///{Path.home() / '.ttc' / 'ttc.db'}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TTC_", extra="ignore")

    database_url: str = Field(default_factory=default_database_url)
    api_token: str | None = Field(None, description="when set, mutating routes need 'Bearer <token>'")
    allowed_hosts: str = Field(
        "127.0.0.1,localhost,[::1]",
        description="comma list of the Host names the service answers to; '*.example.com' for a domain's "
                    "names, '*' for any (a browser on another site can then reach it by DNS rebinding)")
    body_timeout_seconds: float = Field(5.0, gt=0, le=600,
                                        description="a request body must arrive whole within this long")
    ray_address: str | None = None
    max_concurrent_studies: int = Field(4, ge=1, le=256)
    lease_seconds: float = Field(30.0, gt=0, description="a study's lease outlives a crash this long")
    poll_seconds: float = Field(2.0, gt=0, description="how often the scheduler looks for studies")
    event_stream_seconds: float = Field(3600.0, gt=0, description="an SSE connection ends after this long")
    max_event_streams_per_study: int = Field(
        20, ge=1, description="open event streams one study may have (per API process); more are a 429")
    max_event_streams: int = Field(
        200, ge=1, description="open event streams in all (per API process); more are a 429")
    database_retry_seconds: float = Field(
        120.0, gt=0, description="how long one database call of a study waits for the server; past it the "
                                 "study pauses, and resumes when the database is back (never fails for it)")
    max_spec_bytes: int = Field(64_000, ge=1024, description="largest accepted request body")
    max_cluster_devices: int = Field(4096, ge=1, description="nodes × devices_per_node a spec may ask for")
    max_study_probes: int = Field(MAX_PROBES, ge=1, le=MAX_PROBES,
                                  description="largest budget.max_probes a spec may ask for")
    max_probe_memory_mb: int = Field(1024, ge=16, description="estimated memory one probe may need")
    orchestrator_nice: int = Field(10, ge=0, le=19,
                                   description="CPU niceness of the study process and the Ray it starts")
    host: str = "127.0.0.1"
    port: int = 8000
    workload_modules: str = ""  # read by the worker as TTC_WORKLOAD_MODULES

    @field_validator("api_token")
    @classmethod
    def _empty_token_is_none(cls, value: str | None) -> str | None:
        """``TTC_API_TOKEN=`` (compose passes an unset variable as ``''``) means no token: a service
        whose token is empty could never be sent it, and would refuse every write."""
        return value or None

    @property
    def allowed_host_names(self) -> tuple[str, ...]:
        return tuple(name.strip().lower() for name in self.allowed_hosts.split(",") if name.strip())


def get_settings() -> Settings:
    return Settings()
