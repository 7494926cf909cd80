"""HE model: recovers known constants from noisy synthetic timings, extrapolates, keeps invariants."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from predictor.he_model import HeModel, HeParams, Topology, allocation, step_seconds
from predictor.se_model import Z80
from predictor.types import Config, ProbeResult

TRUE = HeParams(alpha_c=2e-3, beta_c=1e-4, theta_intra=1e-4, lat_intra=2e-6, theta_inter=4e-3,
                lat_inter=5e-5, gamma=2.0, read=1e-9, daso_skip=4.0, balance=1.0)


def _probe(config: Config, params: HeParams, rng: np.random.Generator) -> ProbeResult:
    seconds = float(step_seconds(params, Topology.of([config]))[0]) * float(np.exp(rng.normal(0, 0.02)))
    return ProbeResult(config, iterations=100, seconds=100 * seconds, curve=[], step_seconds=[seconds])


def _configs(nodes: list[int], batches: list[int], strategies=("sync", "hsgd")) -> list[Config]:
    out = [Config(s, n, 4, batch_size=b) for s in strategies for n in nodes for b in batches]
    out += [Config("async_groups", n, 4, groups=g, batch_size=b)
            for n in nodes for g in (2, 4) for b in batches if (n * 4) % g == 0]
    return out


def test_fit_recovers_step_times_of_known_params() -> None:
    rng = np.random.default_rng(0)
    results = [_probe(c, TRUE, rng) for c in _configs([1, 2, 4], [16, 64])]
    model = HeModel.fit(results)
    assert model is not None
    truth = step_seconds(TRUE, Topology.of([r.config for r in results]))
    fitted = step_seconds(model.params, Topology.of([r.config for r in results]))
    assert np.max(np.abs(np.log(fitted / truth))) < 0.1
    assert model.params.beta_c == pytest.approx(TRUE.beta_c, rel=0.3)


@pytest.mark.parametrize("strategy", ["sync", "hsgd", "async_groups"])
def test_extrapolates_to_unprobed_nodes_and_batches(strategy: str) -> None:
    rng = np.random.default_rng(1)
    model = HeModel.fit([_probe(c, TRUE, rng) for c in _configs([1, 2], [16, 32])])
    groups = 2 if strategy == "async_groups" else 1
    unseen = [Config(strategy, 8, 4, groups=groups, batch_size=64), Config(strategy, 4, 4, groups=groups,
                                                                           batch_size=128)]
    predicted = np.array([e.value for e in model.predict(unseen)])
    truth = step_seconds(TRUE, Topology.of(unseen))
    assert np.all(np.abs(np.log(predicted / truth)) < 0.25)


def _random_params(rng: np.random.Generator, comm: bool) -> HeParams:
    scale = 1.0 if comm else 1e-12
    return HeParams(
        alpha_c=10 ** rng.uniform(-5, -2), beta_c=10 ** rng.uniform(-7, -4),
        theta_intra=scale * 10 ** rng.uniform(-6, -3), lat_intra=scale * 10 ** rng.uniform(-7, -5),
        theta_inter=scale * 10 ** rng.uniform(-5, -2), lat_inter=scale * 10 ** rng.uniform(-6, -4),
        gamma=rng.uniform(1, 10), read=10 ** rng.uniform(-9, -4), daso_skip=rng.uniform(1, 8),
        balance=rng.uniform(0.3, 1.0),
    )


@pytest.mark.parametrize("seed", range(20))
def test_invariants_over_random_params(seed: int) -> None:
    rng = np.random.default_rng(seed)
    params = _random_params(rng, comm=True)
    configs = _configs([1, 2, 4, 8], [8, 32, 128], strategies=("sync", "hsgd", "daso", "dbs"))
    seconds = step_seconds(params, Topology.of(configs))
    assert np.all(np.isfinite(seconds)) and np.all(seconds > 0)
    # Per-sample cost (hardware efficiency's inverse) never rises with the batch size.
    for strategy in ("sync", "hsgd", "dbs"):
        batches = np.array([8, 16, 32, 64, 128, 256], float)
        topo = Topology(np.array([strategy] * 6), np.full(6, 2.0), np.full(6, 4.0), batches, np.ones(6))
        per_sample = step_seconds(params, topo) / batches
        assert np.all(np.diff(per_sample) <= 1e-15)


@pytest.mark.parametrize("seed", range(20))
def test_more_devices_never_slower_for_pure_compute(seed: int) -> None:
    params = _random_params(np.random.default_rng(seed), comm=False)
    for strategy in ("sync", "hsgd", "daso", "dbs"):
        nodes = np.array([1, 2, 4, 8, 16], float)
        topo = Topology(np.array([strategy] * 5), nodes, np.full(5, 4.0), np.full(5, 32.0), np.ones(5))
        seconds = step_seconds(params, topo)
        # Same per-device work, no communication: equal step time, so samples/s grows with devices.
        assert np.all(np.diff(seconds) <= 1e-12)
    # Asynchrony over more groups of equal work never slows an iteration.
    groups = np.array([1, 2, 4, 8, 16], float)
    four = np.full(5, 4.0)
    topo = Topology(np.array(["async_groups"] * 5), four, four, np.full(5, 32.0), groups)
    assert np.all(np.diff(step_seconds(params, topo)) <= 1e-12)


def test_pins_what_one_batch_size_cannot_identify() -> None:
    rng = np.random.default_rng(2)
    model = HeModel.fit([_probe(c, TRUE, rng) for c in _configs([1, 2, 4], [32])])
    assert model.params.alpha_c < 1e-8  # pinned at its lower bound: β_c·b explains compute alone


def test_devices_slowing_each_others_compute_are_told_from_the_links_by_two_batch_sizes() -> None:
    """κ (shared devices' compute) and the links both add to a shared allocation's step; one
    batch size cannot split them (the links take it all, and a smaller batch is predicted 12–16%
    too slow), two can (κ then trades with the overlap γ, but the steps come out right)."""
    crowded = TRUE._replace(contention=1.3, gamma=1.0)
    rng = np.random.default_rng(4)
    one_device = [Config("sync", 1, 1, batch_size=b) for b in (16, 64)]
    shared = [Config("sync", 2, 2, batch_size=b) for b in (16, 64)]
    unseen = [Config("sync", 2, 2, batch_size=32), Config("sync", 2, 2, batch_size=128),
              Config("sync", 4, 2, batch_size=64)]
    truth = step_seconds(crowded, Topology.of(unseen))
    model = HeModel.fit([_probe(c, crowded, rng) for c in one_device + shared])
    assert model.params.contention > 1.1
    predicted = np.array([e.value for e in model.predict(unseen)])
    assert np.all(np.abs(np.log(predicted / truth)) < 0.08)
    pinned = HeModel.fit([_probe(c, crowded, rng) for c in one_device + shared[1:]])
    assert pinned.params.contention == 1.0


def test_a_backends_cost_per_call_is_its_own_term_and_leaves_the_step_times_alone() -> None:
    """Ray's round trip is paid once per chunk of steps: fitted apart (the median seconds per
    call), not into T_comp, so the predicted s/it is the same with or without it."""
    rng = np.random.default_rng(3)
    plain = [_probe(c, TRUE, rng) for c in _configs([1, 2, 4], [16, 64])]
    per_call = [0.05 + 0.01 * i for i in range(len(plain))]
    called = [dataclasses.replace(r, calls=10, call_seconds=10 * c)
              for r, c in zip(plain, per_call, strict=True)]
    without, with_calls = HeModel.fit(plain), HeModel.fit(called)
    assert without.call_seconds == 0.0
    assert with_calls.call_seconds == pytest.approx(np.median(per_call))
    configs = [Config("sync", 8, 4, batch_size=32)]
    assert with_calls.predict(configs)[0].value == pytest.approx(without.predict(configs)[0].value)


def _misfit_probe(config: Config, rng: np.random.Generator, misfit: float, hardware: int) -> ProbeResult:
    """A timing of hardware the topology cannot fully explain: on machine ``hardware`` each
    strategy on each node count runs a fixed factor off the model, drawn from ``misfit``'s spread
    (the fit's corrections absorb it where it was timed, and cannot know it where it was not)."""
    draw = np.random.default_rng([hardware, len(config.strategy), ord(config.strategy[0]), config.nodes])
    factor = float(np.exp(draw.normal(0, misfit)))
    modelled = float(step_seconds(TRUE, Topology.of([config]))[0])
    seconds = modelled * factor * float(np.exp(rng.normal(0, 0.02)))
    return ProbeResult(config, iterations=100, seconds=100 * seconds, curve=[], step_seconds=[seconds])


def test_an_untimed_shape_gets_the_interval_the_model_earns_out_of_sample() -> None:
    """Refits without each timed shape show how far the model misses a shape it never saw; an
    untimed shape's interval is at least that wide, and holds most truths over machines whose
    shapes run off the model. Where the model fits, the intervals stay narrow."""
    timed = _configs([1, 2, 4], [16, 64])
    unseen = [Config(s, n, 4, batch_size=32) for s in ("sync", "hsgd") for n in (3, 6, 8)]
    covered = []
    for hardware in range(8):
        rng = np.random.default_rng(hardware)
        model = HeModel.fit([_misfit_probe(c, rng, 0.3, hardware) for c in timed])
        truth = [_misfit_probe(c, rng, 0.3, hardware).seconds / 100 for c in unseen]
        for estimate, seconds in zip(model.predict(unseen), truth, strict=True):
            assert np.log(estimate.high / estimate.value) >= Z80 * model.held_out_sigma["allocation"] - 1e-9
            covered.append(estimate.low <= seconds <= estimate.high)
    assert np.mean(covered) >= 0.6
    clean = HeModel.fit([_probe(c, TRUE, np.random.default_rng(9)) for c in timed])
    assert clean.held_out_sigma["allocation"] < 0.1
    assert all(e.high / e.value < 1.2 for e in clean.predict(unseen))


def test_a_timed_configs_interval_adds_its_timings_standard_error_to_the_fits() -> None:
    """A timing of a few unequal steps (an asynchronous step's groups) is an uncertain mean: its
    interval widens by their spread over √(count); an exact clock adds nothing."""
    rng = np.random.default_rng(5)
    results = [_probe(c, TRUE, rng) for c in _configs([1, 2, 4], [16, 64])]
    mean = results[0].steady_seconds_per_iteration
    steps = [mean * (1.6 if i % 2 else 0.4) for i in range(10)]  # spread 0.63, a standard error of 0.2
    noisy = [dataclasses.replace(results[0], step_seconds=steps), *results[1:]]
    for timings, spread in ((results, 0.0), (noisy, np.std(steps, ddof=1) / np.mean(steps) / np.sqrt(10))):
        model = HeModel.fit(timings)
        estimate = model.predict([results[0].config])[0]
        assert np.log(estimate.high / estimate.value) == pytest.approx(Z80 * np.hypot(model.sigma, spread))
    assert spread > model.sigma


def test_one_device_and_a_nodes_devices_are_different_allocations() -> None:
    """Two devices of a node share links and host that one device does not: timing one tells
    nothing of the other's communication."""
    one, node = Config("sync", 1, 1, batch_size=32), Config("sync", 1, 2, batch_size=32)
    assert allocation(one) != allocation(node)
    assert allocation(node) == allocation(node.replace(batch_size=64, lr=0.3))


def test_a_config_timed_again_at_another_pace_widens_every_interval_by_the_run_to_run_spread() -> None:
    """Two more timings of one config, 10% faster and slower with exact clocks: the machine's runs
    differ by more than any timing's own error, and a fresh run of any config may too. One timing
    per config shows nothing of it."""
    rng = np.random.default_rng(5)
    results = [_probe(c, TRUE, rng) for c in _configs([1, 2, 4], [16, 64])]
    assert HeModel.fit(results).rerun == 0.0
    first = results[0]
    again = [dataclasses.replace(first, seconds=first.seconds * f,
                                 step_seconds=[s * f for s in first.step_seconds]) for f in (1.1, 0.9)]
    model = HeModel.fit([*results, *again])
    assert model.rerun == pytest.approx(np.std(np.log([1.0, 1.1, 0.9]), ddof=1), rel=1e-6)
    timed, untimed = model.predict([first.config, Config("sync", 8, 4, batch_size=32)])
    assert np.log(timed.high / timed.value) == pytest.approx(Z80 * np.hypot(model.sigma, model.rerun))
    assert np.log(untimed.high / untimed.value) >= Z80 * model.rerun
