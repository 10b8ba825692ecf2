"""capicua.common.sqldb: SQLite's SQL on a real PostgreSQL server (tests/pgkit.py)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

import pytest

from capicua.common.sqldb import (
    DatabaseError,
    LadderLocation,
    NoSuchSchema,
    PgConnection,
    advisory_key,
    connect_postgres,
    is_postgres,
    shown,
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS things (
    name TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    weight REAL,
    data BLOB
);
CREATE TABLE IF NOT EXISTS pairs (
    a TEXT NOT NULL,
    b TEXT NOT NULL,
    n INTEGER NOT NULL,
    PRIMARY KEY (a, b)
);
CREATE TABLE IF NOT EXISTS log (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    what TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS things_size ON things (size DESC);
"""

WORK = [
    (
        "INSERT INTO things (name, size, weight, data) VALUES (?, ?, ?, ?)",
        ("a", 2**40, 0.5, b"\0x"),
    ),
    ("INSERT OR IGNORE INTO things (name, size) VALUES (?, ?)", ("a", 1)),
    ("INSERT OR IGNORE INTO things (name, size) VALUES (?, ?)", ("b", 3)),
    ("INSERT OR REPLACE INTO pairs (a, b, n) VALUES (?, ?, ?)", ("x", "y", 1)),
    ("INSERT OR REPLACE INTO pairs (a, b, n) VALUES (?, ?, ?)", ("x", "y", 2)),
    ("INSERT INTO log (what) VALUES (?)", ("50% done",)),
    ("INSERT INTO log (what) VALUES (?)", ("all?",)),
]
READS = [
    "SELECT name, size, weight, data FROM things ORDER BY rowid",
    "SELECT a, b, n FROM pairs",
    "SELECT what FROM log WHERE what LIKE '%done' ORDER BY id",
    "SELECT what FROM log ORDER BY rowid DESC",
]


def _run(conn: sqlite3.Connection | PgConnection) -> list[list[tuple[object, ...]]]:
    conn.executescript(SCHEMA)
    conn.execute("BEGIN IMMEDIATE")
    for sql, args in WORK:
        conn.execute(sql, args)
    conn.execute("COMMIT")
    return [[tuple(r) for r in conn.execute(sql).fetchall()] for sql in READS]


def test_the_same_sql_reads_the_same_on_sqlite_and_postgresql(postgres_url: str) -> None:
    lite = sqlite3.connect(":memory:", isolation_level=None)
    pg = connect_postgres(postgres_url, schema="some_store")
    try:
        reads = _run(pg)
        assert reads == _run(lite)
        assert reads[1] == [("x", "y", 2)]  # replaced, not added
        assert reads[0][0] == ("a", 2**40, 0.5, b"\0x")  # 64-bit integers, bytes back
    finally:
        pg.close()


def test_schemas_keep_stores_apart(postgres_url: str) -> None:
    one, two = (connect_postgres(postgres_url, schema=s) for s in ("one", "two"))
    try:
        for conn in (one, two):
            conn.executescript(SCHEMA)
        one.execute("INSERT INTO log (what) VALUES (?)", ("mine",))
        assert two.execute("SELECT count(*) FROM log").fetchone() == (0,)
        assert one.execute("SELECT what FROM log").fetchall() == [("mine",)]
    finally:
        one.close()
        two.close()


def test_a_server_that_is_not_there_is_one_line_without_the_password(tmp_path: object) -> None:
    url = f"postgresql://me:secret@/nowhere?host={tmp_path}"
    assert is_postgres(url) and not is_postgres("results/dir")
    with pytest.raises(DatabaseError) as caught:
        connect_postgres(url)
    text = str(caught.value)
    assert "\n" not in text and "secret" not in text and "cannot connect" in text
    assert shown(url) in text


#: Reads that SQLite and PostgreSQL spell differently, or where psycopg reads ``%``.
SPELLED = [
    ("SELECT name FROM things WHERE name LIKE 'a%' AND size > ?", (0,)),  # % in a literal
    ("SELECT size % 7 FROM things ORDER BY name", ()),  # % an operator, no parameter
    ("SELECT name, instr(name, ?) FROM things ORDER BY name", ("b",)),
    ("SELECT json_array_length(what) FROM log WHERE what LIKE '[%' ORDER BY id", ()),
    ("SELECT count(*) FROM (SELECT a FROM pairs GROUP BY a) AS grouped", ()),
    ("INSERT INTO log (what) VALUES (?) RETURNING id", ("[1, 2]",)),
]


def test_functions_and_percent_signs_read_the_same_on_both(postgres_url: str) -> None:
    def reads(conn: sqlite3.Connection | PgConnection) -> list[list[tuple[object, ...]]]:
        _run(conn)
        conn.execute("INSERT INTO log (what) VALUES (?)", ('["x", "y", "z"]',))
        return [[tuple(r) for r in conn.execute(sql, args).fetchall()] for sql, args in SPELLED]

    lite = sqlite3.connect(":memory:", isolation_level=None)
    pg = connect_postgres(postgres_url, schema="spelled")
    try:
        got = reads(pg)
        assert got == reads(lite)
        assert got[0] == [("a",)] and got[2] == [("a", 0), ("b", 1)] and got[3] == [(3,)]
        assert got[5] == [(4,)]  # the new row's id, as sqlite3's lastrowid gave it
    finally:
        pg.close()


def test_rowid_is_indexed_as_sqlites_is(postgres_url: str) -> None:
    pg = connect_postgres(postgres_url, schema="indexed")
    try:
        pg.executescript(SCHEMA)
        indexed = pg.execute(
            "SELECT tablename FROM pg_indexes WHERE schemaname = 'indexed' "
            "AND indexdef LIKE '%(rowid)%' ORDER BY tablename"
        ).fetchall()
        assert indexed == [("log",), ("pairs",), ("things",)]
    finally:
        pg.close()


def test_a_schema_not_created_must_exist_and_a_read_only_connection_writes_nothing(
    postgres_url: str,
) -> None:
    with pytest.raises(NoSuchSchema) as caught:
        connect_postgres(postgres_url, schema="missing", create=False)
    assert str(caught.value) == f"{shown(postgres_url)}: no schema missing"
    writer = connect_postgres(postgres_url, schema="kept")
    writer.executescript(SCHEMA)
    writer.execute("INSERT INTO log (what) VALUES (?)", ("first",))
    reader = connect_postgres(postgres_url, schema="kept", create=False, read_only=True)
    try:
        assert reader.execute("SELECT what FROM log").fetchall() == [("first",)]
        errors = pytest.importorskip("psycopg.errors")
        with pytest.raises(errors.ReadOnlySqlTransaction):
            reader.execute("INSERT INTO log (what) VALUES (?)", ("second",))
        assert writer.execute("SELECT count(*) FROM log").fetchone() == (1,)
    finally:
        reader.close()
        writer.close()


def test_a_ladder_location_is_a_url_and_an_id_kept_in_its_own_schema() -> None:
    where = LadderLocation.parse("postgresql://me:pw@db.example/club#spring-open-2")
    assert where == LadderLocation("postgresql://me:pw@db.example/club", "spring-open-2")
    assert where.schema == "ladder_spring_open_2"
    assert str(where) == "postgresql://me:***@db.example/club#spring-open-2"
    local = LadderLocation.parse("postgresql://me@/club?host=/run/pg#a")
    assert local.url == "postgresql://me@/club?host=/run/pg" and local.schema == "ladder_a"
    longest = "x" * 56
    assert LadderLocation.parse(f"postgres://h/d#{longest}").schema == f"ladder_{longest}"
    for bad, says in [
        ("postgresql://me:pw@h/d", "name the ladder after the URL"),
        ("postgresql://me:pw@h/d#", "name the ladder after the URL"),
        ("postgresql://me:pw@h/d#Club_Ladder", "'Club_Ladder' is no ladder id"),
        ("postgresql://me:pw@h/d#-a", "'-a' is no ladder id"),
        (f"postgresql://me:pw@h/d#{longest}x", "a ladder id of at most 56 characters"),
        ("mysql://h/d#a", "name the ladder after the URL"),
    ]:
        with pytest.raises(DatabaseError) as caught:
            LadderLocation.parse(bad)
        text = str(caught.value)
        assert says in text and "\n" not in text and "pw" not in text, text


def test_an_advisory_key_is_the_same_in_every_process() -> None:
    here = advisory_key("capicua results ladder_a")
    there = subprocess.run(
        [sys.executable, "-c", "from capicua.common.sqldb import advisory_key as k; "
         "print(k('capicua results ladder_a'))"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout  # fmt: skip
    assert int(there) == here and -(2**63) <= here < 2**63
    assert advisory_key("capicua results ladder_b") != here
