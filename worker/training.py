"""The training loop for probes and runs: step a training run, evaluate, apply the convergence rule."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from predictor.types import ProbeResult
from worker.convergence import ConvergenceRule, Evaluator
from worker.training_run import TrainingRun

log = logging.getLogger(__name__)
KEEP_STEP_SECONDS = 256
NOISE_SAMPLES = 4


def train(
    run: TrainingRun,
    evaluator: Evaluator,
    target: float,
    eval_every: int,
    max_seconds: float,
    max_iterations: int,
    on_eval: Callable[[int, float, float], None] | None = None,
) -> ProbeResult:
    """Train until the target is confirmed, the loss diverges, or a limit is hit.

    ``max_seconds`` is in cluster seconds (simulated on the simulated backend). Only what a
    real probe could measure is returned: step durations, the evaluation curve, gradient norms.
    """
    wall_start = time.perf_counter()
    rule = ConvergenceRule(target)
    curve: list[tuple[int, float, float]] = []
    step_seconds: list[float] = []
    noise: list[tuple[float, int, float, int]] = []
    while True:
        if run.iteration % eval_every == 0:
            loss = evaluator(run.model)
            curve.append((run.iteration, run.clock, loss))
            if on_eval is not None:
                on_eval(run.iteration, run.clock, loss)
            if rule.observe(run.iteration, run.clock, loss):
                break
            # Noise-scale samples at geometrically spaced evaluations: 1, 2, 4, 8 × eval_every.
            if len(noise) < NOISE_SAMPLES and run.iteration == eval_every * 2 ** len(noise):
                noise.append(run.gradient_noise_sample())
        if run.iteration >= max_iterations or run.clock >= max_seconds:
            break
        before = run.clock
        run.step()
        step_seconds.append(run.clock - before)
        del step_seconds[:-KEEP_STEP_SECONDS]
    result = ProbeResult(
        config=run.config,
        iterations=run.iteration,
        seconds=run.clock,
        curve=curve,
        step_seconds=step_seconds,
        reached_iteration=rule.reached[0] if rule.reached else None,
        reached_seconds=rule.reached[1] if rule.reached else None,
        diverged=rule.diverged,
        wall_seconds=time.perf_counter() - wall_start,
        calls=run.calls,
        call_seconds=run.call_seconds,
        launch_seconds=run.launch_seconds,
    )
    if noise:
        result.grad_sq_small = sum(n[0] for n in noise) / len(noise)
        result.batch_small = noise[0][1]
        result.grad_sq_big = sum(n[2] for n in noise) / len(noise)
        result.batch_big = noise[0][3]
    log.debug("trained %s: %d iterations, reached=%s", run.config.key(), result.iterations,
              result.reached_iteration)
    return result
