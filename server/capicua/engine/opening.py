"""Who opens a hand, as a rule fact: the one place the opening knobs are read.

The engine acts on :func:`opening_method` when it deals a hand; a bot that reasons about
what the opening tells it (a forced highest double says nobody held a higher one) reads
the same function instead of re-deriving the knobs.
"""

from __future__ import annotations

from enum import StrEnum

from capicua.engine.records import HandEnd
from capicua.engine.rules import BlockOpener, FirstOpener, NextOpener, NoWinnerOpener, Ruleset


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
