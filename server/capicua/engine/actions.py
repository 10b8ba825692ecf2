"""Actions: what a seat can choose, as a typed value with one canonical text form.

Text forms (``Action.parse`` / ``str``): ``3-6:L`` and ``3-6:R`` play tile 3-6 on the left
or right open end (the first tile of a hand is always ``:L``, laid with its lower half on the
left); ``defer`` passes an offered opening to the partner; ``redeal`` and ``keep`` answer a
redeal offer.

Inside the engine an action is an ``int`` code (see :meth:`Action.code`): plays are
``tile_index * 2 + end`` and the three specials are negative, so the hot path never builds
objects. ``Action`` is the boundary type for people, bots and the wire.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum, StrEnum
from typing import Final

from capicua.common.errors import CapicuaError
from capicua.common.pickling import by_constructor
from capicua.engine.tiles import Tile, TileError, TileTable


class IllegalActionError(CapicuaError, ValueError):
    """A well-formed action that is not legal in the current state."""


class InvalidActionError(CapicuaError, ValueError):
    """Text that is not an action at all."""


class End(IntEnum):
    """An open end of the chain."""

    LEFT = 0
    RIGHT = 1

    @property
    def letter(self) -> str:
        return "L" if self is End.LEFT else "R"


class ActionKind(StrEnum):
    PLAY = "play"
    DEFER = "defer"
    REDEAL = "redeal"
    KEEP = "keep"


# Integer codes of the non-play actions (plays are >= 0); Final: constants in the compiled
# build (see handlog's event kinds).
DEFER: Final = -1
REDEAL: Final = -2
KEEP: Final = -3
_SPECIAL_CODES = {ActionKind.DEFER: DEFER, ActionKind.REDEAL: REDEAL, ActionKind.KEEP: KEEP}
_SPECIAL_KINDS = {v: k for k, v in _SPECIAL_CODES.items()}


@dataclass(frozen=True, slots=True)
class Action:
    """One choice of a seat: a play of ``tile`` on ``end``, or a special action."""

    kind: ActionKind
    tile: Tile | None = None
    end: End | None = None

    @classmethod
    def play(cls, tile: Tile, end: End = End.LEFT) -> Action:
        return cls(ActionKind.PLAY, tile, end)

    @classmethod
    def parse(cls, text: str) -> Action:
        """Parse the canonical text form; raises :class:`InvalidActionError`."""
        t = text.strip().lower()
        for kind in (ActionKind.DEFER, ActionKind.REDEAL, ActionKind.KEEP):
            if t == kind.value:
                return cls(kind)
        tile_text, sep, end_text = t.partition(":")
        if not sep:
            end_text = "l"
        if end_text not in ("l", "r"):
            raise InvalidActionError(f"bad action {text!r}: the end must be L or R")
        try:
            tile = Tile.parse(tile_text)
        except TileError as e:
            raise InvalidActionError(f"bad action {text!r}: {e}") from None
        return cls.play(tile, End.LEFT if end_text == "l" else End.RIGHT)

    @classmethod
    def from_code(cls, code: int, table: TileTable) -> Action:
        if code < 0:
            return cls(_SPECIAL_KINDS[code])
        return cls.play(table.tiles[code >> 1], End(code & 1))

    def code(self, table: TileTable) -> int:
        """The engine's integer code of this action for a set's ``table``."""
        if self.kind is not ActionKind.PLAY:
            return _SPECIAL_CODES[self.kind]
        assert self.tile is not None and self.end is not None
        idx = table.index.get(self.tile)
        if idx is None:
            raise IllegalActionError(f"{self.tile} is not in a double-{table.max_pip} set")
        return idx * 2 + int(self.end)

    def __repr__(self) -> str:
        return f"Action({str(self)!r})"

    def __str__(self) -> str:
        if self.kind is ActionKind.PLAY:
            assert self.end is not None
            return f"{self.tile}:{self.end.letter}"
        return self.kind.value


def illegal_reason(code: int, legal: Sequence[int], table: TileTable, seat: int) -> str:
    """Why action ``code`` may not be played by ``seat``, whose legal codes are ``legal``
    (:class:`InvalidActionError` for a code that is no action at all)."""
    try:
        what = Action.from_code(code, table)
    except (KeyError, IndexError):
        raise InvalidActionError(f"no such action code {code}") from None
    shown = ", ".join(str(Action.from_code(c, table)) for c in legal)
    return f"{what} is not legal for seat {seat} now (legal: {shown})"


# (the compiled build cannot unpickle a frozen dataclass field by field)
by_constructor(Action)
