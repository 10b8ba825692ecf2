"""A ladder's control state: block lists, challenges, private gauntlets, pause, removed
entries and the season in its finals (docs/ladder.md, "Control").

The state is a fold of the control log (the store's ``ladder_control`` rows, in the order
they were written) and of the seasons table: the actions (:mod:`.actions`) append to them,
from any process, while a run plays on the same directory; the run's plan reads them before
each choice, again only when the log's largest id (:func:`mark`, the change counter) has
moved, and hands the :class:`Control` to the matchmaker, which stays a pure function of it.

A challenge or a gauntlet asks for sets between its entry and each of its opponents
(:class:`Lane`); which of the stored sets fulfil which request is counted, not recorded:
the sets of a kind between two entries (side 0 the asking entry) are given to that pair's
requests in the order they were made (:func:`open_lanes`), so the same store always gives
the same open requests.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..store import CHALLENGE_SET, GAUNTLET_SET, Results, now

#: The control log's actions.
BLOCK, UNBLOCK, CHALLENGE, GAUNTLET = "block", "unblock", "challenge", "gauntlet"
PAUSE, RESUME, REMOVE = "pause", "resume", "remove"
SEASON_START, SEASON_END, FINALS_PUBLISHED = "season_start", "season_end", "finals_published"
#: A season's states: its sets are being played, its finals are, it is over.
OPEN, FINALS, CLOSED = "open", "finals", "closed"

#: A request's key: its kind (a set key prefix) and its pair, the asking entry first.
LaneKey = tuple[str, tuple[str, str]]


@dataclass(frozen=True)
class Request:
    """A challenge (``kind`` :data:`~capicua.arena.store.CHALLENGE_SET`) or a private
    gauntlet (:data:`~capicua.arena.store.GAUNTLET_SET`): ``sets`` duplicate sets between
    ``entry`` and each of ``opponents``; ``id``: its control log row."""

    id: int
    kind: str
    entry: str
    opponents: tuple[str, ...]
    sets: int


@dataclass(frozen=True)
class Lane:
    """One opponent of a request, and the sets of it still to be handed out."""

    request: int
    kind: str
    entry: str
    opponent: str
    left: int

    @property
    def key(self) -> LaneKey:
        return (self.kind, (self.entry, self.opponent))


@dataclass(frozen=True)
class Finals:
    """A season's finals: a duplicate round robin of ``sets`` sets per group of its frozen
    ``field``, from set number ``first_seq`` on (None: no set handed out yet)."""

    season: int
    field: tuple[str, ...]
    sets: int
    first_seq: int | None


@dataclass(frozen=True)
class Season:
    """A season as stored (``table``: its published finals table, once played)."""

    number: int
    name: str
    state: str
    first_seq: int | None
    finals_seq: int | None
    finals_sets: int | None
    field: tuple[str, ...]
    table: dict[str, Any] | None
    started: str
    ended: str | None


@dataclass(frozen=True)
class Control:
    """What the matchmaker reads of the control state; :data:`NO_CONTROL` when nothing was
    ever done (a ladder as it ran before control existed)."""

    mark: int = 0  # the control log's largest id when this was read
    paused: bool = False
    removed: frozenset[str] = frozenset()
    blocks: frozenset[tuple[str, str]] = frozenset()  # (entry, the entry it blocks)
    requests: tuple[Request, ...] = ()
    finals: Finals | None = None

    def blocked(self, a: str, b: str) -> bool:
        """Whether either of two entries blocks the other (a block works both ways: the
        blocked entry never meets its blocker either)."""
        return (a, b) in self.blocks or (b, a) in self.blocks

    def allows(self, group: Iterable[str]) -> bool:
        """Whether no two entries of ``group`` are kept apart by a block."""
        names = list(group)
        return not any(self.blocked(a, b) for i, a in enumerate(names) for b in names[i + 1 :])


NO_CONTROL = Control()


@dataclass
class _Fold:
    """The log folded so far (:func:`fold`)."""

    paused: bool = False
    removed: set[str] = field(default_factory=set)
    blocks: set[tuple[str, str]] = field(default_factory=set)
    requests: list[Request] = field(default_factory=list)

    def apply(self, id_: int, action: str, entry: str | None, args: Mapping[str, Any]) -> None:
        if action == PAUSE:
            self.paused = True
        elif action == RESUME:
            self.paused = False
        elif action == REMOVE and entry is not None:
            self.removed.add(entry)
        elif action == BLOCK and entry is not None:
            self.blocks.add((entry, str(args["opponent"])))
        elif action == UNBLOCK and entry is not None:
            self.blocks.discard((entry, str(args["opponent"])))
        elif action in (CHALLENGE, GAUNTLET) and entry is not None:
            kind = CHALLENGE_SET if action == CHALLENGE else GAUNTLET_SET
            opponents = tuple(str(o) for o in args["opponents"])
            self.requests.append(Request(id_, kind, entry, opponents, int(args["sets"])))
        # season actions change the seasons table; their rows move the change counter


def fold(rows: Iterable[tuple[int, str, str | None, str]], finals: Finals | None) -> Control:
    """The control state of the log ``rows`` (id, action, entry, args as JSON), in order."""
    state = _Fold()
    last = 0
    for id_, action, entry, args in rows:
        state.apply(id_, action, entry, json.loads(args))
        last = id_
    return Control(
        last, state.paused, frozenset(state.removed), frozenset(state.blocks),
        tuple(state.requests), finals,
    )  # fmt: skip


def open_lanes(requests: Iterable[Request], issued: Mapping[LaneKey, int]) -> list[Lane]:
    """The requests' lanes with sets still to hand out, oldest request first. ``issued``:
    the sets handed out so far per lane key; they fulfil that key's requests in the order
    the requests were made."""
    given: dict[LaneKey, int] = {}
    out = []
    for request in sorted(requests, key=lambda r: r.id):
        for opponent in request.opponents:
            key: LaneKey = (request.kind, (request.entry, opponent))
            taken = min(request.sets, issued.get(key, 0) - given.get(key, 0))
            given[key] = given.get(key, 0) + taken
            if taken < request.sets:
                out.append(
                    Lane(request.id, request.kind, request.entry, opponent, request.sets - taken)
                )
    return out


# -- reading the store ---------------------------------------------------------------------------


def mark(results: Results) -> int:
    """The change counter: the control log's largest id (0: nothing was ever done)."""
    row = results.conn.execute("SELECT max(id) FROM ladder_control").fetchone()
    return int(row[0] or 0)


def load(results: Results) -> Control:
    """The control state as the store holds it now."""
    rows = results.conn.execute(
        "SELECT id, action, entry, args_json FROM ladder_control ORDER BY id"
    ).fetchall()
    return fold(rows, _finals(seasons(results)))


def _finals(all_seasons: Iterable[Season]) -> Finals | None:
    for s in all_seasons:
        if s.state == FINALS:
            return Finals(s.number, s.field, s.finals_sets or 1, s.finals_seq)
    return None


_SEASON_COLUMNS = (
    "number, name, state, first_seq, finals_seq, finals_sets, field_json, table_json, started, "
    "ended"
)


def seasons(results: Results) -> list[Season]:
    """Every season, the first first."""
    rows = results.conn.execute(
        f"SELECT {_SEASON_COLUMNS} FROM ladder_seasons ORDER BY number"
    ).fetchall()
    return [
        Season(
            number, name, state, first, finals_seq, finals_sets,
            tuple(json.loads(field_json or "[]")), None if table is None else json.loads(table),
            started, ended,
        )
        for number, name, state, first, finals_seq, finals_sets, field_json, table, started, ended
        in rows
    ]  # fmt: skip


def current_season(results: Results) -> Season | None:
    """The season not yet closed (open, or in its finals), if any."""
    return next((s for s in seasons(results) if s.state != CLOSED), None)


# -- what the run writes: where seasons begin, the finals' table ---------------------------------


def log(results: Results, action: str, entry: str | None, args: Mapping[str, Any]) -> int:
    """Append an action to the control log (in the caller's transaction); its id."""
    ((added,),) = results.conn.execute(
        "INSERT INTO ladder_control (action, entry, args_json, time) VALUES (?, ?, ?, ?) "
        "RETURNING id",  # (psycopg has no lastrowid); fetched to the end: the statement ends
        (action, entry, json.dumps(dict(args), sort_keys=True), now()),
    ).fetchall()
    return int(added)


def record_starts(results: Results, seq: int) -> bool:
    """Set number ``seq`` is about to be handed out: a season begun, or ended, since the
    last set begins (its finals begin) there. True if anything was recorded."""
    with results.transaction():
        began = results.conn.execute(
            "UPDATE ladder_seasons SET first_seq = ? WHERE state = ? AND first_seq IS NULL",
            (seq, OPEN),
        ).rowcount
        finals = results.conn.execute(
            "UPDATE ladder_seasons SET finals_seq = ? WHERE state = ? AND finals_seq IS NULL",
            (seq, FINALS),
        ).rowcount
    return bool(began or finals)


def publish_finals(
    results: Results, season: int, table: Mapping[str, Any], next_first_seq: int
) -> None:
    """A season's finals are played: keep their table, close the season, and open the next
    (numbered on, named by its number unless its end named it), which begins at set
    ``next_first_seq`` (the set after the finals' last)."""
    row = results.conn.execute(
        "SELECT args_json FROM ladder_control WHERE action = ? ORDER BY id DESC LIMIT 1",
        (SEASON_END,),
    ).fetchone()
    name = json.loads(row[0]).get("next") if row else None
    with results.transaction():
        results.conn.execute(
            "UPDATE ladder_seasons SET state = ?, table_json = ?, ended = ? WHERE number = ?",
            (CLOSED, json.dumps(dict(table), separators=(",", ":")), now(), season),
        )
        results.conn.execute(
            "INSERT INTO ladder_seasons (number, name, state, first_seq, started) "
            "VALUES (?, ?, ?, ?, ?)",
            (season + 1, name or str(season + 1), OPEN, next_first_seq, now()),
        )
        log(results, FINALS_PUBLISHED, None, {"season": season})
