"""The plan as the study page draws it: a ranking whose reasons never compare numbers nobody has.

predictor.ranking explains each lost config against the plan by point values. When every config's
prediction lies beyond the evidence (no supported number anywhere, so the page shows none), those
points are extrapolations past what any probe measured, and "12.3 s against the plan's 9.8 s" would
read as a finding. The page then says why the row lost in those terms instead.
"""

from __future__ import annotations

from typing import Any

BEYOND_ALL = ("beyond evidence, as is every config of this study: no point prediction is compared; "
              "the plan is the best measured config")


def _unsupported(row: dict[str, Any]) -> bool:
    return (row.get("predicted") or {}).get("ttc_seconds") is None


def shown_plan(plan: dict[str, Any] | None) -> dict[str, Any] | None:
    """``plan`` with the lost rows' reasons replaced when no ranked config has a supported number."""
    rows = (plan or {}).get("ranking") or []
    predicted = [row for row in rows if row.get("predicted")]
    if not predicted or not all(_unsupported(row) for row in predicted):
        return plan
    ranking = [{**row, "reason": BEYOND_ALL}
               if row.get("status") in ("lost", "pruned") and row.get("predicted") else row for row in rows]
    return {**plan, "ranking": ranking}
