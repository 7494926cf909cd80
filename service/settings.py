"""Service configuration from the environment (``TTC_*``), via pydantic-settings."""

from __future__ import annotations

from pathlib import Path

from pydantic_settings import BaseSettings, SettingsConfigDict


def default_database_url() -> str:
    return f"sqlite:///{Path.home() / '.ttc' / 'ttc.db'}"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="TTC_", extra="ignore")

    database_url: str = default_database_url()
    api_token: str | None = None
    ray_address: str | None = None
    max_concurrent_studies: int = 4
    workload_modules: str = ""  # read by the worker as TTC_WORKLOAD_MODULES


def get_settings() -> Settings:
    return Settings()
