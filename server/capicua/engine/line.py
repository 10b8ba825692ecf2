"""The line of play of one deal, as an immutable value: :class:`Line`.

The engine's hot path keeps only the two open ends (ints in ``MatchState``). Everything
that reads or shows the line itself (observations, replay checks, the display, ``capicua
match watch``, the golden tools) folds a hand's events into a :class:`Line` instead of
laying tiles by hand::

    line = Line.of(record.events)      # or: line = line.apply(event), one at a time
    line.ends                          # (left, right), None before the first tile
    line.chain                         # the PlacedTiles, left to right
    line.spinner                       # the first double laid, None before one

The rules of a line are those of :func:`~capicua.engine.records.shown_halves`: the first
tile is laid low half left; a tile laid on an end shows the pip it covers inside and its
other half outside. A granted redeal starts an empty line; any other event leaves it as
it is. The spinner is the first double laid: a display marker only (no extra ends).

One text form, the tiles as laid from left to right: ``str(line) == "[3|6][6|6][6|1]"``
(``""`` for an empty line).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple

from capicua.common.errors import CapicuaError
from capicua.engine.actions import End
from capicua.engine.records import Event, Play, RedealChoice, shown_halves
from capicua.engine.tiles import Tile


class LineError(CapicuaError, ValueError):
    """Tiles that make no line: a tile laid where it does not fit, or a chain whose tiles
    do not touch (a corrupt record; the engine never lays one)."""


class PlacedTile(NamedTuple):
    """A tile in the line as laid, read from left to right. A named tuple, as
    :class:`~capicua.engine.tiles.Tile` is: every view lays one per tile of the line."""

    tile: Tile
    left: int  # the pip facing the left end of the line
    right: int  # the pip facing the right end
    spinner: bool = False  # the first double laid: a display marker only


class Line:
    """The tiles laid in one deal, left to right. Immutable: laying a tile gives a new
    line. ``Line()`` is the empty line; ``Line(chain)`` takes placed tiles as laid (a
    view's chain), checking that they touch."""

    __slots__ = ("_chain", "_ends", "_spinner")

    _chain: tuple[PlacedTile, ...]
    _ends: tuple[int, int] | None
    _spinner: Tile | None

    def __init__(self, chain: Iterable[PlacedTile] = ()) -> None:
        placed = _checked(tuple(chain))
        self._set(placed, next((p.tile for p in placed if p.spinner), None))

    def _set(self, chain: tuple[PlacedTile, ...], spinner: Tile | None) -> None:
        # The one place the slots are written: a Line is never changed after it is made.
        self._chain = chain
        self._ends = (chain[0].left, chain[-1].right) if chain else None
        self._spinner = spinner

    @classmethod
    def of(cls, events: Iterable[Event]) -> Line:
        """The line after ``events`` of one hand, in order (see :meth:`apply`)."""
        line = EMPTY
        for event in events:
            line = line.apply(event)
        return line

    # -- what it shows ---------------------------------------------------------------------

    @property
    def chain(self) -> tuple[PlacedTile, ...]:
        """The placed tiles, left to right."""
        return self._chain

    @property
    def ends(self) -> tuple[int, int] | None:
        """The open ends (left, right), None before the first tile."""
        return self._ends

    @property
    def spinner(self) -> Tile | None:
        """The first double laid, None until one is."""
        return self._spinner

    def __len__(self) -> int:
        return len(self._chain)

    def __iter__(self) -> Iterator[PlacedTile]:
        return iter(self._chain)

    # -- laying tiles ----------------------------------------------------------------------

    def placed(self, tile: Tile, end: End) -> PlacedTile:
        """``tile`` as it would lie on ``end`` of this line (the first tile: low half
        left); raises :class:`LineError` if it does not fit there."""
        ends = self._ends
        if ends is not None and ends[end] not in (tile.low, tile.high):
            raise LineError(f"line: {tile} does not fit the {end.name.lower()} end {ends[end]}")
        left, right = shown_halves(ends, tile, end)
        return PlacedTile(tile, left, right, tile.is_double and self._spinner is None)

    def play(self, tile: Tile, end: End) -> Line:
        """This line with ``tile`` laid on ``end`` (see :meth:`placed`)."""
        p = self.placed(tile, end)
        chain = (p, *self._chain) if end is End.LEFT else (*self._chain, p)
        line = Line.__new__(Line)
        line._set(chain, p.tile if p.spinner else self._spinner)
        return line

    def apply(self, event: Event) -> Line:
        """The line after ``event``: a play is laid, a granted redeal starts an empty
        line (a new deal), and every other event leaves it as it is."""
        if isinstance(event, Play):
            return self.play(event.tile, event.end)
        if isinstance(event, RedealChoice) and event.redeal:
            return EMPTY
        return self

    # -- a value ---------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Line) and self._chain == other._chain

    def __hash__(self) -> int:
        return hash(self._chain)

    def __str__(self) -> str:
        return "".join(f"[{p.left}|{p.right}]" for p in self._chain)

    def __repr__(self) -> str:
        return f"<Line {self}>" if self._chain else "<Line (empty)>"


def _checked(chain: tuple[PlacedTile, ...]) -> tuple[PlacedTile, ...]:
    """``chain`` if its tiles show their own halves, touch their neighbours and at most
    one double is the spinner; raises :class:`LineError` naming the first fault otherwise."""
    for p in chain:
        if {p.left, p.right} != {p.tile.low, p.tile.high}:
            raise LineError(f"line: {p.tile} cannot show [{p.left}|{p.right}]")
    for a, b in zip(chain, chain[1:], strict=False):
        if a.right != b.left:
            raise LineError(f"line: [{a.left}|{a.right}] does not touch [{b.left}|{b.right}]")
    spinners = [p.tile for p in chain if p.spinner]
    if len(spinners) > 1 or any(not t.is_double for t in spinners):
        raise LineError(f"line: one double is the spinner, not {spinners}")
    return chain


EMPTY = Line()
"""The line before the first tile of a deal."""
