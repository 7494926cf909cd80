"""Which regime a loss curve is in at its end: the evidence a long-horizon prediction rests on.

A long run spends its time in the slow phase of its curve; a short probe may end inside the
initial transient (a fast, roughly exponential drop) or on a plateau (a saddle the run has not
escaped yet). Neither may be extrapolated: a power law fitted to a transient under-predicts the
iterations many-fold, and a plateau looks like a floor (issue 11). The test compares the drops of
the curve over the last two doublings of the iteration count, [k/4, k/2] and [k/2, k], each read
from a least-squares line in log k (robust to single noisy evaluations):

* a power law l − c ∝ k^(−p) drops by the ratio 2^(−p) from one doubling to the next, and the
  slow phases of real curves have p ≲ 1.5 (Kaplan et al., arXiv 2001.08361; Hestness et al.,
  arXiv 1712.00409), so a ratio ≥ STEADY_RATIO = 2^(−1.5) is a curve in its slow regime;
* a smaller ratio is a curve that falls faster than any such power law: a transient;
* a ratio above ACCELERATING_RATIO is a curve that speeds up (momentum building up, a plateau
  being escaped): a power law fitted to it would predict far too many iterations;
* a last drop within two standard errors of zero (a least-squares line in log k) is flat: a
  plateau or a floor. Only a flat curve whose fitted floor is significant (predictor.se_model's
  F-test) is evidence that the target is out of reach; otherwise it is a plateau, and the run may
  still escape it.

A transient's end can look like a power law over two doublings, so a curve is only called steady
when the same test, run on the curve cut at half its length, was steady too with a ratio that
agrees within CONSISTENT_RATIO: the regime has held for three doublings.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

from predictor.lineages import merge
from predictor.se_model import Z80, noise_floor
from predictor.types import ProbeResult

STEADY_RATIO = 2.0 ** -1.5  # the drop ratio per doubling of a power law with p = 1.5
MIN_POINTS = 8  # evaluations needed in [k/4, k] to tell the regimes apart
ACCELERATING_RATIO = 1.5  # a power law's ratio is < 1; above this (noise allowed) it speeds up
NOISE_MULTIPLE = 2.0  # a drop within this many standard errors of zero is no drop
CONSISTENT_RATIO = 2.0  # the steady ratio at k and at k/2 agree within this factor (noise)


class Regime(enum.Enum):
    TOO_SHORT = "too_short"
    TRANSIENT = "transient"
    STEADY = "steady"
    ACCELERATING = "accelerating"
    FLAT = "flat"


@dataclass(frozen=True)
class RegimeReading:
    """The regime at the curve's end and the figures it was read from (for the reason shown)."""

    regime: Regime
    early_drop: float  # smoothed loss drop over [k/4, k/2]
    late_drop: float  # ... over [k/2, k]
    noise: float  # standard error of ``late_drop``

    @property
    def ratio(self) -> float:
        return self.late_drop / self.early_drop if self.early_drop > 0 else math.inf

    def describe(self) -> str:
        if self.regime is Regime.TOO_SHORT:
            return "too few evaluations to tell the curve's regime"
        figures = f"loss drops {self.early_drop:.3g} then {self.late_drop:.3g} over the last two doublings"
        meaning = {
            Regime.TRANSIENT: "in a transient (falls faster than a power law, or its rate still changes)",
            Regime.STEADY: "in its slow, power-law regime",
            Regime.ACCELERATING: "speeding up (momentum building up, or a plateau being escaped)",
            Regime.FLAT: "flat within its noise band (a plateau or a floor)",
        }[self.regime]
        return f"{meaning}: {figures}"


def _drop(k: np.ndarray, losses: np.ndarray, low: float, high: float) -> tuple[float, float]:
    """Loss drop over [low, high] from a least-squares line in log k, and its standard error."""
    inside = (k >= low) & (k <= high)
    x, y = np.log(k[inside]), losses[inside]
    if len(x) < 3 or np.ptp(x) <= 0:
        return 0.0, math.inf
    fit = stats.linregress(x, y)
    width = math.log(high / low)
    error = fit.stderr if math.isfinite(fit.stderr) else 0.0  # a constant curve: no scatter at all
    return -fit.slope * width, error * width


def read_regime(iterations: np.ndarray, losses: np.ndarray) -> RegimeReading:
    """The regime of the curve (iterations counted from the start of its lineage) at its end."""
    keep = np.isfinite(losses) & (iterations > 0)
    k, losses = iterations[keep].astype(float), losses[keep].astype(float)
    reading = _read_end(k, losses)
    if reading.regime is not Regime.STEADY:
        return reading
    earlier = _read_end(k[k <= k[-1] / 2], losses[k <= k[-1] / 2])
    agreement = reading.ratio / earlier.ratio if earlier.ratio > 0 else math.inf
    consistent = earlier.regime is Regime.STEADY and 1 / CONSISTENT_RATIO <= agreement <= CONSISTENT_RATIO
    if consistent:
        return reading
    return RegimeReading(Regime.TRANSIENT, reading.early_drop, reading.late_drop, reading.noise)


def _read_end(k: np.ndarray, losses: np.ndarray) -> RegimeReading:
    if len(k) == 0:
        return RegimeReading(Regime.TOO_SHORT, 0.0, 0.0, 0.0)
    end = k[-1]
    if int((k >= end / 4).sum()) < MIN_POINTS:
        return RegimeReading(Regime.TOO_SHORT, 0.0, 0.0, 0.0)
    early, _ = _drop(k, losses, end / 4, end / 2)
    late, late_error = _drop(k, losses, end / 2, end)
    if late <= NOISE_MULTIPLE * late_error:
        regime = Regime.FLAT  # no significant fall over the last doubling
    elif early > 0 and late / early < STEADY_RATIO:
        regime = Regime.TRANSIENT
    elif early <= 0 or late / early > ACCELERATING_RATIO:
        regime = Regime.ACCELERATING
    else:
        regime = Regime.STEADY
    return RegimeReading(regime, early, late, late_error)


def _iterations_and_losses(curve: list[tuple[int, float, float]]) -> tuple[np.ndarray, np.ndarray]:
    return np.array([p[0] for p in curve], dtype=float), np.array([p[2] for p in curve], dtype=float)


def read_view_regime(view: ProbeResult) -> RegimeReading:
    """``read_regime`` on a probe's (or a merged lineage's) curve."""
    return read_regime(*_iterations_and_losses(view.curve))


def went_backwards(chain: list[ProbeResult]) -> bool:
    """A lineage lost ground: its last two doublings both ended above the lowest level it had read
    before them, by more than the noise it showed there can explain (80%, two readings). The noise
    is read before the rise, whose own climb would pass for noise.

    One doubling that ends high is a bump, not lost ground: a curve in its transient may rise and
    recover, and no knob is dropped in the transient (issue 34 item 8, applied to devices as to
    rates). On heldout_digits_cnn's study seed 13 a one-device lineage read 0.059, then 0.081 after
    100 iterations more, and was given up for four devices that needed about 40% more iterations.
    An unstable device diverges or stays high: digits-mlp at lr 0.1 on one device (fast_network,
    seed 0) read 0.34, 0.30, 0.60, 0.13, then diverged, and its node warmed up instead."""
    if len(chain) < 3:
        return False
    before = chain[:-2]
    noise = noise_floor(*_iterations_and_losses(merge(before).curve))
    lowest = min(segment.final_loss for segment in before)
    return min(chain[-2].final_loss, chain[-1].final_loss) - lowest > Z80 * math.sqrt(2) * noise
