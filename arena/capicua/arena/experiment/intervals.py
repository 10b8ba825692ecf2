"""The distributions the experiment's intervals are read from, in plain Python (scipy is a
test dependency only): the regularized incomplete beta function and its inverse, which give
the Clopper-Pearson interval of a share at any count (whole or, at an effective sample
size, fractional) and Student's t distribution.

The incomplete beta is the continued fraction of Numerical Recipes (Press et al., 3rd ed.,
6.4) evaluated by the modified Lentz method; its inverse is Newton's method kept inside a
bracket (bisection whenever a step would leave it). Both are checked against scipy in
tests/test_experiment_stats.py.
"""

from __future__ import annotations

import math
from statistics import NormalDist

_TINY = 1e-300  # keeps the continued fraction's denominators away from 0
_EPS = 1e-15  # relative change at which the continued fraction has converged
_MAX_TERMS = 100_000  # its terms grow as sqrt(max(a, b)): a few hundred for 10^5 hands
_MAX_STEPS = 400  # of the inverse: Newton converges in a few, bisection in ~60 per decade


def _continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of ``I_x(a, b)``, converging fast for ``x < (a+1)/(a+b+2)``."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1.0) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1.0)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def beta_cdf(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)``: the Beta(a, b) distribution
    function at ``x`` (``a, b > 0``)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(a * math.log(x) + b * math.log1p(-x) - _log_beta(a, b))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _continued_fraction(a, b, x) / a
    return 1.0 - front * _continued_fraction(b, a, 1.0 - x) / b


def beta_quantile(q: float, a: float, b: float) -> float:
    """The ``x`` with ``I_x(a, b) = q`` (``0 < q < 1``, ``a, b > 0``)."""
    log_norm = _log_beta(a, b)
    lo, hi = 0.0, 1.0
    # a start from the normal approximation, which Newton refines
    mean, var = a / (a + b), a * b / ((a + b) ** 2 * (a + b + 1.0))
    x = min(max(mean + NormalDist().inv_cdf(q) * math.sqrt(var), 1e-12), 1.0 - 1e-12)
    for _ in range(_MAX_STEPS):
        f = beta_cdf(x, a, b) - q
        if f == 0.0:
            return x
        if f < 0.0:
            lo = x
        else:
            hi = x
        density = math.exp((a - 1.0) * math.log(x) + (b - 1.0) * math.log1p(-x) - log_norm)
        step = x - f / density if density > 0.0 and math.isfinite(density) else math.nan
        nxt = step if lo < step < hi else 0.5 * (lo + hi)
        if abs(nxt - x) <= 4e-16 * x or nxt in (lo, hi):
            return nxt
        x = nxt
    return x


def clopper_pearson(k: float, n: float, level: float = 0.95) -> tuple[float, float]:
    """The Clopper-Pearson (exact) interval of a share from ``k`` successes in ``n`` trials:
    each end holds with probability at least ``(1 + level) / 2``. ``k`` and ``n`` may be
    fractional (an effective sample size, Korn and Graubard 1998); ``(0, 1)`` without
    trials."""
    if n <= 0.0:
        return 0.0, 1.0
    k = min(max(k, 0.0), n)
    tail = (1.0 - level) / 2.0
    low = 0.0 if k <= 0.0 else beta_quantile(tail, k, n - k + 1.0)
    high = 1.0 if k >= n else beta_quantile(1.0 - tail, k + 1.0, n - k)
    return low, high


def t_quantile(q: float, df: float) -> float:
    """The ``q`` quantile of Student's t distribution with ``df`` degrees of freedom
    (``0.5 <= q < 1``): ``t`` with ``P(|T| > t) = 2 (1 - q)``."""
    if q == 0.5:
        return 0.0
    # P(|T| > t) = I_{df/(df+t^2)}(df/2, 1/2)
    x = beta_quantile(2.0 * (1.0 - q), df / 2.0, 0.5)
    return math.sqrt(df * (1.0 - x) / x)


def t_two_sided(t: float, df: float) -> float:
    """``P(|T| >= |t|)`` for Student's t with ``df`` degrees of freedom."""
    if not math.isfinite(t):
        return 0.0
    return beta_cdf(df / (df + t * t), df / 2.0, 0.5)
