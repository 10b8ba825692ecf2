"""One SQL text for SQLite and PostgreSQL: the stores write SQLite's SQL, and on a
PostgreSQL server the same text is translated as it is executed.

Why a translation and not an ORM: the stores' SQL is small, hand-written and tested on both
servers; what differs between the two is a handful of spellings, listed here once:

- placeholders: ``?`` (SQLite's qmark) becomes ``%s`` (psycopg's), and every other ``%``
  (an operator, or in a string literal such as ``LIKE 'V%'``) becomes ``%%``: the
  statement always goes to psycopg with its parameters (an empty tuple for none), so that
  psycopg reads every ``%`` the same way;
- ``INSERT OR IGNORE INTO t ...`` becomes ``INSERT INTO t ... ON CONFLICT DO NOTHING``;
  ``INSERT OR REPLACE INTO t (...) ...`` an upsert on ``t``'s primary key (known from the
  schema given to :meth:`PgConnection.executescript`), every other column replaced;
- two of SQLite's functions: ``instr(a, b)`` is ``strpos(a, b)``, and
  ``json_array_length(x)`` of a JSON text column is ``json_array_length(CAST(x AS json))``;
- ``BEGIN IMMEDIATE`` becomes ``BEGIN`` (PostgreSQL's row locks do what SQLite's early
  write lock does); ``PRAGMA`` statements are SQLite's own and are skipped;
- in a schema: ``INTEGER`` is ``BIGINT`` (SQLite's integers are 64-bit: nanosecond times),
  ``REAL`` ``DOUBLE PRECISION``, ``BLOB`` ``BYTEA``, ``INTEGER PRIMARY KEY AUTOINCREMENT``
  ``BIGSERIAL PRIMARY KEY``, and every table gets a ``rowid BIGSERIAL UNIQUE`` column (last,
  so that an ``INSERT`` without a column list still fills the declared ones), so that
  ``ORDER BY rowid`` keeps meaning "in the order they were stored" (one writer at a time:
  numbers are taken in the order of the inserts, not of the commits) and, indexed as
  SQLite's rowid is, ``WHERE rowid > ?`` and ``max(rowid)`` stay cheap.

What is not translated, the stores write in the SQL both servers take: a subquery in
``FROM`` has an alias, a ``GROUP BY`` names every column it selects bare, an ``INSERT``
that needs its new row's id says ``RETURNING id`` (sqlite3's ``lastrowid`` has no psycopg
counterpart), and no ``ORDER BY`` is on a column that may be NULL (SQLite sorts NULLs
first, PostgreSQL last).

A location is a path (SQLite) or a ``postgresql://`` URL (libpq's connection URI). A
PostgreSQL location may hold several stores, each in a schema of its own
(:func:`connect_postgres`'s ``schema``): a ladder's results are in ``ladder_ID``
(:class:`LadderLocation`, ``postgresql://USER@HOST/DB#ID``). psycopg is an optional dependency
(``capicua[postgresql]``): without it, naming a PostgreSQL location is a one-line error.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from capicua.common.errors import CapicuaError

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(location: object) -> bool:
    """Whether ``location`` names a PostgreSQL server (a ``postgresql://`` URL)."""
    return isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)


def shown(url: str) -> str:
    """``url`` without its password, for messages and logs."""
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", url)


class Cursor(Protocol):
    """What the stores use of a DB-API cursor (sqlite3's and psycopg's alike)."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


def is_integrity_error(e: BaseException) -> bool:
    """Whether ``e`` is a constraint refusing a write (a key taken), from either driver."""
    if isinstance(e, sqlite3.IntegrityError):
        return True
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(e, psycopg.IntegrityError)


class DatabaseError(CapicuaError):
    """A PostgreSQL location that cannot be used (no driver, no server, refused login)."""


class NoSuchSchema(DatabaseError):
    """A schema asked for without creating it (:func:`connect_postgres`) is not there."""


class Connection(Protocol):
    """What the stores use of a connection: sqlite3's, or a :class:`PgConnection`."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]], /) -> Any: ...

    def executescript(self, script: str, /) -> Any: ...

    def close(self) -> None: ...


#: A ladder's id (:func:`capicua.common.naming.ladder_id`'s form).
_LADDER_ID = re.compile(r"[a-z0-9][a-z0-9-]*")
#: PostgreSQL's names are at most 63 bytes (longer ones are cut short, silently).
_MAX_NAME = 63
_SCHEMA_PREFIX = "ladder_"


@dataclass(frozen=True)
class LadderLocation:
    """A ladder's store on a PostgreSQL server, ``postgresql://USER@HOST/DB#ID``: libpq's
    URL (:attr:`url`) with the ladder's id as its fragment. Its tables are in the schema
    ``ladder_ID`` with every ``-`` of the id as ``_`` (:attr:`schema`): ids have no ``_``,
    so no two ladders share a schema. The one parser of such locations: :meth:`parse`."""

    url: str
    ladder_id: str

    @classmethod
    def parse(cls, text: str) -> LadderLocation:
        """The location ``text`` names; :class:`DatabaseError` (one line, no password)
        for a URL without a ladder id or with one that is not an id."""
        url, sign, ladder = text.partition("#")
        if not is_postgres(url) or not sign or not ladder:
            raise DatabaseError(
                f"{shown(text)}: name the ladder after the URL: postgresql://USER@HOST/DB#LADDER_ID"
            )
        if not _LADDER_ID.fullmatch(ladder):
            raise DatabaseError(
                f"{shown(text)}: {ladder!r} is no ladder id (lowercase letters, digits and "
                "dashes, beginning with a letter or a digit)"
            )
        if len(_SCHEMA_PREFIX) + len(ladder) > _MAX_NAME:
            raise DatabaseError(
                f"{shown(text)}: a ladder id of at most {_MAX_NAME - len(_SCHEMA_PREFIX)} "
                f"characters (its schema, {_SCHEMA_PREFIX}ID, is a PostgreSQL name: at most "
                f"{_MAX_NAME} bytes)"
            )
        return cls(url, ladder)

    @property
    def schema(self) -> str:
        return _SCHEMA_PREFIX + self.ladder_id.replace("-", "_")

    def __str__(self) -> str:
        return f"{shown(self.url)}#{self.ladder_id}"


def advisory_key(name: str) -> int:
    """A PostgreSQL advisory lock's key (a signed 64-bit number) for ``name``: the same in
    every process and every run (Python's ``hash`` is not), so that processes agree on it."""
    digest = hashlib.blake2b(name.encode(), digest_size=8, person=b"capicua").digest()
    return int.from_bytes(digest, "big", signed=True)


def run_key(where: LadderLocation) -> int:
    """The advisory lock of whoever plays the ladder at ``where``: a ``capicua ladder run``
    (arena/capicua/arena/store_pg.py) or the server process leading it
    (capicua.server.shared): one lock, so that the two never play one ladder at once."""
    return advisory_key(f"capicua run {where.schema}")


_PLACEHOLDER = re.compile(r"'[^']*'|\?|%")
_FUNCTIONS = (
    (re.compile(r"\binstr\(", re.I), "strpos("),
    (re.compile(r"\bjson_array_length\(([^()]*)\)", re.I), r"json_array_length(CAST(\1 AS json))"),
)
_INSERT_OR = re.compile(r"^\s*INSERT\s+OR\s+(IGNORE|REPLACE)\s+INTO\s+(\w+)", re.IGNORECASE)
_COLUMNS = re.compile(r"^\s*INSERT\s+INTO\s+\w+\s*\(([^)]*)\)", re.IGNORECASE)
_TABLE = re.compile(r"CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+(\w+)\s*\((.*)\)\s*$", re.I | re.S)


def _placeholders(sql: str) -> str:
    def one(m: re.Match[str]) -> str:
        text = m.group(0)
        if text == "?":
            return "%s"
        return text.replace("%", "%%")  # an operator, or a literal's (kept as it is)

    return _PLACEHOLDER.sub(one, sql)


def _functions(sql: str) -> str:
    for pattern, replacement in _FUNCTIONS:
        sql = pattern.sub(replacement, sql)
    return sql


def _split(body: str) -> list[str]:
    """A CREATE TABLE body's parts at its top-level commas."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(body):
        depth += c == "("
        depth -= c == ")"
        if c == "," and depth == 0:
            parts.append(body[start:i].strip())
            start = i + 1
    parts.append(body[start:].strip())
    return [p for p in parts if p]


def _primary_key(parts: Sequence[str]) -> tuple[str, ...]:
    for part in parts:
        found = re.match(r"PRIMARY\s+KEY\s*\(([^)]*)\)", part, re.I)
        if found:
            return tuple(c.strip() for c in found.group(1).split(","))
    for part in parts:
        if re.search(r"\bPRIMARY\s+KEY\b", part, re.I):
            return (part.split()[0],)
    return ()


def _column_type(part: str) -> str:
    part = re.sub(r"\bINTEGER\s+PRIMARY\s+KEY\s+AUTOINCREMENT\b", "BIGSERIAL PRIMARY KEY", part)
    part = re.sub(r"\bINTEGER\b", "BIGINT", part)
    part = re.sub(r"\bREAL\b", "DOUBLE PRECISION", part)
    return re.sub(r"\bBLOB\b", "BYTEA", part)


def statements(script: str) -> list[str]:
    """A script's statements (split at ``;`` ending a line: the stores' schemas hold no
    ``;`` inside a statement), without comments."""
    script = re.sub(r"--[^\n]*", "", script)
    return [s.strip() for s in re.split(r";\s*(?:\n|$)", script) if s.strip()]


class PgConnection:
    """A psycopg connection that executes SQLite's SQL (module docstring). Autocommit, as
    the stores open SQLite (``isolation_level=None``): a transaction is an explicit
    ``BEGIN`` ... ``COMMIT``."""

    dialect = "postgresql"

    def __init__(self, conn: Any) -> None:
        self.raw = conn
        self.keys: dict[str, tuple[str, ...]] = {}  # table -> primary key columns

    def _translate(self, sql: str) -> str | None:
        stripped = sql.strip()
        if re.match(r"PRAGMA\b", stripped, re.I):
            return None
        if re.fullmatch(r"BEGIN\s+(IMMEDIATE|EXCLUSIVE|DEFERRED)", stripped, re.I):
            return "BEGIN"
        found = _INSERT_OR.match(sql)
        if found:
            how, table = found.group(1).upper(), found.group(2)
            sql = f"INSERT INTO {table}" + sql[found.end() :]
            sql = sql.rstrip().rstrip(";") + self._conflict(how, table, sql)
        return _placeholders(_functions(sql))

    def _conflict(self, how: str, table: str, sql: str) -> str:
        if how == "IGNORE":
            return " ON CONFLICT DO NOTHING"
        key = self.keys.get(table)
        columns = _COLUMNS.match(sql)
        if not key or columns is None:
            raise DatabaseError(f"INSERT OR REPLACE INTO {table}: no primary key or columns")
        names = [c.strip() for c in columns.group(1).split(",")]
        rest = [c for c in names if c not in key] or list(key[:1])
        sets = ", ".join(f"{c} = EXCLUDED.{c}" for c in rest)
        return f" ON CONFLICT ({', '.join(key)}) DO UPDATE SET {sets}"

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Cursor:
        translated = self._translate(sql)
        cursor = self.raw.cursor()
        if translated is not None:
            # never None: psycopg reads %% as % only in a statement given parameters
            cursor.execute(translated, tuple(params))
        return _RowCursor(cursor)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Cursor:
        translated = self._translate(sql)
        cursor = self.raw.cursor()
        if translated is not None:
            cursor.executemany(translated, [tuple(r) for r in rows])
        return _RowCursor(cursor)

    def executescript(self, script: str) -> None:
        """Run a schema written for SQLite, translated (module docstring)."""
        for statement in statements(script):
            self.execute(self.ddl(statement))

    def ddl(self, statement: str) -> str:
        """One schema statement in PostgreSQL's spelling; a table's primary key is kept for
        ``INSERT OR REPLACE``."""
        table = _TABLE.match(statement)
        if table is None:
            return _column_type(statement)
        name, parts = table.group(1), _split(table.group(2))
        self.keys[name] = _primary_key(parts)
        columns = [_column_type(p) for p in parts]
        if not any(re.match(r"rowid\b", p, re.I) for p in parts):
            # before any table constraint: PostgreSQL wants columns first only by style,
            # but an INSERT without a column list fills columns in declared order
            first_constraint = next(
                (
                    i
                    for i, p in enumerate(columns)
                    if re.match(r"(PRIMARY|UNIQUE|FOREIGN|CHECK)\b", p, re.I)
                ),
                len(columns),
            )
            columns.insert(first_constraint, "rowid BIGSERIAL UNIQUE")
        return f"CREATE TABLE IF NOT EXISTS {name} ({', '.join(columns)})"

    def commit(self) -> None:
        self.raw.commit()

    def rollback(self) -> None:
        self.raw.rollback()

    def close(self) -> None:
        self.raw.close()


class Transaction:
    """BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error) on an autocommit connection (either
    server's). ``lock``: on PostgreSQL, where BEGIN IMMEDIATE is a plain BEGIN, the key of
    an advisory lock taken first thing and held to the end (:func:`advisory_key`), so that
    the writers that name it wait for each other as SQLite's BEGIN IMMEDIATE makes them."""

    def __init__(self, conn: Connection, lock: int | None = None) -> None:
        self.conn = conn
        self.lock = lock

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        if self.lock is not None:
            try:
                self.conn.execute("SELECT pg_advisory_xact_lock(?)", (self.lock,))
            except BaseException:
                self.conn.execute("ROLLBACK")
                raise

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.conn.execute("ROLLBACK" if exc_type is not None else "COMMIT")


class _RowCursor:
    """psycopg's cursor, with bytea read as ``bytes`` (as sqlite3 reads a BLOB)."""

    def __init__(self, cursor: Any) -> None:
        self.cursor = cursor

    @property
    def rowcount(self) -> int:
        return int(self.cursor.rowcount)

    def fetchone(self) -> Any:
        row = self.cursor.fetchone() if self.cursor.description is not None else None
        return None if row is None else _row(row)

    def fetchall(self) -> list[Any]:
        if self.cursor.description is None:
            return []
        return [_row(r) for r in self.cursor.fetchall()]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


def _row(row: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)


def connect_postgres(
    url: str, *, schema: str | None = None, create: bool = True, read_only: bool = False
) -> PgConnection:
    """An autocommit connection to ``url``; with ``schema``, its tables live there (created
    if missing, unless not ``create``: then :class:`NoSuchSchema`), so that several stores
    share one database. ``read_only``: every transaction of it is read-only (a write is
    refused, as SQLite's ``query_only``). One line for every way it can fail: no driver, no
    server, a refused login."""
    try:
        import psycopg
    except ImportError:
        raise DatabaseError(
            f"{shown(url)}: PostgreSQL needs the psycopg driver: pip install 'capicua[postgresql]'"
        ) from None
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as e:
        raise DatabaseError(f"{shown(url)}: cannot connect: {first_line(e)}") from None
    try:
        if read_only:
            conn.execute("SET default_transaction_read_only = on")
        if schema is not None:
            _use_schema(conn, url, schema, create)
    except BaseException as e:
        conn.close()
        if isinstance(e, psycopg.Error):  # e.g. no right to create the schema
            raise DatabaseError(f"{shown(url)}: {first_line(e)}") from None
        raise
    return PgConnection(conn)


def first_line(error: BaseException) -> str:
    """A driver error's first line (its name when it says nothing)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _use_schema(conn: Any, url: str, schema: str, create: bool) -> None:
    if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
        raise DatabaseError(f"bad schema name {schema!r}")
    if create:
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
    else:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        if found.fetchone() is None:
            raise NoSuchSchema(f"{shown(url)}: no schema {schema}")
    conn.execute(f"SET search_path TO {schema}")
