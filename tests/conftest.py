"""Shared fixtures: one local Ray per test session, a throwaway SQLite database per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def ray_local() -> Iterator[None]:
    """A small local Ray shared by every test that launches probes (starting one costs ~10 s)."""
    import ray

    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture
def database_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'ttc.db'}"
    monkeypatch.setenv("TTC_DATABASE_URL", url)
    return url
