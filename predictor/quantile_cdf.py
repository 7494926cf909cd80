"""P(TTC ≤ limit) from a forecast's p10/p50/p90: the CI gate's probability (``--max-ttc``).

The forecast keeps three quantiles, not its draws. Between and beyond them the distribution is
read as log-normal piecewise: log TTC is interpolated linearly in the normal quantile z through
(p10, −z₈₀), (p50, 0), (p90, +z₈₀) and extended beyond with the nearest segment's slope. An open
p90 (the loss was seen levelling off above the target) says nothing above the median, so the
probability there stays at one half. A limit below the measured lower bound has probability 0:
the run was measured past it without reaching the target.
"""

from __future__ import annotations

import math

from scipy.stats import norm

from predictor.se_model import Z80


def normal_score(value: float, p10: float | None, p50: float, p90: float | None) -> float | None:
    """The normal quantile z of ``value`` on that reading (0 at p50, ∓z₈₀ at p10 and p90); None on
    a side with no spread (open, or collapsed onto the median)."""
    low = p10 if p10 is not None and 0 < p10 < p50 else None
    high = p90 if p90 is not None and math.isfinite(p90) and p90 > p50 else None
    x, mid = math.log(value), math.log(p50)
    if x == mid:
        return 0.0
    if x < mid:
        return None if low is None else -Z80 * (mid - x) / (mid - math.log(low))
    return None if high is None else Z80 * (x - mid) / (math.log(high) - mid)


def probability_within(limit: float, p10: float | None, p50: float | None, p90: float | None,
                       lower_bound: float | None = None) -> float:
    """P(TTC ≤ ``limit``) on a fresh seed; ``None`` quantiles are unbounded (p50 None: 0)."""
    if lower_bound is not None and limit < lower_bound:
        return 0.0
    if p50 is None or not math.isfinite(p50) or limit <= 0:
        return 0.0
    z = normal_score(limit, p10, p50, p90)
    if z is not None:
        return float(norm.cdf(z))
    if limit < p50:
        return 0.0
    return 0.5 if p90 is None else 1.0  # open above, or no spread above the median
