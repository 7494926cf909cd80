"""What a study knows, and what it spent: one object that the search and the training planner share.

A ``Study`` holds the lineages and probes, the pooled model fitted on them and its predictions,
the warm-up and the incumbents (baseline, recipe), and one **ledger** of cluster-seconds: what the
probes cost (``cost_of``), what a request is expected to cost (``probe_cost``), what the study may
spend (``allowed_cost``), and the greedy packing of a batch into what is left (``pack``).

The cold-start search (predictor.search) decides what to probe next, the training planner
(predictor.training) what to fork from a run; neither keeps state of its own about the
evidence. The plan is assembled from a Study (predictor.planning).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from predictor.confidence import assess
from predictor.eta import warmup_eta
from predictor.forecast import Curve
from predictor.he_model import allocation
from predictor.lineages import Lineages, merge
from predictor.plan_choice import best
from predictor.prior_path import FinishedRun
from predictor.reference_curve import drift, hindcast
from predictor.regime import read_view_regime
from predictor.ttc_model import ForkPoint, TtcModel, conservative
from predictor.types import (
    Budget,
    Confidence,
    Config,
    Phase,
    Prediction,
    ProbeRequest,
    ProbeResult,
    SearchSpace,
)

T = TypeVar("T")


class Study:
    def __init__(self, space: SearchSpace, budget: Budget, target: float,
                 priors: tuple[FinishedRun, ...] = ()) -> None:
        """``priors``: finished runs of the same job, whose curves the plan's forecast reads
        (predictor.forecast) and along whose paths ``ttc train``'s ETA is read (predictor.eta); they
        never change which config is planned."""
        self.space = space
        self.budget = budget
        self.target = target
        self.priors = priors
        self.lineages = Lineages()
        self.probes: list[ProbeResult] = []  # every segment run: the study's cost
        self.predictions: dict[str, Prediction] = {}  # by config key, in the current epoch
        self.pruned: set[str] = set()  # config keys
        self.diverged: list[Config] = []
        self.seed_checks: dict[str, ProbeResult] = {}  # by probe key: rates checked on a second seed
        self.timings: dict[str, ProbeResult] = {}  # by probe key: allocations timed for the HE model
        self.model: TtcModel | None = None
        self.fork: ForkPoint | None = None
        self.baseline: Config | None = None  # sync on all devices: what a challenger must beat by 5%
        self.recipe: Config | None = None  # the sweep's best: sync on one node at its best rate
        self.warmup_config: Config | None = None  # the recipe on one device: the warm-up's config
        self.worth_tuning_reason = ""
        self.warmup_eta: dict[str, dict[str, Any]] = {}  # by probe key: ``ttc train``'s ETA in the warm-up
        self._readings: dict[str, object] = {}  # curve tests and model fits, cached by lineage length

    @property
    def prior_curves(self) -> tuple[Curve, ...]:
        """The priors' (iteration, loss) curves, the forecast's ensemble members."""
        return tuple(prior.curve for prior in self.priors)

    # -- evidence --------------------------------------------------------------------------------
    def record(self, result: ProbeResult) -> None:
        """A probe's result joins the evidence, and the model is re-fitted on it."""
        self.lineages.add(result, starts_epoch=self.fork is not None and result.parent == self.fork.key)
        self._count(result)
        self.read_warmup_eta(result)

    def read_warmup_eta(self, result: ProbeResult) -> None:
        """``ttc train``'s ETA at a segment of the warm-up, which the run continues (the search reads
        the sweep's probe the warm-up continues once it has chosen it). The warm-up's own curve is
        in its transient, which no family extrapolates: read alone its interval is wide
        (predictor.eta.TRANSIENT_FORM); a finished run of the same job to the same target lends its
        crossing, read along its path (predictor.prior_path: on public runs with another seed's run
        as the prior, 1–3% off in the warm-up where the two runs took one path, 18% where not)."""
        config = self.warmup_config
        if config is None or result.config.key() != config.key():
            return
        chain = self.lineages.chain_of(None, config.key())
        if chain and chain[-1].probe_key == result.probe_key:
            entry = warmup_eta(chain, self.target, self.priors)
            if entry is not None:
                self.warmup_eta[result.probe_key] = entry

    def record_seed_check(self, result: ProbeResult) -> None:
        """A rate checked on a second seed (predictor.search): its cost and timings are the study's,
        its curve no lineage's (it shows whether the rate trains, not a config's progress on the
        probes' seed). Diverged there, the config is never planned and its recipe's larger steps are
        not probed."""
        self.seed_checks[result.probe_key] = result
        self._count(result)

    def record_timing(self, result: ProbeResult) -> None:
        """An allocation timed for the hardware model (predictor.search): its cost and step times
        are the study's, its few steps from scratch no lineage's evidence."""
        self.timings[result.probe_key] = result
        self._count(result)

    def _count(self, result: ProbeResult) -> None:
        """What every probe adds: its cost and timings, a divergence, a refit."""
        self.probes.append(result)
        if result.diverged:
            self.diverged.append(result.config)
        self.refit()

    def learning_probes(self) -> list[ProbeResult]:
        """Every segment but the timings: their few steps from scratch time an allocation, and
        their gradients are the initial weights', where no run spends its time."""
        return [r for r in self.probes if r.probe_key not in self.timings]

    def unstable(self) -> set[str]:
        """Config keys that diverged on a second seed: never planned, whatever the probes' seed showed."""
        return {r.config.key() for r in self.seed_checks.values() if r.diverged}

    def behind(self) -> set[str]:
        """Config keys of forks whose loss ended clearly above the warm-up continued, or above their
        start (predictor.fork_level): open above, whatever their rate or carry reads."""
        return self.model.behind if self.model is not None else set()

    def ahead(self) -> set[str]:
        """Config keys of cooler forks whose loss ended clearly below the warm-up continued
        (predictor.fork_level): measured further until their own curve can be read."""
        return self.model.ahead if self.model is not None else set()

    def evidence_of(self, key: str) -> list[str]:
        """The probe keys of config ``key``'s lineages (its seed checks and timings are not its
        evidence)."""
        return [s.probe_key for s in self.learning_probes()
                if s.config.key() == key and s.probe_key not in self.seed_checks]

    def origin(self) -> str | None:
        """The segment the current epoch's lineages start from: the fork point, or scratch."""
        return self.fork.key if self.fork else None

    def views(self) -> dict[str, ProbeResult]:
        """Config key → its merged lineage in the current epoch."""
        return self.lineages.views(self.origin())

    def refit(self) -> None:
        views = self.views()
        self.model = TtcModel(list(views.values()), self.target, self._readings, self.fork, self.probes,
                              self.learning_probes())
        self.predictions = {}
        unstable = self.unstable()
        for key, view in views.items():
            prediction = self.model.predict(view.config)
            if prediction is not None and not view.diverged and key not in unstable:
                self.predictions[key] = prediction

    def predict(self, config: Config) -> Prediction | None:
        return self.model.predict(config) if self.model is not None else None

    def score(self, config: Config) -> float:
        """The risk-aware score of ``config``'s current prediction (inf: none)."""
        prediction = self.predictions.get(config.key())
        return conservative(prediction) if prediction else math.inf

    def reading(self, test: Callable[[list[tuple[int, float, float]], float], T], view: ProbeResult) -> T:
        """A test of a lineage's curve against the target (predictor.reference_curve's ``drift``,
        ``hindcast``), cached by the lineage's length."""
        key = f"{test.__name__}:{view.config.key()}#{view.start_iteration}+{view.iterations}"
        if key not in self._readings:
            self._readings[key] = test(view.curve, self.target)
        return self._readings[key]  # type: ignore[return-value]

    def confidence_of(self, key: str, prediction: Prediction | None = None) -> Confidence:
        """Confidence of ``prediction`` (the current one for ``key``). A fork's curve shape is the
        warm-up's reference, so its regime, drift and hindcast are read there; a probe from scratch
        is read on its own."""
        view, prediction = self.views()[key], prediction or self.predictions[key]
        source = view
        if self.fork is not None and view.parent == self.fork.key and self.warmup_config is not None:
            source = merge(self.lineages.chain_of(None, self.warmup_config.key()))
        regime = read_view_regime(source)
        if view.reached_iteration is not None:
            return assess(prediction, True, regime)
        return assess(prediction, False, regime, self.reading(drift, source), self.reading(hindcast, source))

    def warmup_of(self, view: ProbeResult) -> Phase | None:
        """The warm-up phase ``view`` was forked from (None for the warm-up's own recipe and for a
        probe from scratch): a forked measurement is of the fork, so a plan on it names the warm-up."""
        if self.fork is None or self.warmup_config is None or view.parent != self.fork.key:
            return None
        if view.config.key() == self.warmup_config.key():
            return None
        return Phase(self.warmup_config, self.fork.iteration)

    def allocation_measured(self, config: Config) -> bool:
        """A probe ran this strategy on this many nodes, devices and groups: the HE model's speed
        for it rests on its own communication, not on links fitted from other patterns."""
        return any(allocation(r.config) == allocation(config) for r in self.probes)

    # -- the incumbents ----------------------------------------------------------------------------
    def baseline_key(self) -> str | None:
        return self.baseline.key() if self.baseline else None

    def choice(self) -> str | None:
        """The config the study leads with now (predictor.plan_choice.best)."""
        return best(self.predictions, self.baseline_key())

    def leader(self) -> Config | None:
        key = self.choice()
        return self.views()[key].config if key else None

    def incumbents(self) -> set[str]:
        """What competes when no prediction is bounded (predictor.plan_choice.planned): the recipe,
        and the forks the model read on the warm-up's curve (predictor.ttc_model)."""
        keys = {self.recipe.key()} if self.recipe else set()
        return keys | (self.model.on_reference if self.model is not None else set())

    def best_measured_ttc(self) -> float:
        reached = [r.reached_seconds for r in self.probes if r.reached_seconds is not None]
        return min(reached, default=math.inf)

    def incumbent_ttc(self) -> float:
        """The plan's predicted TTC now (the best measured one when lower)."""
        key = self.choice()
        predicted = self.predictions[key].ttc_seconds if key else math.inf
        return min(predicted, self.best_measured_ttc())

    def supported_ttc(self) -> float:
        """The incumbent's TTC where the evidence supports a number (else the best measured one):
        an extrapolation of a transient is optimistic many-fold and must not size the budget."""
        key = self.choice()
        supported = key is not None and self.confidence_of(key).supported
        return min(self.predictions[key].ttc_seconds if supported else math.inf, self.best_measured_ttc())

    # -- the ledger (cluster-seconds) -----------------------------------------------------------------
    def share(self, seconds: float, config: Config) -> float:
        """Cluster-seconds of ``seconds`` on ``config``'s devices: its share of the cluster's."""
        return seconds * config.devices / self.space.devices

    def cost_of(self, probes: Iterable[ProbeResult]) -> float:
        """Cluster-seconds the ``probes`` occupied (DESIGN.md §7)."""
        return sum(self.share(r.seconds, r.config) for r in probes)

    def cluster_seconds(self) -> float:
        """What the study's probes cost."""
        return self.cost_of(self.probes)

    def probe_cost(self, request: ProbeRequest) -> float:
        """Expected cluster-seconds of a probe: its iterations at the predicted speed, capped."""
        speed = self.model.speed(request.config) if self.model is not None else None
        seconds = request.seconds
        if speed is not None and math.isfinite(speed.value):
            seconds = min(seconds, speed.value * request.max_iterations)
        return self.share(seconds, request.config)

    def hard_cap(self) -> float:
        return self.budget.max_cluster_seconds if self.budget.max_cluster_seconds is not None else math.inf

    def allowed_cost(self) -> float:
        """Cluster-seconds the whole study may spend now: its overhead share of the incumbent's
        supported TTC, else of its point prediction (a transient's extrapolation is optimistic, so
        the budget errs small), else no share (nothing is predicted yet)."""
        ttc = self.supported_ttc()
        allowed = self.budget.max_overhead * (ttc if math.isfinite(ttc) else self.incumbent_ttc())
        allowed = min(allowed, self.hard_cap())
        return allowed if math.isfinite(allowed) else (self.budget.max_cluster_seconds or math.inf)


def pack(requests: Iterable[ProbeRequest], cost: Callable[[ProbeRequest], float],
         room: Callable[[ProbeRequest], float], count: float = math.inf) -> list[ProbeRequest]:
    """The requests, in order, that fit: at most ``count`` of them, each costing no more than its
    ``room`` less what the requests kept before it cost (greedy: a later, cheaper one may still fit)."""
    kept: list[ProbeRequest] = []
    used = 0.0
    for request in requests:
        expected = cost(request)
        if len(kept) >= count or expected > room(request) - used:
            continue
        kept.append(request)
        used += expected
    return kept
