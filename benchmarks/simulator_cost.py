"""What simulating a cluster costs in wall time, next to the real work it stands for (issue 3 §6).

    python benchmarks/simulator_cost.py [--workload digits-cnn] [--batch 16] [--groups 8]

Prints one JSON object: the wall seconds of a simulated ``sync`` step of 64 devices × b next to
one plain training step on 64·b samples (target ≤ 1.3×), and of g simulated ``async_groups``
updates next to g plain steps on 64·b/g samples each (target ≤ 1.3×). Medians over repeats; each
repeat times the real and the simulated work back to back, so load from other jobs on a shared
machine hits both sides of a ratio alike instead of whichever was timed while it peaked.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable

import torch

from predictor.types import Config
from worker.simulated.calibration import model_cost
from worker.simulated.run import simulated_run
from worker.spec import parse_spec
from worker.workloads import Workload, build_workload

NODES, DEVICES_PER_NODE = 16, 4  # 64 devices


def paired_medians(
    real: Callable[[], None], simulated: Callable[[], None], repeats: int
) -> tuple[float, float]:
    """Median wall seconds of ``real`` and of ``simulated``, timed alternately (after a warm-up each)."""
    samples: tuple[list[float], list[float]] = ([], [])
    real()
    simulated()
    for _ in range(repeats):
        for work, seconds in zip((real, simulated), samples, strict=True):
            start = time.perf_counter()
            work()
            seconds.append(time.perf_counter() - start)
    return statistics.median(samples[0]), statistics.median(samples[1])


def plain_steps(workload: Workload, batch: int, count: int) -> Callable[[], None]:
    """``count`` ordinary training steps of ``batch`` samples: the real work being simulated."""
    torch.manual_seed(0)
    model = workload.build_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    generator = torch.Generator().manual_seed(0)

    def work() -> None:
        for _ in range(count):
            index = torch.randint(workload.train_size, (batch,), generator=generator)
            optimizer.zero_grad(set_to_none=True)
            x, y = workload.train_batch(index)
            workload.loss_fn(model(x), y).backward()
            optimizer.step()

    return work


def simulated_steps(workload: Workload, config: Config, count: int) -> Callable[[], None]:
    spec = parse_spec({"workload": {"name": workload.name},
                       "cluster": {"nodes": NODES, "devices_per_node": DEVICES_PER_NODE}})
    strategy = simulated_run(spec, config)

    def work() -> None:
        for _ in range(count):
            strategy.step()

    return work


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="digits-cnn")
    parser.add_argument("--batch", type=int, default=16, help="b, samples per device")
    parser.add_argument("--groups", type=int, default=8, help="g for the async comparison")
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    workload = build_workload(0, args.workload)
    model_cost(workload)  # calibration happens once per process; keep it out of the timings
    devices, b, g = NODES * DEVICES_PER_NODE, args.batch, args.groups
    sync = Config("sync", NODES, DEVICES_PER_NODE, batch_size=b, lr=0.01, momentum=0.9)
    asynchronous = sync.replace(strategy="async_groups", groups=g)
    real_sync, sim_sync = paired_medians(plain_steps(workload, devices * b, 1),
                                         simulated_steps(workload, sync, 1), args.repeats)
    real_async, sim_async = paired_medians(plain_steps(workload, devices * b // g, g),
                                           simulated_steps(workload, asynchronous, g), args.repeats)
    print(json.dumps({
        "workload": args.workload, "devices": devices, "batch_per_device": b, "groups": g,
        "sync": {"simulated_step_s": sim_sync, "real_batch_s": real_sync, "ratio": sim_sync / real_sync,
                 "target": 1.3},
        "async_groups": {"simulated_g_updates_s": sim_async, "real_g_batches_s": real_async,
                         "ratio": sim_async / real_async, "target": 1.3},
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
