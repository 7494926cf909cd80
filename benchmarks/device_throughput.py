"""One device as a black box (Omnivore): samples/second against threads and batch size.

For each (threads, batch size) this runs ttc's Ray ``sync`` on a single device actor whose CPU
share is ``threads`` (so the actor sets that many torch threads), and the same training loop
with ``torch`` used directly in this process with the same thread count. The ratio shows what
the actor shell costs; the table shows which per-device batch saturates the device.

    nice python benchmarks/device_throughput.py --threads 1 2 --batch-sizes 16 64 256
"""

from __future__ import annotations

import argparse
import json
import os
import time

import ray
import torch

from predictor.types import Config
from worker.data import EpochSampler
from worker.optim import make_optimizer
from worker.probe import workload_for
from worker.ray_backend import RayBackendConfig, ReplicaRun
from worker.spec import Spec, parse_spec

WARMUP_STEPS = 10


def direct_rate(spec: Spec, config: Config, threads: int, steps: int) -> float:
    """Samples/second of the plain torch loop in this process."""
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        workload = workload_for(spec)
        torch.manual_seed(spec.seed)
        model = workload.build_model()
        optimizer = make_optimizer(model.parameters(), config)
        sampler = EpochSampler(workload.train_size, spec.seed)

        def step() -> None:
            x, y = workload.train_batch(sampler.next(config.batch_size))
            optimizer.zero_grad(set_to_none=True)
            workload.loss_fn(model(x), y).backward()
            optimizer.step()

        for _ in range(WARMUP_STEPS):
            step()
        start = time.perf_counter()
        for _ in range(steps):
            step()
        return steps * config.batch_size / (time.perf_counter() - start)
    finally:
        torch.set_num_threads(previous)


def ray_rate(spec: Spec, config: Config, threads: int, steps: int) -> float:
    """Samples/second of one device actor, timed from the driver around each call."""
    backend = RayBackendConfig(cpus_per_worker=float(threads))
    run = ReplicaRun(spec, config, backend, max_iterations=10**9)
    try:
        run.start()
        for _ in range(WARMUP_STEPS):
            run.step()  # the actors run eval_every (--chunk) steps per call
        start = time.perf_counter()
        for _ in range(steps):
            run.step()
        return steps * config.batch_size / (time.perf_counter() - start)
    finally:
        run.shutdown()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="charlm")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--chunk", type=int, default=10)
    args = parser.parse_args()
    spec = parse_spec({"workload": {"name": args.workload}, "target": {"eval_every": args.chunk},
                       "cluster": {"backend": "ray"}})
    address = os.environ.get("RAY_ADDRESS")
    cpus = None if address else max(args.threads)
    ray.init(address=address, num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    rows = []
    try:
        for threads in args.threads:
            for batch in args.batch_sizes:
                config = Config("sync", 1, 1, batch_size=batch, lr=0.01, momentum=0.0)
                on_ray = ray_rate(spec, config, threads, args.steps)
                direct = direct_rate(spec, config, threads, args.steps)
                rows.append({
                    "threads": threads, "batch_size": batch, "ray_samples_per_s": round(on_ray, 1),
                    "torch_samples_per_s": round(direct, 1), "ratio": round(on_ray / direct, 3),
                })
    finally:
        ray.shutdown()
    print(json.dumps({"workload": args.workload, "steps": args.steps, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
