"""The eleven learning-curve families of Domhan et al. 2015, written for a loss that falls.

Domhan, Springenberg & Hutter, "Speeding up automatic hyperparameter optimization of deep neural
networks by extrapolation of learning curves" (IJCAI 2015), Table 1, lists eleven parametric
families for an accuracy that rises; each is mirrored here for a loss that falls with the
iteration k ≥ 1. Every family is fitted in scaled units, x = k/K (K: the last evidence iteration)
and y = loss/Y (Y: the largest evidence loss), so the parameters live on similar scales whatever the
workload; ``CurveFit`` turns the result back into iterations and loss.

No package was found that provides these families for this use: on PyPI, ``lcpfn`` and ``ifbo``
download network weights at run time, ``learning-curves`` (last release 2019) and ``lcdb``/``lccv``
fit sample-size curves of scikit-learn models, ``lcurvetools`` only plots. So they are written
here and fitted with ``scipy.optimize.least_squares``.

Every family is y = c + A·g(x; φ) (c = 0 for those that fall to zero) with one or two shape
parameters φ. The initial guess profiles them out (variable projection, Golub & Pereyra 1973): on
a grid of φ, (c, A) is a closed-form linear least-squares solve, all grid points at once; the best
grid point starts a bounded trust-region least-squares fit of all parameters. This is robust (no
start far from the data) and fast (a few polishing steps instead of hundreds).

Written for a loss, some of Domhan's families coincide up to parameterisation, as they already did
for accuracy: Weibull and Janoschek (κ ↔ κ^δ), and Hill(3), which is log-power's curve; Hill is
given the floor that log-power lacks, which makes it MMF's form with the rate as a half-life. The
pairs are kept so that the ensemble has the paper's members; such a shape gets two votes, as in the
paper. Three families fall to zero (log-power, vap with c < 0, loglog-linear); the others have a
floor c, the loss they cannot go below.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import least_squares

BIG = 50.0  # bound on log-scale parameters: e^±50 covers any iteration or loss scale
AMPLITUDE = 1e3  # the largest start loss A (in units of the largest evidence loss) a fit may assume
TINY = 1e-9
MAX_STEPS = 60  # polishing steps from the profiled start


@dataclass(frozen=True)
class CurveFamily:
    """y = c + A·g(x; φ) in scaled units: the curve, its bounds, the profile grid and its floor.

    ``f(x, *θ)`` is the curve in its own parameters θ; ``shape_grid(x)`` gives candidate φ (M, q),
    ``basis(x, φ)`` the curves g for all of them (M, n), and ``theta(c, A, φ)`` maps back to θ
    (M, p). ``floor_index`` names θ's floor c (None: the family falls to zero, or its floor is a
    function of θ that ``floor`` computes); ``offset_index`` names an additive constant that is not
    the floor (a prior curve's offset, predictor.curve_priors), profiled like c.
    """

    name: str
    f: Callable[..., np.ndarray]
    lower: Sequence[float]
    upper: Sequence[float]
    floor: Callable[[np.ndarray], np.ndarray]
    floor_index: int | None
    shape_grid: Callable[[np.ndarray], np.ndarray]
    basis: Callable[[np.ndarray, np.ndarray], np.ndarray]
    theta: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    offset_index: int | None = None
    unit_amplitude: bool = False  # A ≡ 1: only c is solved (a prior curve's copy, predictor.curve_priors)

    @property
    def constant_index(self) -> int | None:
        """The additive constant c of y = c + A·g, solved in closed form by the profile."""
        return self.floor_index if self.offset_index is None else self.offset_index

    def __call__(self, x: np.ndarray, theta: np.ndarray) -> np.ndarray:
        """Vectorised: ``theta`` of shape (p,) gives x.shape; (S, p) gives (S, n) for x of shape (n,)
        or (S, n) (a row of x per draw)."""
        theta = np.asarray(theta, dtype=float)
        if theta.ndim == 1:
            return self.f(x, *theta)
        return self.f(x if x.ndim == 2 else x[None, :], *(column[:, None] for column in theta.T))


def _floor_c(theta: np.ndarray) -> np.ndarray:
    return np.asarray(theta)[..., 0]


def _zero(theta: np.ndarray) -> np.ndarray:
    return np.zeros(np.asarray(theta).shape[:-1])


def _rates(x: np.ndarray) -> np.ndarray:
    """ln κ such that κx spans the evidence's range and a decade either side."""
    return np.linspace(-2.5, math.log(1.0 / x[0]) + 2.5, 24)


def _pairs(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    return np.stack(np.meshgrid(first, second, indexing="ij"), axis=-1).reshape(-1, 2)


EXPONENTS = np.geomspace(0.02, 5.0, 36)
SHAPES = np.geomspace(0.05, 5.0, 16)

# The families, each as f(x, θ) and its profile (g, φ → θ). Symbols follow Domhan et al.'s Table 1.


def _pow3(x, c, a, alpha):
    """c + a·x^(−α)."""
    return c + a * np.power(x, -alpha)


def _pow4(x, c, log_a, log_b, alpha):
    """c + (a·x + b)^(−α) = c + b^(−α)·(1 + x/s)^(−α) with s = b/a."""
    return c + np.power(np.exp(log_a) * x + np.exp(log_b), -alpha)


def _pow4_theta(c, amplitude, phi):
    log_s, alpha = phi[:, 0], phi[:, 1]
    log_b = -np.log(amplitude) / alpha
    return np.stack([c, log_b - log_s, log_b, alpha], axis=1)


def _log_power(x, a, b, alpha):
    """a / (1 + (x/e^b)^α): falls from a to zero."""
    return a / (1.0 + np.power(x / np.exp(b), alpha))


def _weibull(x, c, beta, log_kappa, delta):
    """c + (β − c)·exp(−(κx)^δ)."""
    return c + (beta - c) * np.exp(-np.power(np.exp(log_kappa) * x, delta))


def _mmf(x, c, beta, log_kappa, delta):
    """c + (β − c) / (1 + (κx)^δ)."""
    return c + (beta - c) / (1.0 + np.power(np.exp(log_kappa) * x, delta))


def _janoschek(x, c, beta, log_kappa, delta):
    """c + (β − c)·exp(−κ·x^δ)."""
    return c + (beta - c) * np.exp(-np.exp(log_kappa) * np.power(x, delta))


def _start_theta(c, amplitude, phi):
    return np.stack([c, c + amplitude, phi[:, 0], phi[:, 1]], axis=1)


def _exp4(x, c, a, alpha, b):
    """c + exp(−a·x^α + b)."""
    return c + np.exp(-a * np.power(x, alpha) + b)


def _ilog2(x, c, a, log_b):
    """c + a / ln(x/b + e): Domhan's c − a/ln x with a time scale b (iterations have no unit)."""
    return c + a / np.log(x / np.exp(log_b) + math.e)


def _vap(x, a, b, c):
    """exp(a + b/x + c·ln x), b ≥ 0, c ≤ 0: falls to zero, or to e^a when c = 0."""
    return np.exp(a + b / x + c * np.log(x))


def _vap_floor(theta):
    theta = np.asarray(theta)
    return np.where(theta[..., 2] < 0.0, 0.0, np.exp(theta[..., 0]))


def _loglog_linear(x, b, a):
    """exp(b − a·ln x): a straight line in log-log, falling to zero."""
    return np.exp(b - a * np.log(x))


def _hill3(x, c, a, log_kappa, eta):
    """c + a·κ^η / (κ^η + x^η)."""
    kappa = np.exp(log_kappa * eta)
    return c + a * kappa / (kappa + np.power(x, eta))


def _families() -> dict[str, CurveFamily]:
    inf, amp = math.inf, AMPLITUDE
    rate_shape = lambda x: _pairs(_rates(x), SHAPES)  # noqa: E731
    exponent = lambda x: EXPONENTS[:, None]  # noqa: E731
    table = [
        ("pow3", _pow3, [0, TINY, 1e-3], [inf, amp, 5], _floor_c, 0, exponent,
         lambda x, p: np.power(x, -p[:, :1]),
         lambda c, A, p: np.stack([c, A, p[:, 0]], axis=1)),
        ("pow4", _pow4, [0, -BIG, -BIG, 1e-3], [inf, BIG, BIG, 10], _floor_c, 0,
         lambda x: _pairs(-_rates(x), SHAPES),
         lambda x, p: np.power(1.0 + x / np.exp(p[:, :1]), -p[:, 1:]), _pow4_theta),
        ("log_power", _log_power, [TINY, -BIG, 1e-3], [amp, BIG, 10], _zero, None,
         lambda x: _pairs(-_rates(x), SHAPES),
         lambda x, p: 1.0 / (1.0 + np.power(x / np.exp(p[:, :1]), p[:, 1:])),
         lambda c, A, p: np.stack([A, p[:, 0], p[:, 1]], axis=1)),
        ("weibull", _weibull, [0, 0, -BIG, 1e-2], [inf, amp, BIG, 5], _floor_c, 0, rate_shape,
         lambda x, p: np.exp(-np.power(np.exp(p[:, :1]) * x, p[:, 1:])), _start_theta),
        ("mmf", _mmf, [0, 0, -BIG, 1e-2], [inf, amp, BIG, 10], _floor_c, 0, rate_shape,
         lambda x, p: 1.0 / (1.0 + np.power(np.exp(p[:, :1]) * x, p[:, 1:])), _start_theta),
        ("janoschek", _janoschek, [0, 0, -BIG, 1e-2], [inf, amp, BIG, 5], _floor_c, 0,
         lambda x: _pairs(np.linspace(-3.0, 8.0, 24), SHAPES),
         lambda x, p: np.exp(-np.exp(p[:, :1]) * np.power(x, p[:, 1:])), _start_theta),
        ("exp4", _exp4, [0, 0, 1e-2, -BIG], [inf, inf, 5, math.log(amp)], _floor_c, 0,
         lambda x: _pairs(np.linspace(-3.0, 8.0, 24), SHAPES),
         lambda x, p: np.exp(-np.exp(p[:, :1]) * np.power(x, p[:, 1:])),
         lambda c, A, p: np.stack([c, np.exp(p[:, 0]), p[:, 1], np.log(A)], axis=1)),
        ("ilog2", _ilog2, [0, TINY, -BIG], [inf, amp, BIG], _floor_c, 0,
         lambda x: -_rates(x)[:, None],
         lambda x, p: 1.0 / np.log(x / np.exp(p[:, :1]) + math.e),
         lambda c, A, p: np.stack([c, A, p[:, 0]], axis=1)),
        ("vap", _vap, [-BIG, 0, -10], [BIG, inf, 0], _vap_floor, None,
         lambda x: _pairs(np.concatenate([[0.0], x[0] * np.geomspace(0.01, 10.0, 15)]),
                           np.concatenate([[0.0], -EXPONENTS[::2]])),
         lambda x, p: np.exp(p[:, :1] / x + p[:, 1:] * np.log(x)),
         lambda c, A, p: np.stack([np.log(A), p[:, 0], p[:, 1]], axis=1)),
        ("loglog_linear", _loglog_linear, [-BIG, 1e-4], [BIG, 10], _zero, None, exponent,
         lambda x, p: np.power(x, -p[:, :1]),
         lambda c, A, p: np.stack([np.log(A), p[:, 0]], axis=1)),
        ("hill3", _hill3, [0, TINY, -BIG, 1e-2], [inf, amp, BIG, 10], _floor_c, 0,
         lambda x: _pairs(-_rates(x), SHAPES),
         lambda x, p: 1.0 / (1.0 + np.power(x / np.exp(p[:, :1]), p[:, 1:])),
         lambda c, A, p: np.stack([c, A, p[:, 0], p[:, 1]], axis=1)),
    ]
    return {row[0]: CurveFamily(*row) for row in table}


FAMILIES: dict[str, CurveFamily] = _families()


@dataclass(frozen=True)
class CurveFit:
    """One family fitted to (k, loss): θ in scaled units, the scales, and θ's covariance."""

    family: CurveFamily
    theta: np.ndarray
    covariance: np.ndarray
    k_scale: float
    loss_scale: float
    residual_rms: float  # relative to the loss, with n − p degrees of freedom
    lower: np.ndarray  # θ's bounds as fitted (the floor capped), for draws around θ
    upper: np.ndarray

    def loss(self, k: np.ndarray, theta: np.ndarray | None = None) -> np.ndarray:
        """The fitted loss at iterations ``k`` (θ may be a (S, p) stack of draws: shape (S, len(k)))."""
        theta = self.theta if theta is None else theta
        return self.loss_scale * self.family(np.asarray(k, dtype=float) / self.k_scale, theta)

    @property
    def floor(self) -> float:
        return float(self.loss_scale * self.family.floor(self.theta))


def _bounds(family: CurveFamily, floor_max: float | None, loss_scale: float,
            y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The family's bounds with the floor capped at the curve's current level and at ``floor_max``.

    The level is the median of the last tenth of the evidence (at least 5 points), not the lowest
    loss seen: on a noisy curve that has levelled off the lowest point is a dip a few σ below the
    level, and a floor there puts a target inside the noise band within reach of the mean."""
    lower, upper = np.array(family.lower, dtype=float), np.array(family.upper, dtype=float)
    if family.floor_index is not None:
        level = float(np.median(y[-max(5, len(y) // 10):]))
        caps = [upper[family.floor_index], level]
        caps += [] if floor_max is None else [floor_max / loss_scale]
        upper[family.floor_index] = max(min(caps), lower[family.floor_index] + TINY)
    return lower, upper


def profiled_start(family: CurveFamily, x: np.ndarray, y: np.ndarray,
                   constant_range: tuple[float, float]) -> np.ndarray | None:
    """The best θ over the family's φ grid, (c, A) solved in closed form for each; None if none fits.

    Weighted least squares on relative residuals (weights 1/y²); c is clipped to ``constant_range``
    and A re-solved for the clipped c; A must be positive.
    """
    phi = family.shape_grid(x)
    weight = 1.0 / y**2
    weight = weight / weight.sum()
    with np.errstate(all="ignore"):
        g = family.basis(x, phi)  # (M, n)
        if family.unit_amplitude:
            c = np.clip((y - g) @ weight, *constant_range)
        elif family.constant_index is None:
            c = np.zeros(len(phi))
        else:
            g_mean, y_mean = g @ weight, float(y @ weight)
            centred = g - g_mean[:, None]
            slope = (centred * weight) @ (y - y_mean) / np.sum(centred**2 * weight, axis=1)
            c = np.clip(y_mean - slope * g_mean, *constant_range)
        amplitude = (np.ones(len(phi)) if family.unit_amplitude else
                     np.sum(weight * g * (y - c[:, None]), axis=1) / np.sum(weight * g * g, axis=1))
        sse = np.sum(weight * (c[:, None] + amplitude[:, None] * g - y) ** 2, axis=1)
    sse[~(np.isfinite(sse) & (amplitude > 0.0))] = np.inf
    if not np.isfinite(sse.min()):
        return None
    best = int(np.argmin(sse))
    with np.errstate(all="ignore"):
        theta = family.theta(c[best:best + 1], amplitude[best:best + 1], phi[best:best + 1])[0]
    return theta if np.all(np.isfinite(theta)) else None


def _jacobian(family: CurveFamily, x: np.ndarray, y: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """Of the relative residuals, by forward differences in one vectorised call (θ and its p
    nudges as a (p+1, p) stack)."""

    def jacobian(theta: np.ndarray) -> np.ndarray:
        steps = 1e-7 * np.maximum(np.abs(theta), 1.0)
        curves = family(x, np.vstack([theta, theta + np.diag(steps)]))  # (p+1, n)
        return ((curves[1:] - curves[0]) / steps[:, None] / y).T  # (n, p)

    return jacobian


def _correlation_factor(residuals: np.ndarray) -> float:
    """(1 + ρ)/(1 − ρ), ρ the residuals' lag-one correlation (clipped to [0, 0.9]): n correlated
    residuals carry the information of fewer independent ones (an AR(1)'s effective sample size), so
    the least-squares covariance, which assumes independence, is that much too small. An evaluated
    loss is correlated from one evaluation to the next: SGD's iterate wanders."""
    centred = residuals - residuals.mean()
    denominator = float(centred @ centred)
    rho = float(centred[1:] @ centred[:-1]) / denominator if denominator > 0 else 0.0
    rho = min(max(rho, 0.0), 0.9)
    return (1.0 + rho) / (1.0 - rho)


def fit_family(family: CurveFamily, k: np.ndarray, losses: np.ndarray, *, k_scale: float,
               loss_scale: float, floor_max: float | None = None,
               start: np.ndarray | None = None) -> CurveFit | None:
    """Least squares from the profiled start (or ``start``); None when the fit fails. Never raises.

    The residuals are relative, (l(k) − loss)/loss: a loss's noise scales with its level
    (predictor.se_model), and an absolute fit would spend itself on the early, high part of the curve
    instead of the late part that the extrapolation continues. ``floor_max`` (loss units) caps the
    floor parameter, so that a curve still falling is not given a floor its evidence cannot show;
    the floor is always capped at the lowest loss seen.
    """
    x, y = k / k_scale, losses / loss_scale
    lower, upper = _bounds(family, floor_max, loss_scale, y)
    index = family.constant_index
    constant_range = (0.0, 0.0) if index is None else (lower[index], upper[index])
    theta0 = profiled_start(family, x, y, constant_range) if start is None else start
    if theta0 is None:
        return None
    span = upper - lower
    theta0 = np.clip(theta0, lower + 1e-9 * np.minimum(span, 1.0), upper - 1e-9 * np.minimum(span, 1.0))
    with np.errstate(all="ignore"):
        try:
            result = least_squares(lambda theta: family(x, theta) / y - 1.0, theta0,
                                   jac=_jacobian(family, x, y), bounds=(lower, upper), method="trf",
                                   x_scale="jac", max_nfev=MAX_STEPS)
        except (ValueError, FloatingPointError, np.linalg.LinAlgError):
            return None
    if not np.all(np.isfinite(result.fun)) or not np.all(np.isfinite(result.jac)):
        return None
    dof = max(len(x) - len(result.x), 1)
    variance = 2.0 * result.cost / dof
    covariance = variance * _correlation_factor(result.fun) * np.linalg.pinv(result.jac.T @ result.jac)
    if not np.all(np.isfinite(covariance)):
        return None
    return CurveFit(family, result.x, covariance, k_scale, loss_scale, math.sqrt(variance), lower, upper)
