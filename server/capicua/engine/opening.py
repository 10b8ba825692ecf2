"""Who opens a hand, as a rule fact: the one place the opening knobs are read.

The engine acts on :func:`opening_method` when it deals a hand, and :func:`open_hand` turns
the method into the seat that opens (and the tile it must open with) for the tiles dealt;
a bot that reasons about what the opening tells it (a forced highest double says nobody
held a higher one) reads the same function instead of re-deriving the knobs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import TYPE_CHECKING, Final

from capicua.engine.dealing import opener_rng
from capicua.engine.records import HandEnd
from capicua.engine.rules import BlockOpener, FirstOpener, NextOpener, NoWinnerOpener, Ruleset

if TYPE_CHECKING:  # the game's tables only; game.py imports this module to open its hands
    from capicua.engine.game import Game


class OpeningMethod(StrEnum):
    """How the opener of a hand (and its first tile) is chosen."""

    RANDOM_SIDE = "random_side"  # a random seat of a random side, any tile, may defer
    TILE = "tile"  # the holder of the named tile, with it (if dealt; else as HIGHEST)
    HIGHEST = "highest"  # the holder of the highest double (else highest tile), with it
    ROTATE = "rotate"  # the seat after the previous hand's opener, any tile
    LOCKER = "locker"  # the locker if its side won the block, else the seat after it
    WINNER = "winner"  # the previous hand's winning seat, any tile
    WINNING_SIDE = "winning_side"  # the winning seat, any tile, may defer to its partner

    @property
    def forced_tile(self) -> bool:
        """The first tile is forced (TILE or HIGHEST): it says what was, and was not,
        dealt."""
        return self in (OpeningMethod.TILE, OpeningMethod.HIGHEST)


def first_method(rules: Ruleset) -> OpeningMethod:
    """How hand 1 is opened (and a hand after a no-winner hand under ``same_as_first``)."""
    if rules.first_opener is FirstOpener.RANDOM_SIDE:
        return OpeningMethod.RANDOM_SIDE
    if rules.first_opener is FirstOpener.TILE:
        return OpeningMethod.TILE
    return OpeningMethod.HIGHEST


def opening_method(rules: Ruleset, previous: tuple[HandEnd, int | None] | None) -> OpeningMethod:
    """How a hand is opened, given the previous hand's (end, winning side), or None for
    the first hand."""
    if previous is None:
        return first_method(rules)
    end, winner = previous
    if winner is None:
        if rules.no_winner_opener is NoWinnerOpener.ROTATE:
            return OpeningMethod.ROTATE
        return first_method(rules)
    if end is HandEnd.BLOCK and rules.block_opener is BlockOpener.LOCKER_IF_WON:
        return OpeningMethod.LOCKER
    if rules.next_opener is NextOpener.WINNER:
        return OpeningMethod.WINNER
    if rules.next_opener is NextOpener.WINNING_SIDE:
        return OpeningMethod.WINNING_SIDE
    return OpeningMethod.HIGHEST


# The methods as module globals: a hand's opening compares with them directly (an enum
# member looked up on its class costs more than the comparison; Final: a C static in the
# compiled build, not a lookup in the module's dict).
_RANDOM_SIDE: Final = OpeningMethod.RANDOM_SIDE
_TILE: Final = OpeningMethod.TILE
_HIGHEST: Final = OpeningMethod.HIGHEST
_ROTATE: Final = OpeningMethod.ROTATE
_LOCKER: Final = OpeningMethod.LOCKER
_WINNING_SIDE: Final = OpeningMethod.WINNING_SIDE

# The previous hand as the next opening reads it: (how it ended, the winning side or None,
# the seat that went out or locked it, its opener, the seat its win is credited to or -1).
PreviousHand = tuple[HandEnd, int | None, int, int, int]

# Who opens a hand: (the seat, the tile index it must open with or -1 for any tile, whether
# it may defer the opening to its partner). Plain tuples: every hand of every playout is
# opened.
Opener = tuple[int, int, bool]


def open_hand(
    game: Game,
    hands: Sequence[int],
    held: int,
    seed: int,
    hand: int,
    previous: PreviousHand | None,
    draw: Callable[[int], int] | None = None,
) -> Opener:
    """Who opens hand ``hand`` of match ``seed``, dealt tile masks ``hands`` (``held``: all
    of them), after ``previous`` (None for the first hand). ``draw`` (``hand -> seat``)
    replaces the seeded draw of a random opening seat."""
    g = game
    if previous is None:
        method = g.first_opening
    else:
        method = g.opening_after[previous[0], previous[1] is not None]
    if method is _RANDOM_SIDE:
        if draw is not None:
            return draw(hand), -1, True
        rng = opener_rng(seed, hand)
        side = rng.randrange(g.num_sides)
        return rng.choice(g.side_seats[side]), -1, True
    if method is _TILE and held >> g.opening_index & 1:
        return holder(hands, g.opening_index), g.opening_index, False
    if method is _TILE or method is _HIGHEST:
        return highest_opener(game, hands, held)
    assert previous is not None
    _end, winner, locker, opener, winner_seat = previous
    if method is _ROTATE:
        return g.next_seat[opener], -1, False
    if method is _LOCKER:
        won = g.side[locker] == winner
        return (locker if won else g.next_seat[locker]), -1, False
    return winner_seat, -1, method is _WINNING_SIDE


def forced_order(game: Game, method: OpeningMethod) -> tuple[int, ...]:
    """The tiles a forced opening (TILE or HIGHEST) chooses from, first choice first: the
    seat holding the first of them that was dealt opens with it. This is
    :func:`open_hand`'s own choice read as an order, for a seat reasoning about what an
    opening says: every tile before the one opened with was not dealt."""
    if not method.forced_tile:
        raise ValueError(f"forced_order: {method} does not force a tile")
    left = sum(game.deck_bits)
    order: list[int] = []
    if method is _TILE:
        order.append(game.opening_index)
        left &= ~(1 << game.opening_index)
    while left:
        tile = highest_opener(game, (left,), left)[1]
        order.append(tile)
        left &= ~(1 << tile)
    return tuple(order)


def highest_opener(game: Game, hands: Sequence[int], held: int) -> Opener:
    """The holder of the highest dealt double (else of the highest dealt tile), with it."""
    dealt_doubles = held & game.doubles
    if dealt_doubles:
        t = dealt_doubles.bit_length() - 1  # doubles sort by pip in canonical order
    else:
        t = next(i for i in game.by_height if held >> i & 1)
    return holder(hands, t), t, False


def holder(hands: Sequence[int], tile: int) -> int:
    """The seat whose tile mask (of ``hands``) holds tile index ``tile``."""
    bit = 1 << tile
    return next(s for s, h in enumerate(hands) if h & bit)


def redeal_askers(game: Game, hands: Sequence[int], offered: int) -> list[int]:
    """The seats asked whether they want a redeal of the tiles ``hands`` dealt, in turn
    order from the seat ``offered`` the opening: those holding at least
    ``redeal_min_doubles`` doubles (a knob of 0: none)."""
    least = game.ruleset.redeal_min_doubles
    if not least:
        return []
    doubles = game.doubles
    return [s for s in game.seats_from[offered] if (hands[s] & doubles).bit_count() >= least]
