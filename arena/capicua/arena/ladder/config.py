"""Ladder files: TOML in, a validated :class:`Ladder` out.

.. code-block:: toml

    name = "club ladder"
    preset = "iq-1v1"             # the rules: a preset and its overrides
    overrides = ["target=50"]     # the match format (a match to 50 points)
    on_timeout = "forfeit"
    max_crashes = 3

    [matches]                     # as every study's (capicua.arena.config.Matches)
    seed = 1                      # the deals: the same file plays the same deals
    concurrency = 2               # matches in flight
    time_limit_ms = 2000          # the time control, per decision

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
tournament's bots take; this module only adds and checks the ladder's own keys, declared
by :class:`LadderFile` (files written before ``[matches]`` have its keys at the top level,
still read there).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

from pydantic import Field

from capicua.common.errors import CapicuaError
from capicua.common.schema import ConfigModel, integer, parse, table, text

from ..config import (
    BOT_JSON,
    PlayFile,
    Tournament,
    TournamentError,
    load_file,
    tournament_from_mapping,
)


class LadderError(CapicuaError):
    """A ladder file that cannot be run, or a results directory it cannot resume."""


class Matchmaking(ConfigModel):
    """``[matchmaking]``: the matchmaker's knobs (:mod:`capicua.arena.ladder.matchmaker`)."""

    pair_cap: Annotated[int, integer(1, 1_000_000)] = Field(
        default=20, description="sets per pairing at full rate, then throttled"
    )
    throttle: Annotated[int, integer(1, 1_000_000)] = Field(
        default=10, description="past the cap: a pairing waits this many ladder sets"
    )
    placement: Annotated[int, integer(0, 1000)] = Field(
        default=3, description="rated sets that place a new entry before any other choice"
    )
    top: Annotated[int, integer(0, 1000)] = Field(
        default=3, description="the best entries keep a minimum rate"
    )
    top_every: Annotated[int, integer(1, 1_000_000)] = Field(
        default=12, description="each of them plays at least once every this many sets"
    )


class LadderFile(PlayFile):
    """A ladder file as written: a tournament's rules, time control and ``[matches]``,
    its bots as ``[entries]``, no format or games (a ladder chooses its own pairings)."""

    name: Annotated[str, text()] = Field(default="ladder", description="for people")
    entries: Annotated[
        dict[str, Any], table('an [entries] table, e.g. hard = "builtin:hard"', BOT_JSON)
    ] = Field(default={}, description="written as a tournament's [bots]")
    matchmaking: Matchmaking = Matchmaking()


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
        out["matchmaking"] = self.matchmaking.model_dump()
        return out

    def digest(self) -> str:
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()


def ladder_from_mapping(data: dict[str, Any], base_dir: Path) -> Ladder:
    """Validate a parsed ladder file; every error names its key."""
    file = parse(LadderFile, data, LadderError)
    entries = file.entries
    if not entries:
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
    return Ladder(t, file.matchmaking)


def load_ladder(path: Path) -> Ladder:
    """Read and validate a ladder file (errors: one line naming the file and the key)."""
    return load_file(path, LadderError, ladder_from_mapping)
