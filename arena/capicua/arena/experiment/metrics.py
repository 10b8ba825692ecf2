"""What an experiment measures, and the paired statistics that compare two arms.

Everything here is a pure function of the facts the engine recorded (no rule is derived
again here): per hand the engine's :class:`~capicua.engine.records.HandSummary` (how it
ended, who won, who opened, the points, the bonuses, the resets, how many plays, passes,
draws, deferrals and redeals), per match its :class:`~capicua.engine.records.Outcome`.

**Metrics.** A *hand metric* is a rate or a mean over all hands of an arm (``block_rate``
= blocked hands / hands, ``points_per_hand`` = points scored in the hand by all sides,
bonuses included, before any target or reset logic); a *match metric* is one value per
match, averaged over matches (``hands_per_match``, ``shutout_rate``...).

**Pairs.** The pairing unit is a deal (``unit = "hand"``: one hand per arm from the same
seed) or a match seed (``unit = "match"``: one whole match per arm). Hands of one match are
not independent, so the statistics treat a pair as one observation. For pair ``i`` and an
arm, a metric is a ratio ``y_i / x_i`` (``y`` the sum of the metric over the pair's hands,
``x`` its number of hands; for match metrics ``x = 1``); the arm's value is the ratio
estimator ``R = sum(y) / sum(x)``.

**Intervals.** ``diff = R_candidate - R_base`` and its standard error come from the paired
linearization of the two ratios (the delta method, clustered on pairs):
``u_i = (y_ci - R_c x_ci) / mean(x_c) - (y_bi - R_b x_bi) / mean(x_b)``,
``se = sd(u) / sqrt(n)``. With one hand per pair (``x = 1``) this is exactly the paired
t statistic on the per-pair differences, and the interval and p-value are the paired
t-test's: ``diff ± t(n - 1) se``, two-sided Student t with ``n - 1`` degrees of freedom
(a warning is shown below 30 pairs). An A/A experiment has identical arms, so every
``u_i`` is 0: differences and intervals are exactly 0.

**Few pairs that differ.** The t interval needs many pairs in which the arms differ.
When fewer than :data:`SPARSE_PAIRS` pairs differ (often none: a rule that acts once in
hundreds of hands), the interval is an exact bound instead: write the difference as the
mean of per-pair differences ``d_i`` (0 in every pair where the arms agree) with
``|d_i| <= B``; the shares of pairs with ``d_i > 0`` and ``d_i < 0`` have exact
(Clopper-Pearson, 97.5% each) upper bounds ``p+`` and ``p-``, so the difference lies in
``[-p- B, p+ B]`` with at least 95% confidence. ``B`` is the metric's possible range for
rates (1 percentage point per point of share), and the bound then holds at any number of
pairs; a mean's ``B`` is the spread of values seen in the experiment, so a mean takes the
bound only while the differing pairs are a minority (:func:`sparse`). The p-value is then
the exact sign test on the pairs that differ (McNemar's test for a rate at
``unit = "hand"``). "No pair differed in 500 pairs" thus reads "|effect| < 0.74 pp at
95%", never "identical [0, 0]", and stays in Holm's family. An interval never leaves what
a difference of the metric's values can be (``[-1, +1]`` for a rate); it is not cut at
``[-base, 1 - base]``: the base's value is an estimate too, and at a few pairs that cut
left the truth out.

**One arm on its own** (:func:`estimate`). A rate that counts events among units (a
share) gets the Clopper-Pearson interval: exact over the pairs when each is one unit, and
at the effective sample size (Korn and Graubard 1998) when a pair holds several hands or
games that vary together (:func:`share_estimate`). A mean gets the pair-clustered t
interval, or the exact bound of a rare event when few pairs are non-zero.

**Many metrics.** With 20 metrics at 5%, one looks significant by chance in most
experiments. A difference is called *significant* only when it survives Holm's step-down
correction over every comparison of the experiment (all metrics, and every candidate of a
sweep), which keeps the chance of any false call at 5%.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import NamedTuple

from capicua.engine.records import Termination
from capicua.engine.rules import Ruleset

from ..facts import HandFacts, MatchFacts
from .intervals import beta_quantile, clopper_pearson, t_quantile, t_two_sided

ALPHA = 0.05  # family-wise error rate of the significance calls
_Z95 = NormalDist().inv_cdf(1.0 - ALPHA / 2)
MIN_PAIRS = 30  # below this the t intervals are rough (said in the output)
#: Below this many pairs in which the arms differ, the t interval is not trusted and
#: the exact bound is used (see the module's docstring).
SPARSE_PAIRS = 10


# -- metric definitions -----------------------------------------------------------------------

HandValue = Callable[[HandFacts], float]
MatchValue = Callable[[MatchFacts], float]


@dataclass(frozen=True)
class Metric:
    """One measured quantity: a hand metric (``hand``) or a match metric (``match``)."""

    name: str
    description: str
    hand: HandValue | None = None
    match: MatchValue | None = None
    rate: bool = True  # shown as % with differences in percentage points, else a mean
    unit: str = ""  # of a mean and its differences ("points", "moves"...); rates: "pp"
    low: float = 0.0  # the smallest value it can take
    high: float | None = 1.0  # the largest (None: no bound)
    per: HandValue | None = None  # a hand metric's units in a hand (default: the hand)
    #: a match metric's units in a match (default: 1, every match); 0 leaves a match out
    #: of the metric (decisiveness counts only the matches somebody won)
    match_per: MatchValue | None = None
    #: a skill metric's ``(y, x)`` from one arm's skill games of a pair (not one match)
    games: Callable[[Sequence[MatchFacts]], tuple[float, float]] | None = None
    pairing: int | None = None  # the skill pairing ``games`` reads
    skill: bool = False  # one of what --skill adds (its own table)

    @property
    def diff_unit(self) -> str:
        """What a difference is counted in: ``pp`` for rates, else the mean's unit."""
        return "pp" if self.rate else self.unit

    def pair_value(self, facts: MatchFacts) -> tuple[float, float]:
        """``(y, x)`` of one pair's arm: the metric's sum and the number of its units."""
        if self.hand is not None:
            value, per = self.hand, self.per
            units = sum(per(h) for h in facts.hands) if per else len(facts.hands)
            return float(sum(value(h) for h in facts.hands)), float(units)
        assert self.match is not None
        units = self.match_per(facts) if self.match_per else 1.0
        return float(self.match(facts)), float(units)


def _opener_edge(num_sides: int) -> HandValue:
    """+1 if the opening side won, -1/(k-1) if another side won, 0 with no winner: the mean
    is the opening side's win rate minus the average other side's."""
    other = 1.0 / max(1, num_sides - 1)

    def edge(h: HandFacts) -> float:
        if h.winner is None:
            return 0.0
        return 1.0 if h.winner == h.opener_side else -other

    return edge


def _bonus(name: str) -> HandValue:
    return lambda h: float(name in h.bonuses)


def _reset(kind: str) -> HandValue:
    return lambda h: float(h.reset == kind)


def _finished(m: MatchFacts) -> bool:
    """Whether a side reached the target (not stopped by ``max_hands``, which leaves the
    match unfinished: its leader did not win it)."""
    return m.termination == Termination.NORMAL


def _side_won(side: int) -> MatchValue:
    return lambda m: float(_finished(m) and m.winner == side)


def _side_won_hand(side: int) -> HandValue:
    return lambda h: float(h.winner == side)


def _first_opener_won(m: MatchFacts) -> float:
    return float(_finished(m) and m.winner is not None and m.winner == m.first_opener_side)


def _rate(name: str, description: str, hand: HandValue | None = None,
          match: MatchValue | None = None) -> Metric:  # fmt: skip
    return Metric(name, description, hand=hand, match=match)


def _mean(name: str, description: str, unit: str, hand: HandValue | None = None,
          match: MatchValue | None = None) -> Metric:  # fmt: skip
    return Metric(name, description, hand=hand, match=match, rate=False, unit=unit, high=None)


HAND_METRICS: tuple[Metric, ...] = (
    _rate("block_rate", "hands that ended blocked", hand=lambda h: float(h.blocked)),
    _rate("no_winner_rate", "hands with no winner (tied blocks)",
          hand=lambda h: float(h.winner is None)),
    _mean("points_per_hand", "points scored in a hand (bonuses in, before resets)", "points",
          hand=lambda h: float(h.points)),
    _mean("moves_per_hand", "turns taken in a hand (plays and passes)", "moves",
          hand=lambda h: float(h.plays + h.passes)),
    _mean("passes_per_hand", "passes in a hand", "passes", hand=lambda h: float(h.passes)),
    _mean("draws_per_hand", "tiles drawn from the stock in a hand", "tiles",
          hand=lambda h: float(h.draws)),
    _rate("opener_side_win_rate", "hands won by the side that played the first tile",
          hand=lambda h: float(h.winner is not None and h.winner == h.opener_side)),
    _rate("reset_rate", "hands after which every score went back to 0",
          hand=lambda h: float(h.reset is not None)),
    _rate("redeal_rate", "hands redealt on a seat's request",
          hand=lambda h: float(h.redeals > 0)),
    _rate("defer_rate", "hands whose opening was deferred to the partner",
          hand=lambda h: float(h.defers > 0)),
)  # fmt: skip

#: Hand metrics that can only be non-zero after a first hand: at ``unit = "hand"`` every
#: deal is a match's first hand, so they are not measured there (the output says so).
LATER_HANDS_ONLY = frozenset({"defer_rate"})

MATCH_METRICS: tuple[Metric, ...] = (
    Metric("hands_per_match", "hands in a match", match=lambda m: float(len(m.hands)),
           rate=False, unit="hands", high=None),
    _rate("shutout_rate", "matches won by a shutout (pollona, chiva)",
          match=lambda m: float(m.shutout is not None)),
    _rate("first_opener_match_win_rate",
          "matches won (target reached) by the side that opened hand 1",
          match=_first_opener_won),
    _rate("hand_limit_rate", "matches stopped by max_hands before any side reached the "
          "target (unfinished: won by nobody)",
          match=lambda m: float(m.termination == Termination.HAND_LIMIT)),
    _rate("match_no_winner_rate", "matches that reached the target with no winner",
          match=lambda m: float(_finished(m) and m.winner is None)),
)  # fmt: skip


class Side(NamedTuple):
    """One side of the experiment's seating: its seats and the bots in them."""

    seats: tuple[int, ...]
    bots: tuple[str, ...]  # each bot once, in seat order; empty when unknown

    @property
    def short(self) -> str:
        """``hard`` (its bots), or ``seats 0, 2`` without bots."""
        if self.bots:
            return "+".join(self.bots)
        return f"seat{'s' if len(self.seats) > 1 else ''} {', '.join(map(str, self.seats))}"

    @property
    def text(self) -> str:
        """``hard (seats 0, 2)``."""
        where = f"seat{'s' if len(self.seats) > 1 else ''} {', '.join(map(str, self.seats))}"
        return f"{self.short} ({where})" if self.bots else where


def sides_of(rules: Ruleset, seat_bots: Sequence[str] | None) -> list[Side]:
    """Every side of ``rules`` with the bots of ``seat_bots`` (the bot of every seat)."""
    out = []
    for s in range(rules.num_sides):
        seats = rules.side_seats(s)
        bots = tuple(dict.fromkeys(seat_bots[i] for i in seats)) if seat_bots else ()
        out.append(Side(tuple(seats), bots))
    return out


def scores_after_hands(m: MatchFacts) -> list[tuple[int, ...]]:
    """Every side's match score after each of the match's hands, as the engine tallies them
    from each hand's winner, points and reset: the winner's points are added, and a reset
    (a reply, which scores nothing, or every side having scored) wipes every score."""
    scores = [0] * len(m.scores)
    out = []
    for h in m.hands:
        if h.winner is not None and h.reset != "reply":
            scores[h.winner] += h.points
        if h.reset is not None:
            scores = [0] * len(scores)
        out.append(tuple(scores))
    return out


def _leader(scores: Sequence[int]) -> int | None:
    """The side strictly ahead of every other, None on a tie for the top (0-0 included)."""
    top = max(scores)
    return scores.index(top) if scores.count(top) == 1 else None


def _lead_changes(m: MatchFacts) -> float:
    """How often the lead passed from one side to another over the match's hands (a tie
    leads nobody)."""
    leader = None
    changes = 0
    for scores in scores_after_hands(m):
        now = _leader(scores)
        if now is not None:
            changes += leader is not None and now != leader
            leader = now
    return float(changes)


def decided_share(m: MatchFacts) -> float | None:
    """When the match was decided, as a share of its moves: the moves (plays and passes)
    up to the end of the hand after which its winner led, strictly, at the end of every
    later hand (scores change only when a hand ends); the end of the match if the winner
    did not lead even then. None for a match that no side won by reaching the target."""
    if not _finished(m) or m.winner is None or not m.hands:
        return None
    ahead = [_leader(scores) == m.winner for scores in scores_after_hands(m)]
    decided = len(ahead)  # hands played when it was decided
    while decided > 1 and ahead[decided - 1] and ahead[decided - 2]:
        decided -= 1
    moves = [h.plays + h.passes for h in m.hands]
    return math.fsum(moves[:decided]) / math.fsum(moves) if any(moves) else decided / len(moves)


#: What ``--skill`` adds about the play itself, measured on every arm's own games.
CHOICE_METRICS: tuple[Metric, ...] = (
    Metric("choice_rate", "turns at which the player had more than one legal action",
           hand=lambda h: float(h.choices or 0), per=lambda h: float(h.plays + h.passes),
           skill=True),
    Metric("actions_per_choice", "legal actions offered at a turn with a real choice",
           hand=lambda h: float(h.options or 0), per=lambda h: float(h.choices or 0),
           rate=False, unit="actions", high=None, skill=True),
)  # fmt: skip
LEAD_CHANGES = Metric("lead_changes_per_match", "times the lead passed to another side",
                      match=_lead_changes, rate=False, unit="changes", high=None,
                      skill=True)  # fmt: skip
#: Ludii's Decisiveness (its "Decisiveness Moves"), on the match score: see
#: :func:`decided_share` and docs/regression-testing.md.
DECISIVENESS = Metric(
    "decisiveness",
    "share of a won match's moves played when its winner took the lead it kept to the end "
    "(lower: decided earlier)",
    match=lambda m: decided_share(m) or 0.0,
    match_per=lambda m: float(decided_share(m) is not None),
    skill=True,
)


def pairing_name(measure: str, strong: str, weak: str) -> str:
    """The name of a (stronger, weaker) pairing's win rate: ``hand_win_rate.hard_vs_random``
    (``measure``: ``hand_win_rate`` or ``match_win_rate``)."""
    return f"{measure}.{strong}_vs_{weak}"


def skill_metrics(unit: str, skill: Sequence[tuple[str, str]]) -> list[Metric]:
    """Per (stronger, weaker) pairing: the stronger bot's hand win rate and, per match, its
    match win rate, over its games with the deal's sides rotated."""

    def hands_won(games: Sequence[MatchFacts]) -> tuple[float, float]:
        won = sum(h.winner == side for side, g in enumerate(games) for h in g.hands)
        return float(won), float(sum(len(g.hands) for g in games))

    def matches_won(games: Sequence[MatchFacts]) -> tuple[float, float]:
        won = sum(_finished(g) and g.winner == side for side, g in enumerate(games))
        return float(won), float(len(games))

    out = []
    for i, (strong, weak) in enumerate(skill):
        out.append(Metric(pairing_name("hand_win_rate", strong, weak),
                          f"hands {strong} won against {weak}, once on each side of every "
                          "deal", games=hands_won, pairing=i, skill=True))  # fmt: skip
        if unit == "match":
            out.append(Metric(pairing_name("match_win_rate", strong, weak),
                              f"matches {strong} won against {weak} (target reached), once "
                              "on each side of every deal", games=matches_won, pairing=i,
                              skill=True))  # fmt: skip
    return out


def metrics_for(
    unit: str,
    rulesets: Sequence[Ruleset],
    seat_bots: Sequence[str] | None = None,
    skill: Sequence[tuple[str, str]] = (),
) -> list[Metric]:
    """Every metric of an experiment over ``rulesets`` (its arms) at ``unit``; ``seat_bots``
    (the bot of every seat) names the sides in the per-side metrics' descriptions; with
    ``skill`` pairings, the skill metrics follow."""
    base = rulesets[0]
    names = [side.text for side in sides_of(base, seat_bots)]
    out = [m for m in HAND_METRICS if unit == "match" or m.name not in LATER_HANDS_ONLY]
    out.insert(
        7,
        Metric("opener_side_advantage",
               "opening side's hand win rate minus the average other side's",
               hand=_opener_edge(base.num_sides), low=-1.0),
    )  # fmt: skip
    out += [
        _rate(f"hand_win_rate.side{s}", f"hands won by side {s}: {names[s]}",
              hand=_side_won_hand(s))
        for s in range(base.num_sides)
    ]  # fmt: skip
    bonuses = dict.fromkeys(b.name for r in rulesets for b in r.finish_bonus)
    out += [_rate(f"bonus_rate.{n}", f"hands ending with a {n}", hand=_bonus(n)) for n in bonuses]
    kinds = [
        kind
        for kind, used in (
            ("reply", any(r.reply_resets for r in rulesets)),
            ("all_scored", any(r.all_scored_resets for r in rulesets)),
        )
        if used
    ]
    out += [
        _rate(f"reset_rate.{k}", f"hands followed by a {k} reset", hand=_reset(k)) for k in kinds
    ]
    if unit == "match":
        out += MATCH_METRICS
        out += [
            _rate(f"match_win_rate.side{s}",
                  f"matches won (target reached) by side {s}: {names[s]}", match=_side_won(s))
            for s in range(base.num_sides)
        ]  # fmt: skip
    if skill:
        out += CHOICE_METRICS
        if unit == "match":
            out += [LEAD_CHANGES, DECISIVENESS]
        out += skill_metrics(unit, skill)
    return out


# -- paired comparison ------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """One metric, base against one candidate, over the pairs."""

    metric: str
    base: float
    candidate: float
    diff: float  # candidate - base
    se: float  # of the normal approximation (0 when no pair differs)
    ci95: tuple[float, float]
    p: float  # two-sided, uncorrected
    significant: bool = False  # after Holm's correction over the whole experiment
    differing: int = 0  # pairs in which the two arms' values differ
    pairs: int = 0  # pairs compared
    exact: bool = False  # the interval is the exact bound of few differing pairs
    same_rules: bool = False  # the arms are the same ruleset: the difference is exactly 0
    p_holm: float = 1.0  # Holm-adjusted p-value (1 outside the family)

    @property
    def identical(self) -> bool:
        """Whether the two arms gave the same value in every pair."""
        return self.differing == 0


def _ratio(ys: Sequence[float], xs: Sequence[float]) -> tuple[float, float]:
    total_x = math.fsum(xs)
    return (math.fsum(ys) / total_x if total_x else 0.0), total_x / len(xs)


def _log_binom_cdf(k: int, n: int, p: float) -> float:
    """log P(X <= k) for X ~ Binomial(n, p), 0 < p < 1 (k small: a sum of k + 1 terms)."""
    lp, lq = math.log(p), math.log1p(-p)
    terms = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * lp + (n - i) * lq
        for i in range(k + 1)
    ]
    top = max(terms)
    return top + math.log(math.fsum(math.exp(t - top) for t in terms))


def upper_share(k: int, n: int, tail: float = (1 - 0.95) / 2) -> float:
    """The exact (Clopper-Pearson) one-sided ``1 - tail`` upper bound of a share from ``k``
    successes in ``n`` trials: the largest ``p`` with ``P(X <= k) >= tail``, the ``1 - tail``
    quantile of Beta(k + 1, n - k)."""
    if n <= 0 or k >= n:
        return 1.0
    return beta_quantile(1.0 - tail, k + 1.0, float(n - k))


def lower_share(k: int, n: int, tail: float = (1 - 0.95) / 2) -> float:
    """The exact one-sided ``1 - tail`` lower bound of a share (0 for ``k = 0``): the
    ``tail`` quantile of Beta(k, n - k + 1)."""
    if k <= 0 or n <= 0:
        return 0.0
    return beta_quantile(tail, float(k), float(n - k + 1))


def sparse(differing: int, pairs: int, bounded: bool = True) -> bool:
    """Whether so few pairs differ (fewer than :data:`SPARSE_PAIRS`) that the t interval
    is not trusted and the exact bound is used instead. For a metric with a known range
    (``bounded``: a rate) that holds at any number of pairs; a mean's largest change is
    only estimated from the values seen, so it takes the bound only while the differing
    pairs are a minority (a rare event), or with a single pair (no t interval at all)."""
    return differing < SPARSE_PAIRS and (bounded or 2 * differing < pairs or pairs < 2)


def sparse_interval(
    n: int, up: Sequence[float], down: Sequence[float], bound: float
) -> tuple[float, float]:
    """The exact interval of ``mean(d)`` over ``n`` pairs of which ``up`` rose and ``down``
    fell by the given sizes (each at most ``bound``). The difference is
    ``p * (t * m_up - (1 - t) * m_down)``: ``p`` the share of pairs that differ, ``t`` the
    share of those that rose (both within exact Clopper-Pearson bounds), the sizes between
    the smallest seen and ``bound`` (``bound`` alone where none was seen). Each end holds
    with at least 95% confidence; at 0/1 values it is the sign test's inversion."""
    k = len(up) + len(down)
    p_low, p_high = lower_share(k, n), upper_share(k, n)
    t_low, t_high = (lower_share(len(up), k), upper_share(len(up), k)) if k else (0.0, 1.0)
    least_up, least_down = min(up, default=bound), min(down, default=bound)
    g = t_low * least_up - (1.0 - t_low) * bound  # the lowest rise per differing pair
    h = t_high * bound - (1.0 - t_high) * least_down  # the highest
    return (p_low if g >= 0 else p_high) * g, (p_high if h >= 0 else p_low) * h


def sign_test(positive: int, negative: int) -> float:
    """The exact two-sided sign test's p-value (McNemar's exact test for 0/1 values)."""
    n = positive + negative
    if n == 0:
        return 1.0
    k = min(positive, negative)
    return min(1.0, 2.0 * math.exp(_log_binom_cdf(k, n, 0.5)))


def _pair_bound(metric: Metric, ys: Sequence[Sequence[float]],
                xs: Sequence[Sequence[float]], mean_x: float) -> float:  # fmt: skip
    """``B``: the largest ``|d_i|`` a pair can have. A value per unit lies in the metric's
    range (a mean's: the spread seen in the experiment), and ``d_i`` weighs it by the
    pair's units."""
    if metric.high is not None:
        spread = metric.high - metric.low
    else:
        values = [y / x for arm_y, arm_x in zip(ys, xs, strict=True)
                  for y, x in zip(arm_y, arm_x, strict=True) if x]  # fmt: skip
        spread = (max(values) - min(values)) if values else 0.0
    most_x = max((max(a, b) for a, b in zip(xs[0], xs[1], strict=True)), default=1.0)
    return float(spread * most_x / (mean_x or 1.0))


def compare(
    metric: Metric, base: Sequence[tuple[float, float]], candidate: Sequence[tuple[float, float]]
) -> Comparison:
    """Compare the per-pair ``(y, x)`` values of two arms (same pairs, same order)."""
    n = len(base)
    if n == 0 or len(candidate) != n:
        raise ValueError("compare: needs the same, non-zero number of pairs in both arms")
    yb, xb = [p[0] for p in base], [p[1] for p in base]
    yc, xc = [p[0] for p in candidate], [p[1] for p in candidate]
    rb, mxb = _ratio(yb, xb)
    rc, mxc = _ratio(yc, xc)
    diff = rc - rb
    differing = [i for i in range(n) if yb[i] != yc[i] or xb[i] != xc[i]]
    u = [
        (yc[i] - rc * xc[i]) / (mxc or 1.0) - (yb[i] - rb * xb[i]) / (mxb or 1.0) for i in range(n)
    ]
    mean_u = math.fsum(u) / n
    var = math.fsum((v - mean_u) ** 2 for v in u) / (n - 1) if n > 1 and differing else 0.0
    se = math.sqrt(var / n)
    if sparse(len(differing), n, bounded=metric.high is not None):
        # d_i: pair i's share of the difference (mean(d) == diff, d_i == 0 where the arms
        # agree), at most B in size
        d = [((yc[i] - yb[i]) - rb * (xc[i] - xb[i])) / (mxc or 1.0) for i in differing]
        up, down = [v for v in d if v > 0], [-v for v in d if v < 0]
        bound = max([_pair_bound(metric, (yb, yc), (xb, xc), mxc), *up, *down])
        low, high = sparse_interval(n, up, down, bound)
        p = sign_test(len(up), len(down))
        exact = True
    else:  # the paired t interval and test (n >= SPARSE_PAIRS here)
        half = t_quantile(1.0 - ALPHA / 2, n - 1) * se
        low, high = diff - half, diff + half
        p = t_two_sided(diff / se, n - 1) if se else float(diff == 0.0)
        exact = False
    # never an interval outside what a difference of two of the metric's values can be;
    # not cut at what the candidate's value can be given the base's (-base, 1 - base for
    # a rate): the base's value is itself an estimate, and at a few pairs that cut left
    # the true difference out (4 pairs: 20% of the time)
    if metric.high is not None:
        span = metric.high - metric.low
        low, high = max(low, -span), min(high, span)
    return Comparison(
        metric.name, rb, rc, diff, se, (low, high), p,
        differing=len(differing), pairs=n, exact=exact,
    )  # fmt: skip


def holm(ps: Sequence[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down procedure: which of ``ps`` are rejected at family-wise ``alpha``."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out = [False] * len(ps)
    m = len(ps)
    for rank, i in enumerate(order):
        if ps[i] > alpha / (m - rank):
            break
        out[i] = True
    return out


#: How an estimate's interval was found (:attr:`Estimate.method`, ``interval`` in the JSON).
CLOPPER_PEARSON, BOUND, STUDENT_T = "clopper_pearson", "bound", "t"


@dataclass(frozen=True)
class Estimate:
    """One metric of one arm on its own, with its 95% interval (NaN ends: none can be given,
    a mean over a single pair)."""

    value: float
    ci95: tuple[float, float]
    exact: bool  # an exact interval: Clopper-Pearson, or the bound of few non-zero pairs
    #: how the interval was found: CLOPPER_PEARSON, BOUND, STUDENT_T, or "" (none)
    method: str = ""
    #: what it rests on: the (effective) number of trials of a Clopper-Pearson interval,
    #: else the pairs
    n: float = 0.0
    units: float = 0.0  # a share's trials in all (hands, matches, turns or games)
    nonzero: int = 0  # pairs with a non-zero value (of the few-pairs bound)

    @property
    def note(self) -> str:
        """What the interval rests on, from the data: ``exact (n 20)``, ``exact (effective
        n 198 of 237)``, ``bound (3 of 500 pairs non-zero)``, ``t (20 pairs)``."""
        if self.method == CLOPPER_PEARSON:
            if self.n != self.units:  # more or fewer than the units: see effective_trials
                return f"exact (effective n {self.n:,.1f} of {self.units:,.0f})"
            return f"exact (n {self.n:,.0f})"
        if self.method == BOUND:
            return f"bound ({self.nonzero:,} of {self.n:,.0f} pairs non-zero)"
        if self.method == STUDENT_T:
            return f"t ({self.n:,.0f} pairs)"
        return f"none ({self.n:,.0f} pair{'' if self.n == 1 else 's'})"


def is_share(metric: Metric, values: Sequence[tuple[float, float]]) -> bool:
    """Whether ``metric`` counts events among units (a rate from 0 to 1 whose every pair
    holds a whole number of events ``0 <= y <= x``): a share, whose interval is
    Clopper-Pearson. A rate that averages fractions (decisiveness: a share of each won
    match's moves) is a mean of values in [0, 1], not a count."""
    return (
        metric.rate
        and (metric.low, metric.high) == (0.0, 1.0)
        and all(0.0 <= y <= x and y.is_integer() for y, x in values)
    )


def effective_trials(values: Sequence[tuple[float, float]]) -> float:
    """The effective number of independent units behind a share over pairs of ``(events,
    units)`` (Korn and Graubard 1998): ``units / deff``, the design effect ``deff`` being
    the pair-clustered variance of the share over the binomial variance of as many
    independent units, and 1 where the pairs show no variance to go on (a share of 0 or 1,
    or every pair alike). It is below 1 where a pair's units offset each other: the skill
    games play a deal once with the stronger bot on each side, so its luck cancels within
    the pair, and the share is known better than from as many independent games (the
    point of playing them so). When the pairs hold
    several units ``deff`` is itself estimated from the pairs, and Korn and Graubard's
    degrees-of-freedom adjustment, ``(z / t(pairs - 1))^2``, takes that into account as a
    t interval would; a pair of one unit needs none (its ``deff`` is 1 by construction)."""
    xs = [x for _, x in values]
    units = math.fsum(xs)
    r, mean_x = _ratio([y for y, _ in values], xs)
    n = len(values)
    # the plug-in (divisor n) variance of the ratio, so that one unit per pair gives
    # exactly the binomial r (1 - r) / n
    clustered = math.fsum(((y - r * x) / (mean_x or 1.0)) ** 2 for y, x in values) / n**2
    binomial = r * (1.0 - r) / units if units else 0.0
    deff = clustered / binomial if clustered > 0.0 and binomial > 0.0 else 1.0
    effective = units / deff if abs(deff - 1.0) > 1e-9 else units  # 1 up to rounding
    if n > 1 and any(x != 1.0 for x in xs):
        effective *= (_Z95 / t_quantile(1.0 - ALPHA / 2, n - 1)) ** 2
    return effective


def share_estimate(values: Sequence[tuple[float, float]]) -> Estimate:
    """A share over pairs of ``(events, units)``: the Clopper-Pearson interval of ``k* =
    share n*`` events in ``n*`` :func:`effective_trials`. When every pair is a single unit
    (a hand at ``unit = "hand"``, a match metric at ``unit = "match"``) this is the exact
    Clopper-Pearson interval of ``k`` events in ``n`` pairs."""
    units = math.fsum(x for _, x in values)
    r = _ratio([y for y, _ in values], [x for _, x in values])[0]
    effective = effective_trials(values)
    low, high = clopper_pearson(r * effective, effective)
    return Estimate(r, (min(low, r), max(high, r)), True, CLOPPER_PEARSON, effective, units)


def estimate(metric: Metric, values: Sequence[tuple[float, float]]) -> Estimate:
    """An arm's metric over its per-pair ``(y, x)`` values, with its 95% interval: a share
    (:func:`is_share`) by :func:`share_estimate`; a mean by the ratio estimator with the
    pair-clustered Student t interval, or, when fewer than :data:`SPARSE_PAIRS` pairs are
    non-zero and they are a minority (a rare event), the exact bound ``[p- m, p+ B]`` (see
    the module's docstring)."""
    n = len(values)
    if n == 0:
        return Estimate(0.0, (metric.low, metric.low), True)
    if is_share(metric, values):
        return share_estimate(values)
    ys, xs = [v[0] for v in values], [v[1] for v in values]
    r, mean_x = _ratio(ys, xs)
    nonzero = [y / (mean_x or 1.0) for y in ys if y]
    rare = len(nonzero) < SPARSE_PAIRS and 2 * len(nonzero) < n
    if metric.low == 0.0 and rare and min(ys) >= 0:
        # d_i = y_i / mean(x) >= 0: its mean is the share of non-zero pairs (within its
        # exact bounds) times their mean size, between the smallest seen and the largest
        # possible (the largest per-unit value seen times the pair's units)
        top = max((y / x for y, x in values if x), default=0.0)
        bound = top * max(xs) / (mean_x or 1.0)
        k = len(nonzero)
        low = lower_share(k, n) * min(nonzero, default=0.0)
        high = upper_share(k, n) * bound
        return Estimate(r, (min(low, r), max(high, r)), True, BOUND, n, nonzero=k)
    if n < 2:  # a mean from one pair has no spread to go on
        return Estimate(r, (math.nan, math.nan), False, "", n)
    u = [(y - r * x) / (mean_x or 1.0) for y, x in values]
    se = math.sqrt(math.fsum(v * v for v in u) / (n - 1) / n)
    half = t_quantile(1.0 - ALPHA / 2, n - 1) * se
    low, high = max(r - half, metric.low), r + half
    if metric.high is not None:
        high = min(high, metric.high)
    return Estimate(r, (low, high), False, STUDENT_T, n)


def holm_adjusted(ps: Sequence[float]) -> list[float]:
    """Holm's adjusted p-values: ``p_i`` is rejected by :func:`holm` at ``alpha`` exactly
    when its adjusted value is at most ``alpha``."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out = [1.0] * len(ps)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        out[i] = running
    return out
