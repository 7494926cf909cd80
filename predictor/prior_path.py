"""A finished run of the same job, read along its path: ``ttc train``'s ETA where the job ran before.

A team that re-runs a job has measured where its curve crossed the target once. Fitted as a curve
(predictor.curve_priors) the prior carries its shape; read for the time left, its crossing is
sharper than any shape: the seed moves a run's crossing by a few percent (benchmarks/eta_floor.py:
5% at mid-run with four runs of the same plan), a curve's extrapolation by tens. But two runs of one
job need not take one path: ``ttc train`` switches batch and rate where its forks say, and the seed
moves those decisions (public regression: batch 64 from iteration 400 on one seed, from 3,200 on
another). So the prior's crossing is read on a clock that counts what the run will do alike:

* **in the warm-up**, iterations. Nothing is decided yet; the run goes through the same study as
  the prior did and takes its later switches, at their iterations.
* **after the study**, samples (the global batch per iteration). The run's batch is now the plan's,
  and below the critical batch a loss is reached after about the same number of samples at any
  batch (McCandlish et al. 2018).

The time left is the clock the prior still had to go past this run's clock now, at the run's
current batch and measured speed. The other clock's reading bounds the interval (the run may yet
take the prior's switches, or have left its path), widened by the seed's spread: the two runs'
deviations, each a random walk over the run (√2 × SEED_FLOOR, relative sd √(T/R) for a run of T
seconds with R left), and the hardware's.

Measured with another seed's run as the prior (benchmarks/eta_replay.py --prior;
docs/results/forecasts.md): a few percent off where the two runs took one path (2.5% on fresh
seeds 14–15), as far off as their paths are apart where ``ttc train`` moved the rate or the batch
on one seed only; 15% over every set off the design, against 26% for the prior read as an ensemble
member. Counting the step size where the rates had parted was not kept: in the flat region a
doubled rate did not speed the run (public regression).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from predictor.forecast import SEED_FLOOR, Curve
from predictor.lineages import merge
from predictor.se_model import Z80
from predictor.types import ProbeResult


@dataclass(frozen=True)
class FinishedRun:
    """A finished ``ttc train`` run of the same job: its curve (iteration, loss), and where known,
    its path (the first iteration and global batch of each phase), the target it ran to and the
    iteration at which it reached it."""

    curve: Curve
    batches: tuple[tuple[int, int], ...] = ()
    target: float | None = None
    reached: int | None = None

    @classmethod
    def of_lineage(cls, segments: Sequence[ProbeResult], target: float, reached: int | None) -> FinishedRun:
        """A run's lineage (first segment first) as a later run of the job reads it: its curve past
        iteration 0, its path, and ``reached``, the iteration at which it reached ``target``."""
        curve = [(float(k), float(loss)) for k, _, loss in merge(list(segments)).curve
                 if k > 0 and 0 < loss < math.inf]
        return cls(curve, path_of(segments), target, reached)

    def crossing(self, target: float) -> int | None:
        """The iteration at which it reached ``target``; None unless it ran to that target, reached
        it and its path is known."""
        if self.batches and self.target is not None and math.isclose(self.target, target, rel_tol=1e-9):
            return self.reached
        return None


def samples_at(batches: Sequence[tuple[int, int]], iteration: float) -> float:
    """Samples a run of phases ``batches`` (first iteration, global batch) had seen at ``iteration``."""
    seen = 0.0
    for (start, batch), (end, _) in zip(batches, [*batches[1:], (math.inf, 0)], strict=True):
        if iteration <= start:
            break
        seen += batch * (min(iteration, end) - start)
    return seen


def path_of(segments: Sequence[ProbeResult]) -> tuple[tuple[int, int], ...]:
    """A lineage's phases as (first iteration, global batch), for samples_at."""
    phases: list[tuple[int, int]] = []
    for segment in segments:
        if not phases or phases[-1][1] != segment.config.global_batch:
            phases.append((segment.start_iteration, segment.config.global_batch))
    return tuple(phases)


def prior_path_eta(priors: Sequence[FinishedRun], segments: Sequence[ProbeResult], target: float,
                   speed: float, hardware_sd: float, warmup: bool) -> tuple[float, float, float] | None:
    """p10/p50/p90 of the seconds left for the run of lineage ``segments`` (first segment first) at
    ``speed`` s/it, read along the finished runs of ``priors`` that reached ``target``; None when
    none did, or every one had crossed by this run's clock now (the run is behind them all: the
    clock says nothing of how far)."""
    tip = segments[-1]
    iteration, batch = float(tip.end_iteration), tip.config.global_batch
    here = path_of(segments)
    readings: list[tuple[float, float]] = []  # (iterations clock, samples clock), seconds left
    for prior in priors:
        if (crossing := prior.crossing(target)) is None:
            continue
        by_iterations = (crossing - iteration) * speed
        by_samples = (samples_at(prior.batches, crossing) - samples_at(here, iteration)) / batch * speed
        if min(by_iterations, by_samples) > 0:
            readings.append((by_iterations, by_samples))
    if not readings:
        return None
    p50 = statistics.median(r[0] if warmup else r[1] for r in readings)
    elapsed = tip.end_seconds
    seed_sd = math.sqrt(2.0) * SEED_FLOOR * math.sqrt((elapsed + p50) / p50)
    widen = math.exp(Z80 * math.hypot(seed_sd, hardware_sd))
    low = min(p50, *(min(r) for r in readings)) / widen
    high = max(p50, *(max(r) for r in readings)) * widen
    return low, p50, high
