"""Regret against the best config anyone found (issue 34), not only the best of one grid.

forecast_eval's per-plan ``regret`` divides by its scenario's grid best (predictor_eval), so a
scenario without a grid has none, and a plan worse than another study seed's plan of the same
scenario goes unscored: heldout_digits_cnn studied on seed 13 planned four devices and ran about
twice as long as seed 0's one-device plan, with no regret shown. Here the yardstick is the
lowest mean truth among every plan the results ran on the scenario (any study seed) and its grid's
best, compared on the truth seeds they all share (the grid's, where it has one).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any


def regret_found(results: list[dict[str, Any]], grids: Mapping[str, dict[str, Any] | None]) -> dict[str, Any]:
    """Median and worst regret of the long plans in ``results`` against the best found on their
    scenario; ``grids``: each scenario's predictor_eval entry (``best_known_ttc`` over its
    ``truth_seeds``), None where it has no grid. A plan with a truth run that never reached on
    the compared seeds is counted apart (``unreached``): it has no mean to divide."""
    long = [r for r in results if r["kind"] == "long"]
    regrets: list[tuple[float, str]] = []
    unreached = 0
    for name in sorted({r["scenario"] for r in long}):
        rows = [r for r in long if r["scenario"] == name]
        grid = grids.get(name)
        seeds = set.intersection(*({s["seed"] for s in r["scores"]} for r in rows))
        on_grid = grid is not None and set(grid["truth_seeds"]) <= seeds  # else its seeds are not ours
        if on_grid:
            seeds = set(grid["truth_seeds"])
        means = [_mean_truth(r, seeds) for r in rows]
        known = [m for m in means if m is not None] + ([grid["best_known_ttc"]] if on_grid else [])
        unreached += sum(m is None for m in means)
        if not known:
            continue
        best = min(known)
        regrets += [(m / best, f"{name} on study seed {r['probe_seed']}")
                    for r, m in zip(rows, means, strict=True) if m is not None]
    worst = max(regrets, default=None)
    return {"median": statistics.median(v for v, _ in regrets) if regrets else None,
            "worst": worst[0] if worst else None, "worst_plan": worst[1] if worst else None,
            "plans": len(regrets), "unreached": unreached,
            "by_plan": {plan: value for value, plan in regrets}}


def _mean_truth(row: dict[str, Any], seeds: set[int]) -> float | None:
    """The plan's mean TTC over ``seeds`` (None if a run there never reached the target)."""
    truths = [s["truth"] for s in row["scores"] if s["seed"] in seeds]
    return statistics.mean(truths) if truths and None not in truths else None
