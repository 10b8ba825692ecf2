"""An experiment's results: ``experiment.sqlite`` in its output directory.

Pairs are committed in chunks, each chunk in one transaction with every arm of every pair
in it, so a killed run loses at most the chunk in progress and a resumed run plays exactly
the pairs that are missing. The ``experiment`` row keeps the canonical configuration and
its digest: resuming with a different experiment is refused.

Tables:

* ``experiment``: one row: ``name``, ``config_json``, ``config_sha256``, ``created``,
  ``capicua_version``.
* ``matches``: one row per arm and pair: ``termination`` (the engine's, lower case),
  ``winner`` side (NULL: none), ``shutout`` name, ``scores_json``, ``source`` (the arena
  match key when it was played over the protocol).
* ``hands``: one row per finished hand of those matches: ``blocked``, ``winner`` side
  (NULL: a tied block), ``opener_side``, ``points``, ``bonuses`` (comma-separated names),
  ``reset`` (``reply``/``all_scored``/NULL) and the counts of plays, passes, draws,
  deferrals and redeals.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..store import DB_NAME as ARENA_DB
from ..store import (
    EXPERIMENT_DB,
    Results,
    Transaction,
    connect_read_only,
    journal_files,
    now,
    prepare_output,
)
from .metrics import HandFacts, MatchFacts

DB_NAME = EXPERIMENT_DB
#: Where the matches of an experiment played over the protocol are: an arena results
#: directory inside the experiment's.
ARENA_DIR = "arena"

SCHEMA = """
CREATE TABLE IF NOT EXISTS experiment (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL,
    config_json TEXT NOT NULL,
    config_sha256 TEXT NOT NULL,
    created TEXT NOT NULL,
    capicua_version TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS matches (
    arm INTEGER NOT NULL,
    pair INTEGER NOT NULL,
    termination TEXT NOT NULL,
    winner INTEGER,
    shutout TEXT,
    scores_json TEXT NOT NULL,
    source TEXT,
    PRIMARY KEY (arm, pair)
);
CREATE TABLE IF NOT EXISTS hands (
    arm INTEGER NOT NULL,
    pair INTEGER NOT NULL,
    hand INTEGER NOT NULL,
    blocked INTEGER NOT NULL,
    winner INTEGER,
    opener_side INTEGER NOT NULL,
    points INTEGER NOT NULL,
    bonuses TEXT NOT NULL,
    reset TEXT,
    plays INTEGER NOT NULL,
    passes INTEGER NOT NULL,
    draws INTEGER NOT NULL,
    defers INTEGER NOT NULL,
    redeals INTEGER NOT NULL,
    PRIMARY KEY (arm, pair, hand)
);
CREATE TABLE IF NOT EXISTS choices (
    arm INTEGER NOT NULL,
    pair INTEGER NOT NULL,
    hand INTEGER NOT NULL,
    choices INTEGER NOT NULL,
    options INTEGER NOT NULL,
    PRIMARY KEY (arm, pair, hand)
);
"""

#: One played pair: its number and the facts of every arm, in arm order.
PairResult = tuple[int, Sequence[MatchFacts]]


class StoreError(Exception):
    """The directory holds another experiment, or no readable experiment at all."""


class ExperimentStore:
    """The results database of one experiment directory: created on first use, or (with
    ``create=False``) only read, writing nothing, so results on read-only media read too."""

    def __init__(self, directory: Path, *, create: bool = True) -> None:
        path = directory / DB_NAME
        if not create and not path.is_file():
            raise StoreError(f"{directory}: no experiment results here ({DB_NAME} is missing)")
        if (directory / ARENA_DB).is_file():
            raise StoreError(
                f"{directory} holds a tournament's or an SPRT's results (capicua arena), not "
                "an experiment's; use another --out"
            )
        self.directory = directory
        self.path = path
        if not create:
            try:
                self.conn = connect_read_only(path, SCHEMA)
            except sqlite3.DatabaseError as e:
                raise StoreError(f"{path}: not a readable experiment database ({e})") from None
            return
        # a directory that cannot be written is refused here with its cause (UnwritableError,
        # one line), not by SQLite as "attempt to write a readonly database"
        prepare_output(directory, journal_files(DB_NAME))
        try:
            self.conn = sqlite3.connect(path, isolation_level=None)  # explicit transactions
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.executescript(SCHEMA)
        except sqlite3.DatabaseError as e:
            raise StoreError(f"{path}: not a readable experiment database ({e})") from None

    def close(self) -> None:
        self.conn.close()

    def discard(self) -> None:
        """Remove the (closed) database of a run that recorded nothing."""
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    # -- configuration ----------------------------------------------------------------------

    def bind(self, name: str, config: dict[str, Any], digest: str, version: str) -> bool:
        """Record the experiment on first use (True), or check it is the same one (False)."""
        row = self.conn.execute("SELECT config_sha256, config_json FROM experiment").fetchone()
        if row is None:
            self.conn.execute(
                "INSERT INTO experiment VALUES (1, ?, ?, ?, ?, ?)",
                (name, json.dumps(config, sort_keys=True), digest, now(), version),
            )
            return True
        if row[0] != digest:
            old = json.loads(row[1])
            changed = sorted(k for k in set(old) | set(config) if old.get(k) != config.get(k))
            raise StoreError(
                f"{self.directory} holds a different experiment (it differs in: "
                f"{', '.join(changed)}); use another --out, or remove the directory"
            )
        return False

    def config(self) -> dict[str, Any]:
        row = self.conn.execute("SELECT config_json FROM experiment").fetchone()
        if row is None:
            raise StoreError(f"{self.directory}: the experiment was never started here")
        data: dict[str, Any] = json.loads(row[0])
        return data

    def info(self) -> dict[str, str]:
        row = self.conn.execute("SELECT name, created, capicua_version FROM experiment").fetchone()
        if row is None:
            raise StoreError(f"{self.directory}: the experiment was never started here")
        return {"name": row[0], "created": row[1], "capicua_version": row[2]}

    # -- pairs ------------------------------------------------------------------------------

    def done_pairs(self, arms: int) -> set[int]:
        """Pairs with every arm recorded."""
        rows = self.conn.execute(
            "SELECT pair FROM matches GROUP BY pair HAVING COUNT(*) = ?", (arms,)
        )
        return {r[0] for r in rows}

    def sources(self) -> set[str]:
        """Arena match keys already taken in (protocol runs)."""
        rows = self.conn.execute("SELECT source FROM matches WHERE source IS NOT NULL")
        return {r[0] for r in rows}

    def record(
        self, results: Iterable[PairResult], sources: dict[tuple[int, int], str] | None = None
    ) -> int:
        """Commit every arm of every pair of ``results`` in one transaction; returns the pairs
        recorded. ``sources`` names the arena match of an (arm, pair)."""
        matches: list[tuple[Any, ...]] = []
        hands: list[tuple[Any, ...]] = []
        choices: list[tuple[int, ...]] = []
        n = 0
        for pair, arms in results:
            n += 1
            for arm, f in enumerate(arms):
                source = sources.get((arm, pair)) if sources else None
                matches.append(
                    (
                        arm,
                        pair,
                        f.termination,
                        f.winner,
                        f.shutout,
                        json.dumps(list(f.scores)),
                        source,
                    )
                )
                hands.extend(
                    (arm, pair, h.hand, int(h.blocked), h.winner, h.opener_side, h.points,
                     ",".join(h.bonuses), h.reset, h.plays, h.passes, h.draws, h.defers,
                     h.redeals)
                    for h in f.hands
                )  # fmt: skip
                choices.extend(
                    (arm, pair, h.hand, h.choices, h.options)
                    for h in f.hands
                    if h.choices is not None and h.options is not None
                )
        with Transaction(self.conn):
            self.conn.executemany("INSERT INTO matches VALUES (?, ?, ?, ?, ?, ?, ?)", matches)
            self.conn.executemany(
                "INSERT INTO hands VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", hands
            )
            self.conn.executemany("INSERT INTO choices VALUES (?, ?, ?, ?, ?)", choices)
        return n

    def facts(self, arms: int) -> dict[int, list[MatchFacts]]:
        """Every complete pair: pair -> the facts of each arm, in arm order."""
        done = self.done_pairs(arms)
        hands: dict[tuple[int, int], list[HandFacts]] = {}
        # results of an older version have no choices: None, never a made-up 0
        choices = {
            (arm, pair, hand): (c, o)
            for arm, pair, hand, c, o in self.conn.execute("SELECT * FROM choices")
        }
        for row in self.conn.execute("SELECT * FROM hands ORDER BY arm, pair, hand"):
            arm, pair, hand, blocked, winner, opener, points, bonuses, reset, *counts = row
            if pair not in done:
                continue
            plays, passes, draws, defers, redeals = counts
            chose, offered = choices.get((arm, pair, hand), (None, None))
            hands.setdefault((arm, pair), []).append(
                HandFacts(hand, bool(blocked), winner, opener, points,
                          tuple(bonuses.split(",")) if bonuses else (), reset, plays, passes,
                          draws, defers, redeals, chose, offered)
            )  # fmt: skip
        out: dict[int, list[MatchFacts]] = {p: [None] * arms for p in sorted(done)}  # type: ignore[list-item]
        for arm, pair, termination, winner, shutout, scores, _source in self.conn.execute(
            "SELECT * FROM matches"
        ):
            if pair in out and arm < arms:
                out[pair][arm] = MatchFacts(
                    termination, winner, shutout, tuple(json.loads(scores)),
                    tuple(hands.get((arm, pair), ())),
                )  # fmt: skip
        return out


def disqualified_bots(directory: Path) -> dict[str, str]:
    """The bots the experiment in ``directory`` disqualified (played over the protocol) and
    why; empty when it played in-process or nobody was disqualified."""
    arena = directory / ARENA_DIR
    if not (arena / ARENA_DB).is_file():
        return {}
    results = Results.open_existing(arena)
    try:
        return results.disqualified()
    finally:
        results.close()
