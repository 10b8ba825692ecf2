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
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence
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
    same interval)."""
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
    pairs every number is NaN."""

    pairs: int
    score: float
    elo: float  # logistic Elo of the score
    elo_ci95: tuple[float, float]
    nelo: float  # normalized Elo
    nelo_ci95: tuple[float, float]
    los: float  # likelihood of superiority: P(true score > ½)


def estimate(counts: Sequence[int]) -> Estimate:
    """Elo, nElo (each with a 95% interval), LOS and score from pentanomial ``counts``."""
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
    sd = math.sqrt(var)
    skew = sum(w * ((a - mu) / sd) ** 3 for w, a in zip(p, _VALUES, strict=True))
    kurt = sum(w * ((a - mu) / sd) ** 4 for w, a in zip(p, _VALUES, strict=True))
    t = (mu - 0.5) / sd
    var_t = max(1.0 - t * skew + 0.25 * t * t * (kurt - 1.0), 0.0)
    nelo_per_t = NELO_PER_T / math.sqrt(2.0)  # of the pair mean's t-value
    nelo_half = nelo_per_t * Z95 * math.sqrt(var_t / total)
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
