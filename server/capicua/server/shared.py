"""Several server processes on one PostgreSQL (``capicua serve --db postgresql://...``).

What they share is in the database: the registered bots and the ladders' rosters (the
store's shared tables, :data:`capicua.server.store.SHARED_SCHEMA`), and each ladder's results
(the arena's). What each process keeps for itself: its matches, their replays and its
journal (a match is hosted by one process), in its own ``--data``.

Two things make the processes act as one:

- :class:`SharedSync` reads the shared tables again every :data:`SYNC_S` (a bot registered
  on another process can play here; a join there is seen here), and at once when a call
  brings a token this process does not know (at most every :data:`MISS_S`, so that unknown
  tokens cannot flood the database).
- :class:`Leadership`: each ladder's matchmaker runs in exactly one process at a time, the
  one holding the ladder's PostgreSQL advisory lock. The lock belongs to that process's
  database session: when the process dies (even ``kill -9``) its connection closes and the
  server releases the lock; another process takes it within :data:`SYNC_S`. The leader
  writes its peer address in ``ladder_leaders``, which the other processes read to relay
  their bots' ladder matches to it (docs/ladder.md, "Several server processes").
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import structlog

from capicua.common.sqldb import LadderLocation, PgConnection, connect_postgres, run_key, shown
from capicua.server.ladders import ACTIVE, Roster
from capicua.server.store import SHARED_SCHEMA_NAME

log = structlog.get_logger("capicua.server.shared")

SYNC_S = 0.5  # how often the shared tables and the leaders are read again
MISS_S = 0.25  # an unknown token reads the bots again at most this often

LEADERS_SCHEMA = """
CREATE TABLE IF NOT EXISTS ladder_leaders (
    ladder_id TEXT PRIMARY KEY,
    node TEXT NOT NULL,
    address TEXT NOT NULL,
    pid INTEGER NOT NULL,
    since_ns INTEGER NOT NULL
);
"""
# A leader whose database session is gone is no leader: its row stays until another
# process takes the ladder, so readers keep only rows whose session is alive.
_LIVE_LEADERS = (
    "SELECT l.ladder_id, l.node, l.address FROM ladder_leaders l "
    "WHERE l.pid IN (SELECT pid FROM pg_stat_activity)"
)


def relay_targets(
    leaders: Mapping[str, tuple[str, str]], roster: Roster, node: str
) -> dict[str, frozenset[str]]:
    """For each bot with an active entry on a ladder another process leads, the addresses
    of those leaders: where the bot's streams here are relayed (capicua.server.relay). All
    its ladders', not only those of its matches in flight: a leader sees a bot connected
    here only through its relay, and pairs only connected bots. Never this process."""
    wanted: dict[str, set[str]] = {}
    for ladder_id, (leader, address) in leaders.items():
        if leader == node:
            continue
        for entry in roster.entries.get(ladder_id, ()):
            if entry.state == ACTIVE:
                wanted.setdefault(entry.bot_id, set()).add(address)
    return {bot_id: frozenset(to) for bot_id, to in wanted.items()}


def node_name() -> str:
    """This process's name among its peers: host and process id."""
    return f"{socket.gethostname()}:{os.getpid()}"


class SharedSync:
    """Reads the shared tables again, on a timer and on an unknown token."""

    def __init__(self, reload: Callable[[], Awaitable[bool]]) -> None:
        """``reload()``: read the shared tables into this process; True when it learned
        a bot it did not know."""
        self._reload = reload
        self._running: asyncio.Task[bool] | None = None
        self._miss: asyncio.Task[bool] | None = None  # the last read an unknown token made
        self._miss_started = 0.0

    async def refresh(self) -> bool:
        """Read now (calls at the same moment share one read); True: a new bot."""
        if self._running is None or self._running.done():
            self._running = asyncio.ensure_future(self._reload())
        return await asyncio.shield(self._running)

    async def on_unknown_token(self) -> bool:
        """An unknown token: perhaps a bot another process has just registered. Whether to
        look it up again (a read found a new bot). Unknown tokens at the same moment share
        one read, and start one at most every :data:`MISS_S`."""
        now = time.monotonic()
        if self._miss is None or (self._miss.done() and now - self._miss_started >= MISS_S):
            self._miss_started = now
            self._miss = asyncio.ensure_future(self._fresh())
        return await asyncio.shield(self._miss)

    async def _fresh(self) -> bool:
        """A read that starts now: one in flight may have begun before the registration."""
        if self._running is not None and not self._running.done():
            await asyncio.shield(self._running)
        return await self.refresh()

    async def run(self) -> None:
        """Read every :data:`SYNC_S` until cancelled; a failed read is logged (the
        database away: this process goes on with what it knows, and tries again)."""
        while True:
            await asyncio.sleep(SYNC_S)
            try:
                await self.refresh()
            except Exception as e:
                log.warning("shared_read_failed", error=str(e).splitlines()[0][:200])


class Leadership:
    """Which ladders this process leads (their matchmakers run here), through one database
    session that holds their advisory locks."""

    def __init__(self, url: str, ladder_ids: Sequence[str], *, node: str, address: str) -> None:
        self.url = url
        self.ladder_ids = tuple(ladder_ids)
        # each ladder's run lock (the one `capicua ladder run` takes), worked out once
        self._keys = {i: run_key(LadderLocation.parse(f"{url}#{i}")) for i in self.ladder_ids}
        self.node = node
        self.address = address  # where the other processes reach this one (--advertise)
        self.led: set[str] = set()
        self.leaders: dict[str, tuple[str, str]] = {}  # ladder id -> (node, address), live
        self._thread = ThreadPoolExecutor(1, thread_name_prefix="capicua-leadership")
        self._db: PgConnection | None = None

    async def _run(self, fn: Callable[[], Any]) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._thread, fn)

    def _connect(self) -> PgConnection:
        if self._db is None:
            db = connect_postgres(self.url, schema=SHARED_SCHEMA_NAME)
            # what a `capicua ladder run` refused by the same lock is told of its holder
            db.execute(
                "SELECT set_config('application_name', ?, false)",
                (f"capicua serve pid {os.getpid()}, leading",),
            )
            db.executescript(LEADERS_SCHEMA)
            self._db = db
        return self._db

    def _step(self) -> tuple[set[str], dict[str, tuple[str, str]]]:
        """Check the session (a lost one has lost every lock), try the locks not held, and
        read who leads what."""
        db = self._connect()
        try:  # the session's check, and its pid for the leaders' table
            pid = db.execute("SELECT pg_backend_pid()").fetchone()[0]
        except Exception:
            self._drop()
            raise
        for ladder_id, key in self._keys.items():
            if ladder_id in self.led:
                continue
            got = db.execute("SELECT pg_try_advisory_lock(?)", (key,))
            if got.fetchone()[0]:
                db.execute(
                    "INSERT OR REPLACE INTO ladder_leaders "
                    "(ladder_id, node, address, pid, since_ns) VALUES (?, ?, ?, ?, ?)",
                    (ladder_id, self.node, self.address, pid, time.time_ns()),
                )
                self.led.add(ladder_id)
        leaders = {row[0]: (row[1], row[2]) for row in db.execute(_LIVE_LEADERS)}
        return set(self.led), leaders

    def _drop(self) -> None:
        """The session is gone, and with it every lock it held: this process leads nothing."""
        if self._db is not None:
            with contextlib.suppress(Exception):  # already broken
                self._db.close()
        self._db = None
        self.led = set()

    async def run(self, on_change: Callable[[set[str]], Awaitable[None]]) -> None:
        """Until cancelled: every :data:`SYNC_S`, take the ladders nobody leads, and tell
        ``on_change`` the set this process leads whenever it changes (a lost session: none).
        """
        led: set[str] = set()
        while True:
            try:
                now, self.leaders = await self._run(self._step)
            except Exception as e:
                log.warning(
                    "leadership_lost_database",
                    url=shown(self.url),
                    error=str(e).splitlines()[0][:200] if str(e) else type(e).__name__,
                )
                now = set()
            if now != led:
                log.info("ladders_led", ladders=sorted(now), node=self.node)
                led = now
                await on_change(now)
            await asyncio.sleep(SYNC_S)

    def close(self) -> None:
        self._thread.submit(self._drop).result()
        self._thread.shutdown(wait=True)
