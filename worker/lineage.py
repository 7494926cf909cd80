"""Probes as segments of lineages: from scratch, continuing a probe, or forking from its state.

A warm-up is trained once and every candidate forks from its checkpoint (issue 11); a finalist
is lengthened by continuing its own probe, not by re-running it; ``ttc train`` continues the
study's best state. A segment ends in a *state*, the dict the next segment starts from:

    {"config": …, "checkpoint": run.checkpoint(), "model": run.model_state(),
     "base_iteration": …, "base_seconds": …}

plain tensors, numbers and strings (``torch.save``-able, loadable with ``weights_only=True``, never
the workload's data), so it travels through Ray's object store and into the database the same
way on both backends. Continuing restores the checkpoint exactly; forking starts another config
from the model (``TrainingRun.warm_start``). A segment's curve and time to the target count from
the start of its lineage; its ``iterations`` and ``seconds`` are its own cost.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from predictor.lineages import merge
from predictor.types import Config, Phase, ProbeRequest, ProbeResult
from worker.convergence import Evaluator
from worker.probe import on_backend, target_value, workload_for
from worker.spec import MAX_SEED, Spec
from worker.training import train
from worker.training_run import TrainingRun

if TYPE_CHECKING:
    from worker.ray_backend.group_pool import GroupPool

State = dict[str, Any]


def _origin(request: ProbeRequest, parent: State | None) -> tuple[int, float]:
    """The lineage iteration and seconds at the run's own zero."""
    if parent is None:
        return 0, 0.0
    if not request.forks:
        return int(parent["base_iteration"]), float(parent["base_seconds"])
    return int(parent["end_iteration"]), float(parent["end_seconds"])


def _start(run: TrainingRun, request: ProbeRequest, parent: State | None) -> None:
    """Prepare ``run`` from ``parent``: continue its checkpoint exactly, or fork from its model."""
    if parent is None:
        return
    if request.forks:
        run.warm_start(parent["model"])
    else:
        run.restore(parent["checkpoint"])


def run_segment(spec: Spec, request: ProbeRequest, parent: State | None,
                pool: GroupPool | None = None) -> tuple[ProbeResult, State]:
    """Train one segment on the spec's backend (on its seed plus the request's offset); its result
    and the state it ends in. ``pool``: the Ray backend's started groups it may run on."""
    if (parent is None) != (request.parent is None):
        raise ValueError(f"probe {request.key}: parent state {'missing' if parent is None else 'unexpected'}")
    if request.seed_offset:
        spec = spec.model_copy(update={"seed": (spec.seed + request.seed_offset) % (MAX_SEED + 1)})
    evaluator, target = Evaluator(workload_for(spec), spec.target.metric), target_value(spec)
    base_iteration, base_seconds = _origin(request, parent)

    def train_run(run: TrainingRun) -> tuple[ProbeResult, State]:
        _start(run, request, parent)
        own_iteration, own_clock = run.iteration, run.clock
        result = train(run, evaluator, target, spec.target.eval_every, own_clock + request.seconds,
                       own_iteration + request.max_iterations)
        result = _in_lineage(result, request, base_iteration, base_seconds, own_iteration, own_clock)
        state = {"config": request.config.to_dict(), "checkpoint": run.checkpoint(),
                 "model": run.model_state(), "base_iteration": base_iteration, "base_seconds": base_seconds,
                 "end_iteration": result.end_iteration, "end_seconds": result.end_seconds}
        return result, state

    limit = (int(parent["end_iteration"]) if parent else 0) + request.max_iterations
    return on_backend(spec, request.config, limit, train_run, origin_seconds=base_seconds, pool=pool)


def run_wire_segment(spec: dict[str, Any], request: dict[str, Any], parent: State | None,
                     pool: GroupPool | None = None) -> tuple[dict[str, Any], State]:
    """``run_segment`` as a Ray task or the probe host calls it: the spec and request as JSON,
    the result back as JSON; one torch thread (the process only drives the training)."""
    import torch

    torch.set_num_threads(1)
    result, state = run_segment(Spec.model_validate(spec), ProbeRequest.from_dict(request), parent, pool)
    return result.to_dict(), state


def _in_lineage(result: ProbeResult, request: ProbeRequest, base_iteration: int, base_seconds: float,
                own_iteration: int, own_clock: float) -> ProbeResult:
    """Re-express a trained segment: curve and reach in lineage terms, cost its own."""
    result.curve = [(base_iteration + k, base_seconds + t, loss) for k, t, loss in result.curve
                    if k >= own_iteration]
    if result.reached_iteration is not None and result.reached_seconds is not None:
        result.reached_iteration += base_iteration
        result.reached_seconds += base_seconds
    result.iterations -= own_iteration
    result.seconds -= own_clock
    result.key, result.parent = request.key, request.parent
    result.start_iteration, result.start_seconds = base_iteration + own_iteration, base_seconds + own_clock
    if not math.isfinite(result.seconds):
        raise ValueError(f"probe {request.key}: non-finite seconds")
    return result


def run_schedule(
    spec: Spec, config: Config, warmup: Phase | None, max_seconds: float, max_iterations: int,
) -> ProbeResult:
    """Train a plan as planned — its warm-up phase, then its config forked from the warm-up's end —
    until the target, a limit, or divergence. One result for the whole run (TTC from its start)."""
    parent: State | None = None
    parent_key: str | None = None
    segments = []
    if warmup is not None:
        first = ProbeRequest(warmup.config, max_seconds, warmup.iterations)
        result, parent = run_segment(spec, first, None)
        segments.append(result)
        parent_key = first.key
        if result.reached_iteration is not None or result.diverged:
            return merge(segments)
    start_iteration = int(parent["end_iteration"]) if parent else 0
    start_seconds = float(parent["end_seconds"]) if parent else 0.0
    request = ProbeRequest(config, max(max_seconds - start_seconds, 0.0),
                           max(max_iterations - start_iteration, 0), parent_key, start_iteration)
    segments.append(run_segment(spec, request, parent)[0])
    return merge(segments)
