"""The optimizer's own clock for a lineage whose step size changed: a learning curve continues
across a switch of rate in the distance its steps travelled, not in their count.

``ttc train`` moves a run's rate (9 of 14 runs on the long scenarios): the curve bends at the
switch where no family bends. Read in iterations, a doubled rate's faster fall is what the
families fit and extrapolate, and the run later slows back: on plateau (seed 4, public; lr 0.01
→ 0.02 at iteration 3,450) the ETA came out ~280 iterations early from 200 iterations after the
switch to the end, at the same offset on all four calibration seeds. Right after a switch the
reverse: the curve in iterations still shows the old rate, and digits_mlp's ETA 200 iterations
after its switch (lr 0.003 → 0.006 at 1,062) was 1.5× late. On this clock each iteration counts
by its SGD step size, lr / (1 − μ) (heavy-ball momentum's steady-state step), against the run's
current one, so the switch leaves no kink for the families to follow and the iterations ahead run
at one unit each.
An asynchronous config's implicit momentum (Omnivore) is not counted: a switch of g keeps its clock.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from predictor.types import Config, ProbeResult


def step_size(config: Config) -> float:
    """SGD's steady-state step with heavy-ball momentum: lr / (1 − μ)."""
    return config.lr / (1.0 - config.momentum)


def step_clock(segments: Sequence[ProbeResult]) -> tuple[np.ndarray, np.ndarray] | None:
    """Knots (iteration, clock) of the lineage ``segments`` (first segment first): the clock counts
    each iteration by its step size against the last segment's, so past the last knot both advance
    alike. None when every segment steps alike (the clock is the iteration count)."""
    current = step_size(segments[-1].config)
    rates = [step_size(s.config) / current for s in segments]
    if all(abs(rate - 1.0) < 1e-12 for rate in rates):
        return None
    start = float(segments[0].start_iteration)
    iterations, clock = [0.0, start], [0.0, start * rates[0]]
    for segment, rate in zip(segments, rates, strict=True):
        end = float(segment.start_iteration + segment.iterations)
        clock.append(clock[-1] + rate * (end - iterations[-1]))
        iterations.append(end)
    return np.array(iterations), np.array(clock)


def on_clock(knots: tuple[np.ndarray, np.ndarray], k: np.ndarray | float) -> np.ndarray:
    """Iterations ``k`` on the clock of ``knots`` (one unit per iteration past the last knot)."""
    iterations, clock = knots
    k = np.asarray(k, dtype=float)
    return np.interp(k, iterations, clock) + np.maximum(k - iterations[-1], 0.0)
