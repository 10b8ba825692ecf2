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
t statistic on the per-pair differences. The 95% interval is ``diff ± 1.96 se`` and the
p-value is two-sided normal: both are large-sample approximations (a warning is shown
below 30 pairs). An A/A experiment has identical arms, so every ``u_i`` is 0: differences
and intervals are exactly 0.

**Many metrics.** With 20 metrics at 5%, one looks significant by chance in most
experiments. A difference is called *significant* only when it survives Holm's step-down
correction over every comparison of the experiment (all metrics, and every candidate of a
sweep), which keeps the chance of any false call at 5%.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import NamedTuple

from capicua.engine.game import MatchState
from capicua.engine.records import HandEnd, Termination
from capicua.engine.rules import Ruleset

Z95 = NormalDist().inv_cdf(0.975)
ALPHA = 0.05  # family-wise error rate of the significance calls
MIN_PAIRS = 30  # below this the normal intervals are rough (said in the output)


class HandFacts(NamedTuple):
    """One finished hand of one arm, as the engine recorded it."""

    hand: int
    blocked: bool
    winner: int | None  # side, None for a tied block
    opener_side: int
    points: int
    bonuses: tuple[str, ...]
    reset: str | None  # "reply", "all_scored" or None
    plays: int
    passes: int
    draws: int
    defers: int
    redeals: int


class MatchFacts(NamedTuple):
    """One match (one arm of one pair) and its finished hands."""

    termination: str
    winner: int | None
    shutout: str | None
    scores: tuple[int, ...]
    hands: tuple[HandFacts, ...]

    @property
    def counted(self) -> bool:
        """Whether it ended by the rules (not by a forfeit or a cancellation)."""
        return Termination(self.termination).counted

    @property
    def first_opener_side(self) -> int | None:
        return self.hands[0].opener_side if self.hands else None


def match_facts(state: MatchState) -> MatchFacts:
    """The facts of a finished match, from the engine's own records."""
    side = state.game.side
    hands = []
    for i in range(state.hands_dealt):
        s = state.hand_summary(i)
        if s is None:  # a hand cut short by a forfeit
            continue
        hands.append(
            HandFacts(
                s.hand,
                s.end is HandEnd.BLOCK,
                s.winner,
                side[s.opener],
                s.points,
                s.bonuses,
                None if s.reset is None else s.reset.value,
                s.plays,
                s.passes,
                s.draws,
                s.defers,
                s.redeals,
            )  # fmt: skip
        )
    out = state.outcome
    if out is None:
        raise ValueError("match_facts: the match is not over")
    return MatchFacts(out.termination.value, out.winner, out.shutout, out.scores, tuple(hands))


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
    rate: bool = True  # a proportion (shown as %), else a mean

    def pair_value(self, facts: MatchFacts) -> tuple[float, float]:
        """``(y, x)`` of one pair's arm: the metric's sum and the number of its units."""
        if self.hand is not None:
            value = self.hand
            return float(sum(value(h) for h in facts.hands)), float(len(facts.hands))
        assert self.match is not None
        return float(self.match(facts)), 1.0


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


def _side_won(side: int) -> MatchValue:
    return lambda m: float(m.winner == side)


def _first_opener_won(m: MatchFacts) -> float:
    return float(m.winner is not None and m.winner == m.first_opener_side)


HAND_METRICS: tuple[Metric, ...] = (
    Metric("block_rate", "hands that ended blocked", hand=lambda h: float(h.blocked)),
    Metric("no_winner_rate", "hands with no winner (tied blocks)",
           hand=lambda h: float(h.winner is None)),
    Metric("points_per_hand", "points scored in a hand (bonuses in, before resets)",
           hand=lambda h: float(h.points), rate=False),
    Metric("moves_per_hand", "turns taken in a hand (plays and passes)",
           hand=lambda h: float(h.plays + h.passes), rate=False),
    Metric("passes_per_hand", "passes in a hand", hand=lambda h: float(h.passes), rate=False),
    Metric("draws_per_hand", "tiles drawn from the stock in a hand",
           hand=lambda h: float(h.draws), rate=False),
    Metric("opener_side_win_rate", "hands won by the side that played the first tile",
           hand=lambda h: float(h.winner is not None and h.winner == h.opener_side)),
    Metric("reset_rate", "hands after which every score went back to 0",
           hand=lambda h: float(h.reset is not None)),
    Metric("redeal_rate", "hands redealt on a seat's request",
           hand=lambda h: float(h.redeals > 0)),
    Metric("defer_rate", "hands whose opening was deferred to the partner",
           hand=lambda h: float(h.defers > 0)),
)  # fmt: skip

MATCH_METRICS: tuple[Metric, ...] = (
    Metric("hands_per_match", "hands in a match", match=lambda m: float(len(m.hands)),
           rate=False),
    Metric("shutout_rate", "matches won by a shutout (pollona, chiva)",
           match=lambda m: float(m.shutout is not None)),
    Metric("first_opener_match_win_rate", "matches won by the side that opened hand 1",
           match=_first_opener_won),
    Metric("hand_limit_rate", "matches ended by max_hands", match=lambda m: float(
        m.termination == Termination.HAND_LIMIT)),
    Metric("match_no_winner_rate", "matches with no winner",
           match=lambda m: float(m.winner is None)),
)  # fmt: skip


def metrics_for(unit: str, rulesets: Sequence[Ruleset]) -> list[Metric]:
    """Every metric of an experiment over ``rulesets`` (its arms) at ``unit``."""
    base = rulesets[0]
    out = list(HAND_METRICS)
    out.insert(
        7,
        Metric("opener_side_advantage",
               "opening side's hand win rate minus the average other side's",
               hand=_opener_edge(base.num_sides), rate=False),
    )  # fmt: skip
    bonuses = dict.fromkeys(b.name for r in rulesets for b in r.finish_bonus)
    out += [Metric(f"bonus_rate.{n}", f"hands ending with a {n}", hand=_bonus(n)) for n in bonuses]
    kinds = [
        kind
        for kind, used in (
            ("reply", any(r.reply_resets for r in rulesets)),
            ("all_scored", any(r.all_scored_resets for r in rulesets)),
        )
        if used
    ]
    out += [
        Metric(f"reset_rate.{k}", f"hands followed by a {k} reset", hand=_reset(k)) for k in kinds
    ]
    if unit == "match":
        out += MATCH_METRICS
        out += [
            Metric(f"match_win_rate.side{s}",
                   f"matches won by side {s} (seats {', '.join(map(str, base.side_seats(s)))})",
                   match=_side_won(s))
            for s in range(base.num_sides)
        ]  # fmt: skip
    return out


# -- paired comparison ------------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    """One metric, base against one candidate, over the pairs."""

    metric: str
    base: float
    candidate: float
    diff: float  # candidate - base
    se: float
    ci95: tuple[float, float]
    p: float  # two-sided, uncorrected
    significant: bool = False  # after Holm's correction over the whole experiment

    @property
    def identical(self) -> bool:
        """Whether the two arms gave the same value in every pair (no variation at all)."""
        return self.diff == 0.0 and self.se == 0.0


def _ratio(ys: Sequence[float], xs: Sequence[float]) -> tuple[float, float]:
    total_x = math.fsum(xs)
    return (math.fsum(ys) / total_x if total_x else 0.0), total_x / len(xs)


def compare(
    metric: str, base: Sequence[tuple[float, float]], candidate: Sequence[tuple[float, float]]
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
    if yb == yc and xb == xc:  # exactly the same in every pair: no sampling error at all
        return Comparison(metric, rb, rc, 0.0, 0.0, (0.0, 0.0), 1.0)
    u = [
        (yc[i] - rc * xc[i]) / (mxc or 1.0) - (yb[i] - rb * xb[i]) / (mxb or 1.0) for i in range(n)
    ]
    mean_u = math.fsum(u) / n
    var = math.fsum((v - mean_u) ** 2 for v in u) / (n - 1) if n > 1 else 0.0
    se = math.sqrt(var / n)
    if se == 0.0:
        p = 1.0 if diff == 0.0 else 0.0
    else:
        p = 2.0 * (1.0 - NormalDist().cdf(abs(diff) / se))
    return Comparison(metric, rb, rc, diff, se, (diff - Z95 * se, diff + Z95 * se), p)


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


def pair_values(metric: Metric, facts: Iterable[MatchFacts]) -> list[tuple[float, float]]:
    return [metric.pair_value(f) for f in facts]
