"""Ladder files: TOML in, a validated :class:`Ladder` out.

.. code-block:: toml

    name = "club ladder"
    preset = "iq-1v1"             # the rules: a preset and its overrides
    overrides = ["target=50"]     # the match format (a match to 50 points)
    seed = 1                      # the deals: the same file plays the same deals
    concurrency = 2               # matches in flight
    time_limit_ms = 2000          # the time control, per decision
    on_timeout = "forfeit"
    max_crashes = 3

    [entries]                     # the bots, written as a tournament's [bots]
    hard = "builtin:hard"
    mine = "python:my_bots:Greedy"

    [matchmaking]                 # all optional (the defaults below)
    pair_cap = 20                 # sets per pairing at full rate, then throttled
    throttle = 10                 # past the cap: a pairing waits this many ladder sets
    placement = 3                 # sets that place a new entry, before any other choice
    top = 3                       # the best entries keep a minimum rate:
    top_every = 12                # each plays at least once every this many sets

Everything but the entries is the ladder's identity (its digest): a resumed ladder must
repeat it. Entries may be added (they join) and removed (they leave: no new sets, their
results stay); an entry's spec may not change under its name (a new version is a new
entry). The bots are read by the tournament's own parser
(:func:`capicua.arena.config.tournament_from_mapping`), so they take every form a
tournament's bots take; this module only adds and checks the ladder's own keys.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from capicua.common.errors import CapicuaError

from ..config import Tournament, TournamentError, read_toml, tournament_from_mapping


class LadderError(CapicuaError):
    """A ladder file that cannot be run, or a results directory it cannot resume."""


#: The keys of a ladder file's top level (a tournament's, but its format and games: a
#: ladder is endless and chooses its own pairings).
KEYS = (
    "name", "preset", "overrides", "seed", "concurrency", "time_limit_ms", "on_timeout",
    "max_crashes", "server", "entries", "matchmaking",
)  # fmt: skip


@dataclass(frozen=True)
class Matchmaking:
    """The matchmaker's knobs (:mod:`capicua.arena.ladder.matchmaker`)."""

    pair_cap: int = 20
    throttle: int = 10
    placement: int = 3
    top: int = 3
    top_every: int = 12


#: Each knob's accepted range.
_RANGES = {
    "pair_cap": (1, 1_000_000),
    "throttle": (1, 1_000_000),
    "placement": (0, 1000),
    "top": (0, 1000),
    "top_every": (1, 1_000_000),
}


@dataclass(frozen=True)
class Ladder:
    """A validated ladder file: the tournament part (rules, time control, bots) and the
    matchmaking."""

    tournament: Tournament
    matchmaking: Matchmaking

    @property
    def name(self) -> str:
        return self.tournament.name

    def canonical(self) -> dict[str, Any]:
        """What a resumed ladder must repeat (its entries may change: see the module)."""
        out = self.tournament.canonical()
        for key in ("bots", "format", "candidate", "games"):
            del out[key]
        out["matchmaking"] = asdict(self.matchmaking)
        return out

    def digest(self) -> str:
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def _matchmaking(value: Any) -> Matchmaking:
    if value is None:
        return Matchmaking()
    if not isinstance(value, dict):
        raise LadderError(f"matchmaking: expected a table, got {value!r}")
    unknown = sorted(set(value) - set(_RANGES))
    if unknown:
        raise LadderError(
            f"matchmaking: unknown key {unknown[0]!r}; known keys: {', '.join(_RANGES)}"
        )
    for key, item in value.items():
        low, high = _RANGES[key]
        if isinstance(item, bool) or not isinstance(item, int) or not low <= item <= high:
            raise LadderError(
                f"matchmaking.{key}: expected an integer from {low} to {high}, got {item!r}"
            )
    return Matchmaking(**value)


def ladder_from_mapping(data: dict[str, Any], base_dir: Path) -> Ladder:
    """Validate a parsed ladder file; every error names its key."""
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise LadderError(f"unknown key {unknown[0]!r}; known keys: {', '.join(KEYS)}")
    entries = data.get("entries")
    if not isinstance(entries, dict) or not entries:
        raise LadderError('entries: missing; add an [entries] table, e.g. hard = "builtin:hard"')
    if len(entries) < 2:
        raise LadderError(f"entries: a ladder needs at least 2 entries, got {len(entries)}")
    rest = {k: v for k, v in data.items() if k not in ("entries", "matchmaking")}
    rest.setdefault("name", "ladder")
    try:
        t = tournament_from_mapping({**rest, "bots": entries}, base_dir)
    except TournamentError as e:  # its bots are our entries
        raise LadderError(str(e).replace("bots.", "entries.", 1)) from None
    if len(t.bots) < t.ruleset.num_sides:
        raise LadderError(
            f"entries: {t.ruleset.name} has {t.ruleset.num_sides} sides and a ladder never "
            f"sets an entry against itself: it needs at least {t.ruleset.num_sides} entries, "
            f"got {len(t.bots)}"
        )
    return Ladder(t, _matchmaking(data.get("matchmaking")))


def load_ladder(path: Path) -> Ladder:
    """Read and validate a ladder file (errors: one line naming the file and the key)."""
    data = read_toml(path, LadderError)
    try:
        return ladder_from_mapping(data, path.resolve().parent)
    except LadderError as e:
        raise LadderError(f"{path}: {e}") from None
