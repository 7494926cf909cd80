"""Where a study's wall time went: Ray's start-up, the device actors' start, training, evaluations.

On a real cluster a study costs more wall time than its probes' training steps: a probe starts
its device actors (or installs its strategy on those an earlier probe started: ``probe_host``),
evaluates its model, and pays Ray's round trip per chunk of steps.
A platform team sizing a study on a large cluster needs that split before it points ttc there.
Probes are taken to run one after another (a Ray backend's probes hold the devices they use);
what the probes' own records do not account for is scheduling and the search.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from predictor.types import ProbeResult


@dataclass(frozen=True)
class StudyWall:
    """Wall seconds by where they went; ``total`` is their sum."""

    ray_start: float
    actor_start: float
    training_steps: float
    ray_calls: float
    evaluations: float
    other: float

    @property
    def total(self) -> float:
        return (self.ray_start + self.actor_start + self.training_steps + self.ray_calls
                + self.evaluations + self.other)

    @classmethod
    def of(cls, ray_start: float, study_wall: float, probes: Sequence[ProbeResult]) -> StudyWall:
        """``study_wall``: the study's seconds after Ray was up; ``probes``: its finished probes."""
        launch = sum(p.launch_seconds for p in probes)
        steps = sum(p.seconds for p in probes)
        calls = sum(p.call_seconds for p in probes)
        evaluations = sum(p.wall_seconds for p in probes) - steps - calls
        return cls(ray_start, launch, steps, calls, evaluations,
                   study_wall - launch - steps - calls - evaluations)

    def to_dict(self) -> dict[str, float]:
        return asdict(self) | {"total": self.total}

    def text(self) -> str:
        """One line: ``study 99 s of wall time: Ray start-up 3 s · device actors' start 40 s · …``."""
        parts = [("Ray start-up", self.ray_start), ("device actors' start", self.actor_start),
                 ("training", self.training_steps + self.ray_calls), ("evaluations", self.evaluations),
                 ("scheduling and search", self.other)]
        return f"study {self.total:.0f} s of wall time: " + " · ".join(
            f"{name} {seconds:.0f} s" for name, seconds in parts)
