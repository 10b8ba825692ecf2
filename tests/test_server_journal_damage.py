"""One damaged row of the store cancels at most the match it belongs to; the server starts
and every other match resumes as it was.

A real server journals waiting and running matches (joins with seat and bot tokens, CPU
seats, decisions, creators, a finished match's revoked tokens) and is stopped with
``--on-stop suspend``, which leaves the journal as a crash would. Each example copies that
store, damages one value of one row of one table (NULL, another type, garbage, a prefix of
the JSON, another row's value, the row deleted) and starts a server on it.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from capicua.cli.match import _show_lines
from capicua.server.app import App, ServerConfig
from capicua.server.matches import FINISHED, Match
from capicua.server.store import DB_NAME
from capicua.v1 import game_pb2, match_pb2
from tests.compliance.client import OPEN, Bot, auth, bot_seat, cpu_seat, expect_error, watch
from tests.serverkit import running

HOUR_MS = 3_600_000
UNRESUMABLE = "the server restarted and could not resume it: "

# Every table a server reads back at startup, its columns, and which hold a match id.
TABLES = {
    "live_matches": (
        ["match_id", "create_ns", "public", "seed", "match_json", "seats_json", "auto_forced"],
        "match_id",
    ),
    "live_tokens": (["match_id", "digest", "seat"], "match_id"),
    "live_actions": (["match_id", "seq", "code"], "match_id"),
    "live_creators": (["match_id", "creator"], "match_id"),
    "bots": (["bot_id", "description", "token_sha256", "create_ns"], None),
    "bot_access": (["bot_id", "reserver"], None),
    "bot_origins": (["bot_id", "address"], None),
    "revoked_tokens": (["digest", "match_id"], None),
}


@dataclass
class Journal:
    """The pristine store, and what a server restarted on it holds."""

    data: Path
    matches: dict[str, tuple[int, int, bytes]]  # id -> (state, actions applied, seats)
    tokens: dict[str, str]  # token -> the principal it names


async def _journal(data: Path) -> Journal:
    tokens: dict[str, str] = {}
    async with running(data, on_stop="suspend") as (app, lobby):
        bot_id, bot_token = await lobby.register("journaled")
        tokens[bot_token] = f"bots/{bot_id}"
        # waiting: a seat-token join and a bot join
        waiting, host = await lobby.create("block", [OPEN] * 4, token=bot_token)
        tokens[host] = waiting.name
        joined = await lobby.matches.JoinMatch(
            match_pb2.JoinMatchRequest(name=waiting.name, accept_chosen_seed=True)
        )
        tokens[joined.seat_token] = f"{waiting.name}/seats/{joined.seat}"
        await lobby.matches.JoinMatch(
            match_pb2.JoinMatchRequest(name=waiting.name, accept_chosen_seed=True),
            metadata=auth(bot_token),
        )
        # running: the bot plays some decisions, then waits (an hour's timer) on its turn
        seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
        played, host = await lobby.create("block", seats, seed=5, timer_ms=HOUR_MS)
        tokens[host] = played.name
        await lobby.start(played.name, host)
        await Bot(app.address, bot_token, seed=1, quit_on_decision=5).run(timeout=60)
        # running: a one-seat client, anonymous creator, waiting on its first decision
        guest, host = await lobby.create("block", [OPEN, cpu_seat(), OPEN, cpu_seat()], seed=9)
        tokens[host] = guest.name
        seat = await lobby.matches.JoinMatch(
            match_pb2.JoinMatchRequest(name=guest.name, seat=0, accept_chosen_seed=True)
        )
        tokens[seat.seat_token] = f"{guest.name}/seats/0"
        await lobby.start(guest.name, host)
        await Bot(app.address, seat.seat_token, quit_on_decision=3).run(timeout=60)
        # finished: its tokens are remembered as revoked; and one played, with its replay
        over, host = await lobby.create("block", [OPEN] * 4)
        tokens[host] = over.name
        await lobby.matches.CancelMatch(
            match_pb2.CancelMatchRequest(name=over.name), metadata=auth(host)
        )
        cpus, host = await lobby.create("block", [cpu_seat()] * 4, overrides=["target=10"])
        watching = asyncio.ensure_future(watch(lobby, cpus.name))
        await lobby.start(cpus.name, host)
        await watching
    restarted = await _start(data)
    try:
        held = {m.id: _facts(m) for m in restarted.registry.active()}
    finally:
        await restarted.shutdown(grace=1)
    assert len(held) == 3, held
    return Journal(data, held, tokens)


def _facts(match: Match) -> tuple[int, int, bytes]:
    seats = match_pb2.Match(seats=match.to_proto().seats)
    for s in seats.seats:
        s.connected = False
    return match.status, match.record.applied_count, seats.SerializeToString()


async def _start(data: Path) -> App:
    return await App.start(ServerConfig(port=0, data=data, cpu_workers=1, on_stop="suspend"))


@pytest.fixture(scope="module")
def journal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Journal]:
    data = tmp_path_factory.mktemp("journal") / "data"
    yield asyncio.run(_journal(data))


# -- the damage -------------------------------------------------------------------------


@dataclass(frozen=True)
class Damage:
    table: str
    column: str
    pick: int  # which row (modulo the table's rows)
    kind: str  # "value", or "delete": the row goes
    value: Any = None
    derived: str = ""  # "", "prefix", "other": the value is derived from the stored one


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)

VALUES = st.one_of(
    st.none(),
    st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1),
    st.sampled_from([0, 1, -1, 2, 1 << 62]),
    st.floats(allow_nan=True),
    st.text(max_size=30),
    st.sampled_from(["", "{garbage", "abc", "[]", "{}", "null", "0", "x" * 64, "f" * 64]),
    st.binary(max_size=20),
    JSONISH.map(json.dumps),
)


@st.composite
def damages(draw: st.DrawFn) -> Damage:
    table = draw(st.sampled_from(sorted(TABLES)))
    column = draw(st.sampled_from(TABLES[table][0]))
    pick = draw(st.integers(min_value=0, max_value=50))
    kind = draw(st.sampled_from(["value", "value", "value", "delete"]))
    derived = draw(st.sampled_from(["", "", "prefix", "other"]))
    return Damage(table, column, pick, kind, draw(VALUES), derived)


@dataclass
class Change:
    """What one damage did: the matches it may touch (the row's before and after, and the
    match whose value it copied), the one whose row it is, the value before and after
    (DELETED: the row is gone), and whether it was a match's last action."""

    named: set[str]
    owner: str | None
    before: object
    after: object
    last_action: bool


DELETED = object()


def _damage(db_path: Path, damage: Damage) -> Change:
    columns, id_column = TABLES[damage.table]
    with sqlite3.connect(db_path) as db:
        rows = db.execute(f"SELECT rowid, {', '.join(columns)} FROM {damage.table}").fetchall()
        assume(rows)
        row = rows[damage.pick % len(rows)]
        rowid, by_name = row[0], dict(zip(columns, row[1:], strict=True))
        before = by_name[damage.column]
        owner: str | None = by_name[id_column] if id_column else None
        named: set[str] = set() if owner is None else {owner}  # (a match id is never NULL)
        last = damage.table == "live_actions" and by_name["seq"] == max(
            r[2] for r in rows if r[1] == by_name["match_id"]
        )
        if damage.kind == "delete":
            db.execute(f"DELETE FROM {damage.table} WHERE rowid = ?", (rowid,))
            return Change(set(named), owner, before, DELETED, last)
        value = damage.value
        if damage.derived == "prefix" and isinstance(before, str) and before:
            value = before[: len(before) // 2]
        elif damage.derived == "other":  # another row's value: that row's match is in it too
            others = [r for r in rows if r[0] != rowid]
            assume(others)
            other = others[damage.pick % len(others)]
            value = other[1 + columns.index(damage.column)]
            if id_column is not None:
                named.add(other[1 + columns.index(id_column)])
        assume(value != before or type(value) is not type(before))
        try:
            db.execute(
                f"UPDATE {damage.table} SET {damage.column} = ? WHERE rowid = ?", (value, rowid)
            )
        except sqlite3.IntegrityError:  # NOT NULL, UNIQUE, a key: not this way
            assume(False)
        stored = db.execute(
            f"SELECT {damage.column} FROM {damage.table} WHERE rowid = ?", (rowid,)
        ).fetchone()[0]
        assume(stored != before or type(stored) is not type(before))  # the column's affinity
        if id_column == damage.column and isinstance(stored, str):
            named.add(stored)
        return Change(named, owner, before, stored, last)


def _must_cancel(damage: Damage, change: Change) -> bool:
    """Whether the damage can be told from the rows alone, so that the match it belongs to
    must not resume (a plausible value, such as another integer seed, can go unnoticed)."""
    table, column, after = damage.table, damage.column, change.after
    retyped = after is None or type(after) is not type(change.before)
    if table == "live_matches":
        if after is DELETED or column in ("match_id", "match_json"):
            return True
        if column == "seats_json":
            return damage.derived != "other"  # another match's seats may fit this one
        if column == "public":
            return retyped or after not in (0, 1)
        if column == "create_ns":
            return retyped or (isinstance(after, int) and after < 0)
        return column == "seed" and retyped
    if table == "live_tokens":
        if column == "digest" and after is not DELETED:  # another digest: a lost token
            return not (isinstance(after, str) and re.fullmatch("[0-9a-f]{64}", after))
        return True  # a token moved, renumbered or gone leaves a seat or the host without one
    if table == "live_actions":
        if after is DELETED or column == "match_id":
            return not change.last_action
        return column == "seq" or retyped
    return False  # creators (none is a journal from before them), and the bots' tables


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(damage=damages())
def test_one_damaged_row_cancels_at_most_its_match(
    journal: Journal, tmp_path_factory: pytest.TempPathFactory, damage: Damage
) -> None:
    data = tmp_path_factory.mktemp("damaged") / "data"
    shutil.copytree(journal.data, data)
    change = _damage(data / DB_NAME, damage)
    must_cancel = change.owner if _must_cancel(damage, change) else None
    asyncio.run(_check(journal, data, damage, change.named, must_cancel))


async def _check(
    journal: Journal, data: Path, damage: Damage, named: set[str], must_cancel: object
) -> None:
    app = await _start(data)  # it starts, whatever the damage
    try:
        for match_id, facts in journal.matches.items():
            held = app.registry.get(match_id)
            stored = await app.store.get_match(match_id)
            assert held is not None or stored is not None, f"{match_id} vanished ({damage})"
            record = held.to_proto() if held is not None else stored
            assert record is not None
            if record.state == match_pb2.MATCH_STATE_FINISHED:
                assert match_id in named, f"{match_id} was cancelled by {damage}"
                assert record.outcome.termination == game_pb2.TERMINATION_CANCELLED
                assert record.outcome.reason.startswith(UNRESUMABLE), record.outcome.reason
                continue
            assert held is not None
            assert match_id != must_cancel, f"{damage} went unnoticed"
            if match_id not in named:
                assert _facts(held) == facts, f"{match_id} changed after {damage}"
        for token, principal in journal.tokens.items():
            match_id = principal.removeprefix("matches/").partition("/")[0]
            if principal.startswith("bots/"):
                if damage.table.startswith("bot"):
                    continue  # a damaged bot row may lose that bot (logged), nothing else
            elif match_id in named or _finished(app, match_id):
                continue
            found = app.tokens.lookup(token)
            assert found is not None and found.name == principal, (principal, damage)
    finally:
        await app.shutdown(grace=1)


def _finished(app: App, match_id: str) -> bool:
    held = app.registry.get(match_id)
    return held is None or held.status == FINISHED


async def test_a_garbage_row_cancels_its_match_and_says_why(
    journal: Journal, tmp_path: Path
) -> None:
    """The cases of the report: ``match_json='{garbage'`` and ``seed='abc'``."""
    data = tmp_path / "data"
    shutil.copytree(journal.data, data)
    ids = sorted(journal.matches)
    with sqlite3.connect(data / DB_NAME) as db:
        db.execute("UPDATE live_matches SET match_json = '{garbage' WHERE match_id = ?", (ids[0],))
        db.execute("UPDATE live_matches SET seed = 'abc' WHERE match_id = ?", (ids[1],))
    async with running(data) as (app, lobby):
        first, second = await lobby.get(f"matches/{ids[0]}"), await lobby.get(f"matches/{ids[1]}")
        assert first.outcome.reason == (
            UNRESUMABLE + "damaged journal: live_matches.match_json does not parse (ParseError)"
        )
        assert second.outcome.reason == (
            UNRESUMABLE + "damaged journal: live_matches.seed is 'abc', not an integer"
        )
        # what could be read of the first is kept: when it was created, no scores yet
        assert first.create_time.ToNanoseconds() > 0 and list(first.scores) == [0, 0]
        shown = list(_show_lines(first))  # `capicua match show` of a record without rules
        assert shown[1] == "rules: unknown (the server could not read them back)"
        assert shown[-1] == "result: cancelled: " + first.outcome.reason
        third = await lobby.get(f"matches/{ids[2]}")
        assert third.state == journal.matches[ids[2]][0]


async def test_a_damaged_finished_record_hides_only_itself(
    journal: Journal, tmp_path: Path
) -> None:
    """A finished match's record or replay that cannot be read back: GetMatch and GetReplay
    of it answer INTERNAL, saying so; listing and every other match go on."""
    data = tmp_path / "data"
    shutil.copytree(journal.data, data)
    with sqlite3.connect(data / DB_NAME) as db:
        played = db.execute("SELECT match_id FROM replay_protos").fetchone()[0]
        other = db.execute("SELECT match_id FROM matches WHERE match_id != ?", (played,))
        cancelled = other.fetchone()[0]
        db.execute("UPDATE matches SET match_json = '{x' WHERE match_id = ?", (cancelled,))
        db.execute("UPDATE replay_protos SET replay = x'ff' WHERE match_id = ?", (played,))
    async with running(data) as (_, lobby):
        e = await expect_error(lobby.get(f"matches/{cancelled}"), grpc.StatusCode.INTERNAL)
        assert e.details() == (
            f"name: the stored record of matches/{cancelled} is damaged; the server log has "
            "the details"
        )
        e = await expect_error(
            lobby.matches.GetReplay(match_pb2.GetReplayRequest(name=f"matches/{played}")),
            grpc.StatusCode.INTERNAL,
            "REPLAY_FAILED",
        )
        listed = await lobby.matches.ListMatches(match_pb2.ListMatchesRequest(page_size=100))
        names = {m.name for m in listed.matches}
        assert f"matches/{played}" in names and f"matches/{cancelled}" not in names
        assert {f"matches/{m}" for m in journal.matches} <= names


async def test_values_no_answer_could_carry_cancel_their_match(
    journal: Journal, tmp_path: Path
) -> None:
    """Values that read back but that no answer could carry, or that would hand a match
    another's token: a counter past uint32 (it made every ListMatches fail INTERNAL), a
    seat token digest equal to a bot's token's (it took the bot's token over), a turn
    timer no match may have. Each cancels its match; the bot keeps its token; listing works."""
    data = tmp_path / "data"
    shutil.copytree(journal.data, data)
    ids = sorted(journal.matches)
    with sqlite3.connect(data / DB_NAME) as db:
        db.execute(
            "UPDATE live_matches SET seats_json = json_set(seats_json, '$[1].timeouts', ?) "
            "WHERE match_id = ?",
            (2**32, ids[0]),
        )
        db.execute(
            "UPDATE live_tokens SET digest = (SELECT token_sha256 FROM bots) "
            "WHERE match_id = ? AND seat = -1",
            (ids[1],),
        )
        (text,) = db.execute(
            "SELECT match_json FROM live_matches WHERE match_id = ?", (ids[2],)
        ).fetchone()
        record = json.loads(text)
        record["settings"]["turn_timer_ms"] = 1
        db.execute(
            "UPDATE live_matches SET match_json = ? WHERE match_id = ?",
            (json.dumps(record), ids[2]),
        )
    async with running(data) as (app, lobby):
        reasons = [(await lobby.get(f"matches/{m}")).outcome.reason for m in ids]
        assert reasons == [
            UNRESUMABLE + "damaged journal: live_matches.seats_json[1].timeouts is '4294967296'",
            UNRESUMABLE + "damaged journal: live_tokens: a token digest is journaled twice, "
            "or is another's",
            UNRESUMABLE + "SettingsError: settings.turn_timer_ms: 1 is not in 50..3600000",
        ]
        listed = await lobby.matches.ListMatches(match_pb2.ListMatchesRequest(page_size=100))
        assert {f"matches/{m}" for m in ids} <= {m.name for m in listed.matches}
        for token, principal in journal.tokens.items():
            if principal.startswith("bots/"):
                found = app.tokens.lookup(token)
                assert found is not None and found.name == principal


async def test_stored_values_too_long_for_an_answer_are_left_out(
    journal: Journal, tmp_path: Path
) -> None:
    """A finished record of 100 KB (a real one is a few) is hidden as damaged, and a revoked
    token's row naming a 6 MB match id is forgotten: neither makes an answer too large."""
    data = tmp_path / "data"
    shutil.copytree(journal.data, data)
    with sqlite3.connect(data / DB_NAME) as db:
        cancelled = db.execute(
            "SELECT match_id FROM matches "
            "WHERE match_id NOT IN (SELECT match_id FROM replay_protos)"
        ).fetchone()[0]
        (text,) = db.execute(
            "SELECT match_json FROM matches WHERE match_id = ?", (cancelled,)
        ).fetchone()
        record = json.loads(text)
        record["outcome"]["reason"] = "x" * 100_000
        db.execute(
            "UPDATE matches SET match_json = ? WHERE match_id = ?", (json.dumps(record), cancelled)
        )
        db.execute("UPDATE revoked_tokens SET match_id = ?", ("m" * 6_000_000,))
    (over,) = [(t, m) for t, m in journal.tokens.items() if m.endswith(cancelled)]
    async with running(data) as (app, lobby):
        await expect_error(lobby.get(f"matches/{cancelled}"), grpc.StatusCode.INTERNAL)
        listed = await lobby.matches.ListMatches(match_pb2.ListMatchesRequest(page_size=100))
        assert f"matches/{cancelled}" not in {m.name for m in listed.matches}
        # its host token was revoked: the holder is told it is unknown, not the damaged id
        cancel = match_pb2.CancelMatchRequest(name=over[1])
        e = await expect_error(
            lobby.matches.CancelMatch(cancel, metadata=auth(over[0])),
            grpc.StatusCode.UNAUTHENTICATED,
            "BAD_TOKEN",
        )
        assert e.details() == "authorization: unknown token"
