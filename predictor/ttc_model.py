"""Time to convergence = seconds/iteration × iterations (DESIGN.md §1), with its 80% interval.

``predict_ttc`` reads one probe on its own. ``TtcModel`` pools every probe of a study so it can
also predict configurations that were never probed: seconds/iteration from the fitted HE model
(predictor.he_model), iterations from the nearest probe of the same *dynamics class* (sync and
async_groups are one class — asynchrony is implicit momentum, Omnivore; every other strategy is
its own class), carried over

* global batch by the gradient noise scale (predictor.noise_scale, McCandlish et al. 2018) at the
  donor's unchanged step (``fixed_step_ratio``: under 2× fewer iterations however large the batch), and
* learning rate and momentum through the effective step η_eff = η/(1 − μ_total), μ_total = μ +
  (1 − 1/g) (Mitliagkas et al. 2016; Hadjis et al. 2016): iterations ∝ η_eff^(−s), with s fitted
  by log-log regression on the class's own probes when they span two or more η_eff (clipped to
  [0, 1]: a larger step never needs more than proportionally fewer iterations), else s = 1 (the
  small-step regime, where SGD's progress per step is proportional to the step).

Each carry widens the 80% interval: TRANSFER_SIGMA for a batch change, LR_SIGMA per e-fold of
η_eff (priors, not fitted to an evaluation's ground truth).

Two epochs. Before a warm-up exists every probe runs from scratch and iterations count from 0.
Once candidates fork from the warm-up's checkpoint (``ForkPoint``), a config's iterations count
from the fork, come from its rate against the warm-up's reference curve
(predictor.reference_curve), and its TTC is the lineage's: the warm-up's seconds, the fork's
measured seconds, then the remaining iterations at the fork's steady seconds/iteration. A fork of
the warm-up's own recipe (on any allocation, at a batch no smaller) whose rate is within the
loss's noise is read as the warm-up continued, carried to its global batch by the noise scale:
near the floor a short fork cannot tell batches apart, but the gradient noise it measures can.
Every fork is read beside a control, the warm-up continued (its pace is 1 by construction): where
the control's reading misses 1, every other fork's rate interval widens by the same miss.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from predictor.fork_level import level_above, level_below, lost_ground
from predictor.he_model import HeModel, seconds_per_iteration
from predictor.noise_scale import fixed_step_ratio, noise_scale, steps_ratio, total_momentum
from predictor.reference_curve import (
    ForkRate,
    ReferenceCurve,
    continued_remaining,
    fork_points,
    fork_rate,
)
from predictor.se_model import MIN_POINTS, Z80, Estimate, extrapolate, iterations_to_target
from predictor.types import Config, Prediction, ProbeResult

TRANSFER_SIGMA = 0.15  # extra log-uncertainty when iterations are carried to another batch size
LR_SIGMA = 0.5  # extra log-uncertainty per e-fold of effective learning rate carried over
OWN_CURVE_POINTS = 2 * (MIN_POINTS + 1)  # a fork ahead is read on its own curve from this many evaluations
MAX_TOTAL_MOMENTUM = 0.95  # μ + 1 − 1/g above this is treated as this (the formula is only a guide)


def predict_ttc(result: ProbeResult, target: float) -> Prediction | None:
    """Predicted TTC of the probed config; None when the probe says nothing usable."""
    speed = seconds_per_iteration(result)
    iterations = iterations_to_target(result, target)
    if speed is None or iterations is None:
        return None
    return _combine(speed, iterations, result.reached_seconds)


def _combine(speed: Estimate, iterations: Estimate, reached_seconds: float | None = None) -> Prediction:
    if reached_seconds is not None:
        # The probe itself crossed the target: its measured time is the estimate.
        ttc = reached_seconds
        return Prediction(ttc, min(speed.low * iterations.low, ttc),
                          max(speed.high * iterations.high, ttc), speed.value, iterations.value)
    high = speed.high * iterations.high if math.isfinite(iterations.high) else math.inf
    return Prediction(speed.value * iterations.value, speed.low * iterations.low, high,
                      speed.value, iterations.value)


def recipe(config: Config) -> tuple:
    """What statistical efficiency depends on besides the global batch."""
    return (config.strategy, config.groups, round(config.lr, 12), round(config.momentum, 6), config.optimizer)


def dynamics_class(config: Config) -> tuple:
    """Configs whose iterations can be carried to each other (asynchrony = momentum, Omnivore)."""
    strategy = "sync" if config.strategy == "async_groups" else config.strategy
    return (strategy, config.optimizer, tuple(sorted(config.options.items())))


def _momentum(config: Config) -> float:
    """μ_total = μ + 1 − 1/g (explicit plus implicit momentum), capped at MAX_TOTAL_MOMENTUM."""
    return min(float(total_momentum(config.momentum, config.groups)), MAX_TOTAL_MOMENTUM)


def effective_lr(config: Config) -> float:
    """η/(1 − μ_total)."""
    return config.lr / (1.0 - _momentum(config))


def noise_temperature(config: Config) -> float:
    """η_eff/B (per global sample): near its floor SGD's loss settles at a level that grows with
    this (Mandt et al., JMLR 2017: the stationary spread ∝ η/(B(1 − μ)); Smith & Le, ICLR 2018),
    so a move that raises it raises the floor. The linear scaling rule (Goyal et al., arXiv
    1706.02677) keeps it when the global batch changes."""
    return effective_lr(config) / config.global_batch


@dataclass(frozen=True)
class ForkPoint:
    """The shared warm-up every candidate forks from: its reference curve and where it ends."""

    reference: ReferenceCurve
    iteration: int
    seconds: float
    key: str  # the warm-up's last probe: the parent of every fork
    config: Config  # the warm-up's config: the reference's recipe and batch


class TtcModel:
    """Pooled HE and SE models of one study; ``predict`` works for any config of its space."""

    def __init__(
        self,
        results: Sequence[ProbeResult],
        target: float,
        cache: dict[str, Estimate | None] | None = None,
        fork: ForkPoint | None = None,
        timings: Sequence[ProbeResult] | None = None,
        gradients: Sequence[ProbeResult] | None = None,
    ) -> None:
        """``results``: one lineage per config (its segments merged) in the current epoch: from
        scratch, or forked from ``fork``. ``timings``: every probe segment, for the HE model;
        ``gradients``: the segments whose gradient norms give the noise scale (default: the
        timings; a few steps timed from scratch measure the gradient where no run spends its time).
        ``cache`` keeps each lineage's curve fit across refits, keyed by its length."""
        self.target = target
        self.fork = fork
        self.origin_iteration = fork.iteration if fork else 0
        self.origin_seconds = fork.seconds if fork else 0.0
        cache = {} if cache is None else cache
        self.results = {r.config.key(): r for r in results}
        timings = list(timings if timings is not None else results)
        self.he = HeModel.fit(timings)
        self.b_noise = noise_scale(list(gradients) if gradients is not None else timings)
        self.iterations: dict[str, Estimate] = {}  # iterations from the epoch's origin to the target
        self.out_of_reach: dict[str, Estimate] = {}  # probes whose own curve puts the target beyond reach
        self.on_reference: set[str] = set()  # forks read as the warm-up continued (their own reading: noise)
        self.behind = self._behind()  # forks whose loss ended clearly above the warm-up continued
        self.ahead = self._ahead()  # cooler forks whose loss ended clearly below it
        self._continued: Estimate | None = None  # the warm-up continued from the fork to the target
        # a fork's bound above moves with the clock, its interval with the control's miss
        clock = f"~{self._clock():.4g}±{self._control_offset():.4g}" if fork is not None else ""
        for key, r in self.results.items():
            probe = f"{key}#{r.start_iteration}+{r.iterations}@{self.origin_iteration}{clock}"
            probe += "^" if key in self.ahead else ""
            if probe not in cache:
                cache[probe] = self._steps_of(r)
            estimate = cache[probe]
            if ((estimate is None or not math.isfinite(estimate.high)) and key not in self.behind
                    and self._reads_on_reference(r)):
                estimate = self._on_reference(r.config)
                self.on_reference.add(key)
            if estimate is None or (key in self.behind and math.isfinite(estimate.value)):
                continue  # behind: no donor, and itself carried
            (self.iterations if math.isfinite(estimate.value) else self.out_of_reach)[key] = estimate

    def _continuation(self) -> ProbeResult | None:
        """The warm-up's own config forked from its end: the run continued as it is."""
        assert self.fork is not None
        continued = self.results.get(self.fork.config.key())
        return continued if continued is not None and continued.parent == self.fork.key else None

    def _open_forks(self) -> dict[str, ProbeResult]:
        """Forks of the warm-up other than its continuation that have not yet reached, diverged or
        failed: the ones a level reading can still tell something about."""
        assert self.fork is not None
        continued = self._continuation()
        return {key: r for key, r in self.results.items()
                if r.parent == self.fork.key and r is not continued and r.reached_iteration is None
                and not r.diverged and not r.error}

    def _behind(self) -> set[str]:
        """Forks whose loss ends clearly above the warm-up's continuation beside them, or above
        their own start (predictor.fork_level): whatever their rate or carry reads, nothing bounds
        how long they need, and they can win no ranking by their risk-aware score."""
        if self.fork is None:
            return set()
        noise, continued = self.fork.reference.noise, self._continuation()
        return {key for key, r in self._open_forks().items()
                if lost_ground(r, noise) or (continued is not None and level_above(r, continued, noise))}

    def _ahead(self) -> set[str]:
        """Cooler forks (a lower noise temperature than the warm-up's) whose loss ends clearly below
        the warm-up's continuation: they shed the noise the warm-up's step kept, a drop its curve
        cannot read, so the search measures them further and they are read on their own curve."""
        if self.fork is None or (continued := self._continuation()) is None:
            return set()
        noise, heat = self.fork.reference.noise, noise_temperature(self.fork.config)
        return {key for key, r in self._open_forks().items()
                if noise_temperature(r.config) < heat and level_below(r, continued, noise)}

    def _steps_of(self, result: ProbeResult) -> Estimate | None:
        """Iterations from the epoch's origin to the target for one measured lineage."""
        if result.reached_iteration is not None or self.fork is None:
            estimate = iterations_to_target(result, self.target)
            if estimate is None or self.fork is None:
                return estimate
            shift = self.origin_iteration
            return Estimate(estimate.value - shift, max(estimate.low - shift, 0.0), estimate.high - shift)
        config = result.config
        done = result.end_iteration - self.origin_iteration
        offset = 0.0 if result is self._continuation() else self._control_offset()
        rate = fork_rate(self.fork.reference, result, self.target, _momentum(config), offset)
        if rate is not None and self._reads_on_reference(result) and self._uninformative(config, rate):
            return None  # read as the warm-up continued, carried to its batch (the constructor)
        shedding = rate is not None and self.shedding_noise(config, rate.rate_high)
        if rate is None or shedding:
            own = self._own_curve(result) if config.key() in self.ahead else None
            if own is not None or rate is None:
                return own
        remaining = rate.remaining
        if shedding:  # a transient of the change: no bound above
            remaining = Estimate(remaining.value, remaining.low, math.inf)
        return Estimate(done + remaining.value, done + remaining.low, done + remaining.high)

    def _uninformative(self, config: Config, rate: ForkRate) -> bool:
        """Whether a fork's rate interval admits every rate the model's carries allow it, from the
        warm-up's own pace (1) to ``fastest_rate``: its reading then tells nothing the carry does
        not, and its point is noise. On heldout_classification (studied on seed 5; found there, so
        that scenario is no longer held out for this rule) a 50-iteration fork of the whole
        16-device node read 34.5× the warm-up's pace (80%: 0.68-68×, against a bound of 14.8×) and
        was planned at 0.093 s; the node then needed 0.354 s."""
        return rate.rate_low <= 1.0 and rate.rate_high >= self.fastest_rate(config)

    def _own_curve(self, result: ProbeResult) -> Estimate | None:
        """Iterations from the fork point to the target read on a fork's own curve, counted from
        the fork, once it ran long enough that the later half ``extrapolate`` keeps lies past the
        drop of the noise it shed (OWN_CURVE_POINTS evaluations); None before."""
        k, losses = fork_points(result)
        return extrapolate(k, losses, self.target) if k.size >= OWN_CURVE_POINTS else None

    def shedding_noise(self, config: Config, rate_high: float) -> bool:
        """Whether a fork of ``config`` whose rate may be as high as ``rate_high`` may read the drop
        of a cooler run (a lower noise temperature η_eff/B than the warm-up's) rather than a faster
        clock: faster than ``fastest_rate`` allows. Only a cooling move sheds noise; a hotter one
        read fast is taken at its word (on ``plateau`` ``ttc train``'s doubled rate at its first
        re-plan reads faster than the s ≤ 1 carry and finishes 23% sooner). The top of the reading,
        not its bottom: on heldout_classification studied on seed 11 (with the clock of ``_clock``),
        asynchronous groups at a third of the rate without momentum (60× cooler) read 1.3-47×
        beside a bound of 3.6×, were taken at their word and planned at 0.046 s, and did not reach
        the target on two truth seeds."""
        assert self.fork is not None
        cooler = noise_temperature(config) < noise_temperature(self.fork.config)
        return cooler and rate_high > self.fastest_rate(config)

    def fastest_rate(self, config: Config) -> float:
        """The fastest a fork of ``config`` can run on the warm-up's clock by the carries this model
        makes: a smaller effective step never needs fewer iterations (s ≥ 0), a larger one at most
        proportionally fewer (s ≤ 1), and a larger global batch at most what the noise scale gives
        (perfect scaling where no noise scale was measured).

        A fork read faster than that is not on a faster clock: a smaller step, or a larger batch,
        first sheds the gradient noise the warm-up's recipe kept the iterate in, and the loss drops
        at once before it slows to the new pace, which a short fork does not show. Near the floor
        that drop maps far along the reference. On a held-out workload 50-iteration forks at a fifth
        of the warm-up's step read 30-40× its rate; the one ranked first (lr 0.03 without momentum,
        and on another seed lr 0.01 at μ 0.3) then did not reach the target in 27,000 iterations,
        where the best config needs 8,000-11,000."""
        assert self.fork is not None
        reference = self.fork.config
        batch = (1.0 / self._batch_ratio(reference.global_batch, config.global_batch) if self.b_noise
                 else config.global_batch / reference.global_batch)
        return self._clock() * max(1.0, effective_lr(config) / effective_lr(reference)) * max(1.0, batch)

    def _clock(self) -> float:
        """The fastest the warm-up recipe's own pace on its reference curve may be, at least 1: the
        top of its continuation's rate where that reads clearly ahead (its 80% interval above 1). A
        curve leaving a plateau runs ahead of the fitted reference (on ``plateau`` the continuation
        read 2.06), and every fork with it. A continuation whose interval holds 1 shows no faster
        clock, and the top of it is noise: on heldout_classification studied on seed 11 a
        50-iteration one read 0.85-52×, the clock at 52 let the 16-device node at a tenth of the
        rate read 12-79× as a faster clock rather than shed noise, it was planned at 0.065 s and
        needed 2.1-2.9 s or never reached."""
        rate = self._continuation_rate
        return rate.rate_high if rate is not None and rate.rate_low > 1.0 else 1.0

    def _control_offset(self) -> float:
        """Reference iterations by which the warm-up's continuation, whose pace is 1 by construction,
        read off beyond its own 80% interval: error at the fork point that the level noise does not
        model. Every other fork from that point shares it (fork_rate spreads it over each one's
        span). On heldout_classification studied on seed 2 a 50-iteration continuation read −24×
        its own pace (80%: −44 to −5×); the 16-device node's fork beside it read 34× (3.5–64×),
        was planned, and its run took 2.9× the best config's time."""
        rate = self._continuation_rate
        if rate is None:
            return 0.0
        return max(0.0, rate.rate_low - 1.0, 1.0 - rate.rate_high) * rate.span

    @functools.cached_property
    def _continuation_rate(self) -> ForkRate | None:
        """The warm-up continued, read on its own reference: the control every fork is read beside."""
        assert self.fork is not None
        continued = self._continuation()
        return (fork_rate(self.fork.reference, continued, self.target, _momentum(continued.config))
                if continued is not None else None)

    def _reads_on_reference(self, result: ProbeResult) -> bool:
        """A fork of the warm-up's own recipe (its rate, momentum and strategy) at a global batch at
        least the warm-up's, from the warm-up itself, which neither diverged nor failed.

        Not a smaller batch: at a fixed step, SGD's loss floor rises with the gradient's variance,
        ∝ 1/B (Mandt et al. 2017), which the noise scale's steps ratio (a law for a step tuned
        per batch) does not see. On ``throttled_node`` half the nodes at the same rate, carried
        so, were predicted to finish 27% sooner and needed 4.5× the iterations."""
        return (self.fork is not None and result.parent == self.fork.key and not result.diverged
                and not result.error and result.reached_iteration is None
                and recipe(result.config) == recipe(self.fork.config)
                and dynamics_class(result.config) == dynamics_class(self.fork.config)
                and result.config.global_batch >= self.fork.config.global_batch)

    def _on_reference(self, config: Config) -> Estimate:
        """Iterations from the fork point to the target of ``config``, a fork of the warm-up's
        recipe whose own progress is within the loss's noise (no reading, one open above, or one
        that admits every rate the carries allow: ``_uninformative``): the warm-up continued (rate 1 by
        construction), carried to the fork's global batch by the noise scale. Near the floor a
        short fork cannot tell batches apart (on ``regression`` a 50-iteration continuation of the
        warm-up read 36× its real rate), but the gradient noise it measures can: the same step
        on a less noisy gradient."""
        assert self.fork is not None
        if self._continued is None:  # one bootstrap for every fork read this way
            self._continued = continued_remaining(self.fork.reference, self.fork.iteration, self.target)
        return self.carry(self._continued, self.fork.config, config)

    def speed(self, config: Config) -> Estimate | None:
        """Measured mean s/it for a probed config (interval from the HE fit and its timing's
        spread), else the HE model."""
        if self.he is None:
            return None
        result = self.results.get(config.key())
        if result is not None and result.iterations > 0:
            mean, sigma = result.steady_seconds_per_iteration, self.he.sigma_of(config)
            return Estimate(mean, mean * math.exp(-Z80 * sigma), mean * math.exp(Z80 * sigma))
        return self.he.predict([config])[0]

    def _batch_ratio(self, batch_from: float, batch_to: float) -> float:
        if self.b_noise is None:
            return 1.0
        return float(steps_ratio(batch_from, batch_to, self.b_noise))

    def lr_exponent(self, cls: tuple) -> float:
        """s in iterations ∝ η_eff^(−s), from the class's probes (batch-normalised), else 1."""
        points = [
            (math.log(effective_lr(r.config)),
             math.log(self.iterations[key].value / self._batch_ratio(r.config.global_batch, 1024)))
            for key, r in self.results.items()
            if key in self.iterations and dynamics_class(r.config) == cls and self.iterations[key].value > 0
        ]
        xs = np.array([x for x, _ in points])
        if len(points) < 2 or np.ptp(xs) < 0.1:
            return 1.0
        slope = float(np.polyfit(xs, np.array([y for _, y in points]), 1)[0])
        return float(np.clip(-slope, 0.0, 1.0))

    def steps(self, config: Config) -> Estimate | None:
        """Iterations to the target (``measured_or_carried``), open above for a fork ``behind``."""
        estimate = self.measured_or_carried(config)
        if estimate is not None and config.key() in self.behind:
            return Estimate(estimate.value, estimate.low, math.inf)
        return estimate

    def measured_or_carried(self, config: Config) -> Estimate | None:
        """Iterations to the target: the probe's own, else the nearest same-class probe's, carried
        over batch (noise scale) and effective learning rate. A probe whose own curve levels off
        above the target is not rescued by a carry: its measurement outranks a neighbour's.

        Across a batch change the interval spans at least what McCandlish et al.'s model admits
        whatever the noise scale: from perfect scaling (steps × B_from/B_to) to none (steps
        unchanged). A noise scale read from one pair of batch sizes is too uncertain to narrow it."""
        if config.key() in self.iterations:
            return self.iterations[config.key()]
        if config.key() in self.out_of_reach:
            return self.out_of_reach[config.key()]
        cls, eff = dynamics_class(config), effective_lr(config)
        donors = [
            (abs(math.log(effective_lr(r.config) / eff))
             + abs(math.log(r.config.global_batch / config.global_batch))
             + (0.0 if recipe(r.config) == recipe(config) else 1e-3), key)
            for key, r in self.results.items()
            if key in self.iterations and dynamics_class(r.config) == cls
        ]
        if not donors:
            return None
        donor_key = min(donors)[1]
        return self.carry(self.iterations[donor_key], self.results[donor_key].config, config)

    def carry(self, estimate: Estimate, donor: Config, config: Config) -> Estimate:
        """``estimate`` (iterations of ``donor``, same dynamics class) carried to ``config`` over
        global batch and effective learning rate, its interval widened for each carry."""
        cls, eff = dynamics_class(config), effective_lr(config)
        lr_log = math.log(effective_lr(donor) / eff)
        batch_from, batch_to = donor.global_batch, config.global_batch
        ratio = fixed_step_ratio(batch_from, batch_to, self.b_noise) if self.b_noise else 1.0
        lr_ratio = math.exp(self.lr_exponent(cls) * lr_log)
        ratio *= lr_ratio
        bounds = tuple(b * lr_ratio for b in sorted((1.0, donor.global_batch / config.global_batch)))
        batch_changed = donor.global_batch != config.global_batch
        sigma = LR_SIGMA * abs(lr_log) + (TRANSFER_SIGMA if batch_changed else 0.0)
        widen = math.exp(Z80 * sigma)
        low, high = estimate.low * ratio / widen, estimate.high * ratio * widen
        if batch_changed:  # the noise scale is one estimate; the steps' ratio is bounded, not known
            low, high = min(low, estimate.low * bounds[0]), max(high, estimate.high * bounds[1])
        return Estimate(estimate.value * ratio, low, high)

    def predict(self, config: Config) -> Prediction | None:
        speed, steps = self.speed(config), self.steps(config)
        if speed is None or steps is None:
            return None
        result = self.results.get(config.key())
        origin_k, origin_s = self.origin_iteration, self.origin_seconds
        if result is None:  # carried: the whole epoch at the predicted speed
            evidence = max((r.end_iteration for r in self.results.values()), default=0)
            prediction = _combine(speed, steps)
            return Prediction(origin_s + prediction.ttc_seconds, origin_s + prediction.ttc_low,
                              origin_s + prediction.ttc_high, speed.value, origin_k + steps.value,
                              float(evidence))
        if result.reached_seconds is not None and result.reached_iteration is not None:
            # measured; the interval spans the evaluations around the crossing
            low = result.reached_seconds - speed.value * (steps.value - steps.low)
            return Prediction(result.reached_seconds, max(low, 0.0), result.reached_seconds, speed.value,
                              float(result.reached_iteration), float(result.reached_iteration))
        # measured up to its end; the rest at its steady speed
        done = result.end_iteration - origin_k
        rest = Estimate(max(steps.value - done, 0.0), max(steps.low - done, 0.0), max(steps.high - done, 0.0))
        return finished(result, speed, rest)

    def predict_many(self, configs: Sequence[Config]) -> np.ndarray:
        """Predicted TTC of each config (inf where the models say nothing)."""
        out = [self.predict(c) for c in configs]
        return np.array([p.ttc_seconds if p is not None else math.inf for p in out])

    def score_many(self, configs: Sequence[Config]) -> np.ndarray:
        """Risk-aware score of each config (see ``conservative``); inf where nothing is predicted."""
        out = [self.predict(c) for c in configs]
        return np.array([conservative(p) if p is not None else math.inf for p in out])


def finished(result: ProbeResult, speed: Estimate, rest: Estimate) -> Prediction:
    """TTC of a lineage measured up to ``result``'s end that needs ``rest`` more iterations at
    ``speed``: its measured seconds, then the rest."""
    end = result.end_seconds
    high = end + speed.high * rest.high if math.isfinite(rest.high) else math.inf
    return Prediction(end + speed.value * rest.value, end + speed.low * rest.low, high,
                      speed.value, result.end_iteration + rest.value, float(result.end_iteration))


RISK_WEIGHT = 0.5  # weight of the interval's upper end in the ranking score (log scale)


def conservative(prediction: Prediction) -> float:
    """Ranking score: geometric blend of the point estimate and the 80% upper end.

    A config predicted fast only by an uncertain extrapolation (a wide or unbounded interval)
    ranks behind one that is nearly as fast but well measured; a lucky probe cannot win alone.
    """
    point, high = prediction.ttc_seconds, prediction.ttc_high
    if not (math.isfinite(point) and math.isfinite(high)):
        return math.inf
    log_point, log_high = math.log(max(point, 1e-300)), math.log(max(high, 1e-300))
    return math.exp((1 - RISK_WEIGHT) * log_point + RISK_WEIGHT * log_high)
