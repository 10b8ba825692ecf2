"""One SQL text for SQLite and PostgreSQL: the stores write SQLite's SQL, and on a
PostgreSQL server the same text is translated as it is executed.

Why a translation and not an ORM: the stores' SQL is small, hand-written and tested on both
servers; what differs between the two is a handful of spellings, listed here once:

- placeholders: ``?`` (SQLite's qmark) becomes ``%s`` (psycopg's), and a literal ``%``
  becomes ``%%``;
- ``INSERT OR IGNORE INTO t ...`` becomes ``INSERT INTO t ... ON CONFLICT DO NOTHING``;
  ``INSERT OR REPLACE INTO t (...) ...`` an upsert on ``t``'s primary key (known from the
  schema given to :meth:`PgConnection.executescript`), every other column replaced;
- ``BEGIN IMMEDIATE`` becomes ``BEGIN`` (PostgreSQL's row locks do what SQLite's early
  write lock does); ``PRAGMA`` statements are SQLite's own and are skipped;
- in a schema: ``INTEGER`` is ``BIGINT`` (SQLite's integers are 64-bit: nanosecond times),
  ``REAL`` ``DOUBLE PRECISION``, ``BLOB`` ``BYTEA``, ``INTEGER PRIMARY KEY AUTOINCREMENT``
  ``BIGSERIAL PRIMARY KEY``, and every table gets a ``rowid BIGSERIAL`` column (last, so
  that an ``INSERT`` without a column list still fills the declared ones), so that
  ``ORDER BY rowid`` keeps meaning "in the order they were stored".

A location is a path (SQLite) or a ``postgresql://`` URL (libpq's connection URI). A
PostgreSQL location may hold several stores, each in a schema of its own
(:func:`connect_postgres`'s ``schema``). psycopg is an optional dependency
(``capicua[postgresql]``): without it, naming a PostgreSQL location is a one-line error.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Sequence
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


_PLACEHOLDER = re.compile(r"'[^']*'|\?|%")
_INSERT_OR = re.compile(r"^\s*INSERT\s+OR\s+(IGNORE|REPLACE)\s+INTO\s+(\w+)", re.IGNORECASE)
_COLUMNS = re.compile(r"^\s*INSERT\s+INTO\s+\w+\s*\(([^)]*)\)", re.IGNORECASE)
_TABLE = re.compile(r"CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+(\w+)\s*\((.*)\)\s*$", re.I | re.S)


def _placeholders(sql: str) -> str:
    def one(m: re.Match[str]) -> str:
        text = m.group(0)
        return "%s" if text == "?" else "%%" if text == "%" else text

    return _PLACEHOLDER.sub(one, sql)


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
        return _placeholders(sql)

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
            cursor.execute(translated, tuple(params) if params else None)
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
            columns.insert(first_constraint, "rowid BIGSERIAL")
        return f"CREATE TABLE IF NOT EXISTS {name} ({', '.join(columns)})"

    def commit(self) -> None:
        self.raw.commit()

    def rollback(self) -> None:
        self.raw.rollback()

    def close(self) -> None:
        self.raw.close()


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


def connect_postgres(url: str, *, schema: str | None = None) -> PgConnection:
    """An autocommit connection to ``url``; with ``schema``, its tables live there (created
    if missing), so that several stores share one database. One line for every way it can
    fail: no driver, no server, a refused login."""
    try:
        import psycopg
    except ImportError:
        raise DatabaseError(
            f"{shown(url)}: PostgreSQL needs the psycopg driver: pip install 'capicua[postgresql]'"
        ) from None
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.Error as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DatabaseError(f"{shown(url)}: cannot connect: {first}") from None
    if schema is not None:
        if not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", schema):
            raise DatabaseError(f"bad schema name {schema!r}")
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        conn.execute(f"SET search_path TO {schema}")
    return PgConnection(conn)
