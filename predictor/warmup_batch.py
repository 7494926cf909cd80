"""The one-device warm-up's batch (predictor.search, stage 2).

The warm-up moves the model past its initial transient, and a transient is moved by updates. At
the same step a less noisy gradient needs no more updates (McCandlish et al. 2018: S =
S_min(1 + B_noise/B), non-increasing in B), and one device pays for a larger batch only in
compute, which is small while its step is latency-bound (a small model: on ``regression`` one
device's step at batch 64 took 1.3% longer than at 32, and reached the target 1.3× sooner). So
the warm-up takes the space's largest batch when a probe of each shows its step at most
LARGER_BATCH_SLACK slower; where compute dominates, the recipe's batch is kept.
"""

from __future__ import annotations

from predictor.types import Config, ProbeResult, SearchSpace

LARGER_BATCH_SLACK = 0.05  # the largest batch's step may be at most this much slower


def largest_batch(config: Config, space: SearchSpace) -> Config | None:
    """``config`` at the space's largest batch; None when it already runs it."""
    largest = config.replace(batch_size=max(space.batch_sizes))
    return None if largest.key() == config.key() else largest


def takes_larger(small: ProbeResult | None, large: ProbeResult | None) -> bool:
    """Both probes measured, the larger batch alive, and its step within the slack."""
    if small is None or large is None or large.diverged or large.error:
        return False
    return large.steady_seconds_per_iteration <= (1 + LARGER_BATCH_SLACK) * small.steady_seconds_per_iteration
