"""The sequential probability ratio test (SPRT) for a bot change, over duplicate pairs, as
chess engine testing does it (fishtest, fastchess, cutechess-cli). Pure functions of the
pair scores: nothing is read or stored here (the runner is :mod:`capicua.arena.sprt_runner`).

**Pairs, not matches.** A duplicate set is one deal played twice with the sides swapped.
Each match gives the candidate 1 (a win), ½ (no winner) or 0 (a loss), so the set's *pair
score* is 0, ½, 1, 1½ or 2, and a test's data are the five *pentanomial* counts of those
scores, ``[LL, LD, WL+DD, WD, WW]``. The two matches of a set are not independent: the same
deal favours whoever holds the strong hand, and each bot holds it once, so the luck of the
deal mostly cancels within the pair. Counting matches as independent games (the trinomial
win/draw/loss model) ignores this and overstates the variance; the pair is the independent
unit, and its five outcomes carry the correlation. The same test then decides with fewer
matches, at the same error rates.

**The hypotheses and the generalized likelihood ratio.** H0 says the candidate is elo0
stronger than the base, H1 says elo1 (elo0 < elo1). Neither fixes the whole pentanomial
distribution, only one number of it, so each is represented by the distribution that fits
the data best *under that constraint* (its maximum likelihood estimate; the other cells are
nuisance parameters), and the log-likelihood ratio (LLR) of the data is taken between those
two: the generalized SPRT of Michel Van den Bergh, as fishtest
(``server/fishtest/stats/LLRcalc.py``) and fastchess (``sprt.cpp``) compute it. The
constrained estimate has the form ``p_i = phat_i / (1 + x phi_i)`` where ``x`` solves a
one-dimensional "secular" equation (Van den Bergh's notes "Support MLE multinomial",
Proposition 1.1, and "Comments on Normalized Elo" / normalized_elo_practical, Section 4.1).
This is the exact generalized LLR, not the Brownian approximation of his "GSPRT
approximation" note (fishtest's ``LLR_alt2``, which it shows beside the exact value). Two
constraints:

* **logistic**: the expected score per match is ``L(elo) = 1 / (1 + 10^(-elo/400))``; one
  linear constraint, one secular equation.
* **normalized** (the default): the *t-value* ``(score - ½) / sigma`` per match is
  ``nelo / (800 / ln 10)``, ``sigma`` the standard deviation of one match's score as the
  pairs show it (``sqrt(2)`` times that of the pair mean). Normalized Elo (nElo) measures a
  difference in units of the test's own noise, so the expected length of a test depends,
  to first order, on its bounds alone: not on how often hands end with no winner (which
  varies a lot between presets) nor on how much the duplicate deals cancel. A logistic
  [0, 5] is a cheap test on one preset and a very long one on another; a normalized [0, 5]
  costs about the same everywhere. This is the model fishtest runs its tests with. The
  constraint is not linear: the estimate is a fixed point iterated from the uniform
  distribution, each step one secular equation, as in fishtest and fastchess. Far from
  the data that iteration can fail or settle on a less likely solution of the same
  equations, so there (and only there) a search over sigma looks for all of them and the
  most likely is kept.

As in fishtest and fastchess an empty cell counts as 0.001 of a pair (a tiny prior that
keeps every estimate finite, e.g. when every pair so far had the same score); with no
pairs at all the LLR is 0.

**The bounds.** Wald's test continues while ``lower < LLR < upper``, with
``lower = ln(beta / (1 - alpha))`` and ``upper = ln((1 - beta) / alpha)``. Reaching the upper
bound accepts H1 (the candidate is better by elo1); the chance of that when the truth is
elo0 or worse is about ``alpha`` (the false positive rate). Reaching the lower bound accepts
H0; the chance of that when the truth is elo1 or better is about ``beta``. "About": the LLR
jumps by whole pairs and overshoots the bound a little, which makes the real error rates
slightly smaller (fishtest corrects for the expected overshoot; this module does not).

**Estimates** (fixed-sample, as fishtest's ``stat_util.get_elo`` and fastchess's
``elo_pentanomial.cpp``; they ignore that a sequential test stopped where it did): the score
per match with its normal 95% interval from the variance of the pair score, mapped to
logistic Elo; the likelihood of superiority (LOS, the normal probability that the true
score exceeds ½); and nElo with the delta-method interval of the t-value, which accounts for
the skewness and kurtosis of the pair score (fishtest's ``t_conf`` in its statistics page).
Below :data:`MIN_PAIRS` pairs, or when every pair had the same score, the pairs cannot
estimate that variance: the Elo interval is then the Wilson score interval, and nElo has
none (see :func:`estimate`).

**What a test costs.** :func:`expected_pairs` is Wald's average number of pairs at a given
true Elo, and :func:`simulate` plays the test on random pairs of that Elo, spread like a
measured pentanomial (:data:`REFERENCE_SPREAD`): the defaults (:data:`DEFAULT_ELO1`,
:data:`DEFAULT_MAX_PAIRS`) were chosen with it.
"""

from __future__ import annotations

import itertools
import math
import operator
import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from .ratings import ELO_PER_NAT, Z95

MODELS = ("normalized", "logistic")
#: The pair scores in pentanomial order, and the same on the [0, 1] scale of a match's score.
PAIR_SCORES = (0.0, 0.5, 1.0, 1.5, 2.0)
_VALUES = tuple(s / 2.0 for s in PAIR_SCORES)
#: nElo per unit of per-match t-value: ``800 / ln 10`` (fishtest's ``nelo_divided_by_nt``).
NELO_PER_T = 2.0 * ELO_PER_NAT
#: What an empty cell counts for (fishtest's and fastchess's ``regularize``).
EMPTY_CELL = 1e-3
#: Scores are clamped to [e, 1 - e] before becoming logistic Elo (fishtest's ``elo``), so an
#: interval reaching past 0 or 1 stays finite (about ±1200 Elo).
SCORE_CLAMP = 1e-3
_MAX_ITERATIONS = 200  # of a secular equation, and of a bisection
_FIXED_POINT_ITERATIONS = 100  # before the normalized fit falls back to its search
_TOLERANCE = 1e-12  # on the probabilities of the normalized fixed point
_SCAN_POINTS = 64  # the search's grid of sigma
_SCAN_ABOVE = 0.5  # |t| per pair beyond which the search runs as well as the fixed point
_SCAN_LOGIT = 16.0  # it reaches sigma / top = e^-16 and 1 - e^-16

#: The default test (``capicua arena sprt``): H0 0 against H1 10 normalized Elo, at most
#: 12,000 pairs. Simulated (:func:`simulate`, 2,000 runs at each bound, pairs spread as
#: ``hard`` against ``medium``) it decides at either bound in about 3,200 pairs on average
#: and ends undecided about 1% of the time; [0, 5] needed about 12,800 on average (Wald)
#: and ended undecided at 20,000 pairs about one run in six (docs/regression-testing.md).
DEFAULT_ELO0 = 0.0
DEFAULT_ELO1 = 10.0
DEFAULT_MAX_PAIRS = 12_000

#: Fewer pairs than this and the normal intervals of :func:`estimate` are not shown: from a
#: handful of pairs the variance they need is itself a guess (simulated at several
#: pentanomials, the normal 95% interval of the score covers the truth 60-85% of the time
#: from 3 to 5 pairs, 87-90% from 10, 90-93% from 20).
MIN_PAIRS = 20

Decision = Literal["H0", "H1"]


# -- validation --------------------------------------------------------------------------------


def _counts(counts: Sequence[int]) -> list[int]:
    if len(counts) != 5:
        raise ValueError(f"a pentanomial has 5 counts [LL, LD, WL+DD, WD, WW], got {len(counts)}")
    out = []
    for c in counts:
        try:
            n = operator.index(c)
        except TypeError:
            raise ValueError(f"pentanomial counts are whole numbers, got {c!r}") from None
        if n < 0:
            raise ValueError(f"pentanomial counts are never negative, got {list(counts)}")
        out.append(n)
    return out


def _check_test(elo0: float, elo1: float, model: str) -> None:
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}: expected one of {', '.join(MODELS)}")
    if not (math.isfinite(elo0) and math.isfinite(elo1)):
        raise ValueError(f"elo0 and elo1 must be finite, got {elo0!r} and {elo1!r}")
    if elo0 >= elo1:
        raise ValueError(f"elo0 must be less than elo1, got elo0={elo0:g} elo1={elo1:g}")
    if model == "logistic":
        for elo in (elo0, elo1):
            if not 0.0 < _score_of(elo) < 1.0:
                raise ValueError(f"{elo:g} logistic Elo is beyond any reachable score")


def _check_rates(alpha: float, beta: float) -> None:
    if not 0.0 < alpha < 1.0 or not 0.0 < beta < 1.0:
        raise ValueError(f"alpha and beta are in (0, 1), got alpha={alpha!r} beta={beta!r}")
    if alpha + beta >= 1.0:
        raise ValueError(f"alpha + beta must be below 1, got {alpha + beta:g}")


# -- small helpers -----------------------------------------------------------------------------


def _score_of(elo: float) -> float:
    """The expected score of a logistic Elo difference (without overflow for huge ones)."""
    x = elo / ELO_PER_NAT
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _elo_of(score: float) -> float:
    """The logistic Elo of a score, clamped as fishtest's ``stat_util.elo``."""
    s = min(max(score, SCORE_CLAMP), 1.0 - SCORE_CLAMP)
    return ELO_PER_NAT * math.log(s / (1.0 - s))


def _phi(z: float) -> float:
    """The standard normal distribution function."""
    return 0.5 * (1.0 + math.erf(z / math.sqrt(2.0)))


def _distribution(counts: Sequence[int]) -> tuple[float, list[float]]:
    """The regularized number of pairs and the empirical distribution over ``_VALUES``."""
    cells = [float(c) if c else EMPTY_CELL for c in counts]
    total = sum(cells)
    return total, [c / total for c in cells]


def _moments(p: Sequence[float]) -> tuple[float, float]:
    mean = sum(pi * a for pi, a in zip(p, _VALUES, strict=True))
    var = sum(pi * (a - mean) ** 2 for pi, a in zip(p, _VALUES, strict=True))
    return mean, var


# -- the constrained maximum likelihood ----------------------------------------------------------


def _secular(phat: Sequence[float], phi: Sequence[float]) -> float | None:
    """The root ``x`` of ``sum phat_i phi_i / (1 + x phi_i) = 0`` with every ``1 + x phi_i``
    positive, or None when there is none (all ``phi_i`` of one sign).

    The left side decreases strictly from +inf to -inf across the admissible interval
    ``(-1/max phi, -1/min phi)``, so the root is unique: Newton's method, falling back to
    bisection whenever a step would leave the bracket (fishtest uses Brent's method on the
    same interval).

    A Newton step may not shrink any denominator ``1 + x phi_i`` below a tenth of its
    current value (it stops there instead). Undamped, a step can land within rounding of a
    pole, where the function is huge and the following steps are too small to tell from
    convergence, so a point next to the pole came back as the root: for the pentanomial
    [2, 14, 14, 2, 1] (any with LD = 3 WD + 8 WW) the first step from 0 at the score ½
    lands exactly on it, and the LLR of a candidate scoring 39% was +862, a false H1. A
    root that truly lies close to a pole (a regularized empty cell taking much of the mass)
    is still reached, a decade closer per step."""
    lo_phi, hi_phi = min(phi), max(phi)
    if not lo_phi < 0.0 < hi_phi:
        return None
    a, b = -1.0 / hi_phi, -1.0 / lo_phi  # f(a+) = +inf, f(b-) = -inf
    x = 0.0
    for _ in range(_MAX_ITERATIONS):
        f = 0.0
        df = 0.0
        for w, v in zip(phat, phi, strict=True):
            q = v / (1.0 + x * v)
            f += w * q
            df -= w * q * q
        if f == 0.0:
            return x
        if f > 0.0:
            a = x
        else:
            b = x
        step = x - f / df
        for v in phi:  # the damping: stop at a tenth of the current denominator
            den = 1.0 + x * v
            if 1.0 + step * v < 0.1 * den:
                step = (0.1 * den - 1.0) / v
        nxt = step if a < step < b else 0.5 * (a + b)
        if abs(nxt - x) <= 1e-15 * max(1.0, abs(x)):
            return nxt
        x = nxt
    return x


def _tilt(phat: Sequence[float], phi: Sequence[float]) -> list[float] | None:
    """The distribution ``phat_i / (1 + x phi_i)`` at the root ``x`` of :func:`_secular`,
    or None when there is no root.

    When the root lies close to a pole, the denominator ``1 + x phi_k`` of that cell (a
    regularized empty cell that has to take much of the mass) is the difference of two
    nearly equal numbers and loses most of its digits, which the count of pairs then
    multiplies into the LLR (1e-3 at 10^5 pairs). So that denominator ``y`` is refined as
    the unknown itself, writing every other one as ``1 + (y - 1) phi_i / phi_k``."""
    x = _secular(phat, phi)
    if x is None:
        return None
    dens = [1.0 + x * v for v in phi]
    k = min(range(len(dens)), key=dens.__getitem__)
    if dens[k] < 0.5:
        ratio = [v / phi[k] for v in phi]
        y = dens[k]
        for _ in range(8):  # Newton from within 1e-16 of the root: a step or two suffice
            ds = [(1.0 - r) + y * r for r in ratio]
            g = sum(w * v / d for w, v, d in zip(phat, phi, ds, strict=True))
            dg = -sum(w * v * r / (d * d) for w, v, r, d in zip(phat, phi, ratio, ds, strict=True))
            nxt = y - g / dg
            if not 0.0 < nxt < 1.0 or nxt == y:
                break
            y = nxt
        dens = [(1.0 - r) + y * r for r in ratio]
    p = [w / d for w, d in zip(phat, dens, strict=True)]
    total = sum(p)  # 1 up to rounding
    return [q / total for q in p]


def _likelihood(phat: Sequence[float], p: Sequence[float]) -> float:
    """The log-likelihood per pair of the empirical ``phat`` under ``p``."""
    return sum(w * math.log(q) for w, q in zip(phat, p, strict=True))


def _mle_score(phat: Sequence[float], s: float) -> list[float]:
    """The most likely distribution over ``_VALUES`` with expected value ``s``, given the
    empirical ``phat`` (Van den Bergh, Proposition 1.1)."""
    p = _tilt(phat, [a - s for a in _VALUES])
    if p is None:  # cannot happen for 0 < s < 1 (checked): the values span [0, 1]
        raise ValueError(f"no distribution on [0, 1] has the expected score {s!r}")
    return p


def _t_phi(mu: float, sigma: float, t: float) -> list[float]:
    """The t-value constraint linearized at a distribution with moments ``mu``, ``sigma``
    (Van den Bergh, "Normalized Elo practical", 4.1; fishtest's ``MLE_t_value``)."""
    return [a - 0.5 - 0.5 * t * sigma * (1.0 + ((mu - a) / sigma) ** 2) for a in _VALUES]


def _iterate_t(phat: Sequence[float], t: float, start: Sequence[float]) -> list[float] | None:
    """The fixed point for ``t`` iterated from ``start`` (each step: linearize at the
    current distribution, solve the secular equation); None when a step has no solution or
    the iteration does not settle."""
    p = list(start)
    for _ in range(_FIXED_POINT_ITERATIONS):
        mu, var = _moments(p)
        nxt = _tilt(phat, _t_phi(mu, math.sqrt(var), t))
        if nxt is None:
            return None
        moved = max(abs(u - v) for u, v in zip(nxt, p, strict=True))
        p = nxt
        if moved < _TOLERANCE:
            return p
    return None


def _t_fit(phat: Sequence[float], t: float, sigma: float) -> tuple[float, list[float]] | None:
    """The fixed point's step taken at ``sigma`` and ``mu = ½ + t sigma``: the mean of the
    resulting distribution minus ``mu`` (0 at a solution), and the distribution."""
    mu = 0.5 + t * sigma
    p = _tilt(phat, _t_phi(mu, sigma, t))
    if p is None:
        return None
    return _moments(p)[0] - mu, p


def _bisect_t(phat: Sequence[float], t: float, a: float, b: float, fa: float) -> list[float]:
    """The distribution at the sign change of :func:`_t_fit`'s residual in ``[a, b]``."""
    best: list[float] = []
    for _ in range(_MAX_ITERATIONS):
        mid = 0.5 * (a + b)
        fit = _t_fit(phat, t, mid)
        if fit is None or mid in (a, b):
            break
        best = fit[1]
        if fit[0] == 0.0:
            break
        if (fit[0] > 0.0) == (fa > 0.0):
            a, fa = mid, fit[0]
        else:
            b = mid
    return best


def _t_value(p: Sequence[float]) -> float:
    mu, var = _moments(p)
    return (mu - 0.5) / math.sqrt(var)


def _scan_t(phat: Sequence[float], t: float) -> list[float] | None:
    """The most likely distribution with t-value ``t`` found by a search over ``sigma``;
    None if none is found.

    At a solution the step's distribution reproduces the ``(mu, sigma)`` it was taken at:
    its total is 1 and ``sum p phi = 0`` by construction, which with ``mu = ½ + t sigma``
    forces the variance, so one residual in one unknown is left. Each sign change on a grid
    of ``sigma`` is refined by bisection; those that are jumps, not roots, are dropped."""
    # sigma^2 <= mu (1 - mu) = ¼ - t^2 sigma^2 on [0, 1]; the grid is even in the logit of
    # sigma / top, dense at both ends: concentrated data fit a tiny sigma, two-peaked data
    # one close to the top
    top = 0.5 / math.sqrt(1.0 + t * t)
    grid = [
        top / (1.0 + math.exp(-_SCAN_LOGIT * (2.0 * k / (_SCAN_POINTS - 1) - 1.0)))
        for k in range(_SCAN_POINTS)
    ]
    fits = [_t_fit(phat, t, s) for s in grid]
    found = []
    for i in range(len(grid) - 1):
        left, right = fits[i], fits[i + 1]
        if left is None or right is None or (left[0] > 0.0) == (right[0] > 0.0):
            continue
        p = _bisect_t(phat, t, grid[i], grid[i + 1], left[0])
        if p and abs(_t_value(p) - t) <= 1e-6 * max(1.0, abs(t)):
            found.append(p)
    return max(found, key=lambda p: _likelihood(phat, p)) if found else None


def _mle_t(phat: Sequence[float], t: float) -> list[float]:
    """The most likely distribution over ``_VALUES`` with t-value ``(mu - ½) / sigma = t``.

    ``t = 0`` is the linear constraint ``mu = ½``. Otherwise the fixed point of fishtest and
    fastchess, iterated from the uniform distribution, which finds a solution of the
    likelihood equations but not necessarily the most likely one. Where it fails (no step
    solution far from the data, or a slow crawl when a regularized empty cell has to take
    much of the mass: fishtest then stops after 10 steps on an assertion) or where the bound
    is far enough from ½ for several solutions to exist, the same iteration started from
    the data and :func:`_scan_t` look for others, and the most likely is kept. Over
    thousands of random pentanomials the first fixed point was the most likely solution
    whenever ``|t| <= _SCAN_ABOVE`` (per pair; about 120 nElo), so the common case pays
    nothing."""
    if t == 0.0:
        return _mle_score(phat, 0.5)
    uniform = [1.0 / len(_VALUES)] * len(_VALUES)
    p = _iterate_t(phat, t, uniform)
    if p is not None and abs(t) <= _SCAN_ABOVE:
        return p
    # far from ½ the iteration started from the data finds the solution nearest to them
    candidates = [q for q in (p, _iterate_t(phat, t, phat), _scan_t(phat, t)) if q is not None]
    if not candidates:
        raise ValueError(f"no pentanomial fits a per-pair t-value of {t:g}")
    return max(candidates, key=lambda q: _likelihood(phat, q))


# -- the test ------------------------------------------------------------------------------------


def _llr(counts: Sequence[int], elo0: float, elo1: float, model: str) -> float:
    """:func:`llr` on validated arguments."""
    if not any(counts):
        return 0.0
    total, phat = _distribution(counts)
    if model == "logistic":
        p0, p1 = (_mle_score(phat, _score_of(e)) for e in (elo0, elo1))
    else:
        # a pair mean's t-value is sqrt(2) times a match's (its sigma is 1/sqrt(2) of it)
        p0, p1 = (_mle_t(phat, math.sqrt(2.0) * e / NELO_PER_T) for e in (elo0, elo1))
    return total * sum(
        w * (math.log(b) - math.log(a)) for w, a, b in zip(phat, p0, p1, strict=True)
    )


def llr(counts: Sequence[int], elo0: float, elo1: float, model: str = "normalized") -> float:
    """The generalized log-likelihood ratio of H1 (``elo1``) against H0 (``elo0``) for the
    pentanomial ``counts`` ``[LL, LD, WL+DD, WD, WW]``; the bounds are normalized Elo with
    ``model="normalized"`` and logistic Elo with ``model="logistic"``. 0.0 with no pairs."""
    c = _counts(counts)
    _check_test(elo0, elo1, model)
    return _llr(c, elo0, elo1, model)


def bounds(alpha: float = 0.05, beta: float = 0.05) -> tuple[float, float]:
    """Wald's (lower, upper) LLR bounds: ``(ln(beta / (1 - alpha)), ln((1 - beta) / alpha))``."""
    _check_rates(alpha, beta)
    return math.log(beta / (1.0 - alpha)), math.log((1.0 - beta) / alpha)


def _cell(pair_score: float) -> int:
    """The pentanomial cell of a pair score: twice the score."""
    twice = 2 * pair_score
    if twice not in (0, 1, 2, 3, 4):
        raise ValueError(f"a pair score is 0, 0.5, 1, 1.5 or 2, got {pair_score!r}")
    return int(twice)


def pentanomial(pair_scores: Iterable[float]) -> list[int]:
    """The counts ``[LL, LD, WL+DD, WD, WW]`` of pair scores 0, ½, 1, 1½ and 2."""
    counts = [0] * 5
    for score in pair_scores:
        counts[_cell(score)] += 1
    return counts


def _decide(value: float, lower: float, upper: float) -> Decision | None:
    if value >= upper:
        return "H1"
    if value <= lower:
        return "H0"
    return None


# -- estimates ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Estimate:
    """What the pairs say of the candidate, fixed-sample statistics with 95% intervals.

    ``score`` is the candidate's mean score per match (pair scores / 2) over the pairs as
    counted; the other numbers come from the regularized counts (an empty cell counts
    0.001, as in fishtest), so they stay finite when every pair had the same score. With no
    pairs every number is NaN.

    A *small sample* (fewer than :data:`MIN_PAIRS` pairs, or pairs that all had the same
    score, so that their spread is unknown) has no normal interval: ``elo_ci95`` is then the
    Wilson score interval and ``los`` the matching score test (see :func:`estimate`), and
    ``nelo_ci95`` is NaN, as ``nelo`` is when every pair had the same score."""

    pairs: int
    score: float
    elo: float  # logistic Elo of the score
    elo_ci95: tuple[float, float]
    nelo: float  # normalized Elo
    nelo_ci95: tuple[float, float]
    los: float  # likelihood of superiority: P(true score > ½)
    small_sample: bool = False


def _t_spread(p: Sequence[float]) -> tuple[float, float]:
    """The t-value of the pair mean under ``p`` and the delta-method variance of a sample
    t-value per pair, ``1 - t skew + t^2 (kurt - 1) / 4`` (clipped at 0, as fishtest does)."""
    mu, var = _moments(p)
    sd = math.sqrt(var)
    skew = sum(w * ((a - mu) / sd) ** 3 for w, a in zip(p, _VALUES, strict=True))
    kurt = sum(w * ((a - mu) / sd) ** 4 for w, a in zip(p, _VALUES, strict=True))
    t = (mu - 0.5) / sd
    return t, max(1.0 - t * skew + 0.25 * t * t * (kurt - 1.0), 0.0)


def _wilson(score: float, n: int) -> tuple[float, float]:
    """The Wilson score interval (95%) of a mean ``score`` in [0, 1] over ``n`` trials."""
    z2 = Z95 * Z95
    centre = (score + z2 / (2 * n)) / (1.0 + z2 / n)
    half = Z95 / (1.0 + z2 / n) * math.sqrt(score * (1.0 - score) / n + z2 / (4 * n * n))
    return max(centre - half, 0.0), min(centre + half, 1.0)


def estimate(counts: Sequence[int]) -> Estimate:
    """Elo, nElo (each with a 95% interval), LOS and score from pentanomial ``counts``.

    From :data:`MIN_PAIRS` pairs on, with at least two different pair scores, these are
    fishtest's normal intervals. Below that (or when every pair had the same score) a normal
    interval would rest on a variance the pairs cannot estimate, and would be far too narrow
    (three pairs of 1½ gave Elo +191 [+172, +209] and nElo +3472: the regularized cells are
    all the spread there is).
    Instead the Elo interval is the Wilson score interval of the mean score over the pairs,
    which only assumes that each pair mean is in [0, 1]: its variance is then at most
    ``s (1 - s)``, a Bernoulli trial's, so the interval is valid (conservative) whatever the
    pentanomial, and it is wide when the pairs are few; LOS is the score test that goes with
    it, ``Phi(2 (s - ½) sqrt(pairs))``. nElo is a difference in units of the spread, so no
    interval is claimed for it until the spread can be estimated (NaN), and no value at all
    when the pairs show no spread."""
    c = _counts(counts)
    pairs = sum(c)
    if pairs == 0:
        nan = math.nan
        return Estimate(0, nan, nan, (nan, nan), nan, (nan, nan), nan)
    score = sum(n * a for n, a in zip(c, _VALUES, strict=True)) / pairs
    total, p = _distribution(c)
    mu, var = _moments(p)
    se = math.sqrt(var / total)  # of the mean score; fishtest's stdev / sqrt(games)
    # nElo: the pair mean's t-value over sqrt(2) (per match), with the delta-method variance
    # of a sample t-value, 1 - t skew + t^2 (kurt - 1) / 4, clipped at 0 as fishtest does
    t, var_t = _t_spread(p)
    nelo_per_t = NELO_PER_T / math.sqrt(2.0)  # of the pair mean's t-value
    nelo_half = nelo_per_t * Z95 * math.sqrt(var_t / total)
    one_score = sum(1 for n in c if n) == 1  # every pair the same: no spread seen
    if pairs < MIN_PAIRS or one_score:
        lo, hi = _wilson(score, pairs)
        nan = math.nan
        return Estimate(
            pairs=pairs,
            score=score,
            elo=_elo_of(mu),
            elo_ci95=(_elo_of(lo), _elo_of(hi)),
            nelo=nan if one_score else nelo_per_t * t,
            nelo_ci95=(nan, nan),
            los=_phi(2.0 * (score - 0.5) * math.sqrt(pairs)),
            small_sample=True,
        )
    return Estimate(
        pairs=pairs,
        score=score,
        elo=_elo_of(mu),
        elo_ci95=(_elo_of(mu - Z95 * se), _elo_of(mu + Z95 * se)),
        nelo=nelo_per_t * t,
        nelo_ci95=(nelo_per_t * t - nelo_half, nelo_per_t * t + nelo_half),
        los=_phi((mu - 0.5) / se),
    )


# -- the status of a test --------------------------------------------------------------------------


@dataclass(frozen=True)
class SprtStatus:
    """Where a test stands: its LLR between the bounds, the decision once one is reached
    ("H1": the candidate is better by elo1; "H0": it is not better than elo0; None: play
    on), and the estimates."""

    llr: float
    lower: float
    upper: float
    decision: Decision | None
    estimate: Estimate


def status(
    counts: Sequence[int],
    elo0: float,
    elo1: float,
    alpha: float = 0.05,
    beta: float = 0.05,
    model: str = "normalized",
) -> SprtStatus:
    """The test of H0 ``elo0`` against H1 ``elo1`` (``model`` Elo) with error rates
    ``alpha`` and ``beta`` over pentanomial ``counts``."""
    c = _counts(counts)
    _check_test(elo0, elo1, model)
    lower, upper = bounds(alpha, beta)
    value = _llr(c, elo0, elo1, model)
    return SprtStatus(value, lower, upper, _decide(value, lower, upper), estimate(c))


def stopping_index(
    pair_scores: Iterable[float],
    elo0: float,
    elo1: float,
    alpha: float = 0.05,
    beta: float = 0.05,
    model: str = "normalized",
) -> int | None:
    """The 0-based index of the pair (in playing order) after which the test first reached
    a bound, or None if it never did: the test stopped after ``index + 1`` pairs, whatever
    was played after that (pairs already in flight when it decided).

    The LLR is checked after every pair, as a runner checking after each pair would."""
    _check_test(elo0, elo1, model)
    lower, upper = bounds(alpha, beta)
    counts = [0] * 5
    for i, score in enumerate(pair_scores):
        counts[_cell(score)] += 1
        if _decide(_llr(counts, elo0, elo1, model), lower, upper) is not None:
            return i
    return None


# -- what a test costs ---------------------------------------------------------------------------

#: The spread of pair scores the expected lengths and the simulations assume: `hard` (100
#: iterations) against `medium` on iq-1v1 over 2,772 pairs (docs/regression-testing.md), two
#: bots of this arena within a few nElo of each other. No match there ends without a winner
#: and 60% of the pairs are split, so a pair mean is 0, ½ or 1 with a standard deviation of
#: 0.32. In normalized Elo the length of a test hardly depends on this; in logistic Elo it
#: does (a preset whose deals cancel more luck needs fewer pairs).
REFERENCE_SPREAD = (565, 0, 1662, 0, 545)

# When the simulation takes the exact LLR (see _simulated_stop): within this much (plus
# twice the last difference) of a bound, for these first pairs, after a pair in a cell
# holding at most 1/_SIM_THIN of them, and when the pairs have doubled, or grown by an
# eighth if the last difference was larger than _SIM_CLOSE.
_SIM_MARGIN = 0.1
_SIM_EXACT_FIRST = 48
_SIM_THIN = 8
_SIM_CLOSE = 0.05
_SIM_MEMO_PAIRS = 48  # the exact LLRs kept from run to run: counts of up to 48 pairs


def _t_of(elo: float) -> float:
    """The t-value per pair (of the pair mean) of a normalized Elo."""
    return math.sqrt(2.0) * elo / NELO_PER_T


def _check_elo(elo: float, model: str) -> None:
    if model not in MODELS:
        raise ValueError(f"unknown model {model!r}: expected one of {', '.join(MODELS)}")
    if not math.isfinite(elo):
        raise ValueError(f"an Elo difference must be finite, got {elo!r}")
    if model == "logistic" and not 0.0 < _score_of(elo) < 1.0:
        raise ValueError(f"{elo:g} logistic Elo is beyond any reachable score")


def pentanomial_at(
    elo: float, model: str = "normalized", spread: Sequence[int] = REFERENCE_SPREAD
) -> list[float]:
    """The probabilities of the pair scores 0, ½, 1, 1½, 2 of a candidate ``elo`` (``model``
    Elo) stronger than its base, shaped like the pentanomial ``spread``.

    It is the distribution with that Elo most like ``spread`` (the constrained maximum
    likelihood the test itself fits to its hypotheses): how often matches have no winner
    and how often a pair is split stay those of ``spread``, only the candidate's edge
    moves."""
    c = _counts(spread)
    _check_elo(elo, model)
    if not any(c):
        raise ValueError("the spread is a pentanomial of at least one pair")
    _, phat = _distribution(c)
    if model == "logistic":
        return _mle_score(phat, _score_of(elo))
    return _mle_t(phat, _t_of(elo))


def _drift(p: Sequence[float], elo0: float, elo1: float, model: str) -> tuple[float, float]:
    """The mean and the variance per pair of the LLR's increments when the pairs follow
    ``p``: the Brownian approximation of the generalized LLR (Van den Bergh's "GSPRT
    approximation"), in which the LLR after ``N`` pairs is ``N (x1 - x0) (2 xhat - x0 - x1)
    / 2v`` for the statistic ``xhat`` (the score, or the t-value) with variance ``v / N``."""
    mu, var = _moments(p)
    if model == "logistic":
        s0, s1 = _score_of(elo0), _score_of(elo1)
        return (s1 - s0) * (2.0 * mu - s0 - s1) / (2.0 * var), (s1 - s0) ** 2 / var
    t0, t1 = _t_of(elo0), _t_of(elo1)
    t, var_t = _t_spread(p)
    return (t1 - t0) * (t - 0.5 * (t0 + t1)), (t1 - t0) ** 2 * var_t


def _wald_length(drift: float, step_var: float, lower: float, upper: float) -> float:
    """Wald's average sample number of a walk with the given ``drift`` and variance per
    step between ``lower < 0 < upper``: ``E[LLR at the stop] / drift``, the stop being at
    the upper bound with the probability that makes ``exp(theta LLR)`` a martingale
    (``theta = -2 drift / step_var``); ``-lower upper / step_var`` without drift."""
    theta = -2.0 * drift / step_var
    if abs(theta) * (upper - lower) < 1e-9:
        return -lower * upper / step_var
    # written with expm1 of non-positive arguments only, so that nothing overflows
    if theta > 0.0:
        p_upper = (
            math.exp(-theta * upper)
            * math.expm1(theta * lower)
            / math.expm1(theta * (lower - upper))
        )
    else:
        p_upper = math.expm1(-theta * lower) / math.expm1(theta * (upper - lower))
    return (p_upper * upper + (1.0 - p_upper) * lower) / drift


def expected_pairs(
    elo0: float,
    elo1: float,
    true_elo: float,
    alpha: float = 0.05,
    beta: float = 0.05,
    model: str = "normalized",
    spread: Sequence[int] = REFERENCE_SPREAD,
) -> float:
    """The average number of pairs the test of ``elo0`` against ``elo1`` plays when the
    candidate is truly ``true_elo`` stronger (all ``model`` Elo), with pair scores spread as
    ``spread`` (:func:`pentanomial_at`): Wald's approximation, without a ``max_pairs``.

    At either bound of a normalized test this is about ``2 ((1 - a) |lower| - a upper) /
    (t1 - t0)^2`` (``a`` the error rate of that side, ``t`` the t-values per pair), about
    ``320,000 / (elo1 - elo0)^2`` pairs at the default error rates; in the middle of the
    bounds, the slowest place, about 1.6 times that. :func:`simulate` agrees within a few
    percent (the LLR's overshoot of the bound lengthens a real test a little)."""
    _check_test(elo0, elo1, model)
    lower, upper = bounds(alpha, beta)
    drift, step_var = _drift(pentanomial_at(true_elo, model, spread), elo0, elo1, model)
    # a test far from its data can cross in less than a pair's step; it still plays one
    return max(1.0, _wald_length(drift, step_var, lower, upper))


@dataclass(frozen=True)
class Simulation:
    """How simulated tests ended: the share of runs that accepted H0, H1 or neither
    (stopped at ``max_pairs``), and the pairs they played (an undecided run: ``max_pairs``)."""

    runs: int
    h0: float
    h1: float
    undecided: float
    mean_pairs: float
    median_pairs: float
    p95_pairs: float
    lengths: tuple[int, ...]  # of each run, in order


def _percentile(ordered: Sequence[int], q: float) -> float:
    """The nearest-rank ``q`` quantile of sorted values."""
    return float(ordered[max(0, math.ceil(q * len(ordered)) - 1)])


def _draws(rng: random.Random, cumulative: Sequence[float]) -> Iterator[int]:
    """Pentanomial cells drawn with the given cumulative probabilities, forever."""
    draw = rng.random
    while True:
        u = draw()
        k = 0
        while u >= cumulative[k]:
            k += 1
        yield k


def _simulated_stop(
    cells: Iterable[int],
    elo0: float,
    elo1: float,
    model: str,
    lower: float,
    upper: float,
    max_pairs: int,
    memo: dict[tuple[int, ...], float] | None = None,
) -> tuple[int, Decision | None]:
    """The pairs a test plays on the pentanomial ``cells`` (0 to 4, in playing order) and
    its decision, as :func:`stopping_index` finds them, without the exact LLR of every pair.
    ``memo`` keeps the exact LLRs of small counts for the next run of the same test.

    Between exact evaluations the LLR is followed by an approximation, the same likelihood
    ratio for normal pair scores with the running mean and variance of the regularized
    pairs, plus the difference from the exact LLR at the last exact evaluation. For logistic
    bounds that is ``N/2 ln(r0 / r1)``, ``r`` the mean squared distance to each score
    (fishtest's ``LLR_alt``); for normalized ones, with ``m1``, ``m2`` the raw moments about
    ½, each hypothesis ``t`` has the profile log-likelihood per pair ``ln u - m2 u^2 / 2 +
    t m1 u - t^2 / 2`` at the positive root ``u = 1 / sigma`` of ``m2 u^2 - t m1 u - 1``
    (the most likely normal whose t-value is ``t``). That difference is a number of pairs times
    a function of their distribution, so it moves slowly once the distribution settles:
    near the bounds it is a few hundredths, far from them on lopsided spreads more than a
    whole unit. The exact LLR is taken again:

    * for the first ``_SIM_EXACT_FIRST`` pairs, and after a pair in a thin cell (at most an
      eighth of the pairs, or 3), which moves the difference most;
    * when the pairs have doubled since (grown by an eighth, if the difference was more than
      ``_SIM_CLOSE``);
    * when the corrected approximation comes within ``_SIM_MARGIN`` plus twice the last
      difference of a bound.

    Against the pair-by-pair test on 9,000 random runs (bounds 10 to 80 wide, both models,
    ten spreads from the reference to all-split and all-WW ones, true Elo at, between and
    far beyond the bounds) every stop was the same pair; a fixed margin, without the
    difference, missed one in a few hundred. At the defaults a run takes the exact LLR
    about 65 times, and half of those (the first pairs) are shared with other runs through
    ``memo``."""
    values = _VALUES
    squares = [a * a for a in values]
    logistic = model == "logistic"
    if logistic:
        x0, x1 = _score_of(elo0), _score_of(elo1)
    else:
        x0, x1 = _t_of(elo0), _t_of(elo1)
    log, sqrt = math.log, math.sqrt
    thin_share, exact_first = _SIM_THIN, _SIM_EXACT_FIRST
    counts = [0] * 5
    # the regularized total, sum and sum of squares, as _distribution counts them
    total = EMPTY_CELL * 5
    s_1 = EMPTY_CELL * sum(values)
    s_2 = EMPTY_CELL * sum(squares)
    n = 0
    refresh = 0  # the pair count at which the exact LLR is due again
    correction = 0.0  # exact minus approximate LLR at the last exact evaluation
    low, high = lower + _SIM_MARGIN, upper - _SIM_MARGIN  # the band the estimate may skip in
    for k in itertools.islice(cells, max_pairs):
        n += 1
        c = counts[k]
        w = 1.0 if c else 1.0 - EMPTY_CELL
        counts[k] = c = c + 1
        total += w
        s_1 += w * values[k]
        s_2 += w * squares[k]
        mu = s_1 / total
        var = max(s_2 / total - mu * mu, 1e-300)
        if logistic:
            approx = 0.5 * total * log((var + (mu - x0) ** 2) / (var + (mu - x1) ** 2))
        else:  # the normal profile log-likelihood of t = x1 minus that of t = x0
            m1 = mu - 0.5
            m2 = var + m1 * m1
            u0 = (x0 * m1 + sqrt(x0 * x0 * m1 * m1 + 4.0 * m2)) / (2.0 * m2)
            u1 = (x1 * m1 + sqrt(x1 * x1 * m1 * m1 + 4.0 * m2)) / (2.0 * m2)
            approx = total * (
                log(u1 / u0)
                - 0.5 * m2 * (u1 * u1 - u0 * u0)
                + m1 * (x1 * u1 - x0 * u0)
                - 0.5 * (x1 * x1 - x0 * x0)
            )
        if n < refresh and c > 3 and c * thin_share > n and low < approx + correction < high:
            continue
        if memo is None or n > _SIM_MEMO_PAIRS:
            value = _llr(counts, elo0, elo1, model)
        else:  # the first pairs of many runs share their counts
            key = tuple(counts)
            value = memo.get(key, math.nan)
            if math.isnan(value):
                value = memo[key] = _llr(counts, elo0, elo1, model)
        decision = _decide(value, lower, upper)
        if decision is not None:
            return n, decision
        correction = value - approx
        low = lower + _SIM_MARGIN + 2.0 * abs(correction)
        high = upper - _SIM_MARGIN - 2.0 * abs(correction)
        grow = 8 if abs(correction) > _SIM_CLOSE else 1
        refresh = n + 1 if n < exact_first else n + max(1, n // grow)
    return n, None


def simulate(
    elo0: float,
    elo1: float,
    *,
    true_elo: float,
    alpha: float = 0.05,
    beta: float = 0.05,
    model: str = "normalized",
    max_pairs: int = DEFAULT_MAX_PAIRS,
    runs: int = 200,
    seed: int = 0,
    spread: Sequence[int] = REFERENCE_SPREAD,
) -> Simulation:
    """Run the test ``runs`` times on pair scores drawn at random (seeded) for a candidate
    ``true_elo`` stronger (``model`` Elo, as the bounds), spread as ``spread``
    (:func:`pentanomial_at`), each until it decides or ``max_pairs`` pairs: what a test
    with these bounds costs and how often it ends undecided.

    Each run stops where :func:`stopping_index` would: at the first pair after which the
    exact generalized LLR is past a bound. Evaluating that LLR after every pair would take
    minutes, so its Brownian approximation (the LLR from the running mean and variance of
    the regularized pairs) is kept instead, and the exact LLR is taken only when the
    approximation comes within ``_SIM_MARGIN`` of a bound: a few hundred runs of a few
    thousand pairs take a second or two."""
    _check_test(elo0, elo1, model)
    lower, upper = bounds(alpha, beta)
    if max_pairs < 1:
        raise ValueError(f"max_pairs is at least 1, got {max_pairs}")
    if runs < 1:
        raise ValueError(f"runs is at least 1, got {runs}")
    p = pentanomial_at(true_elo, model, spread)
    cumulative = [sum(p[: i + 1]) for i in range(len(p))]
    cumulative[-1] = math.inf  # every draw lands in a cell, whatever the rounding
    rng = random.Random(seed)
    memo: dict[tuple[int, ...], float] = {}
    lengths: list[int] = []
    h0 = h1 = 0
    for _ in range(runs):
        n, decision = _simulated_stop(
            _draws(rng, cumulative), elo0, elo1, model, lower, upper, max_pairs, memo
        )
        lengths.append(n)
        h0 += decision == "H0"
        h1 += decision == "H1"
    ordered = sorted(lengths)
    return Simulation(
        runs=runs,
        h0=h0 / runs,
        h1=h1 / runs,
        undecided=(runs - h0 - h1) / runs,
        mean_pairs=sum(lengths) / runs,
        median_pairs=_percentile(ordered, 0.5),
        p95_pairs=_percentile(ordered, 0.95),
        lengths=tuple(lengths),
    )
