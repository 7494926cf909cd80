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
* **after the study, where the plan's target is after the knee**, samples counted by their SGD step
  (lr / (1 − μ), predictor.step_clock): a rate one run doubled and the other did not moves the
  curve that much further per sample (public digits_mlp: the run that doubled its rate at 1,050
  crossed at 1,872, the one that kept it at 2,684). The run takes the prior's switches still ahead
  of it, not those the prior made at a point it has passed. In the flat region the noise, which a
  larger step raises, sets when the target is reached, and samples are read (public regression:
  a rate doubled on one seed only, no faster).

The time left is the clock the prior still had to go past this run's clock now, at the run's
current batch and measured speed. The other clock's reading bounds the interval (the run may yet
take the prior's switches, or have left its path), widened by the seed's spread: the two runs'
deviations, each a random walk over the run (√2 × SEED_FLOOR, relative sd √(T/R) for a run of T
seconds with R left), and the hardware's.

Measured with another seed's run as the prior (benchmarks/eta_replay.py --prior;
docs/results/forecasts.md): 8% off over five fresh public seed pairs, a few percent where the two
runs took one path (2.5% on seeds 14–15), as far off as their paths are apart where ``ttc train``
moved the batch on one seed only, worst in the flat region (a held-out job, 58%).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from predictor.forecast import SEED_FLOOR, Curve
from predictor.lineages import merge
from predictor.se_model import Z80
from predictor.step_clock import step_size
from predictor.types import Config, ProbeResult

STEPS_PARTED = 0.01  # the two clocks this far apart: the run's steps have left the prior's path
Phase = tuple[int, int, float]  # a run's phase: its first iteration, global batch and SGD step


@dataclass(frozen=True)
class FinishedRun:
    """A finished ``ttc train`` run of the same job: its curve (iteration, loss), and where known,
    its path (each phase's first iteration, global batch and step size), the target it ran to and
    the iteration at which it reached it."""

    curve: Curve
    phases: tuple[Phase, ...] = ()
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
        if self.phases and self.target is not None and math.isclose(self.target, target, rel_tol=1e-9):
            return self.reached
        return None


def _pace(phase: Phase, stepped: bool) -> float:
    """What one iteration of ``phase`` counts on a clock of samples (``stepped``: times the step)."""
    return phase[1] * (phase[2] if stepped else 1.0)


def _spans(phases: Sequence[Phase]) -> list[tuple[Phase, float]]:
    """Each phase with the iteration where the next one starts (the last: never)."""
    return list(zip(phases, [*(float(p[0]) for p in phases[1:]), math.inf], strict=True))


def progress_at(phases: Sequence[Phase], iteration: float, stepped: bool = False) -> float:
    """Samples a run of ``phases`` had seen at ``iteration``; ``stepped``: each counted by its step."""
    seen = 0.0
    for phase, end in _spans(phases):
        if iteration <= phase[0]:
            break
        seen += _pace(phase, stepped) * (min(iteration, end) - phase[0])
    return seen


def phases_of(starts: Iterable[tuple[int, Config]]) -> tuple[Phase, ...]:
    """A run's phases from each stretch's first iteration and config: a stretch whose global batch
    and step are the previous one's continues its phase (a change of allocation alone moves neither
    clock)."""
    phases: list[Phase] = []
    for start, config in starts:
        phase = (start, config.global_batch, step_size(config))
        if not phases or phases[-1][1:] != phase[1:]:
            phases.append(phase)
    return tuple(phases)


def path_of(segments: Sequence[ProbeResult]) -> tuple[Phase, ...]:
    """A lineage's phases (first iteration, global batch, step size), for progress_at."""
    return phases_of((segment.start_iteration, segment.config) for segment in segments)


def steps_left(prior: Sequence[Phase], crossing: float, here: Sequence[Phase], iteration: float) -> float:
    """Iterations left on the step clock for a run of path ``here`` at ``iteration``, read along a
    prior of path ``prior`` that crossed at ``crossing``. The run is where the prior had travelled
    as far (samples × step); it goes on at its own pace up to the prior's next switch, and from
    there at the prior's: a switch still ahead (or where the run is now) it may yet take, one the
    prior made at a point the run has passed it did not."""
    travelled, pace = progress_at(here, iteration, stepped=True), _pace(here[-1], stepped=True)
    left = 0.0
    for phase, end in _spans(prior):
        start, stop = float(phase[0]), min(end, crossing)
        if stop <= start:
            break
        span = _pace(phase, stepped=True) * (stop - start)
        if travelled >= span:  # the run has passed this phase
            travelled -= span
        elif travelled > 0:  # the phase the run is in, at its own pace
            left += (span - travelled) / pace
            travelled = 0.0
        else:  # a phase ahead (or starting where the run is), at the prior's
            left += stop - start
    return left


def samples_left(prior: Sequence[Phase], crossing: float, here: Sequence[Phase], iteration: float) -> float:
    """Iterations left on the samples clock, at the run's current batch: the samples the prior still
    saw past where this run of path ``here`` is at ``iteration``."""
    return (progress_at(prior, crossing) - progress_at(here, iteration)) / here[-1][1]


def parted(prior: Sequence[Phase], crossing: float, segments: Sequence[ProbeResult]) -> bool:
    """The run's steps have left the prior's path: the two clocks disagree on what the run decided.
    A last segment that continues the config before it ran beside a re-plan's forks, and the fork
    that wins replaces it (public plateau: both seeds doubled the rate at 3,450, yet at 3,665 the
    run's last segment is still the old rate's), so the run is read as it stood before it."""
    if len(segments) > 1 and segments[-1].config.key() == segments[-2].config.key():
        segments = segments[:-1]
    here, at = path_of(segments), float(segments[-1].end_iteration)
    by_steps, by_samples = steps_left(prior, crossing, here, at), samples_left(prior, crossing, here, at)
    return not math.isclose(by_steps, by_samples, rel_tol=STEPS_PARTED)


def prior_path_eta(priors: Sequence[FinishedRun], segments: Sequence[ProbeResult], target: float,
                   speed: float, hardware_sd: float, warmup: bool,
                   after_knee: bool = False) -> tuple[float, float, float] | None:
    """p10/p50/p90 of the seconds left for the run of lineage ``segments`` (first segment first) at
    ``speed`` s/it, read along the finished runs of ``priors`` that reached ``target``; None when
    none did, or every one had crossed by this run's clock now (the run is behind them all: the
    clock says nothing of how far). ``after_knee``: the plan's target is after the knee, where a
    larger step goes faster (in the flat region a doubled rate did not speed public regression)."""
    tip = segments[-1]
    iteration = float(tip.end_iteration)
    here = path_of(segments)
    readings: list[tuple[float, ...]] = []  # seconds left by (iterations, samples, steps)
    stepped = False
    for prior in priors:
        if (crossing := prior.crossing(target)) is None:
            continue
        by_iterations = (crossing - iteration) * speed
        by_samples = samples_left(prior.phases, crossing, here, iteration) * speed
        by_steps = steps_left(prior.phases, crossing, here, iteration) * speed
        if min(by_iterations, by_samples) > 0:
            readings.append((by_iterations, by_samples, by_steps))
            stepped = stepped or parted(prior.phases, crossing, segments)
    if not readings:
        return None
    on_steps = not warmup and after_knee and stepped and all(r[2] > 0 for r in readings)
    clock = 2 if on_steps else 0 if warmup else 1  # the reading the p50 is read on
    p50 = statistics.median(r[clock] for r in readings)
    bounds = [value for r in readings for value in (r if on_steps else r[:2])]  # the other clocks bound it
    elapsed = tip.end_seconds
    seed_sd = math.sqrt(2.0) * SEED_FLOOR * math.sqrt((elapsed + p50) / p50)
    widen = math.exp(Z80 * math.hypot(seed_sd, hardware_sd))
    return min(p50, *bounds) / widen, p50, max(p50, *bounds) * widen
