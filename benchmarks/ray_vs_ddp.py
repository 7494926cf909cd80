"""Samples/second of ttc's Ray ``sync`` over plain DDP (gloo, torch.multiprocessing), side by side.

Same workload, model, worker count, per-worker batch and one torch thread per worker. Rounds
alternate between the two so that load from anything else on the machine hits both alike; the
figure is the median over rounds. ttc's side is timed from the driver around each call to the
actors (Ray dispatch included), the DDP side inside rank 0 around its loop.

    nice python benchmarks/ray_vs_ddp.py --workers 2 --batch-size 32 --steps 200 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import time

import ray
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

from predictor.types import Config
from worker.data import EpochSampler
from worker.optim import make_optimizer
from worker.probe import workload_for
from worker.ray_backend import RayBackendConfig, ReplicaRun
from worker.spec import Spec, parse_spec

WARMUP_STEPS = 20


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _ddp_worker(rank: int, world: int, port: int, spec: Spec, config: Config, steps: int, queue) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    workload = workload_for(spec)
    torch.manual_seed(spec.seed)
    model = DistributedDataParallel(workload.build_model())
    optimizer = make_optimizer(model.parameters(), config)
    sampler = EpochSampler(workload.train_size, spec.seed)
    b = config.batch_size

    def step() -> None:
        x, y = workload.train_batch(sampler.next(b * world)[rank * b : (rank + 1) * b])
        optimizer.zero_grad(set_to_none=True)
        workload.loss_fn(model(x), y).backward()
        optimizer.step()

    for _ in range(WARMUP_STEPS):
        step()
    dist.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    seconds = time.perf_counter() - start
    if rank == 0:
        queue.put(steps * b * world / seconds)
    dist.destroy_process_group()


def ddp_round(spec: Spec, config: Config, steps: int) -> float:
    context = mp.get_context("spawn")
    queue = context.SimpleQueue()
    world = config.devices
    arguments = (world, _free_port(), spec, config, steps, queue)
    mp.start_processes(_ddp_worker, args=arguments, nprocs=world, start_method="spawn")
    return queue.get()


def ray_round(run: ReplicaRun, steps: int) -> float:
    """Samples/s over ``steps`` steps (the actors run ``eval_every`` = chunk steps per call)."""
    for _ in range(WARMUP_STEPS):
        run.step()
    start = time.perf_counter()
    for _ in range(steps):
        run.step()
    return steps * run.config.global_batch / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="digits-mlp")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=10, help="steps per call to the actors (eval_every)")
    args = parser.parse_args()
    spec = parse_spec({
        "workload": {"name": args.workload},
        "target": {"eval_every": args.chunk},
        "cluster": {"backend": "ray", "nodes": args.workers, "devices_per_node": 1},
    })
    config = Config("sync", args.workers, 1, batch_size=args.batch_size, lr=0.01, momentum=0.0)
    address = os.environ.get("RAY_ADDRESS")
    cpus = None if address else args.workers
    ray.init(address=address, num_cpus=cpus, include_dashboard=False, log_to_driver=False)
    backend = RayBackendConfig(cpus_per_worker=1.0)
    run = ReplicaRun(spec, config, backend, max_iterations=10**9)
    ray_rates, ddp_rates = [], []
    try:
        run.start()
        for _ in range(args.rounds):
            ray_rates.append(ray_round(run, args.steps))
            ddp_rates.append(ddp_round(spec, config, args.steps))
    finally:
        run.shutdown()
        ray.shutdown()
    ray_median, ddp_median = statistics.median(ray_rates), statistics.median(ddp_rates)
    print(json.dumps({
        "workload": args.workload, "workers": args.workers, "batch_size": args.batch_size,
        "steps": args.steps, "rounds": args.rounds, "threads_per_worker": 1,
        "ray_sync_samples_per_s": round(ray_median, 1), "ddp_samples_per_s": round(ddp_median, 1),
        "ratio": round(ray_median / ddp_median, 3),
        "ray_rounds": [round(r, 1) for r in ray_rates], "ddp_rounds": [round(r, 1) for r in ddp_rates],
    }, indent=2))


if __name__ == "__main__":
    main()
