"""The SPRT statistics (capicua.arena.sprt) against values computed another way: a direct
numerical maximization of the multinomial likelihood (scipy's SLSQP), the reference
implementations' own published numbers (fastchess's tests, a fishtest statistics page),
a Monte Carlo simulation of the estimates, and properties that hold by construction."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize
from scipy.special import logsumexp, softmax

from capicua.arena import sprt

# -- an independent computation of the generalized LLR ------------------------------------------
#
# Written from the definitions, not from the module: the five cells are pair scores 0, ½, 1,
# 1½, 2, i.e. a match score of 0, ¼, ½, ¾, 1 per pair mean; an empty cell counts 0.001 of a
# pair (fishtest's regularization); each hypothesis is the most likely distribution under
# its constraint, found by SLSQP over unconstrained logits (so every probability stays
# positive), from two starts, keeping the best feasible answer.

VALUES = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
NELO_PER_T = 800.0 / math.log(10.0)  # fishtest's nelo_divided_by_nt


def _logistic_score(elo: float) -> float:
    odds: float = 10.0 ** (-elo / 400.0)  # (float ** float is Any to mypy: it may be complex)
    return 1.0 / (1.0 + odds)


def _constraint(model: str, elo: float) -> Callable[[np.ndarray], float]:
    def g(z: np.ndarray) -> float:
        p = softmax(z)
        mu = float(p @ VALUES)
        if model == "logistic":
            return mu - _logistic_score(elo)
        # nElo is per match: (score - ½) / sigma_match * 800 / ln 10, and a match's sigma is
        # sqrt(2) times that of the pair mean (fishtest's sigma_pg = sqrt(2 var)); written
        # without the division, which SLSQP may try at a point mass
        sigma_match = math.sqrt(2.0 * float(p @ (VALUES - mu) ** 2))
        return (mu - 0.5) - elo / NELO_PER_T * sigma_match

    return g


def _profile(counts: list[int], model: str, elo: float) -> float:
    n = np.array([c if c else 1e-3 for c in counts], dtype=float)
    w = n / n.sum()
    g = _constraint(model, elo)

    def objective(z: np.ndarray) -> float:
        return -float(w @ (z - logsumexp(z)))

    best = None
    for start in (np.log(w), np.zeros(5)):
        r = minimize(
            objective,
            start,
            constraints=[{"type": "eq", "fun": g}],
            method="SLSQP",
            options={"ftol": 1e-13, "maxiter": 500},
        )
        if abs(g(r.x)) < 1e-9 and (best is None or r.fun < best.fun):
            best = r
    assert best is not None, "SLSQP found no feasible point"
    return -float(best.fun) * float(n.sum())


def reference_llr(counts: list[int], elo0: float, elo1: float, model: str) -> float:
    return _profile(counts, model, elo1) - _profile(counts, model, elo0)


SLSQP_CASES = [
    # (counts, elo0, elo1, model)
    ([13, 37, 50, 25, 3], 0.0, 4.0, "normalized"),
    ([13, 37, 50, 25, 3], -20.0, 10.0, "logistic"),
    ([5, 20, 40, 25, 10], 0.0, 5.0, "normalized"),
    ([5, 20, 40, 25, 10], 0.0, 5.0, "logistic"),
    ([0, 3, 10, 12, 5], -10.0, 10.0, "normalized"),  # an empty cell: regularized
    ([0, 3, 10, 12, 5], 0.0, 60.0, "logistic"),
    ([100, 400, 900, 420, 110], 0.0, 2.0, "normalized"),
    ([2, 0, 3, 1, 4], -50.0, 50.0, "normalized"),
    ([9, 30, 41, 15, 0], 20.0, 150.0, "normalized"),  # H1 far from the data, beyond ±120
    ([871, 26175, 55983, 26678, 821], 0.0, 2.0, "logistic"),
    ([0, 0, 0, 0, 104], 0.0, 5.0, "normalized"),  # every pair the same
    ([1, 2, 3, 4, 5], -100.0, -40.0, "logistic"),
    # LD = 3 WD + 8 WW: Newton's first step at the score ½ landed on a pole (LLR +862)
    ([2, 14, 14, 2, 1], 0.0, 5.0, "normalized"),
    ([2, 14, 14, 2, 1], -10.0, 10.0, "logistic"),
    ([1, 2, 14, 14, 2], -5.0, 0.0, "normalized"),
]


@pytest.mark.parametrize(("counts", "elo0", "elo1", "model"), SLSQP_CASES)
def test_llr_matches_a_direct_maximization(
    counts: list[int], elo0: float, elo1: float, model: str
) -> None:
    expected = reference_llr(counts, elo0, elo1, model)
    assert sprt.llr(counts, elo0, elo1, model) == pytest.approx(expected, rel=1e-6, abs=1e-6)


@pytest.mark.parametrize("mirror", [False, True])
def test_no_absurd_llr_where_a_newton_step_lands_on_a_pole(mirror: bool) -> None:
    # For LD = 3 WD + 8 WW the mean score's Newton step from 0 lands exactly on the pole
    # of the WW cell (at the score ½, so in every test with elo0 = 0); it used to be taken
    # for the root, giving an LLR in the hundreds. One pair moves this LLR by less than
    # 0.1, so it stays below 0.1 per pair.
    for ll, dd, wd, ww in ((2, 14, 2, 1), (0, 7, 1, 2), (30, 3, 5, 1), (4, 40, 0, 3)):
        counts = [ll, 3 * wd + 8 * ww, dd, wd, ww]
        if mirror:
            counts.reverse()
        for elo0, elo1, model in ((0.0, 5.0, "normalized"), (0.0, 10.0, "normalized"),
                                  (-10.0, 10.0, "logistic"), (0.0, 20.0, "logistic")):  # fmt: skip
            value = sprt.llr(counts, elo0, elo1, model)
            assert abs(value) < 0.1 * sum(counts), (counts, elo0, elo1, model, value)


def test_normalized_llr_is_not_monotone_in_ww_far_from_the_data() -> None:
    # One more WW can lower the normalized LLR when both bounds are far above the data: it
    # raises the spread as well as the score. Checked against the direct maximization, so
    # this is the statistic itself, not a numerical accident (the logistic LLR is monotone,
    # see below).
    before, after = [18, 26, 20, 34, 0], [18, 26, 20, 34, 1]
    for counts in (before, after):
        assert sprt.llr(counts, 148.99, 149.55) == pytest.approx(
            reference_llr(counts, 148.99, 149.55, "normalized"), abs=1e-7
        )
    assert sprt.llr(after, 148.99, 149.55) < sprt.llr(before, 148.99, 149.55)


# -- the reference implementations' own numbers -------------------------------------------------


def _from_fastchess(ll: int, ld: int, wl: int, dd: int, wd: int, ww: int) -> list[int]:
    """fastchess's Stats(ll, ld, wl, dd, wd, ww) as [LL, LD, WL+DD, WD, WW]."""
    return [ll, ld, wl + dd, wd, ww]


# fastchess app/tests/sprt_test.cpp (Disservin/fastchess), checked there to 1% relative.
# Its "normalized pentanomial 3" (104 WW pairs, [0, 5], 2.94) is left out: an emulation of
# fishtest's LLRcalc and the SLSQP maximization above (SLSQP_CASES) both give 2.095 there,
# and 2.94 is what t-values sqrt(2) times too large would give.
FASTCHESS_LLR = [
    (_from_fastchess(365, 16618, 36029, 200, 16974, 390), 0.0, 2.0, "normalized", 2.25),
    (_from_fastchess(127, 4883, 10311, 401, 5150, 104), -1.75, 0.25, "normalized", 3.01),
    (_from_fastchess(223, 9863, 20279, 1000, 10037, 246), 0.5, 2.5, "logistic", -3.07),
    (_from_fastchess(871, 26175, 55003, 980, 26678, 821), 0.0, 2.0, "logistic", -4.98),
]


@pytest.mark.parametrize(("counts", "elo0", "elo1", "model", "expected"), FASTCHESS_LLR)
def test_llr_matches_fastchess(
    counts: list[int], elo0: float, elo1: float, model: str, expected: float
) -> None:
    assert sprt.llr(counts, elo0, elo1, model) == pytest.approx(expected, abs=0.005)


# fastchess app/tests/elo_test.cpp, "EloPentanomial 1-3": nElo, logistic Elo with the
# half-width of its 95% interval (the score interval mapped to Elo), LOS; printed to 2
# decimals. fastchess's nElo error is not compared: it maps the score interval with the
# variance held fixed, where fishtest (and this module) use the delta method of the t-value.
FASTCHESS_ELO = [
    (_from_fastchess(34, 54, 31, 32, 64, 75), 57.94, 55.58, 27.65, 1.0),
    (_from_fastchess(332, 433, 457, 41, 333, 334), -9.17, -8.64, 10.33, 0.0505),
    (_from_fastchess(7895, 8757, 5485, 200, 568, 9999), -19.01, -21.04, 2.95, None),
]


@pytest.mark.parametrize(("counts", "nelo", "elo", "error", "los"), FASTCHESS_ELO)
def test_estimate_matches_fastchess(
    counts: list[int], nelo: float, elo: float, error: float, los: float | None
) -> None:
    est = sprt.estimate(counts)
    assert est.nelo == pytest.approx(nelo, abs=0.006)
    assert est.elo == pytest.approx(elo, abs=0.006)
    assert (est.elo_ci95[1] - est.elo_ci95[0]) / 2 == pytest.approx(error, abs=0.006)
    if los is not None:
        assert est.los == pytest.approx(los, abs=0.00006)


# A fishtest instance's raw statistics page for a normalized SPRT [0, 4] with pentanomial
# [13, 37, 50, 25, 3]: https://montytest.muzhen.org/tests/stats/69d3c8dc7c5b3724e29d2712
# ("Normalized (exact) -0.54912", "Logistic (exact) -0.53772", "Normalized Elo -63.97",
# "Score 0.43750", "Variance 0.05762").
MONTY = [13, 37, 50, 25, 3]


def test_llr_matches_a_fishtest_statistics_page() -> None:
    assert sprt.llr(MONTY, 0.0, 4.0) == pytest.approx(-0.54912, abs=1e-5)
    # the page's logistic LLR uses the normalized bounds converted to scores with the
    # pentanomial's per-match sigma: score = ½ + nelo / (800 / ln 10) * sigma_pg
    n = np.array(MONTY, dtype=float)
    w = n / n.sum()
    mu = float(w @ VALUES)
    var = float(w @ (VALUES - mu) ** 2)
    assert var == pytest.approx(0.05762, abs=5e-6)
    score1 = 0.5 + 4.0 / NELO_PER_T * math.sqrt(2.0 * var)
    lelo1 = 400.0 * math.log10(score1 / (1.0 - score1))
    assert sprt.llr(MONTY, 0.0, lelo1, "logistic") == pytest.approx(-0.53772, abs=1e-5)


def test_estimate_matches_a_fishtest_statistics_page() -> None:
    est = sprt.estimate(MONTY)
    assert est.nelo == pytest.approx(-63.97, abs=0.006)
    assert est.score == pytest.approx(0.4375)
    assert est.pairs == 128


# -- the estimates' intervals against a simulation ----------------------------------------------


def test_intervals_match_a_simulation() -> None:
    # Draw many tests of 400 pairs from a known pentanomial distribution and compare the
    # spread of the estimated score and t-value with the intervals' half-widths.
    counts = [40, 80, 140, 100, 40]
    p = np.array(counts, dtype=float) / sum(counts)
    rng = np.random.default_rng(20240611)
    draws = rng.multinomial(sum(counts), p, size=20000) / sum(counts)
    mus = draws @ VALUES
    sds = np.sqrt(np.einsum("ij,ij->i", draws, (VALUES[None, :] - mus[:, None]) ** 2))
    nelos = (mus - 0.5) / sds * NELO_PER_T / math.sqrt(2.0)
    est = sprt.estimate(counts)
    z = 1.959963984540054
    assert (est.nelo_ci95[1] - est.nelo_ci95[0]) / 2 == pytest.approx(z * nelos.std(), rel=0.03)
    score_lo, score_hi = (_logistic_score(e) for e in est.elo_ci95)
    assert (score_hi - score_lo) / 2 == pytest.approx(z * mus.std(), rel=0.03)


# -- properties ---------------------------------------------------------------------------------

counts_st = st.lists(st.integers(0, 300), min_size=5, max_size=5)
model_st = st.sampled_from(sprt.MODELS)
elo_st = st.floats(-150, 150, allow_nan=False)
width_st = st.floats(0.5, 80, allow_nan=False)
TOL = 1e-7


@settings(max_examples=60, deadline=None)
@given(counts_st, elo_st, width_st, model_st)
def test_mirrored_counts_and_bounds_negate_the_llr(
    counts: list[int], elo0: float, width: float, model: str
) -> None:
    # Mirroring (the base's view) maps a distribution of score s and t-value t to one of
    # 1 - s and -t, so H0 elo0 / H1 elo1 on the counts is H1 -elo0 / H0 -elo1 mirrored.
    elo1 = elo0 + width
    forward = sprt.llr(counts, elo0, elo1, model)
    mirrored = sprt.llr(counts[::-1], -elo1, -elo0, model)
    assert mirrored == pytest.approx(-forward, rel=1e-6, abs=TOL)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 300), min_size=2, max_size=2), st.integers(0, 300), elo_st, model_st)
def test_symmetric_counts_and_bounds_give_zero(
    outer: list[int], middle: int, elo: float, model: str
) -> None:
    # the mirror property with counts and bounds that are their own mirror images
    counts = [outer[0], outer[1], middle, outer[1], outer[0]]
    bound = abs(elo) + 1.0
    assert sprt.llr(counts, -bound, bound, model) == pytest.approx(0.0, abs=TOL)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(1, 200), min_size=5, max_size=5),
    st.integers(2, 6),
    elo_st,
    width_st,
    model_st,
)
def test_llr_scales_with_the_number_of_pairs(
    counts: list[int], k: int, elo0: float, width: float, model: str
) -> None:
    # with no empty cell the distribution is the same and only the count grows
    single = sprt.llr(counts, elo0, elo0 + width, model)
    scaled = sprt.llr([k * c for c in counts], elo0, elo0 + width, model)
    assert scaled == pytest.approx(k * single, rel=1e-6, abs=TOL)


@settings(max_examples=60, deadline=None)
@given(counts_st, st.integers(1, 50), st.floats(-400, 400), st.floats(0.5, 200))
def test_logistic_llr_grows_with_ww(
    counts: list[int], extra: int, elo0: float, width: float
) -> None:
    more = counts[:4] + [counts[4] + extra]
    before = sprt.llr(counts, elo0, elo0 + width, "logistic")
    after = sprt.llr(more, elo0, elo0 + width, "logistic")
    assert after >= before - 1e-9 * max(1.0, abs(before))


@settings(max_examples=60, deadline=None)
@given(counts_st, width_st, model_st)
def test_the_data_own_estimate_is_the_most_likely_hypothesis(
    counts: list[int], width: float, model: str
) -> None:
    # At the data's own (regularized) Elo the constrained fit is the empirical distribution
    # itself, the unconstrained maximum, so it beats any other hypothesis.
    assume(sum(1 for c in counts if c) >= 2)
    n = np.array([c if c else 1e-3 for c in counts], dtype=float)
    w = n / n.sum()
    mu = float(w @ VALUES)
    if model == "logistic":
        own = 400.0 * math.log10(mu / (1.0 - mu))
    else:
        own = (mu - 0.5) / math.sqrt(2.0 * float(w @ (VALUES - mu) ** 2)) * NELO_PER_T
    assume(abs(own) < 300)
    assert sprt.llr(counts, own - width, own, model) >= -TOL
    assert sprt.llr(counts, own, own + width, model) <= TOL


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 300), min_size=5, max_size=5), elo_st, width_st)
def test_logistic_llr_sign_beyond_both_bounds(counts: list[int], elo0: float, width: float) -> None:
    # the profile likelihood of a linear constraint is concave in the score, with its top at
    # the empirical score: beyond both bounds the LLR points that way
    elo1 = elo0 + width
    score = float(np.array(counts) @ VALUES) / sum(counts)
    value = sprt.llr(counts, elo0, elo1, "logistic")
    if score >= _logistic_score(elo1):
        assert value >= -TOL
    if score <= _logistic_score(elo0):
        assert value <= TOL


small_counts_st = st.lists(st.integers(0, 6), min_size=5, max_size=5)


@settings(max_examples=60, deadline=None)
@given(st.one_of(counts_st, small_counts_st))
def test_estimate_mirrors_and_contains_itself(counts: list[int]) -> None:
    assume(sum(counts) > 0)
    est, mirrored = sprt.estimate(counts), sprt.estimate(counts[::-1])
    # the Elo interval is always there, and never a point
    assert est.elo_ci95[0] < est.elo_ci95[1]
    assert est.elo_ci95[0] - 1e-9 <= est.elo <= est.elo_ci95[1] + 1e-9
    one_score = sum(1 for c in counts if c) == 1
    assert est.small_sample == (sum(counts) < sprt.MIN_PAIRS or one_score)
    if est.small_sample:
        assert all(math.isnan(v) for v in est.nelo_ci95)
        assert math.isnan(est.nelo) == one_score
    else:
        assert est.nelo_ci95[0] <= est.nelo <= est.nelo_ci95[1]
    assert 0.0 <= est.los <= 1.0
    assert mirrored.elo == pytest.approx(-est.elo, abs=1e-9)
    assert mirrored.elo_ci95 == pytest.approx((-est.elo_ci95[1], -est.elo_ci95[0]), abs=1e-9)
    assert mirrored.nelo == pytest.approx(-est.nelo, abs=1e-9, nan_ok=True)
    assert mirrored.los == pytest.approx(1.0 - est.los, abs=1e-9)
    assert mirrored.score == pytest.approx(1.0 - est.score)
    assert est.pairs == sum(counts)


def _three_pairs() -> list[tuple[int, ...]]:
    return [c for c in itertools.product(range(4), repeat=5) if sum(c) == 3]


def test_no_zero_width_interval_from_three_pairs() -> None:
    # three pairs used to give e.g. Elo +191 [+172, +209] and nElo +3472 [-68077, +75021]
    # for three scores of 1½: a variance taken from three pairs (or from the 0.001 cells)
    for counts in _three_pairs():
        est = sprt.estimate(list(counts))
        lo, hi = est.elo_ci95
        assert est.small_sample and all(math.isfinite(v) for v in (lo, hi, est.elo, est.los))
        assert hi - lo > 300, (counts, est)  # three pairs say little
        assert lo <= est.elo <= hi
        assert all(math.isnan(v) for v in est.nelo_ci95)
        assert est.los < 0.975 or est.score > 0.75  # no certainty from a tie or so
    # three pairs of 1½: the Wilson interval of a 75% score over three trials, 25.6% to
    # 96.3%, and the score test's LOS, Phi(2 (0.75 - 0.5) sqrt(3))
    z = 1.959963984540054
    centre = (0.75 + z * z / 6) / (1 + z * z / 3)
    half = z / (1 + z * z / 3) * math.sqrt(0.75 * 0.25 / 3 + z * z / 36)
    wilson = [400.0 * math.log10(s / (1 - s)) for s in (centre - half, centre + half)]
    est = sprt.estimate([0, 0, 0, 3, 0])
    assert est.elo_ci95 == pytest.approx(wilson, abs=1e-6)
    assert est.elo_ci95 == pytest.approx((-185.2, 566.9), abs=0.1)
    los = 0.5 * (1.0 + math.erf(2 * 0.25 * math.sqrt(3) / math.sqrt(2)))
    assert math.isnan(est.nelo) and est.los == pytest.approx(los) == pytest.approx(0.8068, abs=1e-4)


def test_the_normal_intervals_start_at_min_pairs() -> None:
    below = [5, 0, sprt.MIN_PAIRS - 11, 0, 5]  # MIN_PAIRS - 1 pairs
    at = [5, 0, sprt.MIN_PAIRS - 10, 0, 5]
    assert sum(below) == sprt.MIN_PAIRS - 1 and sum(at) == sprt.MIN_PAIRS
    small, normal = sprt.estimate(below), sprt.estimate(at)
    assert small.small_sample and not normal.small_sample
    assert math.isnan(small.nelo_ci95[0]) and math.isfinite(normal.nelo_ci95[0])
    # the small-sample interval is the wider (it assumes the largest variance a score in
    # [0, 1] can have)
    assert small.elo_ci95[1] - small.elo_ci95[0] > normal.elo_ci95[1] - normal.elo_ci95[0]
    # every pair the same, however many: no spread seen, so no normal interval either
    for counts in ([0, 0, 0, 0, 500], [0, 0, 500, 0, 0]):
        est = sprt.estimate(counts)
        assert est.small_sample and math.isnan(est.nelo)
        assert est.elo_ci95[1] - est.elo_ci95[0] > 10


def test_the_small_sample_interval_covers() -> None:
    # The Wilson interval of the mean score over few pairs covers the true Elo at least 95%
    # of the time, where the normal interval from the pairs' own variance did not (about
    # 60-85% from 3 to 5 pairs): pentanomials of the reference spread and with draws.
    rng = np.random.default_rng(11)
    for p in (sprt.pentanomial_at(0.0), sprt.pentanomial_at(150.0), [0.05, 0.2, 0.4, 0.25, 0.1]):
        true_score = float(np.dot(p, VALUES))
        true_elo = 400.0 * math.log10(true_score / (1.0 - true_score))
        for n in (3, 5, 10):
            draws = rng.multinomial(n, p, size=2000)
            covered = 0
            for c in draws:
                lo, hi = sprt.estimate([int(x) for x in c]).elo_ci95
                covered += lo <= true_elo <= hi
            assert covered / len(draws) >= 0.95, (p, n, covered)


@settings(max_examples=40, deadline=None)
@given(st.floats(1e-4, 0.5), st.floats(1e-4, 0.49))
def test_bounds(alpha: float, beta: float) -> None:
    lower, upper = sprt.bounds(alpha, beta)
    assert lower == pytest.approx(math.log(beta) - math.log1p(-alpha))
    assert upper == pytest.approx(math.log1p(-beta) - math.log(alpha))
    # swapping the error rates swaps and negates the bounds
    swapped = sprt.bounds(beta, alpha)
    assert swapped == pytest.approx((-upper, -lower))


def test_default_bounds() -> None:
    assert sprt.bounds() == pytest.approx((-math.log(19.0), math.log(19.0)))


@given(st.lists(st.sampled_from(sprt.PAIR_SCORES), max_size=60))
def test_pentanomial_counts_pair_scores(scores: list[float]) -> None:
    counts = sprt.pentanomial(scores)
    assert counts == [scores.count(s) for s in (0.0, 0.5, 1.0, 1.5, 2.0)]
    assert sprt.pentanomial(reversed(scores)) == counts
    assert sprt.pentanomial([2 - s for s in scores]) == counts[::-1]


def test_pentanomial_order() -> None:
    # [LL, LD, WL+DD, WD, WW]; ints and fractions of a point work as well as floats
    assert sprt.pentanomial([0, 0.5, 1, 1.0, 1.5, 2, 2]) == [1, 1, 2, 1, 2]


@settings(max_examples=30, deadline=None)
@given(st.lists(st.sampled_from(sprt.PAIR_SCORES), max_size=40), st.sampled_from(sprt.MODELS))
def test_stopping_index_is_the_first_deciding_prefix(scores: list[float], model: str) -> None:
    elo0, elo1 = 0.0, 60.0  # wide enough to decide within a few dozen pairs
    first = next(
        (
            i
            for i in range(len(scores))
            if sprt.status(sprt.pentanomial(scores[: i + 1]), elo0, elo1, model=model).decision
        ),
        None,
    )
    assert sprt.stopping_index(scores, elo0, elo1, model=model) == first
    if first is not None:  # pairs played after the decision do not move it
        longer = scores + [2.0] * 5
        assert sprt.stopping_index(longer, elo0, elo1, model=model) == first


def test_status_decides() -> None:
    strong = sprt.status([10, 50, 200, 150, 90], 0.0, 5.0)
    assert strong.decision == "H1" and strong.llr >= strong.upper
    weak = sprt.status([90, 150, 200, 50, 10], 0.0, 5.0)
    assert weak.decision == "H0" and weak.llr <= weak.lower
    early = sprt.status([1, 2, 3, 2, 1], 0.0, 5.0, model="logistic")
    assert early.decision is None and early.lower < early.llr < early.upper
    assert early.estimate == sprt.estimate([1, 2, 3, 2, 1])
    assert (strong.lower, strong.upper) == sprt.bounds()


def test_no_pairs() -> None:
    assert sprt.llr([0, 0, 0, 0, 0], 0.0, 5.0) == 0.0
    assert sprt.llr([0, 0, 0, 0, 0], 0.0, 5.0, "logistic") == 0.0
    st0 = sprt.status([0] * 5, 0.0, 5.0)
    assert st0.decision is None and st0.llr == 0.0
    est = st0.estimate
    assert est.pairs == 0
    assert all(math.isnan(v) for v in (est.score, est.elo, est.nelo, est.los, *est.elo_ci95))
    assert sprt.stopping_index([], 0.0, 5.0) is None


def test_one_cell_holds_everything() -> None:
    # every pair the same: the LLR is regularized, so it stays finite; the pairs show no
    # spread, so nElo (a difference in units of the spread) is not estimated, and the Elo
    # interval is the small-sample one
    for counts in ([0, 0, 0, 0, 50], [50, 0, 0, 0, 0], [0, 0, 50, 0, 0]):
        for model in sprt.MODELS:
            assert math.isfinite(sprt.llr(counts, 0.0, 5.0, model))
        est = sprt.estimate(counts)
        assert all(math.isfinite(v) for v in (est.elo, est.los, *est.elo_ci95))
        assert est.small_sample and math.isnan(est.nelo) and math.isnan(est.nelo_ci95[0])
    assert sprt.estimate([0, 0, 0, 0, 50]).score == 1.0


# -- what a test costs ---------------------------------------------------------------------------


@pytest.mark.parametrize("at", ["elo0", "elo1"])
def test_the_default_test_decides_at_both_bounds(at: str) -> None:
    # The defaults were chosen so that a test at either bound rarely ends undecided (about
    # 1% in 2,000 simulated runs) in a few thousand pairs; [0, 5] with 20,000 pairs ended
    # undecided about one run in five. Seeded, so the numbers below are fixed.
    elo0, elo1 = sprt.DEFAULT_ELO0, sprt.DEFAULT_ELO1
    truth = elo0 if at == "elo0" else elo1
    sim = sprt.simulate(elo0, elo1, true_elo=truth, max_pairs=sprt.DEFAULT_MAX_PAIRS,
                        runs=200, seed=7)  # fmt: skip
    assert sim.runs == len(sim.lengths) == 200
    assert sim.h0 + sim.h1 + sim.undecided == pytest.approx(1.0)
    assert sim.undecided <= 0.02
    wrong = sim.h1 if at == "elo0" else sim.h0  # about alpha = beta = 0.05
    assert wrong <= 0.09
    assert max(sim.lengths) <= sprt.DEFAULT_MAX_PAIRS
    assert sim.median_pairs <= sim.mean_pairs <= sim.p95_pairs <= sprt.DEFAULT_MAX_PAIRS
    # and Wald's average, which the command prints before it starts, agrees with it
    expected = sprt.expected_pairs(elo0, elo1, truth)
    assert 2_500 < expected < 4_000
    assert sim.mean_pairs == pytest.approx(expected, rel=0.15)


def test_the_old_default_needed_thousands_more_pairs() -> None:
    # [0, 5] normalized: about 12,800 pairs at either bound (Wald), four times [0, 10]'s
    for truth in (0.0, 5.0):
        assert sprt.expected_pairs(0.0, 5.0, truth) == pytest.approx(12_795, rel=0.01)
        assert sprt.expected_pairs(0.0, 5.0, truth) == pytest.approx(
            4 * sprt.expected_pairs(0.0, 10.0, 2 * truth), rel=0.01
        )


def test_expected_pairs_is_walds_average() -> None:
    lower, upper = sprt.bounds()
    dt = math.sqrt(2.0) * 10.0 / NELO_PER_T  # the bounds' distance in t-value per pair
    # at a bound: 2 ((1 - a) |lower| - a upper) / dt^2 (the reference spread is close to
    # symmetric, so its t-value variance is close to 1)
    at0 = 2.0 * (0.95 * -lower - 0.05 * upper) / dt**2
    assert sprt.expected_pairs(0.0, 10.0, 0.0) == pytest.approx(at0, rel=0.01)
    # midway the walk has no drift: -lower upper / dt^2, the longest expected test
    middle = sprt.expected_pairs(0.0, 10.0, 5.0)
    assert middle == pytest.approx(-lower * upper / dt**2, rel=0.01)
    assert middle > sprt.expected_pairs(0.0, 10.0, 0.0)
    # far from the bounds a test is short, never shorter than a pair, and always finite
    assert 1.0 <= sprt.expected_pairs(0.0, 10.0, 150.0) < 200
    assert sprt.expected_pairs(-1000.0, 1000.0, 1000.0) == 1.0
    for model in sprt.MODELS:
        for truth in (-300.0, -5.0, 0.0, 5.0, 20.0, 300.0):
            assert math.isfinite(sprt.expected_pairs(-5.0, 15.0, truth, model=model))
    # in normalized Elo the spread hardly matters; in logistic Elo it does
    draws = [50, 300, 800, 300, 50]
    for truth in (0.0, 10.0):
        assert sprt.expected_pairs(0.0, 10.0, truth, spread=draws) == pytest.approx(
            sprt.expected_pairs(0.0, 10.0, truth), rel=0.05
        )
    assert sprt.expected_pairs(0.0, 10.0, 0.0, model="logistic", spread=draws) < 0.5 * (
        sprt.expected_pairs(0.0, 10.0, 0.0, model="logistic")
    )


@pytest.mark.parametrize("model", sprt.MODELS)
@pytest.mark.parametrize("elo", [-150.0, 0.0, 10.0, 300.0])
def test_pentanomial_at_has_the_asked_elo(model: str, elo: float) -> None:
    for spread in (sprt.REFERENCE_SPREAD, (50, 300, 800, 300, 50), (1, 2, 3, 4, 5)):
        p = np.array(sprt.pentanomial_at(elo, model, spread))
        assert p.sum() == pytest.approx(1.0) and (p > 0).all()
        mu = float(p @ VALUES)
        if model == "logistic":
            assert mu == pytest.approx(_logistic_score(elo), abs=1e-9)
        else:
            sigma_match = math.sqrt(2.0 * float(p @ (VALUES - mu) ** 2))
            assert (mu - 0.5) / sigma_match * NELO_PER_T == pytest.approx(elo, abs=1e-6)
    # the reference spread itself is at its own (normalized) Elo
    est = sprt.estimate(list(sprt.REFERENCE_SPREAD))
    ref = np.array(sprt.REFERENCE_SPREAD, dtype=float)
    assert sprt.pentanomial_at(est.nelo) == pytest.approx(list(ref / ref.sum()), abs=1e-6)


SIM_CASES = [
    # (elo0, elo1, model, true Elo, spread): wide bounds, so that the pair-by-pair test is
    # short enough to check, from the reference spread to lopsided ones, at the bounds,
    # between them and far beyond
    (0.0, 40.0, "normalized", 0.0, sprt.REFERENCE_SPREAD),
    (0.0, 40.0, "normalized", 40.0, sprt.REFERENCE_SPREAD),
    (-20.0, 20.0, "normalized", 140.0, (10, 40, 60, 30, 5)),
    (-80.0, 0.0, "normalized", -40.0, (1, 5, 80, 5, 1)),
    (-5.0, 75.0, "logistic", 75.0, (5, 0, 90, 0, 5)),
    (-40.0, 40.0, "logistic", -280.0, (10, 40, 60, 30, 5)),
    (-5.0, 5.0, "logistic", 35.0, (50, 300, 800, 300, 50)),
]


@pytest.mark.parametrize(("elo0", "elo1", "model", "truth", "spread"), SIM_CASES)
def test_the_simulation_stops_where_the_test_does(
    elo0: float, elo1: float, model: str, truth: float, spread: tuple[int, ...]
) -> None:
    # The simulation follows an approximation of the LLR and takes the exact one only near
    # the bounds (and now and then): it must stop at the same pair as the exact LLR taken
    # after every pair, which is what the command does.
    lower, upper = sprt.bounds()
    rng = np.random.default_rng(5)
    p = sprt.pentanomial_at(truth, model, spread)
    for _ in range(6):
        cells = [int(k) for k in rng.choice(5, size=600, p=p)]
        n, decision = sprt._simulated_stop(iter(cells), elo0, elo1, model, lower, upper, 600)
        stop = sprt.stopping_index([k / 2 for k in cells], elo0, elo1, model=model)
        assert n == (600 if stop is None else stop + 1)
        expected = sprt.status(sprt.pentanomial([k / 2 for k in cells[:n]]), elo0, elo1,
                               model=model).decision  # fmt: skip
        assert decision == expected


def test_simulate_is_seeded_and_checks_its_arguments() -> None:
    one = sprt.simulate(0.0, 40.0, true_elo=20.0, runs=20, seed=3)
    assert one == sprt.simulate(0.0, 40.0, true_elo=20.0, runs=20, seed=3)
    assert one != sprt.simulate(0.0, 40.0, true_elo=20.0, runs=20, seed=4)
    short = sprt.simulate(0.0, 40.0, true_elo=20.0, runs=20, seed=3, max_pairs=5)
    assert short.undecided == 1.0 and set(short.lengths) == {5}
    for kwargs, message in (
        ({"runs": 0}, "runs"),
        ({"max_pairs": 0}, "max_pairs"),
        ({"model": "bayesian"}, "unknown model"),
        ({"true_elo": math.nan}, "finite"),
        ({"alpha": 0.0}, "alpha"),
    ):
        args: dict[str, Any] = {"true_elo": 0.0, **kwargs}
        with pytest.raises(ValueError, match=message):
            sprt.simulate(0.0, 10.0, **args)
    with pytest.raises(ValueError, match="less than"):
        sprt.simulate(10.0, 0.0, true_elo=0.0)


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        ([1, 2, 3], "5 counts"),
        ([1, 2, 3, 4, 5, 6], "5 counts"),
        ([1, 2, -3, 4, 5], "negative"),
        ([1, 2, 3.5, 4, 5], "whole numbers"),
    ],
)
def test_bad_counts(counts: list[int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        sprt.llr(counts, 0.0, 5.0)
    with pytest.raises(ValueError, match=message):
        sprt.estimate(counts)
    with pytest.raises(ValueError, match=message):
        sprt.status(counts, 0.0, 5.0)


@pytest.mark.parametrize(
    ("elo0", "elo1", "model", "message"),
    [
        (0.0, 5.0, "bayesian", "unknown model"),
        (5.0, 5.0, "normalized", "less than"),
        (5.0, 0.0, "logistic", "less than"),
        (math.nan, 5.0, "normalized", "finite"),
        (0.0, math.inf, "logistic", "finite"),
        (0.0, 1e6, "logistic", "beyond"),
    ],
)
def test_bad_hypotheses(elo0: float, elo1: float, model: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        sprt.llr([1, 2, 3, 2, 1], elo0, elo1, model)
    with pytest.raises(ValueError, match=message):
        sprt.status([1, 2, 3, 2, 1], elo0, elo1, model=model)
    with pytest.raises(ValueError, match=message):
        sprt.stopping_index([1.0], elo0, elo1, model=model)


@pytest.mark.parametrize(("alpha", "beta"), [(0.0, 0.05), (0.05, 1.0), (-0.1, 0.05), (0.6, 0.5)])
def test_bad_error_rates(alpha: float, beta: float) -> None:
    with pytest.raises(ValueError, match="alpha"):
        sprt.bounds(alpha, beta)
    with pytest.raises(ValueError, match="alpha"):
        sprt.status([1, 2, 3, 2, 1], 0.0, 5.0, alpha, beta)


@pytest.mark.parametrize("score", [0.25, 3, -0.5, 2.5, math.nan, "1"])
def test_bad_pair_scores(score: Any) -> None:
    with pytest.raises(ValueError, match="pair score"):
        sprt.pentanomial([1.0, score])
    with pytest.raises(ValueError, match="pair score"):
        sprt.stopping_index([1.0, score], 0.0, 5.0)
