"""A match's chance: every deal and every drawn opening seat, from its seed or from hooks.

A match is its seed plus its decisions. :class:`Chance` deals hand ``hand`` (``attempt`` 1
after a redeal) from the seed (:func:`~capicua.engine.dealing.shuffled`) and offers its
opening (:func:`~capicua.engine.opening.open_hand`, which draws a random opening seat from
the seed when the rules say so), unless a hook replaces the seed: a ``dealer`` for a test
that needs a rare deal, an ``opener`` draw, or both for OpenSpiel's explicit chance nodes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from capicua.engine.dealing import dealer_order, shuffled_deck
from capicua.engine.opening import Opener, PreviousHand, open_hand
from capicua.engine.tiles import Tile

if TYPE_CHECKING:  # the game's tables only; game.py imports this module to deal its hands
    from capicua.engine.game import Game

# A replacement for the seeded deal: (hand, attempt) -> every tile in dealing order.
Dealer = Callable[[int, int], Sequence[Tile]]
#: ``hand -> seat``: who opens ``hand`` when the rules draw a random seat (``random_side``).
OpenerDraw = Callable[[int], int]


class Chance:
    """Where a match's chance comes from: its seed, or the hooks that replace it."""

    __slots__ = ("game", "seed", "dealer", "opener")

    def __init__(
        self,
        game: Game,
        seed: int,
        dealer: Dealer | None = None,
        opener: OpenerDraw | None = None,
    ) -> None:
        if seed < 0:
            raise ValueError("seed must be a non-negative integer")
        self.game = game
        self.seed = seed
        self.dealer = dealer
        self.opener = opener

    def replaced(self, dealer: Dealer | None, opener: OpenerDraw | None) -> Chance:
        """This chance with ``dealer`` and ``opener`` replacing its hooks (None: keep it)."""
        return Chance(
            self.game,
            self.seed,
            self.dealer if dealer is None else dealer,
            self.opener if opener is None else opener,
        )

    def order(self, hand: int, attempt: int) -> list[int]:
        """Deal ``attempt`` of hand ``hand``: every tile's bit (``1 << index``) in dealing
        order, each seat's block in turn, then the stock in drawing order. Shuffling the
        bits is the same permutation as shuffling the indices, and makes a block's tile
        mask the union of its slice's items."""
        g = self.game
        if self.dealer is None:
            return shuffled_deck(g.deck_number, self.seed, hand, attempt)
        return dealer_order(self.dealer(hand, attempt), g.table, g.deck_bits)

    def opening(
        self, hand: int, hands: Sequence[int], held: int, previous: PreviousHand | None
    ) -> Opener:
        """Who is offered the opening of hand ``hand``, dealt tile masks ``hands`` (``held``:
        all of them), after ``previous`` (None for a match's first hand)."""
        return open_hand(self.game, hands, held, self.seed, hand, previous, self.opener)
