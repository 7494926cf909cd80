"""How a study's warm-up extrapolation moves as its evidence grows: why a plan prints no number.

Runs ttc's study on a scenario (the probes' seed), then refits the warm-up's reference curve
(predictor.reference_curve, the fit the plan's forks are read on) on the warm-up cut at a few
iteration counts, and prints each cut's extrapolated iterations to the target, next to the
iterations the warm-up's recipe needed from scratch on the truth seeds. An extrapolation that
still moves many-fold between cuts is one the confidence rules (predictor.confidence: drift)
refuse to print; the plan's point estimate they withheld is printed beside it, for comparison
with the plan's measured TTC (predictor_eval.py).

    nice python benchmarks/warmup_extrapolation.py --scenario plateau [--kind long] \
        [--cuts 0.5,0.6,0.7,0.8,1] [--truth-seeds 1,2]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json

from predictor_eval import RUN_MAX_ITERATIONS, SCENARIOS, run_ttc

from predictor.lineages import merge
from predictor.reference_curve import ReferenceCurve
from worker.lineage import run_schedule
from worker.spec import load_spec

CAP_SECONDS = 60.0  # simulated seconds: no cap a long-horizon scenario's runs come near


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--kind", default="long")
    parser.add_argument("--cuts", default="0.5,0.6,0.7,0.8,1", help="shares of the warm-up's length")
    parser.add_argument("--truth-seeds", default="1,2")
    args = parser.parse_args()
    spec = load_spec(SCENARIOS / args.kind / f"{args.scenario}.yaml")
    search, plan, _ = run_ttc(spec)
    if search.warmup_config is None:
        raise SystemExit(f"{args.scenario}: the study ran no warm-up")
    curve = merge(search.lineages.chain_of(None, search.warmup_config.key())).curve
    end = curve[-1][0]
    extrapolated = {}
    for share in (float(c) for c in args.cuts.split(",")):
        cut = round(end * share)
        reference = ReferenceCurve.fit([p for p in curve if p[0] <= cut], search.target, samples=0)
        extrapolated[cut] = float(reference.iteration_at(search.target)[0]) if reference else None
    truth = {}
    for seed in (int(s) for s in args.truth_seeds.split(",")):
        run = run_schedule(spec.model_copy(update={"seed": seed}), search.warmup_config, None, CAP_SECONDS,
                           RUN_MAX_ITERATIONS)
        truth[f"seed {seed}"] = run.reached_iteration
    print(json.dumps({"scenario": args.scenario, "plan": plan.config.key(),
                      "confidence": plan.confidence.level,
                      "plan_point_estimate_seconds": plan.predicted.ttc_seconds,
                      "warmup": search.warmup_config.key(), "warmup_end": end,
                      "extrapolated_iterations_at_cut": extrapolated,
                      "from_scratch_iterations": truth}, indent=1))


if __name__ == "__main__":
    main()
