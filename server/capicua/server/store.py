"""Persistence: registered bots, finished matches and their replays, in one SQLite file.

The database lives at ``{data}/capicua.sqlite3``. One thread owns the connection, so the
event loop never blocks on disk. A finished match and its replay are written in one
transaction: a reader sees both or neither, never a half-written replay. Replays are stored
as ``capicua.v1.Replay`` protobuf bytes, as GetReplay sends them (a store written before
kept the protobuf JSON, which is still read).

Tables:

- ``bots(bot_id, description, token_sha256, create_ns)``: tokens are kept as digests only;
- ``bot_access(bot_id, reserver)``: who else may reserve a bot's seats (``bots/x`` or
  ``*``); no row: nobody but the bot and the admin (a table of its own, so that a database
  from before it needs no migration);
- ``bot_seed_consent(bot_id)``: the bots that let those who may reserve their seats also
  choose such a match's seed (``accept_chosen_seeds``); a table of its own, as
  ``bot_access``, so that a database from before it needs no migration;
- ``bot_origins(bot_id, address)``: the client address (``address:ip``) a bot was
  registered from without a token (none: the admin registered it, or the database is
  older): the matches its token creates count against that address group's limit too, and
  its registration against the group's hourly one. The caller's own address, not its group
  (:mod:`capicua.server.addresses`), so that a start with other group prefixes counts it by
  its own (an IPv6 ``/64`` network, as earlier versions kept it, by its first address);
- ``matches(match_id, create_ns, finish_ns, public, termination, match_json)``: the final
  ``capicua.v1.Match`` as protobuf JSON (state, ruleset, settings, seats, outcome);
- ``match_tags(match_id, tag)``: for ListMatches' tag filter;
- ``replay_protos(match_id, replay)``: the replay as protobuf bytes;
- ``replays(match_id, replay_json)``: the replay as protobuf JSON, as the server stored it
  before ``replay_protos``: read, never written;
- ``replay_failures(match_id, error)``: a started match whose replay could not be built
  (the exception's type), so that GetReplay says so after the match has left memory.

The journal of unfinished matches, so that a crash loses none of them (a match is its seed
plus its decisions; the server re-simulates it on restart):

- ``live_matches(match_id, create_ns, public, seed, match_json, seats_json, auto_forced)``:
  the match as created (ruleset and settings), its seats as they are now, and once it
  started which seats have their forced plays applied for them;
- ``live_tokens(match_id, digest, seat)``: the digests of its host token (seat -1) and seat
  tokens;
- ``live_actions(match_id, seq, code)``: every action applied, in order;
- ``live_creators(match_id, creator)``: who created it (``admin``, ``bots/x`` or
  ``address:ip``, the caller's own address as in ``bot_origins``), so that the
  per-creator limits count it again after a restart.

Journal writes are buffered and committed together (one transaction, on the store's
thread), in one of two ways. A lobby call that answers OK (CreateMatch, JoinMatch,
StartMatch) awaits :meth:`Store.sync` before its reply: what it changed is on disk before
anyone is told (calls that arrive while a commit is in flight share the next one: a group
commit). The decisions of a running match wait at most :data:`JOURNAL_FLUSH_S`: a crash
loses at most the decisions of that window, which the server then asks for again.
Recording the finished match deletes its journal (in a transaction after its last journal
writes are committed).

- ``revoked_tokens(id, digest, match_id)``: the digests of the last :data:`REVOKED_KEPT`
  host and seat tokens revoked (moved there from ``live_tokens`` when their match is
  recorded), so that after a restart such a token is still told that its match is over
  rather than that it never existed.

Every commit is synced to disk (``synchronous=FULL``): an acknowledged write survives a
killed process and a power cut alike.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import itertools
import re
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import structlog
from google.protobuf import json_format

from capicua.common.sqldb import connect_postgres
from capicua.server.faults import Faults
from capicua.server.journal import (
    DamagedMatch,
    JournalRows,
    LiveMatch,
    read_journal,
    seed_to_db,
)
from capicua.server.names import BOT_ID, DIGEST, MATCH_ID, MAX_MATCH_JSON
from capicua.v1 import game_pb2, match_pb2, replay_pb2

T = TypeVar("T")

DB_NAME = "capicua.sqlite3"
SHARED_SCHEMA_NAME = "capicua"  # the PostgreSQL schema of the shared tables
# advisory lock keys (PostgreSQL): creating the shared schema; a write to the shared tables
# that reads them first (transact_shared)
_SCHEMA_LOCK = 0x6361_7069_0001
_SHARED_WRITE_LOCK = 0x6361_7069_0002
JOURNAL_FLUSH_S = 0.05  # how long a journal write may wait to be committed with others
REVOKED_KEPT = 100_000  # revoked token digests remembered (the oldest are forgotten)

log = structlog.get_logger("capicua.server.store")

#: The tables several server processes share on one PostgreSQL (``--db``): who the bots
#: are, and the ladders' rosters. On SQLite they are in the one file with the rest.
SHARED_SCHEMA = """
CREATE TABLE IF NOT EXISTS bots (
    bot_id TEXT PRIMARY KEY,
    description TEXT NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE,
    create_ns INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS bot_access (
    bot_id TEXT NOT NULL REFERENCES bots (bot_id),
    reserver TEXT NOT NULL,
    PRIMARY KEY (bot_id, reserver)
);
CREATE TABLE IF NOT EXISTS bot_seed_consent (
    bot_id TEXT PRIMARY KEY REFERENCES bots (bot_id)
);
CREATE TABLE IF NOT EXISTS bot_origins (
    bot_id TEXT PRIMARY KEY REFERENCES bots (bot_id),
    address TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ladder_entries (
    ladder_id TEXT NOT NULL,
    entry_id TEXT NOT NULL,
    bot_id TEXT NOT NULL REFERENCES bots (bot_id),
    version TEXT NOT NULL,
    predecessor TEXT NOT NULL,
    state INTEGER NOT NULL,
    max_matches INTEGER NOT NULL,
    join_ns INTEGER NOT NULL,
    PRIMARY KEY (ladder_id, entry_id)
);
"""

_SCHEMA = (
    SHARED_SCHEMA
    + """
CREATE TABLE IF NOT EXISTS matches (
    match_id TEXT PRIMARY KEY,
    create_ns INTEGER NOT NULL,
    finish_ns INTEGER NOT NULL,
    public INTEGER NOT NULL,
    termination TEXT NOT NULL,
    match_json TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS matches_listing ON matches (public, create_ns DESC, match_id DESC);
CREATE TABLE IF NOT EXISTS match_tags (
    match_id TEXT NOT NULL REFERENCES matches (match_id),
    tag TEXT NOT NULL,
    PRIMARY KEY (match_id, tag)
);
CREATE INDEX IF NOT EXISTS match_tags_by_tag ON match_tags (tag);
CREATE TABLE IF NOT EXISTS replays (
    match_id TEXT PRIMARY KEY REFERENCES matches (match_id),
    replay_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS replay_protos (
    match_id TEXT PRIMARY KEY REFERENCES matches (match_id),
    replay BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS replay_failures (
    match_id TEXT PRIMARY KEY REFERENCES matches (match_id),
    error TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS live_matches (
    match_id TEXT PRIMARY KEY,
    create_ns INTEGER NOT NULL,
    public INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    match_json TEXT NOT NULL,
    seats_json TEXT NOT NULL,
    auto_forced TEXT
);
CREATE TABLE IF NOT EXISTS live_tokens (
    match_id TEXT NOT NULL,
    digest TEXT NOT NULL,
    seat INTEGER NOT NULL,
    PRIMARY KEY (match_id, digest)
);
CREATE TABLE IF NOT EXISTS live_actions (
    match_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    code INTEGER NOT NULL,
    PRIMARY KEY (match_id, seq)
);
CREATE TABLE IF NOT EXISTS live_creators (
    match_id TEXT PRIMARY KEY,
    creator TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS revoked_tokens (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    digest TEXT NOT NULL UNIQUE,
    match_id TEXT NOT NULL
);
"""
)

_FORGET = [
    # its host and seat tokens are remembered as revoked (the newest REVOKED_KEPT)
    "INSERT OR IGNORE INTO revoked_tokens (digest, match_id) "
    "SELECT digest, match_id FROM live_tokens WHERE match_id = ?",
    "DELETE FROM live_creators WHERE match_id = ?",
    "DELETE FROM live_actions WHERE match_id = ?",
    "DELETE FROM live_tokens WHERE match_id = ?",
    "DELETE FROM live_matches WHERE match_id = ?",
]

Op = tuple[str, tuple[Any, ...]]


@dataclass(frozen=True, slots=True)
class StoredBot:
    bot_id: str
    description: str
    token_sha256: str
    reservable_by: tuple[str, ...] = ()
    origin: str = ""  # "address:ip" it was registered from without a token; "": the admin
    create_ns: int = 0
    accepts_chosen_seeds: bool = False  # its reservers may also choose the seed


class Store:
    """The SQLite database under ``data``; every method runs on the store's own thread.
    The bots and the ladders' rosters are :attr:`shared` (:class:`SharedTables`: here, or
    with ``shared``, a ``postgresql://`` URL, in that database)."""

    def __init__(
        self, data: Path, *, faults: Faults | None = None, shared: str | None = None
    ) -> None:
        """``faults``: a test's failing disk (:attr:`Faults.store_write`); None in use."""
        data.mkdir(parents=True, exist_ok=True)
        self.path = data / DB_NAME
        self.faults = faults
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="capicua-store")
        self._db: sqlite3.Connection | None = None
        self._journal: list[Op] = []  # journal writes not yet handed to the thread
        self._flush: asyncio.TimerHandle | None = None
        # The group commit: the callers of sync() waiting for the next commit, and the
        # task committing (at most one: a commit waits for the one in flight).
        self._next_commit: asyncio.Future[None] | None = None
        self._committer: asyncio.Task[None] | None = None
        try:
            self._thread.submit(self._open).result()
            # the bots and rosters: in this file, or in PostgreSQL with --db
            self.shared = SharedTables(self, shared)
        except BaseException:
            self._thread.shutdown(wait=False)
            raise

    def _open(self) -> None:
        db = sqlite3.connect(self.path, isolation_level=None)  # explicit transactions
        db.execute("PRAGMA journal_mode=WAL")
        # FULL: every commit reaches the disk before it returns (an acknowledged lobby call
        # or finished match survives a power cut, not only a killed process); about 0.3 ms
        # a commit here, on the store's thread, and commits are grouped
        db.execute("PRAGMA synchronous=FULL")
        db.execute("PRAGMA foreign_keys=ON")
        db.executescript(_SCHEMA)
        self._db = db

    @property
    def db(self) -> sqlite3.Connection:
        assert self._db is not None, "the store is closed"
        return self._db

    async def _run(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn)

    def close(self) -> None:
        ops = self._take_journal()
        if ops:
            self._thread.submit(self._write, ops).result()

        def _close() -> None:
            if self._db is not None:
                self._db.close()
                self._db = None

        self.shared.close()
        self._thread.submit(_close).result()
        self._thread.shutdown(wait=True)

    # -- matches --------------------------------------------------------------------------

    async def save_match(
        self,
        match: match_pb2.Match,
        *,
        create_ns: int,
        finish_ns: int,
        public: bool,
        replay: bytes | None,
        replay_error: str | None = None,
    ) -> None:
        """Record a finished match and its replay (None: it never started, or
        ``replay_error`` says why it could not be built), atomically."""
        match_id = match.name.removeprefix("matches/")
        text = json_format.MessageToJson(match, preserving_proto_field_name=True, indent=None)
        term_name = game_pb2.Termination.Name(match.outcome.termination)
        tags = sorted(set(match.settings.tags))

        # The journal writes not yet committed first (the match's own last actions among
        # them), so that none lands after the journal forgets the match; then one
        # transaction forgets it and records it. A crash between the two leaves a journal
        # that replays to the end: the next start records the match then.
        await self.sync()
        ops: list[Op] = [(sql, (match_id,)) for sql in _FORGET]
        ops.append(
            (
                "DELETE FROM revoked_tokens WHERE id <= (SELECT MAX(id) FROM revoked_tokens) - ?",
                (REVOKED_KEPT,),
            )
        )
        ops.append(
            (
                "INSERT OR REPLACE INTO matches "
                "(match_id, create_ns, finish_ns, public, termination, match_json) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (match_id, create_ns, finish_ns, int(public), term_name, text),
            )
        )
        ops.append(("DELETE FROM match_tags WHERE match_id = ?", (match_id,)))
        ops += [
            ("INSERT INTO match_tags (match_id, tag) VALUES (?, ?)", (match_id, t)) for t in tags
        ]
        if replay is not None:
            ops.append(
                (
                    "INSERT OR REPLACE INTO replay_protos (match_id, replay) VALUES (?, ?)",
                    (match_id, replay),
                )
            )
        if replay_error is not None:
            ops.append(
                (
                    "INSERT OR REPLACE INTO replay_failures (match_id, error) VALUES (?, ?)",
                    (match_id, replay_error),
                )
            )
        await self._run(lambda: self._write(ops))

    async def get_match(self, match_id: str) -> match_pb2.Match | None:
        """The record of finished match ``match_id`` (None: none); raises
        :class:`DamagedRecord` when its row cannot be read back."""
        return await self._stored(match_id, _MATCH_QUERIES, _match_or_none)

    async def get_replay(self, match_id: str) -> replay_pb2.Replay | None:
        """The stored replay of ``match_id`` (None: none); raises :class:`DamagedRecord`
        when its row cannot be read back."""
        return await self._stored(match_id, _REPLAY_QUERIES, _replay_or_none)

    async def _stored(
        self, match_id: str, queries: Sequence[str], read: Callable[[object], T | None]
    ) -> T | None:
        """The value of the first of ``queries`` that finds a row for ``match_id``, read
        back by ``read`` (None: no row); :class:`DamagedRecord` when ``read`` cannot."""

        def _get() -> object:
            for query in queries:
                row = self.db.execute(query, (match_id,)).fetchone()
                if row is not None:
                    return row[0]
            return None

        stored = await self._run(_get)
        if stored is None:
            return None
        value = read(stored)
        if value is None:
            raise DamagedRecord(f"matches/{match_id}")
        return value

    async def get_replay_failure(self, match_id: str) -> str | None:
        """Why the replay of ``match_id`` could not be built (None: it was, or never ran)."""
        query = "SELECT error FROM replay_failures WHERE match_id = ?"
        return await self._stored(match_id, (query,), str)

    async def list_matches(
        self, *, tag: str, before: tuple[int, str] | None, limit: int
    ) -> list[tuple[int, match_pb2.Match]]:
        """Public finished matches, newest first, strictly after the ``before`` cursor
        ``(create_ns, match_id)``; returns ``(create_ns, match)`` pairs."""

        def _list() -> list[tuple[int, str]]:
            sql = "SELECT m.create_ns, m.match_json FROM matches m WHERE m.public = 1"
            args: list[object] = []
            if tag:
                sql += " AND EXISTS (SELECT 1 FROM match_tags t WHERE t.match_id = m.match_id"
                sql += " AND t.tag = ?)"
                args.append(tag)
            if before is not None:
                sql += " AND (m.create_ns < ? OR (m.create_ns = ? AND m.match_id < ?))"
                args += [before[0], before[0], before[1]]
            sql += " ORDER BY m.create_ns DESC, m.match_id DESC LIMIT ?"
            args.append(limit)
            return list(self.db.execute(sql, args))

        listed = []
        for ns, text in await self._run(_list):
            match = _match_or_none(text)
            if match is None or type(ns) is not int:  # one damaged row hides only itself
                log.error("record_unreadable", create_ns=repr(ns)[:40])
                continue
            listed.append((ns, match))
        return listed

    # -- the journal of unfinished matches ----------------------------------------------

    def journal_created(self, live: LiveMatch, host_digest: str) -> None:
        text = json_format.MessageToJson(live.match, preserving_proto_field_name=True, indent=None)
        self._log(
            "INSERT OR REPLACE INTO live_matches "
            "(match_id, create_ns, public, seed, match_json, seats_json, auto_forced) "
            "VALUES (?, ?, ?, ?, ?, ?, NULL)",
            (
                live.match_id,
                live.create_ns,
                int(live.public),
                seed_to_db(live.seed),
                text,
                live.seats_json,
            ),
        )
        if live.creator:
            self._log(
                "INSERT OR REPLACE INTO live_creators (match_id, creator) VALUES (?, ?)",
                (live.match_id, live.creator),
            )
        self.journal_token(live.match_id, host_digest, -1)

    def journal_token(self, match_id: str, digest: str, seat: int) -> None:
        self._log(
            "INSERT OR REPLACE INTO live_tokens (match_id, digest, seat) VALUES (?, ?, ?)",
            (match_id, digest, seat),
        )

    def journal_seats(self, match_id: str, seats_json: str, auto_forced: str | None) -> None:
        """The seats now; ``auto_forced`` once the match started."""
        self._log(
            "UPDATE live_matches SET seats_json = ?, auto_forced = ? WHERE match_id = ?",
            (seats_json, auto_forced, match_id),
        )

    def journal_action(self, match_id: str, seq: int, code: int) -> None:
        self._log(
            "INSERT OR REPLACE INTO live_actions (match_id, seq, code) VALUES (?, ?, ?)",
            (match_id, seq, code),
        )

    def _log(self, sql: str, args: tuple[Any, ...]) -> None:
        self._journal.append((sql, args))
        if self._flush is None:
            loop = asyncio.get_running_loop()
            self._flush = loop.call_later(JOURNAL_FLUSH_S, self._flush_journal)

    def sync(self) -> asyncio.Future[None]:
        """Commit every journal write made so far; the future is done once they are on
        disk (it raises what the commit raised). Call it with no ``await`` between the
        journal writes it must cover and the call itself. A caller that is cancelled while
        it waits cancels nothing: the commit is shared."""
        return asyncio.shield(self._commit_soon())

    def _commit_soon(self) -> asyncio.Future[None]:
        waiter = self._next_commit
        if waiter is None:
            waiter = self._next_commit = asyncio.get_running_loop().create_future()
        if self._committer is None:
            self._committer = asyncio.ensure_future(self._commit())
        return waiter

    async def _commit(self) -> None:
        """Commit the journal while anyone waits: each round takes everything written so
        far (the writes of every caller that came while the previous round was on disk)."""
        try:
            while self._next_commit is not None:
                waiter, self._next_commit = self._next_commit, None
                ops = self._take_journal()
                try:
                    if ops:
                        await self._run(functools.partial(self._write, ops))
                except Exception as e:
                    waiter.set_exception(e)
                    waiter.exception()  # retrieved: nobody may be waiting (a timed flush)
                    log.error("journal_failed", exc_info=e)
                else:
                    waiter.set_result(None)
        finally:
            self._committer = None

    def _take_journal(self) -> list[Op]:
        ops, self._journal = self._journal, []
        if self._flush is not None:
            self._flush.cancel()
            self._flush = None
        return ops

    def _flush_journal(self) -> None:
        """The timed commit of a running match's decisions (nobody waits for it; a failure
        is logged: the match goes on, and a crash now would lose those decisions)."""
        self._flush = None
        if self._journal and self._db is not None:
            self._commit_soon()

    def _write(self, ops: Iterable[Op]) -> None:
        """Execute ``ops`` in order in one transaction (on the store's thread)."""
        write(self.db, ops, self.faults)

    def load_revoked(self) -> list[tuple[str, str]]:
        """The revoked tokens remembered, oldest first: ``(digest, match_id)`` (called once
        at startup). A row that cannot be read back is left out: its holder is told the
        token is unknown instead of why (a damaged match id must not reach the answer)."""

        def _load() -> list[tuple[str, str]]:
            rows = self.db.execute("SELECT digest, match_id FROM revoked_tokens ORDER BY id")
            return [(d, m) for d, m in rows if _readable(d, DIGEST) and _readable(m, MATCH_ID)]

        return self._thread.submit(_load).result()

    def load_live(self) -> list[LiveMatch | DamagedMatch]:
        """Every unfinished match of the journal (called once at startup), oldest first:
        each as :func:`~capicua.server.journal.read_journal` reads it, a damaged one as a
        :class:`~capicua.server.journal.DamagedMatch`. Rows that name no unfinished match
        are deleted (and logged)."""

        def _load() -> list[LiveMatch | DamagedMatch]:
            db = self.db
            rows = JournalRows(
                matches=db.execute(
                    "SELECT rowid, match_id, create_ns, public, seed, match_json, seats_json, "
                    "auto_forced FROM live_matches"
                ).fetchall(),
                tokens=db.execute(
                    "SELECT rowid, match_id, digest, seat FROM live_tokens"
                ).fetchall(),
                actions=db.execute(
                    "SELECT rowid, match_id, seq, code FROM live_actions"
                ).fetchall(),
                creators=db.execute(
                    "SELECT rowid, match_id, creator FROM live_creators"
                ).fetchall(),
            )
            rows.finished = frozenset(
                str(m)
                for (m,) in db.execute(
                    "SELECT match_id FROM matches WHERE match_id IN (SELECT match_id FROM "
                    "live_matches UNION SELECT match_id FROM live_tokens UNION SELECT "
                    "match_id FROM live_actions UNION SELECT match_id FROM live_creators)"
                )
            )
            rows.claimed = frozenset(
                str(d)
                for (d,) in db.execute(
                    "SELECT token_sha256 FROM bots UNION SELECT digest FROM revoked_tokens"
                )
            )
            found, dropped = read_journal(rows)
            for row in dropped:
                log.error("journal_row_dropped", table=row.table, problem=row.problem)
            if dropped:
                self._write(
                    (f"DELETE FROM {row.table} WHERE rowid = ?", (row.rowid,)) for row in dropped
                )
            return found

        return self._thread.submit(_load).result()


class SharedTables:
    """The tables of :data:`SHARED_SCHEMA` (the bots, the ladders' rosters): in the store's
    own SQLite file, on its thread; or with ``url`` (``capicua serve --db``), in that
    PostgreSQL database, shared by every server process given the same URL, on a connection
    and thread of their own (matches, replays and the journal stay in the process's SQLite
    file: a match is hosted by one process)."""

    def __init__(self, store: Store, url: str | None) -> None:
        self.faults = store.faults
        self._store = store
        self._thread = store._thread
        self._own: Any = None  # the PostgreSQL connection, with --db
        if url is not None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="capicua-shared")
            try:
                self._own = self._thread.submit(_open_shared, url).result()
            except BaseException:
                self._thread.shutdown(wait=False)
                raise

    @property
    def db(self) -> Any:
        return self._own if self._own is not None else self._store.db

    async def _run(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn)

    def close(self) -> None:
        if self._own is not None:
            self._thread.submit(self._own.close).result()
            self._thread.shutdown(wait=True)
            self._own = None

    # -- bots -----------------------------------------------------------------------------

    def load_bots(self) -> list[StoredBot]:
        """Every registered bot (called at startup, before serving; :meth:`reload_bots`
        after). A row that cannot be read back (its id or its token's digest damaged) is
        left out and logged: that bot cannot play until it is registered again, and every
        other bot can."""
        return self._thread.submit(self._read_bots).result()

    async def reload_bots(self) -> list[StoredBot]:
        """:meth:`load_bots` while serving: the bots other processes registered (``--db``)."""
        return await self._run(self._read_bots)

    def _read_bots(self) -> list[StoredBot]:
        db = self.db
        access: dict[str, list[str]] = {}
        for bot_id, reserver in db.execute(
            "SELECT bot_id, reserver FROM bot_access ORDER BY bot_id, reserver"
        ):
            if _readable(bot_id, BOT_ID) and _reserver(reserver):
                access.setdefault(bot_id, []).append(reserver)
            else:
                log.error("bot_access_row_ignored", bot=repr(bot_id)[:80])
        origins = {
            bot_id: address
            for bot_id, address in db.execute("SELECT bot_id, address FROM bot_origins")
            if isinstance(bot_id, str) and isinstance(address, str)
        }
        seeds = {row[0] for row in db.execute("SELECT bot_id FROM bot_seed_consent")}
        bots = []
        rows = db.execute(
            "SELECT bot_id, description, token_sha256, create_ns FROM bots"
        ).fetchall()
        # One digest for two bots is damage: either could act as the other, so neither
        # token is trusted.
        shared = {t for t, n in collections.Counter(row[2] for row in rows).items() if n > 1}
        for bot_id, text, token, create_ns in rows:
            if not (_readable(bot_id, BOT_ID) and _readable(token, DIGEST)) or token in shared:
                log.error("bot_row_ignored", bot=repr(bot_id)[:80])
                continue
            bots.append(
                StoredBot(
                    bot_id,
                    text if isinstance(text, str) else "",
                    token,
                    tuple(access.get(bot_id, ())),
                    origins.get(bot_id, ""),
                    create_ns if type(create_ns) is int else 0,
                    bot_id in seeds,
                )
            )
        return bots

    async def add_bot(self, bot: StoredBot, create_ns: int) -> None:
        ops: list[Op] = [
            (
                "INSERT INTO bots (bot_id, description, token_sha256, create_ns) "
                "VALUES (?, ?, ?, ?)",
                (bot.bot_id, bot.description, bot.token_sha256, create_ns),
            ),
            *_access_ops(bot.bot_id, bot.reservable_by, bot.accepts_chosen_seeds),
        ]
        if bot.origin:
            ops.append(
                (
                    "INSERT INTO bot_origins (bot_id, address) VALUES (?, ?)",
                    (bot.bot_id, bot.origin),
                )
            )
        await self._run(lambda: write(self.db, ops, self.faults))

    async def set_bot_access(
        self, bot_id: str, reservable_by: Sequence[str], accepts_chosen_seeds: bool
    ) -> None:
        """Replace who else may reserve ``bot_id``'s seats, and whether they may choose the
        seed (in one transaction)."""
        ops: list[Op] = [
            ("DELETE FROM bot_access WHERE bot_id = ?", (bot_id,)),
            ("DELETE FROM bot_seed_consent WHERE bot_id = ?", (bot_id,)),
        ]
        ops += _access_ops(bot_id, reservable_by, accepts_chosen_seeds)
        await self._run(lambda: write(self.db, ops, self.faults))

    # -- for other tables' owners (the ladders' roster) ---------------------------------------

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """The rows of ``sql`` on the shared tables (at startup, before serving: it waits
        for their thread)."""
        return self._thread.submit(lambda: self._rows(sql)).result()

    async def query_shared(self, sql: str) -> list[tuple[Any, ...]]:
        """:meth:`query` while serving."""
        return await self._run(lambda: self._rows(sql))

    def _rows(self, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.db.execute(sql).fetchall()]

    async def execute_many(self, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
        """``sql`` for each of ``rows`` on the shared tables, in one transaction."""
        await self._run(lambda: write(self.db, [(sql, row) for row in rows], self.faults))

    async def transact_shared(self, fn: Callable[[Any], T]) -> T:
        """``fn(connection)`` in one transaction on the shared tables, serialized with every
        other process's (SQLite: its write lock; PostgreSQL: one advisory lock), so that a
        read-modify-write of a roster sees the writes of every process before it."""

        def run() -> T:
            db = self.db
            if self.faults is not None and self.faults.store_write is not None:
                self.faults.store_write()
            db.execute("BEGIN IMMEDIATE")
            try:
                if self._own is not None:
                    db.execute("SELECT pg_advisory_xact_lock(?)", (_SHARED_WRITE_LOCK,))
                result = fn(db)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
            return result

        return await self._run(run)


def _open_shared(url: str) -> Any:
    db = connect_postgres(url, schema=SHARED_SCHEMA_NAME)
    db.execute("SELECT pg_advisory_lock(?)", (_SCHEMA_LOCK,))  # one creator at a time
    try:
        db.executescript(SHARED_SCHEMA)
    finally:
        db.execute("SELECT pg_advisory_unlock(?)", (_SCHEMA_LOCK,))
    return db


def write(db: Any, ops: Iterable[Op], faults: Faults | None) -> None:
    """Execute ``ops`` in order in one transaction (on ``db``'s thread)."""
    if faults is not None and faults.store_write is not None:
        faults.store_write()  # before BEGIN: a refused write leaves no transaction
    db.execute("BEGIN IMMEDIATE")
    try:
        # Runs of one statement (mostly actions) go in one executemany: same order,
        # less time holding the GIL away from the event loop.
        for sql, run in itertools.groupby(ops, key=lambda op: op[0]):
            db.executemany(sql, [args for _, args in run])
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _readable(value: object, pattern: re.Pattern[str]) -> bool:
    return isinstance(value, str) and pattern.fullmatch(value) is not None


def _reserver(value: object) -> bool:
    """``*`` or ``bots/{bot_id}``: an entry of a bot's ``reservable_by``."""
    return value == "*" or (
        isinstance(value, str)
        and value.startswith("bots/")
        and _readable(value.removeprefix("bots/"), BOT_ID)
    )


def _access_ops(bot_id: str, reservable_by: Iterable[str], accepts_chosen_seeds: bool) -> list[Op]:
    ops: list[Op] = [
        ("INSERT INTO bot_access (bot_id, reserver) VALUES (?, ?)", (bot_id, reserver))
        for reserver in reservable_by
    ]
    if accepts_chosen_seeds:
        ops.append(("INSERT INTO bot_seed_consent (bot_id) VALUES (?)", (bot_id,)))
    return ops


class DamagedRecord(Exception):
    """A finished match's stored record that cannot be read back (its name is the text)."""


_MATCH_QUERIES = ("SELECT match_json FROM matches WHERE match_id = ?",)
#: Where a match's replay is: the protobuf bytes, else the JSON of an older server.
_REPLAY_QUERIES = (
    "SELECT replay FROM replay_protos WHERE match_id = ?",
    "SELECT replay_json FROM replays WHERE match_id = ?",
)


def _replay_or_none(stored: object) -> replay_pb2.Replay | None:
    """A stored replay read back (protobuf bytes, or an older server's protobuf JSON);
    None when it is damaged."""
    try:
        if isinstance(stored, bytes):
            return replay_pb2.Replay.FromString(stored)
        if isinstance(stored, str):
            return json_format.Parse(stored, replay_pb2.Replay())
    except Exception:  # DecodeError, ParseError, and whatever else damage provokes
        pass
    return None


def _match_or_none(text: object) -> match_pb2.Match | None:
    """A stored ``match_json`` read back; None when it is damaged."""
    if not isinstance(text, str) or len(text) > MAX_MATCH_JSON:
        return None
    try:
        return json_format.Parse(text, match_pb2.Match())
    except Exception:  # ParseError, and whatever else a damaged text provokes
        return None
