"""Stage 2 of the cold start (predictor.search): the shared warm-up every candidate forks from.

The best sweep probe's recipe runs on one device from scratch (at the largest batch when its step
is about as fast: predictor.warmup_batch), its length doubling, until its curve is in its slow
regime and long enough to fit; its end is the fork point and its curve the reference
(predictor.reference_curve). Where one device stops descending (a doubling loses ground beyond its
noise, or diverges), the recipe on its node warms up instead. A mixin of ``ColdStartSearch``: it
reads the study's lineages and budget and yields its batches of probes.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

from predictor.confidence import MAX_DRIFT
from predictor.lineages import merge
from predictor.reference_curve import ReferenceCurve
from predictor.regime import Regime, read_view_regime, went_backwards
from predictor.ttc_model import ForkPoint
from predictor.types import Config, ProbeRequest, ProbeResult
from predictor.warmup_batch import largest_batch, takes_larger

WARMUP_SHARE = 0.4  # of the study's allowed cost, at most this much goes to the warm-up
WARMUP_MIN_PROBES = 4  # the warm-up is at least this many probe lengths (a curve to fit)
WARMUP_MAX_DOUBLINGS = 6


class WarmUpStage:
    """The warm-up's batches, for ``ColdStartSearch`` (whose attributes and helpers it uses)."""

    def _warm_up(self, sweep: ProbeResult) -> Iterator[list[ProbeRequest]]:
        """Stage 2 (module docstring). Until the curve settles nothing can size the overhead budget
        (a transient's extrapolation is optimistic many-fold), so only the hard caps and
        WARMUP_MAX_DOUBLINGS bound it: a job whose warm-up reaches the target was too short to tune."""
        assert self.warmup_config is not None and self.recipe is not None
        one_device = self.warmup_config != self.recipe
        if one_device:
            yield from self._one_device_batch(sweep)
        descended = yield from self._lineage_warm_up(self.warmup_config, sweep, must_descend=one_device)
        if not descended and not self._done:
            self.warmup_config = self.recipe
            yield from self._lineage_warm_up(self.recipe, sweep, must_descend=False)
        chain = self.lineages.chain_of(None, self.warmup_config.key())
        if self._done or not chain or len(self.probes) >= self.budget.max_probes:  # a short job: no fork
            return
        view, last = merge(chain), chain[-1]
        if view.reached_iteration is not None or view.diverged:
            return
        reference = ReferenceCurve.fit(view.curve, self.target)
        if reference is None:
            return
        self.fork = ForkPoint(reference, last.end_iteration, last.end_seconds, last.probe_key)
        self._refit()

    def _one_device_batch(self, sweep: ProbeResult) -> Iterator[list[ProbeRequest]]:
        """A probe of the recipe on one device at its batch and at the largest: the warm-up takes
        the largest if its step is about as fast (predictor.warmup_batch)."""
        assert self.warmup_config is not None
        largest = largest_batch(self.warmup_config, self.space)
        if largest is None:
            return
        first = [self._request(c, sweep.iterations, None) for c in (self.warmup_config, largest)]
        self._unsettled.update(r.key for r in first)  # nothing is settled yet: only the hard caps
        yield first
        heads = {r.config.key(): r for r in self.probes if r.parent is None}
        if takes_larger(heads.get(self.warmup_config.key()), heads.get(largest.key())):
            self.warmup_config = largest

    def _lineage_warm_up(self, config: Config, sweep: ProbeResult,
                         must_descend: bool) -> Generator[list[ProbeRequest], None, bool]:
        """``config``'s lineage from scratch (the sweep's own probe, when it is the sweep's config),
        continued, doubling, until it settles, reaches the target or the budget ends. False when it
        ``must_descend`` and stopped: a doubling that lost ground beyond its noise, or diverged."""
        length = self.budget.probe_max_iterations
        key = config.key()
        if not self.lineages.chain_of(None, key):
            first = self._request(config, sweep.iterations, None)
            self._unsettled.add(first.key)  # nothing is settled yet: only the hard caps bound it
            yield [first]
            if self._short_job():
                return True
        for doubling in range(WARMUP_MAX_DOUBLINGS + 1):
            chain = self.lineages.chain_of(None, key)
            if not chain:  # the budget cut its first probe
                return True
            view = merge(chain)
            if must_descend and (view.diverged or went_backwards(chain)):
                return False
            if view.reached_iteration is not None or view.diverged or view.error or (
                    doubling == WARMUP_MAX_DOUBLINGS):
                return True
            settled = read_view_regime(view).regime is Regime.STEADY and self._drift(view) <= MAX_DRIFT
            if settled and view.end_iteration >= WARMUP_MIN_PROBES * length:
                return True
            segment = self._continue(chain[-1], view.end_iteration)
            cost = self._probe_cost(segment) + self._cost_of(r for r in self.probes if r.config.key() == key)
            if settled and cost > WARMUP_SHARE * self.allowed_cost():
                return True
            if not settled:
                self._unsettled.add(segment.key)
            yield [segment]
            if self._short_job():
                return True
        return True
