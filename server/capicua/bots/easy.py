"""``easy``: a simple greedy player that gets rid of heavy tiles and keeps playing.

It looks only at its own tiles and the two open ends. Each playable tile scores its pips
(heavy tiles count against it in a blocked hand), plus 2 for every tile it would still hold
that fits the new ends (so that it can play next turn), plus 3 for a double (a double fits
one number only: play it while it can). The best score is played; ties go to the first
legal action in canonical order, so it is deterministic (the seed is accepted for the
common bot interface). It always keeps its tiles when offered a redeal and never defers an
offered opening.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from capicua.engine.actions import Action, ActionKind
from capicua.engine.observation import Observation
from capicua.engine.records import ends_after

FOLLOW = 2  # per tile kept that fits the new ends
DOUBLE = 3  # for playing a double


class EasyBot:
    """Greedy: pips shed, plus options kept, plus doubles."""

    name: ClassVar[str] = "easy"  # a class attribute: the compiled build reads it off the class

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def choose(self, observation: Observation, legal: Sequence[Action]) -> Action:
        plays = [a for a in legal if a.kind is ActionKind.PLAY]
        if not plays:
            keep = [a for a in legal if a.kind is ActionKind.KEEP]
            return keep[0] if keep else legal[0]
        hand = observation.tiles
        ends = observation.ends

        def score(a: Action) -> int:
            tile, end = a.tile, a.end
            assert tile is not None and end is not None
            new = ends_after(ends, tile, end)
            follow = sum(1 for t in hand if t != tile and (t.low in new or t.high in new))
            return tile.pips + FOLLOW * follow + (DOUBLE if tile.is_double else 0)

        best = max(score(a) for a in plays)
        return next(a for a in plays if score(a) == best)
