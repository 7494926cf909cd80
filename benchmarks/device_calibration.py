"""Calibrate a device profile: every built-in workload at 3 batch sizes on one real device, via Ray.

    python benchmarks/device_calibration.py [--out docs/results/devices.md] [--timeout 540]
    python benchmarks/device_calibration.py --smoke          # CPU, gloo, a few steps: a smoke check

Each workload runs ``sync`` on one device actor of the Ray backend (NCCL and CUDA when the actor
sees a GPU; gloo on CPU), through the same training loop as a probe. Per batch size it reports the
settled s/it (``predictor.step_times``) and its spread, the FLOPs of one step (forward + backward,
``torch.utils.flop_counter.FlopCounterMode``) and the FLOP/s achieved, next to the simulated
profile's seconds for that step (``h100`` or ``a100`` by the card's name; ``cpu`` in smoke mode).

The profiles model a step as t(b) = launch·layers + F·b / (peak · m·b/(b+h)), which is linear in
b: t = a + c·b with c = F/(peak·m) and a = launch·layers + c·h. A line fitted to the 3 measured
batches therefore gives the efficiency curve the measurement implies (m, h) — the profile's
correction. Everything stops at ``--timeout`` seconds (what has been measured is still written).
Prints the rows as JSON and writes the markdown table to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from predictor.step_times import steady_mean, steady_spread
from predictor.types import Config
from worker.convergence import Evaluator
from worker.ray_backend import RankLayout, RayBackendConfig, WorkerGroup, ensure_ray, make_run
from worker.simulated.calibration import model_cost
from worker.simulated.hardware import Hardware
from worker.simulated.profiles import GPU_PROFILES
from worker.spec import Spec, parse_spec
from worker.training import train
from worker.workloads import BUILTIN, Workload, load_workload

FULL = {"batches": (32, 256, 1024), "iterations": 60}
SMOKE = {"batches": (4, 8, 16), "iterations": 6}


def profile_name(smoke: bool) -> str:
    """The simulated profile to compare with: the card's (h100 or a100), ``cpu`` in smoke mode."""
    if smoke or not torch.cuda.is_available():
        return "cpu"
    return "a100" if "A100" in torch.cuda.get_device_name(0) else "h100"


def spec_for(workload: str, profile: str) -> Spec:
    cluster = {"backend": "ray", "nodes": 1, "devices_per_node": 1, "device": {"name": profile}}
    return parse_spec({"workload": {"name": workload}, "cluster": cluster})


def step_flops(workload: Workload, batch: int) -> float:
    """FLOPs of one training step of ``batch`` samples (forward + backward), counted by torch."""
    torch.manual_seed(0)
    model = workload.build_model()
    x, y = workload.train_batch(torch.arange(batch) % workload.train_size)
    with FlopCounterMode(display=False) as counter:
        workload.loss_fn(model(x), y).backward()
    return float(counter.get_total_flops())


def measure(group: WorkerGroup, backend: RayBackendConfig, name: str, profile: str, batch: int,
            iterations: int) -> dict[str, object]:
    """One workload at one batch size on the group's device: measured and simulated s/it."""
    spec = spec_for(name, profile)
    workload = load_workload(spec.seed, name)
    config = Config("sync", 1, 1, batch_size=batch, lr=0.01, momentum=0.0)
    run = make_run(spec, config, backend, iterations, workers=group)
    run.start()
    try:  # a target no run reaches: every step is timed, one evaluation at each end
        result = train(run, Evaluator(workload, "train_loss"), 1e-12, iterations, math.inf, iterations)
    finally:
        run.shutdown()
    seconds = steady_mean(result.step_seconds)
    flops = step_flops(workload, batch)
    simulated = Hardware(spec.cluster, model_cost(workload), spec.seed).base_compute_seconds(batch)
    return {"workload": name, "batch": batch, "seconds_per_iteration": seconds,
            "spread": steady_spread(result.step_seconds), "flops_per_iteration": flops,
            "flops_per_second": flops / seconds, "simulated_seconds": simulated,
            "measured_over_simulated": seconds / simulated, "call_seconds": result.call_seconds}


def corrected_curve(rows: list[dict], profile: str) -> dict[str, float] | None:
    """The profile's constants implied by a line t = a + c·b through one workload's rows."""
    if len(rows) < 2:
        return None
    batches = np.array([r["batch"] for r in rows], float)
    seconds = np.array([r["seconds_per_iteration"] for r in rows], float)
    c, a = np.polyfit(batches, seconds, 1)
    if profile == "cpu":
        return {"fixed_seconds": float(a), "per_sample_seconds": float(c)}
    device = GPU_PROFILES[profile]
    flops_per_sample = rows[0]["flops_per_iteration"] / rows[0]["batch"]
    layers = model_cost(load_workload(0, rows[0]["workload"])).layers
    if c <= 0:
        return {"max_efficiency": math.nan, "half_batch": math.nan}
    return {"max_efficiency": float(flops_per_sample / (device.peak_flops * c)),
            "half_batch": float(max(a - device.launch_seconds * layers, 0.0) / c)}


def markdown(
    rows: list[dict], curves: dict[str, dict | None], profile: str, device: str, command: str, load: str
) -> str:
    note = ("No GPU was visible to the device actor when this ran: these are CPU figures of the smoke "
            "mode (a few steps per batch), a check that the script works end to end, not a calibration "
            "of any GPU profile." if profile == "cpu" else
            "One GPU, NCCL process group, through the Ray backend's device actor.")
    lines = [
        f"# Device calibration: {device} against the simulated `{profile}` profile", "",
        f"Measured by `{command}` (load average {load}). {note}", "",
        "| workload | b | measured s/it | spread (CV) | FLOPs/step | achieved FLOP/s | simulated s/it "
        "| measured / simulated |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['workload']} | {r['batch']} | {r['seconds_per_iteration']:.3g} | {r['spread']:.2f} "
            f"| {r['flops_per_iteration']:.3g} | {r['flops_per_second']:.3g} | {r['simulated_seconds']:.3g} "
            f"| {r['measured_over_simulated']:.2f} |")
    lines += ["", "Efficiency curve implied by the measurement (a line t = a + c·b through each "
              "workload's batches; see the script's docstring):", ""]
    for name, curve in curves.items():
        text = "too few batches measured" if curve is None else ", ".join(
            f"{k} = {v:.3g}" for k, v in curve.items())
        lines.append(f"- {name}: {text}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="CPU and gloo, 3 small batches, a few steps")
    parser.add_argument("--out", type=Path, default=None, help="markdown file to write (none: no file)")
    parser.add_argument("--timeout", type=float, default=540.0, help="stop measuring after this many seconds")
    parser.add_argument("--workloads", nargs="+", default=sorted(BUILTIN))
    args = parser.parse_args(argv)
    start = time.monotonic()
    load_before = os.getloadavg()[0]
    settings = SMOKE if args.smoke else FULL
    profile = profile_name(args.smoke)
    device = "CPU" if profile == "cpu" else torch.cuda.get_device_name(0)
    backend = RayBackendConfig(use_gpu=profile != "cpu", retries=0)
    if profile == "cpu":  # the cpu profile is timed here: with the device actor's threads, as a probe is
        torch.set_num_threads(backend.threads_per_worker)
    ensure_ray()
    rows: list[dict] = []
    with WorkerGroup(RankLayout(1, 1), backend) as group:
        for name in args.workloads:
            for batch in settings["batches"]:
                if time.monotonic() - start > args.timeout:
                    break
                rows.append(measure(group, backend, name, profile, batch, settings["iterations"]))
    curves = {name: corrected_curve([r for r in rows if r["workload"] == name], profile)
              for name in args.workloads}
    print(json.dumps({"device": device, "profile": profile, "rows": rows, "curves": curves}))
    if args.out is not None:
        command = "python benchmarks/device_calibration.py" + (" --smoke" if args.smoke else "")
        load = f"{load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
        args.out.write_text(markdown(rows, curves, profile, device, command, load))
    return 0


if __name__ == "__main__":
    sys.exit(main())
