"""Hardware efficiency: seconds per iteration of any configuration, fitted to probe timings.

Pollux's throughput model (Qiao et al., OSDI 2021, §3.2; adaptdl ``goodput.py``) extended to the
strategies of DESIGN.md §4. A device computes b samples in T_comp = α_c + β_c·b; gradient
communication T_comm overlaps with it, combined as T = (T_comp^γ + T_comm^γ)^(1/γ), γ ≥ 1
(γ = 1: no overlap, γ → ∞: perfect overlap). Communication follows the α–β cost of a ring
all-reduce over W workers (Thakur et al., IJHPCA 2005):

    ring(W) = 2(W−1)/W · θ + 2(W−1) · λ     (θ: seconds to move the model over the link, λ: latency)

with (θ, λ) of the intra-node link when the ring stays inside a node, of the inter-node link
otherwise. Per strategy (N nodes × D devices, g groups):

    sync          T_comm = ring(N·D)
    dbs           as sync with T_comp × ρ, ρ ≤ 1 the balance gained on uneven devices (Ye et al. 2020)
    hsgd          T_comm = 2[(D−1)/D·θ_in + (D−1)·λ_in] + ring_out(N), T_comp → max(T_comp, t_read):
                  each node reads its contiguous shard while it computes (Wang et al. 2020)
    async_groups  cycle = overlap(T_comp, ring(N·D/g)) + 2·t_ps,  T = max(cycle/g, t_ps),
                  t_ps = θ_out + λ_out: a push serialised at the parameter server (Omnivore)
    daso          T = T_local + max(0, T_global − S·T_local)/k, T_local = overlap(T_comp, ring_in(D)),
                  T_global = ring_out(N) + θ_in + λ_in, S = 2 steps to hide them (Heat's default),
                  k the effective steps between global syncs (Coquelin et al. 2022; 4 in Heat)

Devices of one allocation may slow each other's compute (shared host cores, memory bandwidth, the
host's input pipeline): T_comp → κ·T_comp, κ ≥ 1, on every allocation of more than one device. One
batch size on such an allocation cannot split κ (a cost in proportion to the batch) from the links
(a cost per step); two can. On Ray on this repository's 2-core machine κ ≈ 1.3: charlm's second
device added 35% at b64 and 50% at b16, a step cost the links alone would have kept fixed.

No link speed is read from anywhere: θ and λ are learned from step timings. Parameters that the
probes cannot identify are pinned (α_c = 0 with one batch size; κ = 1 until an allocation of more
than one device ran two batch sizes beside one device; the intra link = the inter link
when no probe communicates inside a node only, and the reverse; t_read = 0, k = 4, ρ = 1 until
hsgd, daso, dbs were probed across nodes). Effects the topology cannot
explain (slow nodes, a strategy's balance) are kept as a multiplicative correction per
(strategy, nodes) measured, then per strategy, then per nodes.

The 80% interval is earned out of sample: a timed config's is the fit's log residual with its
timing's standard error; an untimed one's is at least the error of refits that left out each
timed config, or each timed allocation, on what they left out (the residual alone hides a misfit
that the corrections absorb where they were measured).

A backend's cost per call (Ray's round trip to the device actors) is paid once per chunk of
steps up to the next evaluation, not per step, and is not in a probe's clock: it is its own term,
``call_seconds`` (the median over probes of their seconds per call), never folded into T_comp.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import cached_property
from typing import NamedTuple

import numpy as np
from scipy.optimize import least_squares

from predictor.daso_defaults import MAX_GLOBAL_SKIPS
from predictor.se_model import INTERVAL, Z80, Estimate
from predictor.step_times import settled, steady_spread
from predictor.types import Config, ProbeResult

DASO_SKIP = float(MAX_GLOBAL_SKIPS // 2)  # Heat's global_skip after its warm-up
DASO_WAIT = int(DASO_SKIP) // 2  # Heat's batches_to_wait
MIN_LOG_SIGMA = 0.03


class HeParams(NamedTuple):
    """Fitted constants (seconds); fields carry the formula they enter."""

    alpha_c: float  # T_comp = alpha_c + beta_c·b
    beta_c: float
    theta_intra: float  # ring_in(W) = 2(W−1)/W·theta_intra + 2(W−1)·lat_intra
    lat_intra: float
    theta_inter: float  # ring_out(W) = 2(W−1)/W·theta_inter + 2(W−1)·lat_inter
    lat_inter: float
    gamma: float  # T = (T_comp^γ + T_comm^γ)^(1/γ)
    read: float  # hsgd: T_comp → max(T_comp, read)
    daso_skip: float  # daso: T = T_local + max(0, T_global − S·T_local)/daso_skip
    balance: float  # dbs: T_comp → balance·T_comp
    contention: float = 1.0  # κ: T_comp → κ·T_comp on an allocation of more than one device


class Topology(NamedTuple):
    """Configurations as arrays, one entry per configuration (vectorised evaluation)."""

    strategy: np.ndarray  # (C,) str
    nodes: np.ndarray  # (C,) N
    devices_per_node: np.ndarray  # (C,) D
    batch: np.ndarray  # (C,) b per device
    groups: np.ndarray  # (C,) g

    @classmethod
    def of(cls, configs: Sequence[Config]) -> Topology:
        return cls(
            np.array([c.strategy for c in configs]),
            np.array([c.nodes for c in configs], float),
            np.array([c.devices_per_node for c in configs], float),
            np.array([c.batch_size for c in configs], float),
            np.array([c.groups for c in configs], float),
        )


def _ring(workers: np.ndarray, theta: float, latency: float) -> np.ndarray:
    """2(W−1)/W·θ + 2(W−1)·λ; zero for a single worker."""
    w = np.maximum(workers, 1.0)
    return 2.0 * (w - 1.0) / w * theta + 2.0 * (w - 1.0) * latency


def _overlap(compute: np.ndarray, communicate: np.ndarray, gamma: float) -> np.ndarray:
    """Pollux's (T_comp^γ + T_comm^γ)^(1/γ)."""
    return (compute**gamma + communicate**gamma) ** (1.0 / gamma)


def step_seconds(params: HeParams, topo: Topology) -> np.ndarray:
    """Seconds per iteration of every configuration in ``topo`` (before corrections)."""
    p = params
    n, d, g = topo.nodes, topo.devices_per_node, topo.groups
    compute = (p.alpha_c + p.beta_c * topo.batch) * np.where(n * d > 1, p.contention, 1.0)
    spans = n > 1

    def ring(workers: np.ndarray, crosses: np.ndarray) -> np.ndarray:
        return np.where(
            crosses, _ring(workers, p.theta_inter, p.lat_inter), _ring(workers, p.theta_intra, p.lat_intra)
        )

    flat = _overlap(compute, ring(n * d, spans), p.gamma)
    hier_comm = 2.0 * ((d - 1.0) / d * p.theta_intra + (d - 1.0) * p.lat_intra)
    hier = _overlap(np.maximum(compute, p.read), hier_comm + _ring(n, p.theta_inter, p.lat_inter), p.gamma)
    group_size = n * d / g
    t_ps = p.theta_inter + p.lat_inter
    cycle = _overlap(compute, ring(group_size, group_size > d), p.gamma) + 2.0 * t_ps
    asynchronous = np.maximum(cycle / g, t_ps)
    local = _overlap(compute, _ring(d, p.theta_intra, p.lat_intra), p.gamma)
    global_sync = np.where(spans, _ring(n, p.theta_inter, p.lat_inter) + p.theta_intra + p.lat_intra, 0.0)
    daso = local + np.maximum(0.0, global_sync - DASO_WAIT * local) / p.daso_skip
    balanced = _overlap(p.balance * compute, ring(n * d, spans), p.gamma)
    s = topo.strategy
    return np.select(
        [s == "hsgd", s == "async_groups", s == "daso", s == "dbs"], [hier, asynchronous, daso, balanced],
        default=flat,
    )


def allocation(config: Config) -> tuple[str, int, int, int]:
    """What a config's speed depends on besides its batch: how its devices are laid out and
    communicate (strategy, nodes, devices per node, groups). Until a probe ran an allocation, its
    speed is read from links fitted on other patterns."""
    return config.strategy, config.nodes, config.devices_per_node, config.groups


def he_key(config: Config) -> tuple:
    """What a config's seconds/iteration depends on: its allocation and its batch (not its rate)."""
    return (*allocation(config), config.batch_size)


# -- fitting ---------------------------------------------------------------------------------------
_LOWER = np.log([1e-9, 1e-12, 1e-12, 1e-12, 1e-12, 1e-12, 1.0, 1e-12, 1.0, 0.1, 1.0])
_UPPER = np.log([1e3, 1e2, 1e3, 1e1, 1e3, 1e1, 10.0, 1e3, 16.0, 1.0, 4.0])


def _pinned(topo: Topology) -> dict[int, int | float]:
    """Which log-parameters the data cannot identify → pinned to a value or tied to another index.

    An int value ties a parameter to another parameter's index; a float pins it in log space.
    """
    pins: dict[int, int | float] = {}
    if np.unique(topo.batch).size < 2:
        pins[0] = float(_LOWER[0])  # α_c: one batch size cannot split α_c from β_c·b
    s, n, d = topo.strategy, topo.nodes, topo.devices_per_node
    uses_inter = np.any(n > 1)
    group_size = n * d / topo.groups
    uses_intra = np.any(((s == "hsgd") | (s == "daso")) & (d > 1)) or np.any(
        (s == "async_groups") & (group_size > 1) & (group_size <= d)
    ) or np.any((n == 1) & (d > 1))
    if not uses_intra:
        pins.update({2: 4, 3: 5})
    elif not uses_inter:
        pins.update({4: 2, 5: 3})
    if not np.any(s == "hsgd"):
        pins[7] = float(_LOWER[7])
    if not np.any((s == "daso") & (n > 1)):
        pins[8] = math.log(DASO_SKIP)
    if not np.any(s == "dbs"):
        pins[9] = 0.0
    shared = n * d > 1
    if np.all(shared) or np.unique(topo.batch[shared]).size < 2:
        pins[10] = 0.0  # κ: needs one device beside a shared allocation at two batch sizes
    return pins


def _expand(free: np.ndarray, pins: dict[int, int | float], size: int) -> np.ndarray:
    full = np.empty(size)
    free_index = [i for i in range(size) if i not in pins]
    full[free_index] = free
    for i, pin in pins.items():
        if isinstance(pin, float):
            full[i] = pin
    for i, pin in pins.items():
        if isinstance(pin, int):
            full[i] = full[pin]
    return full


def fit_params(topo: Topology, seconds: np.ndarray) -> tuple[HeParams, float]:
    """Least squares on log seconds/iteration with log-space bounds; returns (params, σ_log)."""
    pins = _pinned(topo)
    size = len(HeParams._fields)
    free_index = [i for i in range(size) if i not in pins]
    per_sample = float(np.median(seconds / topo.batch))
    start = np.log([per_sample * 4, per_sample * 0.5, per_sample, per_sample * 1e-2, per_sample,
                    per_sample * 1e-2, 2.0, per_sample, DASO_SKIP, 0.9, 1.1])
    start = np.clip(start, _LOWER + 1e-6, _UPPER - 1e-6)
    observed = np.log(seconds)

    def residuals(free: np.ndarray) -> np.ndarray:
        params = HeParams(*np.exp(_expand(free, pins, size)))
        return np.log(np.maximum(step_seconds(params, topo), 1e-300)) - observed

    fit = least_squares(residuals, start[free_index], bounds=(_LOWER[free_index], _UPPER[free_index]))
    params = HeParams(*(float(v) for v in np.exp(_expand(fit.x, pins, size))))
    dof = max(len(seconds) - len(free_index), 1)
    sigma = math.sqrt(float(np.sum(fit.fun**2)) / dof)
    return params, max(sigma, MIN_LOG_SIGMA)


class HeModel:
    """Seconds/iteration for any config: the fitted topology model times a measured correction."""

    def __init__(self, params: HeParams, sigma: float, corrections: dict[tuple, float],
                 call_seconds: float = 0.0, timings: Sequence[ProbeResult] = ()) -> None:
        self.params = params
        self.sigma = sigma
        self.corrections = corrections
        self.call_seconds = call_seconds  # per backend call (one per evaluation chunk); 0: none seen
        self.timings = tuple(timings)  # what it was fitted to, for its out-of-sample spread
        self.measured = timing_errors(self.timings)  # he_key → the log standard error of its timing
        self.rerun = rerun_spread(self.timings)  # log-sd of a config's s/it from one run to the next
        self.timed_allocations = {allocation(r.config) for r in self.timings}

    @classmethod
    def fit(cls, results: Sequence[ProbeResult]) -> HeModel | None:
        usable = [r for r in results if r.iterations > 0 and r.seconds > 0 and not r.error]
        if not usable:
            return None
        topo = Topology.of([r.config for r in usable])
        seconds = np.array([r.steady_seconds_per_iteration for r in usable])
        params, sigma = fit_params(topo, seconds)
        log_residual = np.log(seconds / step_seconds(params, topo))
        corrections: dict[tuple, list[float]] = {}
        for r, res in zip(usable, log_residual, strict=True):
            for key in (("sn", r.config.strategy, r.config.nodes), ("s", r.config.strategy),
                        ("n", r.config.nodes)):
                corrections.setdefault(key, []).append(float(res))
        per_call = [r.call_seconds / r.calls for r in usable if r.calls > 0]
        call_seconds = float(np.median(per_call)) if per_call else 0.0
        means = {k: float(np.mean(v)) for k, v in corrections.items()}
        return cls(params, sigma, means, call_seconds, usable)

    def _correction(self, config: Config) -> float:
        for key in (("sn", config.strategy, config.nodes), ("s", config.strategy), ("n", config.nodes)):
            if key in self.corrections:
                return self.corrections[key]
        return 0.0

    def point(self, configs: Sequence[Config]) -> np.ndarray:
        """Seconds/iteration of each config, without an interval."""
        base = step_seconds(self.params, Topology.of(configs))
        return base * np.exp([self._correction(c) for c in configs])

    @cached_property
    def held_out_sigma(self) -> dict[str, float | None]:
        """The log error of the model on timings it did not see (None: fewer than two to leave
        out): refitted without each config's timings ("batch": its allocation ran other batches)
        and without each allocation's ("allocation"), predicting them. The fit's own residuals
        cannot show it: on Ray they were 4–11% while refits missed a config by 3–29% and an
        allocation by 11–63%."""
        return {"batch": held_out_log_error(self, he_key),
                "allocation": held_out_log_error(self, allocation)}

    def predict(self, configs: Sequence[Config]) -> list[Estimate]:
        """Seconds/iteration with an 80% interval exp(±z·σ): σ the fit's log residual for a config
        timed, with its timing's own standard error; for one that was not, at least the held-out
        error of its kind (a batch its allocation never ran, or an allocation no timing ran) and
        the residual (twice it for an untimed allocation)."""
        out = []
        for config, value in zip(configs, self.point(configs), strict=True):
            sigma = self.sigma_of(config)
            v = float(value)
            out.append(Estimate(v, v * math.exp(-Z80 * sigma), v * math.exp(Z80 * sigma)))
        return out

    def sigma_of(self, config: Config) -> float:
        """The log σ of ``config``'s s/it in a fresh run (predict's interval is exp(±z·σ)): the
        model's error for it, with the machine's run-to-run spread (``rerun``)."""
        if (timing := self.measured.get(he_key(config))) is not None:
            return math.hypot(self.sigma, timing, self.rerun)
        timed = allocation(config) in self.timed_allocations
        floor = self.sigma if timed else 2.0 * self.sigma
        held_out = self.held_out_sigma["batch" if timed else "allocation"] or 0.0
        return math.hypot(max(floor, held_out), self.rerun)


def timing_errors(timings: Sequence[ProbeResult]) -> dict[tuple, float]:
    """Each timed config's log standard error of its mean s/it: its settled steps' spread over
    √(their count) per timing, combined over its timings. A 12-step timing of an asynchronous
    step spread 0.67 on Ray (its groups' steps are unequal): a ±20% mean, not the fit's ±6%."""
    squares: dict[tuple, list[float]] = {}
    for r in timings:
        squares.setdefault(he_key(r.config), []).append(standard_error(r) ** 2)
    return {key: math.sqrt(sum(v)) / len(v) for key, v in squares.items()}


def standard_error(timing: ProbeResult) -> float:
    """The log standard error of one timing's mean s/it: its settled steps' spread over √count."""
    steps = settled(timing.step_seconds)
    spread = steady_spread(timing.step_seconds) / math.sqrt(steps.size) if steps.size > 1 else 0.0
    return spread if math.isfinite(spread) else 0.0


def rerun_spread(timings: Sequence[ProbeResult]) -> float:
    """The log-sd of one config's s/it from one probe to the next beyond what each probe's own
    standard error explains, pooled over the configs timed more than once (0 where none was):
    what a fresh run of a measured config can differ by. On Ray on a shared 2-core machine the
    plan's three truth runs of wide-teacher ran at 0.0087–0.0107 s/it against the study's 0.0099,
    and the study's p10 (its warm-up's measured seconds) was above two of them. An exact clock
    shows none."""
    groups: dict[tuple, list[ProbeResult]] = {}
    for r in timings:
        groups.setdefault(he_key(r.config), []).append(r)
    excess, dof = 0.0, 0
    for same in (g for g in groups.values() if len(g) > 1):
        logs = np.log([r.steady_seconds_per_iteration for r in same])
        within = float(np.mean([standard_error(r) ** 2 for r in same]))
        excess += (len(same) - 1) * (float(np.var(logs, ddof=1)) - within)
        dof += len(same) - 1
    return math.sqrt(max(excess / dof, 0.0)) if dof else 0.0


def held_out_log_error(model: HeModel, key: Callable[[Config], tuple]) -> float | None:
    """Root mean square, over the configs ``model`` was fitted to, of the log error of a refit
    without the timings that share the config's ``key``, against the config's mean timing."""
    groups: dict[tuple, list[ProbeResult]] = {}
    for r in model.timings:
        groups.setdefault(key(r.config), []).append(r)
    if len(groups) < 2:
        return None
    errors = []
    for left_out, results in groups.items():
        # from the usual start, not from the full fit: its parameters hold what was left out (on
        # Ray a warm start read the error without each config as 0.7% where cold refits read 10%)
        refit = HeModel.fit([r for r in model.timings if key(r.config) != left_out])
        if refit is None:
            continue
        configs: dict[tuple, list[ProbeResult]] = {}
        for r in results:
            configs.setdefault(he_key(r.config), []).append(r)
        timed = [same[0].config for same in configs.values()]
        means = [float(np.mean([r.steady_seconds_per_iteration for r in same])) for same in configs.values()]
        errors += list(np.log(refit.point(timed) / np.array(means)))
    return math.sqrt(float(np.mean(np.square(errors)))) if errors else None


def seconds_per_iteration(result: ProbeResult) -> Estimate | None:
    """The probed config's own measured s/it: the mean, with the 10–90% spread of its settled
    steps (its warm-up is no part of a long run's spread)."""
    steps = settled(result.step_seconds)
    if steps.size == 0:
        return None
    low, high = np.percentile(steps, INTERVAL)
    mean = result.seconds_per_iteration if result.iterations else float(steps.mean())
    return Estimate(mean, float(min(low, mean)), float(max(high, mean)))
