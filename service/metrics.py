"""Prometheus metrics of one app: studies and probes by state, probe seconds, request latency.

Each app owns its registry (tests build many apps in one process); study and probe counts are
read from the database at scrape time, so every replica reports the same truth, including an
API worker of ``ttc serve`` whose studies run in the orchestrator process. The probe counter and
histogram count what this process's own scheduler ran (``create_app(run_studies=True)``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from predictor.types import ProbeResult


class _States(Collector):
    """A gauge by state, counted in the database when scraped."""

    def __init__(self, name: str, documentation: str, counts: Callable[[], dict[str, int]]) -> None:
        self.name, self.documentation, self.counts = name, documentation, counts

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily(self.name, self.documentation, labels=["state"])
        for state, count in sorted(self.counts().items()):
            family.add_metric([state], count)
        yield family


class Metrics:
    def __init__(self, study_counts: Callable[[], dict[str, int]],
                 probe_counts: Callable[[], dict[str, int]] | None = None) -> None:
        self.registry = CollectorRegistry()
        self.registry.register(_States("ttc_studies", "studies in the database by state", study_counts))
        if probe_counts is not None:
            self.registry.register(_States("ttc_probe_rows", "probes in the database by state", probe_counts))
        self.probes = Counter("ttc_probes", "probes finished by this process", ["state"],
                              registry=self.registry)
        self.probe_seconds = Histogram(
            "ttc_probe_wall_seconds", "wall seconds of a probe", registry=self.registry,
            buckets=(0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900),
        )
        self.request_seconds = Histogram(
            "ttc_http_request_seconds", "HTTP request latency", ["method", "route", "status"],
            registry=self.registry, buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5),
        )

    def observe_probe(self, result: ProbeResult) -> None:
        state = "failed" if result.error else ("diverged" if result.diverged else "complete")
        self.probes.labels(state).inc()
        self.probe_seconds.observe(result.wall_seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
