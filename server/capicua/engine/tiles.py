"""Tiles, domino sets and the precomputed tables the engine's hot path runs on.

A :class:`Tile` is a small value type with one canonical text form, ``"a-b"`` with
``a <= b`` (``Tile.parse("6-3") == Tile(3, 6)``; ``str(Tile(3, 6)) == "3-6"``).

Inside the engine a tile is an *index* into the full double-N set listed in canonical
order (by low half, then high half), and a set of tiles is an ``int`` bitmask over those
indices. Double-six fits in 28 bits, so hands, suits and "who can play" checks are single
machine-word integer operations; :class:`TileTable` holds the tables that map between the
two forms.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache
from typing import NamedTuple, TypeVar

from capicua.common.errors import CapicuaError


class TileError(CapicuaError, ValueError):
    """A tile's text or value is malformed."""


class Tile(NamedTuple):
    """One domino ``[low|high]`` with ``low <= high``."""

    low: int
    high: int

    @classmethod
    def of(cls, a: int, b: int) -> Tile:
        """The tile with halves ``a`` and ``b`` in either order."""
        return cls(a, b) if a <= b else cls(b, a)

    @classmethod
    def parse(cls, text: str) -> Tile:
        """Parse ``"a-b"`` (either order, surrounding spaces allowed)."""
        parts = text.strip().split("-")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise TileError(f"bad tile {text!r}: expected A-B, e.g. 3-6")
        return cls.of(int(parts[0]), int(parts[1]))

    @property
    def pips(self) -> int:
        """Sum of both halves."""
        return self.low + self.high

    @property
    def is_double(self) -> bool:
        """Both halves equal."""
        return self.low == self.high

    def open_after(self, covered: int) -> int:
        """The pip this tile leaves open when laid on an end showing ``covered`` (one of
        its halves): the other half."""
        return self.high if self.low == covered else self.low

    def __str__(self) -> str:
        return f"{self.low}-{self.high}"

    def __repr__(self) -> str:
        return f"Tile({self.low}, {self.high})"


def full_set(max_pip: int) -> tuple[Tile, ...]:
    """Every tile of the double-``max_pip`` set, in canonical order."""
    return tuple(Tile(a, b) for a in range(max_pip + 1) for b in range(a, max_pip + 1))


def iter_bits(mask: int) -> Iterator[int]:
    """Indices of the set bits of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def highest_tile_key(tile: Tile) -> tuple[int, int]:
    """Order for "highest tile": pips first, then the larger half (RULES decision 10)."""
    return (tile.pips, tile.high)


class TileTable:
    """Precomputed per-set tables, shared by every match on the same ``max_pip``."""

    __slots__ = (
        "max_pip", "tiles", "index", "pips", "suit", "other", "doubles", "fits", "bit",
        "_pip_chunks", "_tile_chunks", "opening_chunks", "right_chunks", "left_codes",
        "right_codes",
    )  # fmt: skip

    def __init__(self, max_pip: int) -> None:
        self.max_pip = max_pip
        self.tiles: tuple[Tile, ...] = full_set(max_pip)
        self.index: dict[Tile, int] = {t: i for i, t in enumerate(self.tiles)}
        self.pips: tuple[int, ...] = tuple(t.pips for t in self.tiles)
        # suit[p]: mask of the tiles showing pip p on either half.
        self.suit: tuple[int, ...] = tuple(
            sum(1 << i for i, t in enumerate(self.tiles) if p in (t.low, t.high))
            for p in range(max_pip + 1)
        )
        # other[i][p]: the half left open when tile i is attached by its half p (-1 if it
        # has no such half). Flattened as other[i * (max_pip + 1) + p] for speed.
        width = max_pip + 1
        other = [-1] * (len(self.tiles) * width)
        for i, t in enumerate(self.tiles):
            other[i * width + t.low] = t.high
            other[i * width + t.high] = t.low
        self.other: tuple[int, ...] = tuple(other)
        self.doubles: int = sum(1 << i for i, t in enumerate(self.tiles) if t.is_double)
        # fits[i]: bitmask over pips of the halves of tile i.
        self.fits: tuple[int, ...] = tuple((1 << t.low) | (1 << t.high) for t in self.tiles)
        self.bit: tuple[int, ...] = tuple(1 << i for i in range(len(self.tiles)))
        # The tiles and pip total of every 8-bit slice of a mask, so that tiles_of() and
        # pips_of() (run for every seat at the end of every hand) are a few lookups.
        n = len(self.tiles)
        self._tile_chunks: tuple[tuple[tuple[Tile, ...], ...], ...] = tuple(
            tuple(
                tuple(self.tiles[base + i] for i in iter_bits(m) if base + i < n)
                for m in range(256)
            )
            for base in range(0, n, 8)
        )
        # The opening codes (tile index * 2) of every 8-bit slice of a mask: an opener's
        # legal actions are a few lookups (gathered(opening_chunks, mask)).
        self.opening_chunks: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
            tuple(
                tuple(i << 1 for i in range(base, base + 8) if m >> (i - base) & 1 and i < n)
                for m in range(256)
            )
            for base in range(0, n, 8)
        )
        # The same codes played on the right end (| 1), for a play-code cache miss there.
        self.right_chunks: tuple[tuple[tuple[int, ...], ...], ...] = tuple(
            tuple(tuple([code | 1 for code in codes]) for codes in chunks)
            for chunks in self.opening_chunks
        )
        # Action codes (tile index * 2 + end) of the plays of a mask of tiles on one end,
        # filled by play_codes() on first use. Only subsets of one suit are cached (at most
        # (max_pip + 1) * 2**(max_pip + 1) entries), never whole hands.
        self.left_codes: dict[int, tuple[int, ...]] = {}
        self.right_codes: dict[int, tuple[int, ...]] = {}
        self._pip_chunks: tuple[tuple[int, ...], ...] = tuple(
            tuple(sum(t.pips for t in chunk) for chunk in chunks) for chunks in self._tile_chunks
        )

    def play_codes(self, mask: int, end: int) -> tuple[int, ...]:
        """Action codes of playing every tile of ``mask`` on ``end`` (0 left, 1 right)."""
        # (a few lookups in the per-byte tables, for either end: the first 20 block playouts
        # of a process miss the caches about 4 times a hand)
        if end:
            codes = self.right_codes[mask] = gathered(self.right_chunks, mask)
        else:  # an opening plays on the left end: its codes are these
            codes = self.left_codes[mask] = gathered(self.opening_chunks, mask)
        return codes

    def mask_of(self, tiles: Iterable[Tile]) -> int:
        """Bitmask of ``tiles``."""
        m = 0
        for t in tiles:
            m |= 1 << self.index[t]
        return m

    def tiles_of(self, mask: int) -> tuple[Tile, ...]:
        """Tiles of ``mask`` in canonical order."""
        return gathered(self._tile_chunks, mask)

    def pips_of(self, mask: int) -> int:
        """Total pips of the tiles in ``mask``."""
        total = 0
        for chunks in self._pip_chunks:
            total += chunks[mask & 255]
            mask >>= 8
        return total


_Item = TypeVar("_Item")


def gathered(tables: tuple[tuple[tuple[_Item, ...], ...], ...], mask: int) -> tuple[_Item, ...]:
    """What ``tables`` (per 8-bit slice of a mask, from the lowest: the items of each of
    its 256 values) hold for the bits of ``mask``, in bit order."""
    out: tuple[_Item, ...] = ()
    for chunks in tables:
        if mask & 255:
            out = out + chunks[mask & 255]  # (compiled, + of tuples is direct; += is not)
        mask >>= 8
    return out


@cache
def tile_table(max_pip: int) -> TileTable:
    """The shared table for a double-``max_pip`` set."""
    return TileTable(max_pip)
