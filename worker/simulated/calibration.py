"""Calibrate a workload's compute cost from the real model: FLOPs and measured CPU time."""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from worker.workloads import Workload


@dataclass(frozen=True)
class ModelCost:
    """Per-model constants the clock needs; measured once per process and workload."""

    flops_per_sample: float  # forward + backward, from torch's FLOP counter
    parameter_bytes: int  # gradient/parameter message size (FP32)
    layers: int  # modules with parameters, for per-layer launch overhead
    cpu_fixed_seconds: float  # measured on this machine: t(b) = fixed + per_sample · b
    cpu_per_sample_seconds: float


def _train_step(model: torch.nn.Module, workload: Workload, x: torch.Tensor, y: torch.Tensor) -> None:
    model.zero_grad(set_to_none=True)
    workload.loss_fn(model(x), y).backward()


_CACHE: dict[str, ModelCost] = {}
TIMING_REPEATS = 9


def _fastest_step_seconds(model: torch.nn.Module, workload: Workload, batch: int) -> float:
    """Best of several timed steps: other load only ever adds time, so the minimum is the
    device's own cost (the rule ``timeit`` follows); a mean lets one stall skew the profile.
    The batch is read once, outside the timing: the profile is the device's compute, not I/O."""
    x, y = workload.train_batch(torch.arange(batch))
    _train_step(model, workload, x, y)  # warm-up
    timings = []
    for _ in range(TIMING_REPEATS):
        start = time.perf_counter()
        _train_step(model, workload, x, y)
        timings.append(time.perf_counter() - start)
    return min(timings)


def _measure(workload: Workload) -> ModelCost:
    torch.manual_seed(0)
    model = workload.build_model()
    probe_batch = min(8, workload.train_size)
    with FlopCounterMode(display=False) as counter:
        _train_step(model, workload, *workload.train_batch(torch.arange(probe_batch)))
    flops = counter.get_total_flops() / probe_batch
    params = sum(p.numel() for p in model.parameters())
    layers = sum(1 for m in model.modules() if any(True for _ in m.parameters(recurse=False)))
    batches = [b for b in (8, 32, 128) if b <= workload.train_size]
    seconds = [_fastest_step_seconds(model, workload, batch) for batch in batches]
    per_sample, fixed = np.polyfit(batches, seconds, 1) if len(batches) > 1 else (seconds[0], 0.0)
    return ModelCost(
        flops_per_sample=float(max(flops, 1.0)),
        parameter_bytes=4 * params,
        layers=max(layers, 1),
        cpu_fixed_seconds=float(max(fixed, 1e-5)),
        cpu_per_sample_seconds=float(max(per_sample, 1e-7)),
    )


def model_cost(workload: Workload) -> ModelCost:
    """Cost constants of ``workload``'s model, measured once per process and workload name."""
    if workload.name not in _CACHE:
        _CACHE[workload.name] = _measure(workload)
    return _CACHE[workload.name]
