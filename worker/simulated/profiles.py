"""Device profiles for the simulated clock (DESIGN.md §5).

Peak FP32 figures are vendor datasheet numbers (V100 SXM2 15.7, A100 SXM4 19.5, H100 SXM5 67
TFLOP/s). Real kernels reach a fraction of peak that grows with batch size; we model the
achieved fraction as ``max_efficiency · b / (b + half_batch)`` (a saturating curve, the shape
reported by MLPerf-style throughput-vs-batch sweeps), plus a fixed per-step launch overhead per
layer. The ``cpu`` profile is not a datasheet: it is measured on the machine that runs it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceProfile:
    name: str
    peak_flops: float  # FP32 FLOP/s
    max_efficiency: float = 0.5  # fraction of peak reached by large batches
    half_batch: float = 32.0  # samples at which half of max_efficiency is reached
    launch_seconds: float = 8e-6  # per layer per step (forward + backward + update kernels)


@dataclass(frozen=True)
class StorageProfile:
    """Where training samples are read from. Defaults: an NVMe SSD (datasheets: ~100 µs per random
    4 KiB read at queue depth 1, ~2 GB/s sequential) — HSGD's strided vs contiguous shard reads."""

    read_latency_seconds: float = 100e-6
    bandwidth_bytes: float = 2e9


GPU_PROFILES: dict[str, DeviceProfile] = {
    "v100": DeviceProfile("v100", 15.7e12),
    "a100": DeviceProfile("a100", 19.5e12),
    "h100": DeviceProfile("h100", 67e12, launch_seconds=6e-6),
}
