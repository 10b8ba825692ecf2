"""Reading the journal of unfinished matches back after a restart: every row checked.

SQLite checks no column's type, and a damaged file, a bug or a hand edit can leave anything
in any column: NULL, text in an integer column, an integer in a text one, JSON that does not
parse, a row missing. :func:`read_journal` takes the journal's rows exactly as SQLite
returns them, groups them by match and checks each match's rows; a match whose rows cannot
be trusted becomes a :class:`DamagedMatch`, which the registry records CANCELLED with the
problem in its reason (never raised: one damaged row must not stop the server, nor reach
another match). A row whose match id is itself unreadable names no match: it is dropped and
reported, and the match it belonged to is then missing a row, which makes it damaged in
turn.

What can be told from the rows alone is checked here: types, ranges, the id's form, the
token digests, one host token, actions numbered 1..n. What needs the rules (the ruleset,
the seats, whether the actions replay) is checked by
:meth:`~capicua.server.matches.Registry.restore`, with the same outcome.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format

from capicua.server.names import DIGEST, MATCH_ID, MAX_MATCH_JSON
from capicua.v1 import match_pb2

CREATOR = re.compile(r"admin|bots/[A-Za-z0-9_.-]{1,64}|address:.{1,200}")
AUTO_FORCED = re.compile(r"[01]{1,16}")
_SEED_SPAN = 1 << 64  # seeds are uint64; SQLite integers are signed 64-bit
_INT64 = range(-(1 << 63), 1 << 63)
_PROBLEM_CHARS = 80  # of a damaged value quoted in a problem
MAX_SEATS = 64  # more than any ruleset has (a seat number beyond is damage)


def seed_to_db(seed: int) -> int:
    """A uint64 seed as SQLite can hold it (two's complement: seeds of 2**63 and more are
    stored negative, so that no seed a client may send can fail the journal's write)."""
    return seed - _SEED_SPAN if seed >= 1 << 63 else seed


def seed_from_db(value: int) -> int:
    return value + _SEED_SPAN if value < 0 else value


@dataclass(frozen=True, slots=True)
class LiveMatch:
    """An unfinished match as the journal holds it (see :mod:`capicua.server.store`)."""

    match_id: str
    create_ns: int
    public: bool
    seed: int
    match: match_pb2.Match  # as created: ruleset, settings
    seats_json: str
    auto_forced: str | None  # None: it had not started
    tokens: list[tuple[str, int]]  # (digest, seat; -1 for the host token)
    actions: list[int]
    creator: str = ""  # Match.creator; empty in a journal from before it was kept


@dataclass(frozen=True, slots=True)
class DamagedMatch:
    """A match of the journal whose rows cannot be trusted: recorded CANCELLED, with
    ``problem`` in its reason, and its tokens revoked."""

    match_id: str
    problem: str
    create_ns: int = 0
    public: bool = False
    match: match_pb2.Match | None = None  # as created, when that much could be read
    tokens: list[tuple[str, int]] = field(default_factory=list)  # the readable ones


@dataclass
class JournalRows:
    """The journal's rows as SQLite returned them (any value of any type), each led by its
    rowid (so that a row that names no match can be deleted)."""

    matches: Sequence[Sequence[Any]]  # rowid, match_id, create_ns, public, seed,
    #                                   match_json, seats_json, auto_forced
    tokens: Sequence[Sequence[Any]]  # rowid, match_id, digest, seat
    actions: Sequence[Sequence[Any]]  # rowid, match_id, seq, code
    creators: Sequence[Sequence[Any]]  # rowid, match_id, creator
    finished: frozenset[str] = frozenset()  # ids with a record: leftovers are dropped
    # token digests that already name someone else (bots, revoked tokens): a live token
    # with one of them is damaged, or it would take that token over
    claimed: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class DroppedRow:
    """A journal row that names no unfinished match: deleted, and logged."""

    table: str
    rowid: int
    problem: str


class JournalDamage(Exception):
    """What is wrong with a match's rows, in words (it becomes the match's reason)."""


def read_journal(
    rows: JournalRows,
) -> tuple[list[LiveMatch | DamagedMatch], list[DroppedRow]]:
    """Every match of the journal, oldest first, each a :class:`LiveMatch` or, when its
    rows cannot be trusted, a :class:`DamagedMatch`; and the rows that name no unfinished
    match (their match id unreadable, or a match already recorded as finished)."""
    dropped: list[DroppedRow] = []
    by_id: dict[str, _Group] = {}
    where: dict[int, tuple[str, int]] = {}  # id(row) -> (table, rowid)

    def group(table: str, row: Sequence[Any]) -> _Group | None:
        rowid, match_id = row[0], row[1]
        if not isinstance(match_id, str) or not MATCH_ID.fullmatch(match_id):
            dropped.append(DroppedRow(table, rowid, f"match_id is {_shown(match_id)}"))
            return None
        where[id(row)] = (table, rowid)
        return by_id.setdefault(match_id, _Group(match_id))

    for row in rows.matches:
        found = group("live_matches", row)
        if found is not None:
            found.main.append(row)
    for table, rows_of, attribute in (
        ("live_tokens", rows.tokens, "tokens"),
        ("live_actions", rows.actions, "actions"),
        ("live_creators", rows.creators, "creators"),
    ):
        for row in rows_of:
            found = group(table, row)
            if found is not None:
                getattr(found, attribute).append(row)

    # A token is random: one digest in two rows means one of them is damaged, and either
    # would let the holder of the other act for it. Both matches lose it (and so are damaged);
    # so does a match journaling a bot's token, or a revoked one (the bot keeps its own).
    seen: dict[object, int] = {}
    for row in rows.tokens:
        seen[row[2]] = seen.get(row[2], 0) + 1
    shared = {digest for digest, count in seen.items() if count > 1 or digest in rows.claimed}

    out: list[LiveMatch | DamagedMatch] = []
    for match_id, of_match in by_id.items():
        if match_id in rows.finished:  # its record stands; these rows are left over
            for row in (*of_match.main, *of_match.tokens, *of_match.actions, *of_match.creators):
                table, rowid = where[id(row)]
                dropped.append(DroppedRow(table, rowid, f"{match_id} is recorded as finished"))
            continue
        out.append(_read_match(of_match, shared))
    out.sort(key=lambda m: (m.create_ns, m.match_id))
    return out, dropped


@dataclass
class _Group:
    match_id: str
    main: list[Sequence[Any]] = field(default_factory=list)
    tokens: list[Sequence[Any]] = field(default_factory=list)
    actions: list[Sequence[Any]] = field(default_factory=list)
    creators: list[Sequence[Any]] = field(default_factory=list)


def _read_match(rows: _Group, shared: set[object]) -> LiveMatch | DamagedMatch:
    """One match's rows, checked; a :class:`DamagedMatch` for the first problem found.
    ``shared``: token digests journaled more than once (by any match), or already another's."""
    match_id = rows.match_id
    good_tokens = [
        t
        for t in (_token_or_none(row) for row in rows.tokens)
        if t is not None and t[0] not in shared
    ]
    create_ns, public, snapshot = 0, False, None
    try:
        if len(rows.main) != 1:
            raise JournalDamage("its live_matches row is missing")
        (_, _, create_ns_v, public_v, seed_v, match_json, seats_json, auto_forced) = _columns(
            "live_matches", rows.main[0], 8
        )
        create_ns = _integer("live_matches.create_ns", create_ns_v, minimum=0)
        public = _flag("live_matches.public", public_v)
        snapshot = _match_json(match_id, match_json)
        seed = seed_from_db(_integer("live_matches.seed", seed_v))
        seats = _text("live_matches.seats_json", seats_json)
        if auto_forced is not None and not (
            isinstance(auto_forced, str) and AUTO_FORCED.fullmatch(auto_forced)
        ):
            raise JournalDamage(f"live_matches.auto_forced is {_shown(auto_forced)}")
        if any(row[2] in shared for row in rows.tokens):
            raise JournalDamage("live_tokens: a token digest is journaled twice, or is another's")
        tokens = _tokens(rows.tokens)
        actions = _actions(rows.actions)
        creator = _creator(rows.creators)
    except JournalDamage as e:
        return DamagedMatch(match_id, str(e), create_ns, public, snapshot, good_tokens)
    return LiveMatch(
        match_id, create_ns, public, seed, snapshot, seats, auto_forced, tokens, actions, creator
    )


def _columns(table: str, row: Sequence[Any], n: int) -> Sequence[Any]:
    if len(row) != n:  # pragma: no cover - the store selects exactly these columns
        raise JournalDamage(f"{table}: expected {n} columns, got {len(row)}")
    return row


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _PROBLEM_CHARS else text[: _PROBLEM_CHARS - 3] + "..."


def _integer(column: str, value: object, minimum: int | None = None) -> int:
    if type(value) is not int or value not in _INT64:
        raise JournalDamage(f"{column} is {_shown(value)}, not an integer")
    if minimum is not None and value < minimum:
        raise JournalDamage(f"{column} is {value}, below {minimum}")
    return value


def _flag(column: str, value: object) -> bool:
    if type(value) is not int or value not in (0, 1):
        raise JournalDamage(f"{column} is {_shown(value)}, not 0 or 1")
    return bool(value)


def _text(column: str, value: object) -> str:
    if not isinstance(value, str):
        raise JournalDamage(f"{column} is {_shown(value)}, not text")
    return value


def _match_json(match_id: str, value: object) -> match_pb2.Match:
    text = _text("live_matches.match_json", value)
    if len(text) > MAX_MATCH_JSON:
        raise JournalDamage(f"live_matches.match_json is {len(text)} characters long")
    try:
        match = json_format.Parse(text, match_pb2.Match())
    except Exception as e:  # ParseError, and whatever else a damaged text provokes
        raise JournalDamage(
            f"live_matches.match_json does not parse ({type(e).__name__})"
        ) from None
    if match.name != f"matches/{match_id}":
        raise JournalDamage(f"live_matches.match_json names {_shown(match.name)}")
    return match


def _token_or_none(row: Sequence[Any]) -> tuple[str, int] | None:
    try:
        return _token(row)
    except JournalDamage:
        return None


def _token(row: Sequence[Any]) -> tuple[str, int]:
    _, _, digest, seat = _columns("live_tokens", row, 4)
    if not isinstance(digest, str) or not DIGEST.fullmatch(digest):
        raise JournalDamage(f"live_tokens.digest is {_shown(digest)}, not a SHA-256 digest")
    seat = _integer("live_tokens.seat", seat, minimum=-1)
    if seat >= MAX_SEATS:
        raise JournalDamage(f"live_tokens.seat is {seat}")
    return digest, seat


def _tokens(rows: Iterable[Sequence[Any]]) -> list[tuple[str, int]]:
    tokens = [_token(row) for row in rows]
    hosts = sum(1 for _, seat in tokens if seat < 0)
    if hosts != 1:
        raise JournalDamage(f"{hosts} host tokens journaled, not 1")
    return tokens


def _actions(rows: Sequence[Sequence[Any]]) -> list[int]:
    numbered = []
    for row in rows:
        _, _, seq, code = _columns("live_actions", row, 4)
        numbered.append((_integer("live_actions.seq", seq), _integer("live_actions.code", code)))
    numbered.sort()
    for expected, (seq, _) in enumerate(numbered, start=1):
        if seq != expected:
            raise JournalDamage(f"live_actions: action {expected} is missing")
    return [code for _, code in numbered]


def _creator(rows: Sequence[Sequence[Any]]) -> str:
    if not rows:
        return ""  # a journal from before creators were kept
    _, _, creator = _columns("live_creators", rows[0], 3)
    if not isinstance(creator, str) or not CREATOR.fullmatch(creator):
        raise JournalDamage(f"live_creators.creator is {_shown(creator)}")
    return creator
