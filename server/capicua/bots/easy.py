"""``easy``: a greedy player that gets rid of its heaviest tile first.

It looks only at its own tiles: it plays the playable tile with the most pips (a double
first among equals, then the lower action in canonical order), so that a blocked hand
finds it holding as few pips as possible. When the tile fits both ends it puts it where
the new open end is a number it still holds most of. It always keeps a redeal offer and
never defers an offered opening. It is deterministic; the seed is accepted for the common
bot interface.
"""

from __future__ import annotations

from collections.abc import Sequence

from capicua.engine.actions import Action, ActionKind, End
from capicua.engine.observation import Observation


class EasyBot:
    """Heaviest playable tile first."""

    name = "easy"

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def choose(self, observation: Observation, legal: Sequence[Action]) -> Action:
        plays = [a for a in legal if a.kind is ActionKind.PLAY]
        if not plays:
            keep = [a for a in legal if a.kind is ActionKind.KEEP]
            return keep[0] if keep else legal[0]
        hand = observation.tiles
        ends = observation.ends

        def open_end(a: Action) -> int:
            """How many of my other tiles show the end this play leaves open."""
            assert a.tile is not None
            if ends is None:
                return 0
            attach = ends[0] if a.end is End.LEFT else ends[1]
            new = a.tile.high if a.tile.low == attach else a.tile.low
            return sum(1 for t in hand if t != a.tile and new in (t.low, t.high))

        def key(a: Action) -> tuple[int, int, int]:
            assert a.tile is not None
            return (a.tile.pips, int(a.tile.is_double), open_end(a))

        best = max(key(a) for a in plays)
        return next(a for a in plays if key(a) == best)
