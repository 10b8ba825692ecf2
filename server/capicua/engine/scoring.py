"""How a finished hand is scored (RULES: order of scoring after a hand), as a pure function.

:func:`score_hand` takes the ruleset and the end of a hand in plain values (the fields
of :class:`HandEnding`, its record), and gives what the hand scored and what that did to
the match (:class:`HandScore`): the winner (a domino, or a block decided by pips and its
tie rule), the base points, the finish bonuses (capicúa and the like), the resets, whether
the match is won and the shutout multiplier that then applies. The engine calls it once
per hand; whoever else needs a hand's score (a bot judging a simulated hand, the tests)
calls the same function instead of re-deriving the knobs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, NamedTuple

from capicua.engine.records import HandEnd, Outcome, Reset, Termination, sole_leader
from capicua.engine.rules import BlockTie, BlockWinner, EffectKind, Points, Ruleset, Sides
from capicua.engine.tiles import Tile

# Enum members as module globals: scoring runs once per hand of every playout, and a member
# looked up on its class costs more than the comparison it is for. Final: the compiled
# build reads a Final global from a C static, any other global from the module's dict.
_DOMINO: Final = HandEnd.DOMINO
_ONE: Final = Points.ONE
_ALL_PIPS: Final = Points.ALL_PIPS
_LOWEST_SEAT: Final = BlockWinner.LOWEST_SEAT
_OPENING_SIDE: Final = BlockTie.OPENING_SIDE
_ADD: Final = EffectKind.ADD


class HandEnding(NamedTuple):
    """A finished hand as scoring sees it: who ended it and how, and what was left. Its
    fields are :func:`score_hand`'s arguments, in order: ``score_hand(rules, *ending)``."""

    end: HandEnd
    seat: int  # the seat that went out, or the last seat that played (the locker)
    opener: int  # the seat that played the hand's first tile (block_tie may favour it)
    pips: tuple[int, ...]  # pips left per seat
    scores: tuple[int, ...]  # every side's match score before the hand
    # The tile that went out and the open ends it was laid on (None: it opened the hand);
    # None for a block, since finish bonuses reward going out.
    last_tile: Tile | None = None
    ends: tuple[int, int] | None = None


# A HandEnding's fields as a plain tuple: what the engine keeps of every hand's end (the
# record is built on demand, off the hot path).
EndingArgs = tuple[
    HandEnd, int, int, tuple[int, ...], tuple[int, ...], Tile | None, tuple[int, int] | None
]


class HandScore(NamedTuple):
    """What a hand scored, and what it did to the match."""

    winner: int | None  # winning side, None for a tied block
    winner_seat: int | None  # the seat that went out, or its side's seat with fewest pips
    base: int  # base points for the winner (0 with no winner)
    bonuses: tuple[str, ...]  # names of the finish bonuses that applied
    points: int  # base with bonuses applied
    awarded: int  # what was added to the winner's score (0 after a reply reset)
    reset: Reset | None  # a reset that happened after this hand
    scores: tuple[int, ...]  # every side's match score after the hand
    wins_match: bool  # the winner reached the target (as win_needs_zero_opponent allows)
    shutout: str | None  # the shutout's name when the winning hand is one
    final: tuple[int, ...]  # the scores the match ends with: the shutout multiplier applied


# tuple.__new__ and the HandScore class as C statics in the compiled build (tuple.__new__
# written out is a method looked up on tuple at each call, HandScore a module dict read).
_tuple_new: Final = tuple.__new__
_HandScore: Final = HandScore


def score_hand(
    rules: Ruleset,
    end: HandEnd,
    seat: int,
    opener: int,
    pips: Sequence[int],
    scores: Sequence[int],
    last_tile: Tile | None = None,
    ends: tuple[int, int] | None = None,
) -> HandScore:
    """Score a hand under ``rules``: it ended with ``end`` by ``seat``, ``opener`` opened it,
    ``pips`` were left per seat and the sides had ``scores`` before it; ``last_tile`` went
    out on ``ends`` (see :class:`HandEnding`, whose fields these are)."""
    # Plain arguments, not a HandEnding: the engine scores every hand of every playout,
    # and building the record first would cost it more than a domino's own scoring.
    # (The pips as a tuple, the engine's already: compiled, a tuple's items are read
    # natively, a Sequence's through Python's protocol.)
    left: tuple[int, ...] = tuple(pips)
    layout = _LAYOUTS.get(_layout_key(rules.sides, rules.seats)) or _layout(rules)
    if end is _DOMINO:
        winner: int | None = layout.sides[seat]
        winner_seat: int | None = seat
        rule = rules.domino_points
    else:
        winner = _block_winner(rules, layout, left, opener)
        winner_seat = None if winner is None else _credited_seat(layout, left, winner)
        rule = rules.block_points
    base = 0 if winner is None else _base_points(rule, left, layout.side_seats[winner])
    points = base
    bonuses: tuple[str, ...] = ()
    if last_tile is not None and ends is not None and rules.finish_bonus:
        points, bonuses = finish_bonuses(rules, base, last_tile, *ends)
    after, awarded, reset, wins = _tally(rules, scores, winner, points)
    shutout, final = _shutout(rules, after, winner) if wins else (None, after)
    # (tuple.__new__, as HandScore._make does without checking the count: a NamedTuple's
    # own __new__ is Python code, a call that costs more than a domino's scoring)
    return _tuple_new(
        _HandScore,
        (winner, winner_seat, base, bonuses, points, awarded, reset, after, wins, shutout, final),
    )


class _Layout(NamedTuple):
    sides: tuple[int, ...]  # every seat's side
    side_seats: tuple[tuple[int, ...], ...]  # every side's seats, in seat order


_LAYOUTS: Final[dict[int, _Layout]] = {}
_TEAMS: Final = Sides.TEAMS


def _layout_key(sides: Sides, seats: int) -> int:
    # A layout's key in _LAYOUTS: an int, where a (Sides, int) tuple costs a tuple made,
    # hashed and compared at every hand.
    return 2 * seats + (1 if sides is _TEAMS else 0)


def _layout(rules: Ruleset) -> _Layout:
    # Ruleset.side_of and side_seats, read once per (sides, seats), which is all they
    # depend on: every hand of every playout is scored, and asking the ruleset each time
    # costs more than the rest of a domino's scoring. score_hand reads _LAYOUTS itself
    # first (a call costs as much as the lookup).
    sides = tuple(rules.side_of(s) for s in range(rules.seats))
    seats = tuple(rules.side_seats(d) for d in range(rules.num_sides))
    layout = _LAYOUTS[_layout_key(rules.sides, rules.seats)] = _Layout(sides, seats)
    return layout


def _credited_seat(layout: _Layout, pips: tuple[int, ...], side: int) -> int:
    # The seat a won block is credited to (a WINNER opening starts from it): the side's
    # seat with the fewest pips, the lower seat on a tie (the seats are in seat order).
    # A loop, not min() with a key: no closure and no key tuple per seat.
    seats = layout.side_seats[side]
    best = seats[0]
    for s in seats:
        if pips[s] < pips[best]:
            best = s
    return best


def _block_winner(
    rules: Ruleset, layout: _Layout, pips: tuple[int, ...], opener: int
) -> int | None:
    # The side that wins a block with ``pips`` left per seat, None on a tie with no winner.
    sides = layout.sides
    if rules.block_winner is _LOWEST_SEAT:
        low = min(pips)
        tied = {sides[s] for s, p in enumerate(pips) if p == low}
    else:
        totals = [sum([pips[s] for s in seats]) for seats in layout.side_seats]
        low = min(totals)
        tied = {side for side, total in enumerate(totals) if total == low}
    if len(tied) == 1:
        return tied.pop()
    if rules.block_tie is _OPENING_SIDE and sides[opener] in tied:
        return sides[opener]
    return None


def base_points(rule: Points, pips: Sequence[int], winners: Sequence[int]) -> int:
    """What the side of seats ``winners`` scores under ``rule`` with ``pips`` left per seat."""
    return _base_points(rule, tuple(pips), tuple(winners))


def _base_points(rule: Points, pips: tuple[int, ...], winners: tuple[int, ...]) -> int:
    # base_points on tuples, as score_hand has them (compiled, read natively)
    if rule is _ONE:
        return 1
    total = 0
    for p in pips:  # (sum() is a generic call compiled; a tuple's few items, a loop)
        total += p
    if rule is _ALL_PIPS:
        return total
    for s in winners:  # the opponents' pips: all but the winners'
        total -= pips[s]
    return total


def finish_bonuses(
    rules: Ruleset, base: int, tile: Tile, left: int, right: int
) -> tuple[int, tuple[str, ...]]:
    """``base`` with every finish bonus whose test holds for the final ``tile`` laid on ends
    ``left``/``right``, and their names; additions first, then multiplications."""
    add = 0
    mult = 1
    names: list[str] = []
    for b in rules.finish_bonus:
        if not b.applies(tile, left, right):
            continue
        names.append(b.name)
        if b.effect.kind is _ADD:
            add += b.effect.amount
        else:
            mult *= b.effect.amount
    return (base + add) * mult, tuple(names)


def _tally(
    rules: Ruleset, before: Sequence[int], winner: int | None, points: int
) -> tuple[tuple[int, ...], int, Reset | None, bool]:
    # The match after ``points`` go to side ``winner`` (None: nobody): every side's score,
    # what the winner was awarded, a reset, and whether the winner has won the match.
    # One function for the lot: it runs once per hand of every playout.
    if winner is None:
        after, awarded, reset = tuple(before), points, None
    elif rules.reply_resets and any(sc > 0 for sd, sc in enumerate(before) if sd != winner):
        # A reply (a win while another side has points) wipes every score, its own too.
        after, awarded, reset = (0,) * len(before), 0, Reset.REPLY
    else:
        scores = list(before)
        scores[winner] += points
        after, awarded, reset = tuple(scores), points, None
    wins = (
        winner is not None
        and after[winner] >= rules.target
        and (
            not rules.win_needs_zero_opponent
            or any(sc == 0 for sd, sc in enumerate(after) if sd != winner)
        )
    )
    if not wins and rules.all_scored_resets and all(sc > 0 for sc in after):
        return (0,) * len(after), awarded, Reset.ALL_SCORED, False
    return after, awarded, reset, wins


def _shutout(
    rules: Ruleset, scores: tuple[int, ...], winner: int | None
) -> tuple[str | None, tuple[int, ...]]:
    # The shutout's name and the final scores: every losing side at 0 multiplies the
    # winner's score.
    shut = rules.shutout
    if shut is None or winner is None or any(sc for sd, sc in enumerate(scores) if sd != winner):
        return None, scores
    final = list(scores)
    final[winner] *= shut.multiplier
    return shut.name, tuple(final)


def match_outcome(rules: Ruleset, score: HandScore, hand: int) -> Outcome | None:
    """How hand ``hand`` (from 0), scored ``score``, ends the match: won by the rules (a
    side reached the target), or at the hand limit (the sole leader wins); None when the
    match goes on."""
    if score.wins_match:
        winner = score.winner
        assert winner is not None
        reason = f"side {winner} reached {score.final[winner]} of {rules.target}"
        if score.shutout:
            reason += f" ({score.shutout})"
        return Outcome.ended(Termination.NORMAL, winner, score.final, reason, shutout=score.shutout)
    if hand + 1 >= rules.max_hands:  # a redeal is not a hand
        winner = sole_leader(score.scores, range(len(score.scores)))
        lead = "scores tied, no winner" if winner is None else f"side {winner} leads"
        reason = f"max_hands={rules.max_hands} reached; {lead}"
        return Outcome.ended(Termination.HAND_LIMIT, winner, score.scores, reason)
    return None
