"""What the simulated cluster costs as it grows: wall seconds per simulated step, 64 → 4,096 devices.

    python benchmarks/simulator_scale.py [--devices 64 256 1024 4096] [--batch 16] [--steps 20] [--threads 1]
                                         [--plot docs/results/simulator_scale.png]

H100 nodes of 8 devices (NVLink inside a node, InfiniBand 400 Gb/s between nodes) running
``million-regression`` (2^20 samples). Each device count runs in a fresh process, so its peak
resident memory is its own. Prints one JSON object: per device count and strategy, the median wall
seconds of one simulated step (after a warm-up step), and the process's peak RSS in MiB. One
torch thread by default, as in a probe: the service runs each probe as a Ray task of one CPU, and
Ray sets its OMP_NUM_THREADS to 1.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

from predictor.types import STRATEGIES, Config
from worker.simulated.run import simulated_run
from worker.spec import Spec, parse_spec

DEVICES_PER_NODE = 8
WORKLOAD = "million-regression"


def spec_for(devices: int) -> Spec:
    return parse_spec({
        "workload": {"name": WORKLOAD},
        "cluster": {"nodes": devices // DEVICES_PER_NODE, "devices_per_node": DEVICES_PER_NODE,
                    "device": {"name": "h100"},
                    "network": {"intra_gbps": 7200, "inter_gbps": 400, "latency_us": 2,
                                "intra_latency_us": 2}},
    })


def config_for(strategy: str, devices: int, batch: int) -> Config:
    groups = 8 if strategy == "async_groups" else 1
    return Config(strategy, devices // DEVICES_PER_NODE, DEVICES_PER_NODE, groups=groups, batch_size=batch,
                  lr=0.01, momentum=0.9)


def measure(devices: int, batch: int, steps: int) -> dict[str, object]:
    """Median wall seconds per simulated step of every strategy on ``devices`` devices."""
    spec = spec_for(devices)
    per_step = {}
    for strategy in STRATEGIES:
        run = simulated_run(spec, config_for(strategy, devices, batch))
        run.step()  # the first step builds what later steps reuse
        seconds = []
        for _ in range(steps):
            start = time.perf_counter()
            run.step()
            seconds.append(time.perf_counter() - start)
        per_step[strategy] = statistics.median(seconds)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    return {"devices": devices, "batch_per_device": batch, "wall_seconds_per_step": per_step,
            "peak_rss_mib": round(peak_mib, 1)}


def plot(rows: list[dict], path: Path) -> None:
    """Wall seconds per simulated step against devices, one line per strategy (log–log)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    devices = [r["devices"] for r in rows]
    figure, axes = plt.subplots(figsize=(6, 4))
    for strategy in STRATEGIES:
        axes.plot(devices, [r["wall_seconds_per_step"][strategy] for r in rows], marker="o", label=strategy)
    axes.set(xscale="log", yscale="log", xlabel="simulated devices (8 per node)",
             ylabel="wall seconds per simulated step", title=f"{WORKLOAD}, b = {rows[0]['batch_per_device']}")
    axes.set_xticks(devices, [str(d) for d in devices])
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, nargs="+", default=[64, 256, 1024, 4096])
    parser.add_argument("--batch", type=int, default=16, help="samples per device")
    parser.add_argument("--steps", type=int, default=20, help="timed steps per strategy")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    parser.add_argument("--plot", type=Path, default=None, help="PNG of the figure (none: no plot)")
    parser.add_argument("--one", action="store_true", help="measure in this process (one device count)")
    args = parser.parse_args(argv)
    bad = [d for d in args.devices if d % DEVICES_PER_NODE]
    if bad:
        parser.error(f"--devices must be multiples of {DEVICES_PER_NODE}, got {bad}")
    if args.one:
        torch.set_num_threads(args.threads)
        print(json.dumps(measure(args.devices[0], args.batch, args.steps)))
        return 0
    rows = []
    for devices in args.devices:
        out = subprocess.run(
            [sys.executable, __file__, "--one", "--devices", str(devices), "--batch", str(args.batch),
             "--steps", str(args.steps), "--threads", str(args.threads)],
            check=True, capture_output=True, text=True)
        rows.append(json.loads(out.stdout))
    print(json.dumps({"workload": WORKLOAD, "rows": rows}))
    if args.plot is not None:
        plot(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
