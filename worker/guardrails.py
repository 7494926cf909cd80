"""Per-probe resource guardrails, derived from the workload: checked before a study is accepted.

A probe of W devices × b samples per device computes W·b samples per simulated step as one
batch (DESIGN.md §5), so its memory grows with W·b times what one sample costs in this model.
One spec asking for ``batch_sizes=[65536]`` on 4×4 devices ran a 20-iteration probe for ~5
minutes at 1.3–2.1 GB per Ray worker; these checks refuse it up front, saying why in numbers.

- **samples per device step** ≤ the workload's training samples: a larger per-device batch only
  repeats data, and is how a typo (65536 for 64) turns into gigabytes.
- **probe memory** ≈ W·b × bytes per sample (every module's output, twice: activations and their
  gradients) + 4 × parameter bytes (weights, gradients, momentum, a copy), at most the service's
  limit. Bytes per sample are measured once per workload on one real sample.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import torch

from worker.spec import Spec
from worker.workloads import build_workload

FLOAT_BYTES = 4
PARAMETER_COPIES = 4  # weights, gradients, momentum buffer, the averaged/stale copy


@dataclass(frozen=True)
class Footprint:
    """What one sample and the model cost in memory, and how many samples the data holds."""

    workload: str
    train_samples: int
    bytes_per_sample: int
    parameter_bytes: int

    def probe_bytes(self, samples_per_step: int) -> int:
        return samples_per_step * self.bytes_per_sample + PARAMETER_COPIES * self.parameter_bytes


@functools.lru_cache(maxsize=32)
def footprint(name: str | None, factory: str | None) -> Footprint:
    """Measured on seed 0: the footprint does not depend on the seed (same shapes, same model)."""
    workload = build_workload(0, name, factory)
    model = workload.build_model()
    sample_x, sample_y = workload.train_batch(torch.arange(1))  # tensors or a Dataset alike
    outputs = 0

    def count(_module: torch.nn.Module, _inputs: Any, output: Any) -> None:
        nonlocal outputs
        outputs += sum(t.numel() for t in _tensors(output))

    handles = [module.register_forward_hook(count) for module in model.modules()]
    try:
        with torch.no_grad():
            model(sample_x)
    finally:
        for handle in handles:
            handle.remove()
    inputs = sample_x.numel() + sample_y.numel()
    parameters = sum(p.numel() for p in model.parameters())
    return Footprint(workload.name, workload.train_size, FLOAT_BYTES * (inputs + 2 * outputs),
                     FLOAT_BYTES * parameters)


def _tensors(output: Any) -> list[torch.Tensor]:
    if isinstance(output, torch.Tensor):
        return [output]
    if isinstance(output, list | tuple):
        return [t for item in output for t in _tensors(item)]
    return []


def probe_resource_errors(spec: Spec, max_probe_bytes: int) -> list[dict[str, Any]]:
    """Field errors (the shape of a pydantic error) for batch sizes a probe of ``spec`` cannot afford."""
    found = footprint(spec.workload.name, spec.workload.factory)
    devices = spec.cluster.nodes * spec.cluster.devices_per_node
    errors = []
    for index, batch in enumerate(spec.search.batch_sizes):
        where = ["body", "search", "batch_sizes", index]
        if batch > found.train_samples:
            errors.append({"type": "limit", "loc": where, "input": batch, "msg": (
                f"batch size {batch} samples per device step exceeds the {found.train_samples} training "
                f"samples of workload {found.workload}")})
            continue
        needed = found.probe_bytes(devices * batch)
        if needed > max_probe_bytes:
            errors.append({"type": "limit", "loc": where, "input": batch, "msg": (
                f"a probe of batch size {batch} on {devices} devices computes {devices * batch} samples per "
                f"step: about {_mib(needed)} for workload {found.workload} ({found.bytes_per_sample} bytes "
                f"per sample), over this service's limit of {_mib(max_probe_bytes)} per probe "
                "(TTC_MAX_PROBE_MEMORY_MB)")})
    return errors


def _mib(size: int) -> str:
    return f"{size / 2**20:,.0f} MiB"
