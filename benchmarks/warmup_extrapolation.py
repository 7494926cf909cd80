"""How far along a run its extrapolation must be measured before the evidence supports a number.

Runs ttc's study on a scenario (the probes' seed), then trains the study's warm-up recipe from
scratch to the target on the probes' seed: the warm-up is that run's prefix, and the rest is
what a longer warm-up (or a study that continued into the run) would have seen. At every
doubling of the probe length up to the run's end it refits the reference curve
(predictor.reference_curve, the fit the plan's forks are read on) and prints the extrapolated
iterations to the target beside the iterations the recipe needed on the truth seeds, with the
tests the plan's confidence is read from (predictor.confidence: drift, hindcast, regime).

It also prints, for each truth seed, the mean loss over the last ``LEVEL_SHARE`` of iterations
before the target was confirmed, and how many such stretches the mean curve, at the pace it fell
over the stretch before, would still need to get down to the target. Many means the run crossed
the target on an excursion of SGD's noise, not because its mean curve got there: the iterations
to such a target are a first-passage time that no fit of the mean curve predicts.

    nice python benchmarks/warmup_extrapolation.py --scenario plateau [--kind long] [--truth-seeds 1,2]

Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from dataclasses import replace

from predictor_eval import RUN_MAX_ITERATIONS, SCENARIOS, run_ttc

from predictor.confidence import extrapolation_holds
from predictor.reference_curve import ReferenceCurve, drift, hindcast
from predictor.regime import read_view_regime
from predictor.types import Config, ProbeResult, json_safe
from worker.lineage import run_schedule
from worker.spec import Spec, load_spec

CAP_SECONDS = 60.0  # simulated seconds: no cap a long-horizon scenario's runs come near
LEVEL_SHARE = 0.05  # the stretch before the confirmed crossing whose mean loss is its level


def _from_scratch(spec: Spec, recipe: Config, seed: int) -> ProbeResult:
    return run_schedule(spec.model_copy(update={"seed": seed}), recipe, None, CAP_SECONDS, RUN_MAX_ITERATIONS)


def _level(run: ProbeResult, start: float, end: float) -> float:
    return statistics.fmean(loss for k, _, loss in run.curve if start <= k < end)


def _crossing(run: ProbeResult, target: float) -> dict[str, float] | None:
    """The mean loss over the last LEVEL_SHARE of iterations before the target was reached, and
    the stretches the mean, falling as over the stretch before, would need to reach the target."""
    if run.reached_iteration is None:
        return None
    end, share = run.reached_iteration, LEVEL_SHARE * run.reached_iteration
    level, before = _level(run, end - share, end), _level(run, end - 2 * share, end - share)
    fall = before - level
    return {"level": level, "stretches_for_the_mean": (level - target) / fall if fall > 0 else math.inf}


def _cut(run: ProbeResult, end: int) -> ProbeResult:
    """``run`` as it stood at iteration ``end``."""
    return replace(run, curve=[p for p in run.curve if p[0] <= end])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--kind", default="long")
    parser.add_argument("--truth-seeds", default="1,2")
    args = parser.parse_args()
    spec = load_spec(SCENARIOS / args.kind / f"{args.scenario}.yaml")
    search, plan, _ = run_ttc(spec)
    recipe, target = search.study.warmup_config, search.target
    if recipe is None:
        raise SystemExit(f"{args.scenario}: the study ran no warm-up")
    own = _from_scratch(spec, recipe, spec.seed)
    seeds = [int(s) for s in args.truth_seeds.split(",")]
    truth = {seed: _from_scratch(spec, recipe, seed) for seed in seeds}
    reached = [run.reached_iteration for run in truth.values() if run.reached_iteration is not None]
    true_k = statistics.fmean(reached) if reached else None
    end = own.reached_iteration or own.end_iteration
    cuts, k = [], spec.budget.probe_max_iterations
    while k <= end:
        cut = _cut(own, k)
        curve = cut.curve
        reference = ReferenceCurve.fit(curve, target, samples=0)
        extrapolated = float(reference.iteration_at(target)[0]) if reference else None
        moved, backtest = drift(curve, target), hindcast(curve, target)
        cuts.append({
            "measured_iterations": k, "share_of_run": round(k / end, 3),
            "extrapolated_iterations": extrapolated,
            "over_truth": extrapolated / true_k if extrapolated is not None and true_k else None,
            "drift": moved, "hindcast_miss": backtest.miss,
            "regime": read_view_regime(cut).regime.name.lower(),
            "tests_pass": extrapolation_holds(moved, backtest),
        })
        k *= 2
    print(json.dumps(json_safe({
        "scenario": args.scenario, "target": target, "plan": plan.config.key(),
        "confidence": plan.confidence.level, "plan_point_estimate_seconds": plan.predicted.ttc_seconds,
        "warmup": recipe.key(), "warmup_end": search.study.fork.iteration if search.study.fork else None,
        "probes_seed_run_iterations": own.reached_iteration,
        "from_scratch_iterations": {f"seed {s}": run.reached_iteration for s, run in truth.items()},
        "crossing": {f"seed {s}": _crossing(run, target) for s, run in truth.items()},
        "cuts": cuts,
    }), indent=1))


if __name__ == "__main__":
    main()
