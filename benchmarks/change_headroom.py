"""What a changing scenario leaves an adaptive run to win: its premise and an oracle's switch.

For a scenario whose cluster changes mid-run (``cluster.throttle``), trains on each seed, from
scratch with tuning free, ``sync`` at the space's first batch and momentum 0.9:

* the premise: every node count × rate of ``--nodes`` × ``--lrs`` on the healthy cluster and on
  the changing one (the best config should change: one allocation best healthy, another once
  throttled);
* the oracle: ``--before-nodes`` at ``--before-lr`` for a given number of iterations (about when
  the throttle strikes), then each config of the premise: the most a switch at that point could
  gain, which tuning must leave room for before ``ttc train`` can beat every fixed config.

    nice python benchmarks/change_headroom.py [--scenario throttled_node] [--seeds 1,2] \
        [--nodes 4,2] [--lrs 0.025,0.05] [--before-nodes 4] [--before-lr 0.05] [--switch-at 3500,4200]

Prints one JSON object: simulated seconds to the target per run (null: not within 40,000 it).
"""

from __future__ import annotations

import argparse
import json

from predictor_eval import RUN_MAX_ITERATIONS, SCENARIOS

from predictor import Config
from predictor.types import Phase
from worker.lineage import run_schedule
from worker.spec import Spec, load_spec

CAP_SECONDS = 2.0  # far past every run of the scenario: a run that slow is reported as not reaching


def seconds(spec: Spec, config: Config, before: Phase | None = None) -> float | None:
    return run_schedule(spec, config, before, CAP_SECONDS, RUN_MAX_ITERATIONS).reached_seconds


def numbers(text: str) -> list[float]:
    return [float(v) for v in text.split(",")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="throttled_node")
    parser.add_argument("--seeds", default="1,2")
    parser.add_argument("--nodes", default="4,2")
    parser.add_argument("--lrs", default="0.025,0.05")
    parser.add_argument("--before-nodes", type=int, default=4)
    parser.add_argument("--before-lr", type=float, default=0.05)
    parser.add_argument("--switch-at", default="3500,4200", help="iterations before the switch")
    args = parser.parse_args()
    base = load_spec(SCENARIOS / "change" / f"{args.scenario}.yaml")
    devices, batch = base.cluster.devices_per_node, sorted(base.search.batch_sizes)[0]

    def config(nodes: float, lr: float) -> Config:
        return Config("sync", int(nodes), devices, batch_size=batch, lr=lr, momentum=0.9)

    configs = [config(n, lr) for n in numbers(args.nodes) for lr in numbers(args.lrs)]
    before = config(args.before_nodes, args.before_lr)
    report: dict[str, dict[str, float | None]] = {}
    for seed in (int(s) for s in args.seeds.split(",")):
        changing = base.model_copy(update={"seed": seed})
        healthy = changing.model_copy(
            update={"cluster": changing.cluster.model_copy(update={"throttle": None})})
        runs: dict[str, float | None] = {}
        for fixed in configs:
            runs[f"healthy {fixed.key()}"] = seconds(healthy, fixed)
            runs[f"throttled {fixed.key()}"] = seconds(changing, fixed)
        for at in (int(k) for k in numbers(args.switch_at)):
            for then in configs:
                switched = seconds(changing, then, Phase(before, at))
                runs[f"{before.key()} for {at} it, then {then.key()}"] = switched
        report[f"seed {seed}"] = runs
    print(json.dumps({"scenario": args.scenario, "runs": report}, indent=1))


if __name__ == "__main__":
    main()
