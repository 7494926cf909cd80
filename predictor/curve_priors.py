"""Priors from finished runs of the same workload, for predictor.curve_ensemble.

A run that finished last week shows what this run's evidence cannot: the shape of the curve past
the point this run has reached. It is used in two ways, both simple and both measured
(tests/predictor/test_curve_ensemble.py: a prior of the same shape narrows the interval):

1. **as a member**: the prior curve itself, stretched in iterations and offset in loss,
   l(k) = c + P(s·k), is fitted to this evidence like any family and weighted by its held-out
   tail like them. P is the prior's loss (smoothed, interpolated in ln k), held at its last value
   past its end (the run stopped there: nothing is claimed beyond). A run of another config
   progresses on a rescaled clock (s, as in predictor.reference_curve) and may settle at another
   level (c, within OFFSET of the evidence's largest loss); the loss itself has the same scale, so
   there is no free amplitude: with one, a stretched, shrunk and raised copy fits a short window
   as well and extrapolates 15% off (measured on the tests' curves). Where it fits, its crossing
   is sharp: it carries a tail that was seen. A prior whose fitted copy stays above the target
   never says when, and is left out;
2. **as a test of the families**: each family is fitted to the prior over the iterations this
   evidence covers and scored on the prior's tail, the way the held-out
   tail scores it; the score (−½·mean(r²)/σ² × the held-out count, σ the prefix fit's noise) is
   added to the family's held-out log-weight, so a prior counts as much as this run's own held-out
   tail. A family that extrapolated the last run badly loses weight on this one.

At most MAX_PRIORS curves are used (the first ones given; callers pass the most recent first).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from predictor.curve_families import FAMILIES, CurveFamily, fit_family

MAX_PRIORS = 3
OFFSET = 0.2  # bound on |c|, in units of the evidence's largest loss
MIN_PRIOR_POINTS = 8
SMOOTHING = 60  # nodes of the prior's smoothed shape, even in ln k
NEIGHBOURS = 15  # evaluations each node's local fit reads
STRETCH = (0.1, 10.0)  # how much faster or slower than the prior this run may progress


def _points(curve: Sequence[tuple[float, float]]) -> tuple[np.ndarray, np.ndarray] | None:
    points = sorted((float(k), float(loss)) for k, loss in curve
                    if math.isfinite(k) and math.isfinite(loss) and k >= 1.0 and loss > 0.0)
    if len(points) < MIN_PRIOR_POINTS:
        return None
    k, losses = (np.array(column) for column in zip(*points, strict=True))
    return k, losses


def _smoothed(k: np.ndarray, losses: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ln k, loss) at SMOOTHING nodes even in ln k, each a local quadratic in ln k through the
    NEIGHBOURS nearest evaluations (tricube weights, LOESS: Cleveland 1979). The prior's own noise,
    passed into the member's shape, would be fitted by (c, s) and bias them; and the early part,
    sparse in ln k, must not be averaged across its bend."""
    log_k = np.log(k)
    nodes = np.linspace(log_k[0], log_k[-1], SMOOTHING)
    distance = np.abs(log_k[None, :] - nodes[:, None])  # (nodes, n)
    reach = np.sort(distance, axis=1)[:, min(NEIGHBOURS, len(k)) - 1:][:, :1] * 1.0001 + 1e-12
    weight = np.clip(1.0 - (distance / reach) ** 3, 0.0, None) ** 3
    offset = log_k[None, :] - nodes[:, None]
    design = np.stack([np.ones_like(offset), offset, offset**2], axis=-1)  # (nodes, n, 3)
    normal = np.einsum("mn,mni,mnj->mij", weight, design, design) + 1e-12 * np.eye(3)
    moment = np.einsum("mn,mni,n->mi", weight, design, losses)
    return nodes, np.linalg.solve(normal, moment[..., None])[:, 0, 0]


def prior_member(curve: Sequence[tuple[float, float]], k_scale: float, loss_scale: float,
                 name: str) -> CurveFamily | None:
    """The family l = c + P(s·k) of one prior curve, in the ensemble's scaled units; None when
    the prior has fewer than MIN_PRIOR_POINTS usable points."""
    points = _points(curve)
    if points is None:
        return None
    log_k, level = _smoothed(*points)
    level = level / loss_scale

    def shape(x: np.ndarray, log_stretch: np.ndarray) -> np.ndarray:
        return np.interp(np.log(np.maximum(x * k_scale, 1e-300)) + log_stretch, log_k, level)

    def f(x, c, log_stretch):
        """c + P(s·k)."""
        x, log_stretch = np.broadcast_arrays(x, log_stretch)
        return c + shape(x.ravel(), log_stretch.ravel()).reshape(x.shape)

    stretches = np.log(STRETCH)
    return CurveFamily(
        name=name, f=f, lower=[-OFFSET, stretches[0]], upper=[OFFSET, stretches[1]],
        floor=lambda theta: np.asarray(theta)[..., 0] + level[-1],
        floor_index=None,
        shape_grid=lambda x: np.linspace(*stretches, 47)[:, None],
        basis=lambda x, phi: shape(np.broadcast_to(x, (len(phi), len(x))).ravel(),
                                   np.repeat(phi[:, 0], len(x))).reshape(len(phi), len(x)),
        theta=lambda c, amplitude, phi: np.stack([c, phi[:, 0]], axis=1),
        offset_index=0,
        unit_amplitude=True,
    )


def prior_scores(prior_curves: Sequence[Sequence[tuple[float, float]]], evidence: tuple[float, float],
                 held_out: int, floor_max: float | None) -> tuple[dict[str, float], int]:
    """Log-weight per family from how well, fitted on each prior's stretch of iterations that this
    run's ``evidence`` (first, last iteration fitted) covers, it predicted that prior's tail, summed
    over the priors; and how many priors could be used."""
    scores: dict[str, float] = {}
    used = 0
    for curve in list(prior_curves)[:MAX_PRIORS]:
        points = _points(curve)
        if points is None:
            continue
        k, losses = points
        prefix, tail = (k >= evidence[0]) & (k <= evidence[1]), k > evidence[1]
        if prefix.sum() < MIN_PRIOR_POINTS or not tail.any():
            continue
        scales = {"k_scale": float(k[prefix][-1]), "loss_scale": float(losses[prefix].max())}
        fits = {name: fit_family(family, k[prefix], losses[prefix], floor_max=floor_max, **scales)
                for name, family in FAMILIES.items()}
        fits = {name: fit for name, fit in fits.items() if fit is not None}
        if not fits:
            continue
        used += 1
        sigma = max(min(fit.residual_rms for fit in fits.values()), 1e-4)
        for name, fit in fits.items():
            with np.errstate(all="ignore"):
                error = float(np.mean((fit.loss(k[tail]) / losses[tail] - 1.0) ** 2))
            if math.isfinite(error):
                scores[name] = scores.get(name, 0.0) - 0.5 * held_out * error / sigma**2
    return scores, used
