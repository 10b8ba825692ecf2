"""A ladder's results on a PostgreSQL server (:class:`~capicua.common.sqldb.LadderLocation`):
what :class:`capicua.arena.store.Results` does differently there. The tables and the SQL
are the directory's (``results.sqlite``), translated as they run
(:mod:`capicua.common.sqldb`), in the ladder's own schema; what differs is how the store
is opened, locked and taken back:

* **Writers** wait for each other: a transaction takes the ladder's transaction lock (an
  advisory lock, released at its end) right after it begins, as SQLite's ``BEGIN
  IMMEDIATE`` takes the file's write lock, so that a control action's checks and its write
  see no other writer between them, and rows numbered by ``rowid`` or ``id`` are committed
  in the order of their numbers (a reader following ``rowid`` misses none).
* **A run** holds the ladder's run lock (a session's advisory lock, which the server drops
  when the run's connection ends, however the run ends), as a directory's run holds its
  ``.lock``: a second run is refused at once. A ladder of ``capicua serve`` is played by
  one server process at a time anyway (its leadership through the database); the run lock
  says the same for a ``capicua ladder run`` beside it.
* **Readers** open a read-only connection (every transaction read-only: a write is refused,
  as SQLite's ``query_only``) and create nothing: a ladder that is not there is
  :class:`FileNotFoundError`, as a directory without results is.
* **Replays** are rows of the schema's ``replays`` table (the bytes a replay file would
  hold), written in the transaction of their match.

A store on PostgreSQL is always made by this version's schema, so it never lacks a column
(a directory written by an older capicua may: see ``store._add_missing``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager, suppress

from capicua.common.errors import CapicuaError
from capicua.common.sqldb import (
    DatabaseError,
    LadderLocation,
    NoSuchSchema,
    PgConnection,
    Transaction,
    advisory_key,
    connect_postgres,
    first_line,
    run_key,
)

#: The tables only a PostgreSQL store has: each replay's bytes, by the name a directory
#: would give its file (the match row's ``replay_path``).
PG_SCHEMA = """
CREATE TABLE IF NOT EXISTS replays (
    path TEXT PRIMARY KEY,
    replay BLOB NOT NULL
);
"""


def writer_key(where: LadderLocation) -> int:
    """The key of the ladder's transaction lock (see the module)."""
    return advisory_key(f"capicua results {where.schema}")


def open_store(where: LadderLocation, schema: str) -> PgConnection:
    """The ladder's store, to write: its schema and tables created when missing (under the
    transaction lock: two writers opening a new ladder at once make it once)."""
    conn = connect_postgres(where.url, schema=where.schema)
    try:
        with Transaction(conn, writer_key(where)):
            conn.executescript(schema + PG_SCHEMA)
    except BaseException as e:
        conn.close()
        if isinstance(e, _driver_error()):  # e.g. no right to create tables
            raise DatabaseError(f"{where}: {first_line(e)}") from None
        raise
    return conn


def open_reader(where: LadderLocation) -> PgConnection:
    """The ladder's store, to read: :class:`FileNotFoundError` when it holds no results."""
    try:
        conn = connect_postgres(where.url, schema=where.schema, create=False, read_only=True)
    except NoSuchSchema:
        raise FileNotFoundError(f"{where}: no ladder {where.ladder_id} there") from None
    found = conn.execute("SELECT to_regclass('tournament') IS NOT NULL").fetchone()
    if not found[0]:
        conn.close()
        raise FileNotFoundError(f"{where}: no ladder {where.ladder_id} there")
    return conn


def missing(where: LadderLocation) -> str | None:
    """Why ``where`` holds no results (None: it does); a server that cannot be reached is
    :class:`~capicua.common.sqldb.DatabaseError`."""
    try:
        open_reader(where).close()
    except FileNotFoundError:
        return "no such ladder"
    return None


def discard(where: LadderLocation, tables: Iterable[str]) -> None:
    """Take back the store of a run that recorded nothing: the results' ``tables`` (and
    ``replays``), and the schema if nothing else is in it (another store's stays)."""
    conn = connect_postgres(where.url, schema=where.schema, create=False)
    try:
        with Transaction(conn, writer_key(where)):
            for table in [*tables, "replays"]:
                conn.execute(f"DROP TABLE IF EXISTS {table} CASCADE")
        with suppress(_driver_error()):  # not empty: what else is there stays
            conn.execute(f"DROP SCHEMA {where.schema}")
    finally:
        conn.close()


def _driver_error() -> type[Exception]:
    import psycopg

    return psycopg.Error


@contextmanager
def run_lock(where: LadderLocation, in_use: type[CapicuaError]) -> Iterator[None]:
    """Hold the ladder's run lock while a run plays (see the module); ``in_use`` (one line,
    naming the holder when the server knows it) when another run holds it."""
    conn = connect_postgres(where.url)
    try:
        # what a refused run is told of the holder (SET takes no parameter)
        conn.execute(
            "SELECT set_config('application_name', ?, false)", (f"capicua pid {os.getpid()}",)
        )
        key = run_key(where)
        taken = conn.execute("SELECT pg_try_advisory_lock(?)", (key,)).fetchone()[0]
        if not taken:
            holder = _holder(conn, key) or "?"
            raise in_use(
                f"{where} is in use by another run ({holder}); wait for it to end, or use "
                "another --out"
            )
        yield
    finally:
        conn.close()  # the session's end releases the lock


def _holder(conn: PgConnection, key: int) -> str | None:
    """The ``application_name`` of the session holding the advisory lock ``key``."""
    unsigned = key % 2**64  # pg_locks shows a 64-bit key as two unsigned halves
    row = conn.execute(
        "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 "
        "AND l.classid::bigint = ? AND l.objid::bigint = ?",
        (unsigned >> 32, unsigned & 0xFFFFFFFF),
    ).fetchone()
    return str(row[0]) if row and row[0] else None
