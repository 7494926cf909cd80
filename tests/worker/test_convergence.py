"""The convergence rule shared by probes and runs."""

from __future__ import annotations

import math

from worker.convergence import ConvergenceRule


def test_first_crossing_confirmed_by_next_evaluation() -> None:
    rule = ConvergenceRule(target=1.0)
    history = [(0, 0.0, 3.0), (10, 1.0, 0.9), (20, 2.0, 1.1), (30, 3.0, 0.95), (40, 4.0, 0.8)]
    stops = [rule.observe(*point) for point in history]
    assert stops == [False, False, False, False, True]
    assert rule.reached == (30, 3.0)  # the single dip at 10 was not confirmed


def test_divergence_stops() -> None:
    rule = ConvergenceRule(target=0.1)
    assert not rule.observe(0, 0.0, 2.0)
    assert rule.observe(10, 1.0, math.nan)
    assert rule.diverged and rule.reached is None
