"""capicua.common.sqldb: SQLite's SQL on a real PostgreSQL server (tests/pgkit.py)."""

from __future__ import annotations

import sqlite3

import pytest

from capicua.common.sqldb import DatabaseError, PgConnection, connect_postgres, is_postgres, shown

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
