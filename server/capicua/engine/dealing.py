"""Seeded chance: the deal and the random opening side.

A deal depends only on ``(seed, hand, attempt)``, never on how earlier hands were played,
so duplicate matches and A/B experiments over rule changes see the same cards:

1. list the set's tiles in canonical order (by low half, then high half; excluded tiles
   left out);
2. shuffle them with ``random.Random(k)`` where ``k`` is the first 8 bytes, big-endian, of
   ``sha256(f"{seed}:{hand}:{attempt}".encode())`` (``hand`` counts from 0, ``attempt`` is 0,
   or 1 after a redeal);
3. seat ``s`` gets ``tiles[s * hand_size:(s + 1) * hand_size]``; the rest, in order, is the
   stock, drawn from the front.

``random.Random`` seeded with an ``int`` and its ``shuffle``/``randrange``/``choice`` give the
same sequence on every CPython 3 release this project supports, so the same seed always
gives the same deal.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from functools import cache, lru_cache
from typing import Final, TypeVar

from capicua.engine.seeds import derive, derive_deal
from capicua.engine.tiles import Tile, TileTable

try:
    from _random import Random as _CRandom
except ImportError:  # not CPython: the public class gives the same numbers
    _CRandom = random.Random  # type: ignore[assignment,misc]


def deal_rng(seed: int, hand: int, attempt: int) -> random.Random:
    """The generator that shuffles the tiles of ``hand`` (``attempt`` 1 after a redeal)."""
    return random.Random(derive_deal(seed, hand, attempt))


@cache
def _shuffle_plan(n: int) -> tuple[tuple[int, int, int], ...]:
    """(i, i + 1, bits of i + 1) for each step of a Fisher-Yates shuffle of n items."""
    return tuple((i, i + 1, (i + 1).bit_length()) for i in range(n - 1, 0, -1))


def opener_rng(seed: int, hand: int) -> random.Random:
    """The generator that draws the opening side under ``first_opener = random_side``."""
    return random.Random(derive(seed, "opener", hand))


def shuffled(deck: tuple[int, ...], seed: int, hand: int, attempt: int) -> list[int]:
    """``deck`` (tile indices in canonical order) shuffled for this deal.

    This is ``random.Random.shuffle`` written out (Fisher-Yates from the end, each index
    drawn by rejection sampling on ``getrandbits``), because the deal is on the engine's
    hot path; ``tests/test_dealing.py`` checks it gives exactly what ``shuffle`` gives.
    The last few deals are remembered: an experiment deals every deal once per ruleset
    under test, and a deal depends only on its arguments.
    """
    return shuffled_deck(deck_number(deck), seed, hand, attempt)


def shuffled_deck(number: int, seed: int, hand: int, attempt: int) -> list[int]:
    """:func:`shuffled` for the deck of :func:`deck_number` ``number`` (the engine's: a
    game numbers its deck once)."""
    return list(_shuffled(number, seed, hand, attempt))


# Every deck dealt, numbered: the remembered deals are keyed by a deck's number, which
# hashes at once, where the deck's tuple hashes each of its tiles at every deal.
_DECK_NUMBERS: Final[dict[tuple[int, ...], int]] = {}
_DECKS: Final[list[tuple[int, ...]]] = []


def deck_number(deck: tuple[int, ...]) -> int:
    """A number standing for ``deck``: equal decks, the same number (the rulesets under
    test in an experiment share their deals)."""
    number = _DECK_NUMBERS.get(deck)
    if number is None:
        number = _DECK_NUMBERS[deck] = len(_DECKS)
        _DECKS.append(deck)
    return number


@lru_cache(maxsize=16)
def _shuffled(number: int, seed: int, hand: int, attempt: int) -> tuple[int, ...]:
    return _shuffled_items(_DECKS[number], seed, hand, attempt)


# The shuffled items' type: a type variable, so that the compiled build moves the deck's
# items as they are (a list of ints would unbox each item read and box each item written,
# and a tile's bit above 256 is a new int object every time).
_Item = TypeVar("_Item")


def _shuffled_items(
    deck: tuple[_Item, ...], seed: int, hand: int, attempt: int
) -> tuple[_Item, ...]:
    order = list(deck)
    # The C generator under random.Random: same Mersenne Twister, same seeding from an int
    # (init_by_array), without the Python-level constructor on the hot path.
    shuffle_with(_CRandom(derive_deal(seed, hand, attempt)).getrandbits, order)
    return tuple(order)


def shuffle_with(getrandbits: Callable[[int], int], items: list[_Item]) -> None:
    """Shuffle ``items`` in place exactly as ``random.Random.shuffle`` would with the
    generator whose ``getrandbits`` this is: Fisher-Yates from the end, each index drawn by
    rejection sampling. Written out because the standard library's runs interpreted even
    in the compiled build (the deal, and the search bots' sampled worlds, shuffle often)."""
    for i, n, k in _shuffle_plan(len(items)):
        j = getrandbits(k)
        while j >= n:
            j = getrandbits(k)
        items[i], items[j] = items[j], items[i]


def dealer_order(tiles: Sequence[Tile], table: TileTable, deck_bits: Sequence[int]) -> list[int]:
    """The tile bits (``1 << index``) of a deal that a dealer hook made instead of the
    seed (``tiles``: every tile in dealing order); :class:`ValueError` unless every tile
    of the set (``deck_bits``) is there exactly once."""
    index = table.index
    # Looked up as given first: a hook's tiles are mostly the table's own (OpenSpiel's
    # chance nodes deal those), and normalizing each (Tile.of) cost more than the lookup.
    order = [1 << i for i in map(index.get, tiles) if i is not None]
    if len(order) != len(tiles):  # some tile given as (high, low): look it up as listed
        order = [1 << index[Tile.of(*t)] for t in tiles]
    if sorted(order) != sorted(deck_bits):
        raise ValueError("dealer: must return every tile of the set exactly once")
    return order
