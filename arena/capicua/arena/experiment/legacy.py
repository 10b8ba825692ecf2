"""Experiment directories written before the one results store: ``experiment.sqlite`` (and,
for an experiment played over the protocol, an arena results directory in ``arena/``).

They are read here, never written: ``experiment show`` and ``report`` read them as they
always did, and the same experiment run again in one that is complete (or cannot go on: a
bot was disqualified) prints its result; one still to be played is refused in one line
naming the version that wrote it (:func:`refusal`), since this version records matches
only in the one store.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from ..facts import HandFacts, MatchFacts
from ..store import DB_NAME as ARENA_DB
from ..store import EXPERIMENT_DB, Results, connect_read_only

#: Where such an experiment kept its matches played over the protocol.
ARENA_DIR = "arena"

#: The table that version's first releases lacked (a reader gives it as empty).
SCHEMA = """
CREATE TABLE IF NOT EXISTS choices (
    arm INTEGER NOT NULL,
    pair INTEGER NOT NULL,
    hand INTEGER NOT NULL,
    choices INTEGER NOT NULL,
    options INTEGER NOT NULL,
    PRIMARY KEY (arm, pair, hand)
);
"""


class StoreError(Exception):
    """The directory holds another study, or no readable experiment at all."""


def holds(directory: Path) -> bool:
    """Whether ``directory`` holds an experiment written before the one results store."""
    return (directory / EXPERIMENT_DB).is_file()


class OldResults:
    """An experiment directory of the earlier layout, opened to read (nothing is written)."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        path = directory / EXPERIMENT_DB
        try:
            self.conn = connect_read_only(path, SCHEMA)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{path}: not a readable experiment database ({e})") from None
        row = self.conn.execute(
            "SELECT name, created, capicua_version, config_json, config_sha256 FROM experiment"
        ).fetchone()
        if row is None:
            self.conn.close()
            raise StoreError(f"{directory}: the experiment was never started here")
        self.info = {"name": row[0], "created": row[1], "capicua_version": row[2]}
        self.config: dict[str, Any] = json.loads(row[3])
        self.digest: str = row[4]

    def close(self) -> None:
        self.conn.close()

    def done_pairs(self, games: int) -> set[int]:
        """Pairs with every game recorded."""
        rows = self.conn.execute(
            "SELECT pair FROM matches GROUP BY pair HAVING COUNT(*) = ?", (games,)
        )
        return {r[0] for r in rows}

    def facts(self, games: int) -> dict[int, list[MatchFacts]]:
        """Every complete pair: pair -> the facts of each game, in order."""
        done = self.done_pairs(games)
        # results of an older version have no choices: None, never a made-up 0
        choices = {
            (arm, pair, hand): (c, o)
            for arm, pair, hand, c, o in self.conn.execute("SELECT * FROM choices")
        }
        hands: dict[tuple[int, int], list[HandFacts]] = {}
        for row in self.conn.execute("SELECT * FROM hands ORDER BY arm, pair, hand"):
            arm, pair, hand, blocked, winner, opener, points, bonuses, reset = row[:9]
            plays, passes, draws, defers, redeals = row[9:]
            if pair in done:
                chose, offered = choices.get((arm, pair, hand), (None, None))
                hands.setdefault((arm, pair), []).append(
                    HandFacts(hand, bool(blocked), winner, opener, points,
                              tuple(bonuses.split(",")) if bonuses else (), reset, plays,
                              passes, draws, defers, redeals, chose, offered)
                )  # fmt: skip
        out: dict[int, list[MatchFacts]] = {p: [] for p in sorted(done)}
        for arm, pair, termination, winner, shutout, scores, _source in self.conn.execute(
            "SELECT * FROM matches ORDER BY pair, arm"
        ):
            if pair in out and arm < games:
                out[pair].append(
                    MatchFacts(termination, winner, shutout, tuple(json.loads(scores)),
                               tuple(hands.get((arm, pair), ())))
                )  # fmt: skip
        return out

    def disqualified(self) -> dict[str, str]:
        """The bots its matches over the protocol disqualified, and why."""
        arena = self.directory / ARENA_DIR
        if not (arena / ARENA_DB).is_file():
            return {}
        results = Results.open_existing(arena)
        try:
            return results.disqualified()
        finally:
            results.close()


def refusal(directory: Path, old: OldResults, done: int, planned: int) -> str:
    """Why this version does not play on in ``directory``: the line names the version that
    wrote it and what can still be done with it."""
    return (
        f"{directory} holds an experiment written by capicua {old.info['capicua_version']} "
        f"before its results moved into {ARENA_DB} ({done:,} of {planned:,} pairs in "
        f"{EXPERIMENT_DB}): this version shows and reports it (capicua experiment show, "
        "report) but does not play on in it; run it again with another --out"
    )
