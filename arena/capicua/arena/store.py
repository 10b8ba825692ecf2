"""The results of every study (a tournament, an experiment, an SPRT): one SQLite file,
``results.sqlite``, in the output directory; a ladder's may instead be in PostgreSQL
(``postgresql://USER@HOST/DB#LADDER_ID``: the same tables in the schema ``ladder_ID``,
and its replays in a ``replays`` table there: :mod:`capicua.arena.store_pg`). A results
location (:data:`Where`) is either; :func:`location` reads one as a user names it.

Every finished match is committed in one transaction together with its hands, right after
its replay file (when the study keeps replays) is written atomically, so killing a run at
any moment loses at most the matches still in progress; those are played again from their
start on resume. A batch of matches (the games of an experiment's pairs played in one
task) is committed in one transaction too. The study row keeps the canonical configuration
and its digest: resuming with a different one is refused.

Tables (all text is UTF-8; JSON columns hold compact JSON):

* ``tournament``: one row, the study: ``name``, ``config_json``, ``config_sha256``,
  ``created``, ``capicua_version``, and ``study`` (``tournament`` for a tournament or an
  SPRT, ``experiment``, ``ladder``; NULL in results written before it: a tournament's or an SPRT's).
* ``bots``: ``name`` (primary key), ``spec`` (e.g. ``builtin:hard``), ``disqualified``
  (0/1), ``disqualified_reason`` and ``entered`` (a ladder's: 1 for the entries of the
  file its latest run read, 0 for those that have left; NULL before it was kept).
* ``matches``: one row per finished match, keyed by its plan ``key``; ``set_key`` groups
  the duplicate set (same seed, one match per rotation of the sides over the seats; an
  experiment's pair, one match per game); ``seats_json`` is the bot per seat,
  ``sides_json`` the bot per side; the outcome columns are the engine's ``Outcome``
  (termination in lower case: ``normal``, ``hand_limit``, ``timeout``, ``disconnect``,
  ``illegal_actions``, ``forfeit``, ``cancelled``; ``shutout`` its name, if any);
  ``replay_path`` is relative to the output directory (NULL: no replay kept; on
  PostgreSQL, the key of the replay's row in ``replays``: :meth:`Results.replay` reads
  either).
* ``hands``: one row per finished hand, the engine's facts of it (:mod:`capicua.arena.facts`):
  winner side (NULL: a tied block), ``blocked``, ``points_json`` (what each side gained
  that hand: the winner's award, 0 for the others), ``opener_side``, ``points`` (before any
  reset), ``bonuses`` (comma-separated names), ``reset``, and the counts of plays, passes,
  draws, deferrals, redeals, real choices and the legal actions they offered (NULL in
  results written before they were kept).
* ``think``: per match and seat, the server-measured think times (over the protocol).
* ``failures``: bot failures: ``kind`` one of :data:`FAILURE_KINDS`, an optional match key,
  a readable ``detail``.
* ``abandoned``: matches cut short by an interrupt (not counted; played again on resume).
* ``ladder_control``: a ladder's control actions (:mod:`capicua.arena.ladder.control`),
  one row each in the order they were taken: ``action`` (``block``, ``challenge``,
  ``pause``, ``season_end``...), the ``entry`` it is about (NULL: the ladder's),
  ``args_json``, ``time``. Its largest ``id`` is the control state's change counter.
* ``ladder_seasons``: a ladder's seasons by ``number``: ``name``, ``state`` (``open``,
  ``finals``, ``closed``), the set numbers where it began (``first_seq``) and its finals
  began (``finals_seq``; NULL until a run hands them out), the finals' ``finals_sets`` per
  pairing and frozen ``field_json``, the published finals table ``table_json``,
  ``started`` and ``ended``.

Results written by an earlier version lack some columns; a run adds them as it opens the
file, and a reader sees them as NULL without changing the file (:func:`_add_missing`).
"""

from __future__ import annotations

import errno
import fcntl
import functools
import json
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from capicua.common.errors import CapicuaError
from capicua.common.interrupt import shielded
from capicua.common.sqldb import Connection, LadderLocation, Transaction, is_postgres
from capicua.engine.records import Replay, Termination
from capicua.v1 import game_pb2, replay_pb2
from capicua.wire.codec import (
    ReplayError,
    read_replay,
    replay_bytes,
    replay_from_bytes,
    write_replay,
)

from . import store_pg
from .facts import HandFacts, MatchFacts

#: Where a study's results are: an output directory, or a ladder's store on PostgreSQL.
Where = Path | LadderLocation


def location(text: str) -> Where:
    """The results location ``text`` names: a ``postgresql://...#LADDER_ID`` URL (one
    line of error for a bad one), else a directory."""
    return LadderLocation.parse(text) if is_postgres(text) else Path(text)


DB_NAME = "results.sqlite"
#: The database of an experiment directory written before the one results store
#: (:mod:`capicua.arena.experiment.legacy` reads it): never mixed with ours.
EXPERIMENT_DB = "experiment.sqlite"
#: What a directory holds (the ``study`` column): a tournament or an SPRT (a gauntlet
#: tournament with a stopping rule), or an experiment.
TOURNAMENT, EXPERIMENT = "tournament", "experiment"
#: A standing ladder's results (:mod:`capicua.arena.ladder`): entries join as its file grows.
LADDER = "ladder"
#: A ladder's set keys begin with their kind: a rated duplicate set the matchmaker chose,
#: or a new entry's validation match (one hand, to check that it plays: it rates nothing);
#: a set an owner's challenge asked for (rated), a season's finals set (rated), a private
#: gauntlet's set (unrated, and kept out of the public table).
RATED_SET, VALIDATION_SET = "L", "V"
CHALLENGE_SET, FINALS_SET, GAUNTLET_SET = "C", "F", "G"
#: The kinds of a ladder's sets that ratings count.
RATED_KINDS = (RATED_SET, CHALLENGE_SET, FINALS_SET)
REPLAY_DIR = "replays"

FAILURE_KINDS = (
    "crash",  # the bot's process exited while the tournament needed it
    "start",  # the bot's process could not be started or never connected
    "timeout",  # the bot let a decision's deadline pass
    "disconnect",  # the bot's stream went away during a match
    "illegal",  # the bot kept answering with illegal actions
)
# A stdio bot printing something that is not an answer has no kind of its own: its bridge
# logs it and leaves the seat unanswered, so it counts as the timeout that follows.

SCHEMA = """
CREATE TABLE IF NOT EXISTS tournament (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL,
    config_json TEXT NOT NULL,
    config_sha256 TEXT NOT NULL,
    created TEXT NOT NULL,
    capicua_version TEXT NOT NULL,
    study TEXT
);
CREATE TABLE IF NOT EXISTS bots (
    name TEXT PRIMARY KEY,
    spec TEXT NOT NULL,
    disqualified INTEGER NOT NULL DEFAULT 0,
    disqualified_reason TEXT,
    entered INTEGER
);
CREATE TABLE IF NOT EXISTS matches (
    key TEXT PRIMARY KEY,
    set_key TEXT NOT NULL,
    seq INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    rotation INTEGER NOT NULL,
    seats_json TEXT NOT NULL,
    sides_json TEXT NOT NULL,
    server_match TEXT,
    termination TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    winner_side INTEGER,
    ranking_json TEXT NOT NULL,
    scores_json TEXT NOT NULL,
    forfeited_side INTEGER,
    hands INTEGER NOT NULL,
    replay_path TEXT,
    started TEXT NOT NULL,
    finished TEXT NOT NULL,
    seconds REAL NOT NULL,
    shutout TEXT
);
CREATE INDEX IF NOT EXISTS matches_set ON matches(set_key);
CREATE INDEX IF NOT EXISTS matches_seq ON matches(seq);
CREATE TABLE IF NOT EXISTS hands (
    match_key TEXT NOT NULL REFERENCES matches(key),
    hand INTEGER NOT NULL,
    winner_side INTEGER,
    blocked INTEGER NOT NULL,
    points_json TEXT NOT NULL,
    opener_side INTEGER,
    points INTEGER,
    bonuses TEXT,
    reset TEXT,
    plays INTEGER,
    passes INTEGER,
    draws INTEGER,
    defers INTEGER,
    redeals INTEGER,
    choices INTEGER,
    options INTEGER,
    PRIMARY KEY (match_key, hand)
);
CREATE TABLE IF NOT EXISTS think (
    match_key TEXT NOT NULL REFERENCES matches(key),
    seat INTEGER NOT NULL,
    bot TEXT NOT NULL,
    decisions INTEGER NOT NULL,
    total_us INTEGER NOT NULL,
    max_us INTEGER NOT NULL,
    PRIMARY KEY (match_key, seat)
);
CREATE TABLE IF NOT EXISTS failures (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    bot TEXT NOT NULL,
    kind TEXT NOT NULL,
    match_key TEXT,
    detail TEXT NOT NULL,
    time TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS abandoned (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    match_key TEXT NOT NULL,
    reason TEXT NOT NULL,
    time TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ladder_control (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    action TEXT NOT NULL,
    entry TEXT,
    args_json TEXT NOT NULL,
    time TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ladder_inflight (
    server_match TEXT PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS ladder_versions (
    name TEXT PRIMARY KEY,
    bot TEXT NOT NULL,
    version TEXT NOT NULL,
    predecessor TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ladder_seasons (
    number INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    state TEXT NOT NULL,
    first_seq INTEGER,
    finals_seq INTEGER,
    finals_sets INTEGER,
    field_json TEXT,
    table_json TEXT,
    started TEXT NOT NULL,
    ended TEXT
);
"""


LOCK_NAME = ".lock"


class DirectoryInUseError(CapicuaError):
    """Another run holds the output directory."""


class UnwritableError(CapicuaError):
    """An output directory, or the results in it, cannot be written (no permission,
    read-only media, a file in the way)."""


class UnreadableError(CapicuaError):
    """Stored results that cannot be opened for reading where they are."""


def _cannot_write(directory: Path, e: OSError, where: str | None = None) -> UnwritableError:
    """The one line of a failed write: the directory asked for, and the cause (``where``
    says what failed when it is not the directory itself: a parent it needed, a read-only
    file in it)."""
    reason = e.strerror or str(e)
    return UnwritableError(
        f"cannot write results to {directory}: {f'{where}: ' if where else ''}{reason}"
    )


def _creating(directory: Path, e: OSError) -> UnwritableError:
    """:func:`_cannot_write` for a failed :func:`make_directory`."""
    failed = Path(e.filename) if isinstance(e.filename, str) else directory
    where = None if failed.absolute() == directory.absolute() else f"cannot create {failed}"
    return _cannot_write(directory, e, where)


def make_directory(directory: Path) -> list[Path]:
    """Create ``directory`` and whichever of its parents are missing; returns the ones this
    call created, outermost first, so that a caller failing next can take them back
    (:func:`remove_created`) and a refused run leaves nothing behind. Raises OSError."""
    missing: list[Path] = []
    p = directory
    while not p.is_dir() and p.parent != p:
        missing.append(p)
        p = p.parent
    created: list[Path] = []
    try:
        for d in reversed(missing):
            try:
                d.mkdir()
            except FileExistsError:
                if not d.is_dir():  # a file in the way
                    raise NotADirectoryError(
                        errno.ENOTDIR, os.strerror(errno.ENOTDIR), str(d)
                    ) from None
                continue  # another process made it just now: not ours to remove
            created.append(d)
    except OSError:
        remove_created(created)
        raise
    return created


def remove_created(created: Sequence[Path]) -> None:
    """Remove the directories :func:`make_directory` created, innermost first, each only if
    it is still empty (whatever got into it is kept)."""
    for d in reversed(created):
        with suppress(OSError):
            d.rmdir()


def prepare_output(directory: Path, files: Sequence[str] = ()) -> list[Path]:
    """Make ``directory`` ready to take results, or raise :class:`UnwritableError` naming
    the directory and the cause, before anything is written (and with any directory this
    call created removed again). ``files`` are names in it that must be writable if they
    exist (a database and its journals): SQLite would only find out at the first write,
    with a message that does not say which file. Returns the directories created."""
    try:
        created = make_directory(directory)
    except OSError as e:
        raise _creating(directory, e) from None
    try:
        # a probe file rather than os.access: it gives the real errno (EACCES, EROFS,
        # ENOSPC...) and is right for root and ACLs, where the mode bits are not the answer
        fd, probe = tempfile.mkstemp(prefix=".probe-", dir=directory)
        os.close(fd)
        os.unlink(probe)
    except OSError as e:
        remove_created(created)
        raise _cannot_write(directory, e) from None
    for name in files:
        path = directory / name
        # Asked, never opened: closing a descriptor of a database file drops every POSIX
        # lock this process holds on it, those of its SQLite connections too (SQLite's "how
        # to corrupt", 2.2.1): a reader elsewhere could then checkpoint and delete the
        # journal under a run of this process still writing to it, and lose its commits.
        if path.exists() and not os.access(path, os.W_OK):
            remove_created(created)
            error = PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
            raise _cannot_write(directory, error, name) from None
    return created


@contextmanager
def locked(where: Where) -> Iterator[None]:
    """Hold ``DIRECTORY/.lock`` for a run: a second run on the same directory is refused at
    once (two runs would both play, and count, the same matches). The kernel drops the lock
    when the process dies, however it dies, so a killed run never leaves it behind. (A
    ladder on PostgreSQL: its run lock, :func:`capicua.arena.store_pg.run_lock`.)

    Every run takes its lock first, so this is where an output directory that cannot be
    written is refused: one :class:`UnwritableError` line, and nothing created. A run that
    ends (an interrupt at any moment of it included) with nothing recorded leaves nothing
    half-made: see :func:`tidy_unused`."""
    if isinstance(where, LadderLocation):
        with store_pg.run_lock(where, DirectoryInUseError):
            yield
        return
    directory = where
    lock: tuple[int, list[Path]] | None = None
    try:
        with shielded():  # the directory, its lock file and the lock: all of them or none
            lock = _lock(directory)
        yield
    finally:
        if lock is not None:
            with shielded():
                fd, created = lock
                try:
                    tidy_unused(directory, created)  # before the lock goes: no run is in it
                finally:
                    os.close(fd)  # releases the lock


def _lock(directory: Path) -> tuple[int, list[Path]]:
    """:func:`locked`'s start: the lock file's descriptor, locked and holding this process's
    pid, and the directories made for it."""
    try:
        created = make_directory(directory)
    except OSError as e:
        raise _creating(directory, e) from None
    path = directory / LOCK_NAME
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        remove_created(created)
        # a read-only lock file is the cause only in a directory that could be written
        where = LOCK_NAME if os.access(directory, os.W_OK) else None
        raise _cannot_write(directory, e, where) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            raise DirectoryInUseError(
                f"{directory} is in use by another run (pid {holder}); wait for it to end, or "
                "use another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
    except BaseException:
        os.close(fd)
        raise
    return fd, created


#: The folders a run makes beside its results (its processes' logs, the replays).
RUN_FOLDERS = ("logs", REPLAY_DIR)


def tidy_unused(directory: Path, created: Sequence[Path]) -> None:
    """A run's directory that holds nothing of worth (its lock, and its own folders with
    nothing but empty logs in them: the run recorded no result and its databases removed
    themselves) is taken back: those are removed, and the directories the run ``created``,
    so that neither an empty ``out/`` nor ``out/logs/*.log`` files of zero bytes are left
    after a run that was refused or interrupted before its first result. Anything else in
    it (a result, a log that says something, a file of the user's) keeps all of it."""
    with suppress(OSError):
        folders = [directory / name for name in RUN_FOLDERS if (directory / name).is_dir()]
        if not _holds_nothing(directory, folders):
            return
        for folder in folders:
            for path in folder.iterdir():
                path.unlink()
            folder.rmdir()
        (directory / LOCK_NAME).unlink(missing_ok=True)
        remove_created(created)


def _holds_nothing(directory: Path, folders: Sequence[Path]) -> bool:
    """Whether ``directory`` holds only its lock and ``folders`` of empty files."""
    expected = {LOCK_NAME, *(folder.name for folder in folders)}
    if any(path.name not in expected for path in directory.iterdir()):
        return False
    return all(
        path.is_file() and path.stat().st_size == 0
        for folder in folders
        for path in folder.iterdir()
    )


def journal_files(name: str) -> tuple[str, str, str]:
    """A database's file and its WAL journals (all must be writable to write it)."""
    return name, f"{name}-wal", f"{name}-shm"


def connect_read_only(path: Path, schema: str) -> sqlite3.Connection:
    """Open the database ``path`` (which must exist) to read it, writing nothing of it;
    ``schema`` is what a writer creates in it (see :func:`_add_missing`).

    In a writable directory it is opened read-write with ``query_only`` (SQLite refuses
    every write), rather than with ``mode=ro``: a ``mode=ro`` connection to a WAL database
    creates ``-wal`` and ``-shm`` files there and cannot remove them at close, while this
    one, the last to close, removes them as a writer's does (merging first what a killed
    run left in ``-wal``, as any writer's open would: the same results). In a directory that
    cannot be written (read-only media, a copy without write permission) it is opened with
    ``mode=ro``, and also ``immutable=1`` unless a ``-wal`` journal holds data, so that
    SQLite needs no ``-shm`` file it could not create. A non-empty ``-wal`` there holds
    committed results not yet merged into the file (a run that was killed): ``immutable``
    would silently skip them, so ``mode=ro`` reads them through an existing ``-shm``, and
    without one :class:`UnreadableError` says why instead of showing less than was
    recorded.

    Raises :class:`UnreadableError` for those causes; :class:`sqlite3.DatabaseError` for
    a file that is not a database (the caller names what it expected)."""
    directory = path.parent
    pending = _journal_holds_data(Path(f"{path}-wal"))
    # os.access also says "no" for a read-only file system, whoever runs this
    writable = os.access(directory, os.W_OK)
    # mode=rw never creates the file (a plain connect would)
    modes = ("mode=rw",) if writable else ("mode=ro",) if pending else ("mode=ro", "immutable=1")
    query = "&".join(modes)
    try:
        conn = sqlite3.connect(
            f"{path.absolute().as_uri()}?{query}", uri=True, isolation_level=None
        )
    except sqlite3.Error as e:
        raise _unreadable(path, e, pending and not writable) from None
    try:
        # the first read: a file that cannot be read fails here, not in some later query
        _add_missing(conn, schema, write=False)
        if writable:  # after the TEMP tables: query_only refuses those too
            conn.execute("PRAGMA query_only=ON")
    except sqlite3.Error as e:
        conn.close()
        if isinstance(e, sqlite3.DatabaseError) and e.sqlite_errorname in (
            "SQLITE_NOTADB",
            "SQLITE_CORRUPT",
        ):
            raise
        raise _unreadable(path, e, pending and not writable) from None
    return conn


def _journal_holds_data(wal: Path) -> bool:
    """Whether the ``-wal`` journal ``wal`` exists and is not empty, asked once: another
    reader of the same results, the last to close, removes it at any moment (an exists
    check and then a size check would fail between the two)."""
    try:
        return wal.stat().st_size > 0
    except FileNotFoundError:
        return False


def _unreadable(path: Path, e: sqlite3.Error, journal_in_readonly_dir: bool) -> UnreadableError:
    # asked, not opened and closed: a close would drop this process's SQLite locks on it
    # (see prepare_output)
    if not path.exists():
        return UnreadableError(f"cannot read {path}: {os.strerror(errno.ENOENT)}")
    if not os.access(path, os.R_OK):
        return UnreadableError(f"cannot read {path}: {os.strerror(errno.EACCES)}")
    if journal_in_readonly_dir:
        return UnreadableError(
            f"cannot read {path}: its journal {path.name}-wal holds results not yet merged "
            f"into it, and SQLite cannot read them in {path.parent} without writing there "
            "(read-only); copy the directory somewhere writable and read the copy"
        )
    return UnreadableError(f"cannot read {path}: {e}")


def _add_missing(conn: sqlite3.Connection, schema: str, *, write: bool) -> None:
    """Bring results written by an older capicua up to ``schema``: each table it lacks and
    each column a table lacks (every column added since the first version may be NULL).

    ``write``: the run that opens them adds the columns (``CREATE TABLE IF NOT EXISTS``
    has added the tables). Else, for a reader, nothing is written to the file: a missing
    table is an empty TEMP table and a table missing columns is shadowed by a TEMP view
    that gives them as NULL (SQLite looks a name up in ``temp`` first), so the results
    read as they would after a run opened them. Tables the file has in full are never
    shadowed."""
    have = {
        table: {row[1] for row in conn.execute(f"PRAGMA main.table_info({table})")}
        for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
    }
    for table, columns in _declared(schema).items():
        if table not in have:
            if not write:
                conn.execute(_statements(schema)[table].replace(
                    "CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE", 1))  # fmt: skip
            continue
        missing = [(name, kind) for name, kind in columns if name not in have[table]]
        if write:
            for name, kind in missing:
                conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")
        elif missing:
            present = [name for name, _ in columns if name in have[table]]
            added = [f"NULL AS {name}" for name, _ in missing]
            conn.execute(
                f"CREATE TEMP VIEW {table} AS SELECT {', '.join(present + added)} FROM main.{table}"
            )


@functools.cache
def _declared(schema: str) -> dict[str, list[tuple[str, str]]]:
    """Every table of ``schema`` with its columns and their declared types, in order."""
    memory = sqlite3.connect(":memory:")
    try:
        memory.executescript(schema)
        tables = [r[0] for r in memory.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {
            t: [(r[1], r[2]) for r in memory.execute(f"PRAGMA table_info({t})")] for t in tables
        }
    finally:
        memory.close()


def _statements(schema: str) -> dict[str, str]:
    """Each table's CREATE statement in ``schema``."""
    out = {}
    for statement in schema.split(";"):
        m = re.match(r"\s*CREATE TABLE IF NOT EXISTS (\w+)", statement)
        if m is not None:
            out[m.group(1)] = statement
    return out


def now() -> str:
    """UTC time as ISO 8601 with seconds."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def termination_name(value: int) -> str:
    """``TERMINATION_HAND_LIMIT`` -> ``hand_limit``."""
    return game_pb2.Termination.Name(value).removeprefix("TERMINATION_").lower()  # type: ignore[arg-type]


#: The stored names of the terminations that count as a result (the rules ended the match:
#: :attr:`~capicua.engine.records.Termination.counted`).
COUNTED = frozenset(t.value for t in Termination if t.counted)
#: What a display is told of a match not played because a bot in it is disqualified.
SKIPPED = "skipped"


@dataclass(frozen=True)
class MatchRow:
    """One finished match, as stored."""

    key: str
    set_key: str
    seq: int
    seed: int
    rotation: int
    seats: tuple[str, ...]
    sides: tuple[str, ...]
    server_match: str | None
    termination: str
    reason: str
    winner_side: int | None
    ranking: tuple[int, ...]
    scores: tuple[int, ...]
    forfeited_side: int | None
    hands: int
    replay_path: str | None
    started: str
    finished: str
    seconds: float


#: A ladder's set is whole once it holds all its matches: a validation set its one match, a
#: rated set one match per rotation of its sides (as many as the sides). Until then the deal
#: its matches share is still being played (SQL, over the rows of one set_key group).
_WHOLE = (
    f"count(*) >= CASE WHEN set_key LIKE '{VALIDATION_SET}%' THEN 1 "
    "ELSE max(json_array_length(sides_json)) END"
)


#: MatchRow fields stored as JSON lists (in columns named ``NAME_json``).
_JSON_FIELDS = frozenset({"seats", "sides", "ranking", "scores"})
_MATCH_NAMES = [f.name for f in fields(MatchRow)]
#: The columns of a :class:`MatchRow`, in its fields' order.
_MATCH_ROW = ", ".join(f"{n}_json" if n in _JSON_FIELDS else n for n in _MATCH_NAMES)
#: The same, of a query's ``matches m``.
_MATCH_ROW_OF_M = ", ".join(f"m.{column}" for column in _MATCH_ROW.split(", "))


def _match_row(row: Sequence[Any]) -> MatchRow:
    values: dict[str, Any] = dict(zip(_MATCH_NAMES, row, strict=True))
    for n in _JSON_FIELDS:
        values[n] = tuple(json.loads(values[n]))
    return MatchRow(**values)


@dataclass(frozen=True)
class HandRow:
    """One finished hand of a stored match."""

    match_key: str
    hand: int
    winner_side: int | None
    blocked: bool
    points: tuple[int, ...]


@dataclass(frozen=True)
class ThinkRow:
    """How long one seat of a stored match took over its decisions (from the replay's
    server-measured think times; a seat the server played has none)."""

    match_key: str
    seat: int
    bot: str
    decisions: int
    total_us: int
    max_us: int


def think_by_seat(replay: replay_pb2.Replay) -> dict[int, tuple[int, int, int]]:
    """seat -> (decisions, total µs, max µs) of the think times in ``replay``."""
    out: dict[int, tuple[int, int, int]] = {}
    for hand in replay.hands:
        for t in hand.think_times:
            event = hand.events[t.event]
            kind = event.WhichOneof("kind")
            assert kind is not None
            seat = getattr(event, kind).seat
            n, total, most = out.get(seat, (0, 0, 0))
            out[seat] = (n + 1, total + t.micros, max(most, t.micros))
    return out


@dataclass(frozen=True)
class FailureRow:
    bot: str
    kind: str
    match_key: str | None
    detail: str
    time: str


@dataclass(frozen=True)
class BotRow:
    name: str
    spec: str
    disqualified: bool
    disqualified_reason: str | None


#: What a directory holding each kind of study holds, and the command that opens it (named
#: when another kind of study is asked of the directory, so that its owner knows where to go).
_KIND_TEXT = {
    EXPERIMENT: ("an experiment's results", "capicua experiment show"),
    TOURNAMENT: ("a tournament's or an SPRT's results", "capicua arena standings"),
    LADDER: ("a ladder's results", "capicua ladder show"),
}


def holds_other(directory: Where, kind: str) -> str:
    """Why ``directory``, which holds a study of ``kind``, is refused to another kind: what
    it holds and the command that opens it."""
    what, command = _KIND_TEXT[kind]
    return f"{directory} holds {what} ({command} {directory} opens them)"


def _mismatch(
    directory: Where, study: str, name: str, stored: Mapping[str, Any], config: Mapping[str, Any]
) -> str:
    """Why a directory refuses a study of its kind whose configuration differs."""
    if study == EXPERIMENT:
        changed = sorted(k for k in set(stored) | set(config) if stored.get(k) != config.get(k))
        return (
            f"{directory} holds a different experiment (it differs in: {', '.join(changed)}); "
            "use another --out, or remove the directory"
        )
    return (
        f"{directory} holds tournament {name!r} with a different configuration; use another "
        "--out directory (or delete this one) to run a changed tournament file"
    )


_MATCH_COLUMNS = (
    "key, set_key, seq, seed, rotation, seats_json, sides_json, server_match, termination, "
    "reason, winner_side, ranking_json, scores_json, forfeited_side, hands, replay_path, "
    "started, finished, seconds, shutout"
)
_MATCH_VALUES = ", ".join("?" * len(_MATCH_COLUMNS.split(",")))
_HAND_COLUMNS = (
    "match_key, hand, winner_side, blocked, points_json, opener_side, points, bonuses, reset, "
    "plays, passes, draws, defers, redeals, choices, options"
)
_HAND_VALUES = ", ".join("?" * len(_HAND_COLUMNS.split(",")))
#: A hand's facts as :class:`HandFacts` orders them (its award last: in ``points_json``).
_HAND_FACTS = (
    "match_key, hand, blocked, winner_side, opener_side, points, bonuses, reset, plays, "
    "passes, draws, defers, redeals, choices, options, points_json"
)


def _ints_text(values: Sequence[int]) -> str:
    """A JSON list of numbers, as ``json.dumps`` writes it, faster (an experiment commits
    thousands of matches a second)."""
    return "[" + ", ".join(map(str, values)) + "]"


@functools.lru_cache(maxsize=256)
def _names_text(names: tuple[str, ...]) -> str:
    """A JSON list of bot names (the same few seatings, over and over)."""
    return json.dumps(list(names))


def ladder_rated(match: MatchRow) -> bool:
    """Whether a ladder's stored match belongs to a rated set (not a validation match, nor
    a private gauntlet's)."""
    return match.set_key.startswith(RATED_KINDS)


class OtherResultsError(CapicuaError):
    """The directory holds another kind of results, or a file that is not a database."""


class ConfigMismatchError(Exception):
    """The output directory holds a different tournament."""


class NewMatches:
    """The rows of finished matches to be recorded together (:meth:`Results.insert`):
    built apart from the database, so that a batch of thousands of short matches is three
    statements."""

    def __init__(self) -> None:
        self.matches: list[tuple[Any, ...]] = []
        self.hands: list[tuple[Any, ...]] = []
        self.think: list[tuple[Any, ...]] = []
        self.replays: list[tuple[str, bytes]] = []  # on PostgreSQL: (name, its bytes)
        self.finished = now()  # the batch is committed at one moment

    def add(
        self,
        *,
        key: str,
        set_key: str,
        seq: int,
        seed: int,
        rotation: int,
        seats: tuple[str, ...],
        sides: tuple[str, ...],
        facts: MatchFacts,
        server_match: str | None,
        replay_path: str | None,
        think: Mapping[int, tuple[int, int, int]],
        started: str,
        seconds: float,
    ) -> None:
        """One finished match: its row, its hands' rows, its seats' think times."""
        # plain tuples, unpacked once: thousands of matches a second come through here
        termination, winner, shutout, scores, hands, ranking, forfeited, reason = facts
        self.matches.append(
            (key, set_key, seq, seed, rotation, _names_text(seats), _names_text(sides),
             server_match, termination, reason, winner, _ints_text(ranking), _ints_text(scores),
             forfeited, len(hands), replay_path, started, self.finished, seconds, shutout)
        )  # fmt: skip
        if think:
            self.think.extend(
                (key, seat, seats[seat], n, total, most)
                for seat, (n, total, most) in sorted(think.items())
            )
        add = self.hands.append
        for hand, blocked, won, opener, points, bonuses, reset, *counts, awarded in hands:
            gained = [0] * len(sides)
            if won is not None:
                gained[won] = awarded or 0
            add((key, hand, won, int(blocked), _ints_text(gained), opener, points,
                 ",".join(bonuses), reset, *counts))  # fmt: skip


_MATCH_FACTS = (
    "SELECT key, seq, termination, winner_side, shutout, scores_json, ranking_json, "
    "forfeited_side, reason FROM matches ORDER BY seq, rotation"
)


def _hand_facts(row: Sequence[Any]) -> HandFacts:
    """A ``hands`` row (:data:`_HAND_FACTS`) as the engine's facts of the hand."""
    _, hand, blocked, winner, opener, points, bonuses, reset = row[:8]
    plays, passes, draws, defers, redeals, choices, options, gained = row[8:]
    return HandFacts(hand, bool(blocked), winner, opener, points,
                     tuple(bonuses.split(",")) if bonuses else (), reset, plays, passes,
                     draws, defers, redeals, choices, options,
                     # the engine's award: with no winner, the hand's points, added
                     # to nobody (the row keeps what each side gained)
                     points if winner is None else json.loads(gained)[winner])  # fmt: skip


def _match_facts(row: Sequence[Any], hands: Sequence[HandFacts]) -> MatchFacts:
    """A ``matches`` row (:data:`_MATCH_FACTS`) and its hands as the engine's facts."""
    _, _, termination, winner, shutout, scores, ranking, forfeited, reason = row
    return MatchFacts(termination, winner, shutout, tuple(json.loads(scores)), tuple(hands),
                      tuple(json.loads(ranking)), forfeited, reason)  # fmt: skip


class LadderTables:
    """What only a server's ladder keeps (part of :class:`Results`): its matches in flight
    on the server, and its entries' versions."""

    conn: Connection

    def hold(self, server_match: str) -> None:
        """A server's ladder created ``server_match``: it is in flight until :meth:`release`
        (what a killed run left in flight is voided at the next start)."""
        self.conn.execute(
            "INSERT OR IGNORE INTO ladder_inflight (server_match) VALUES (?)", (server_match,)
        )

    def release(self, server_matches: Collection[str]) -> None:
        self.conn.executemany(
            "DELETE FROM ladder_inflight WHERE server_match = ?", [(m,) for m in server_matches]
        )

    def held(self) -> list[str]:
        """The server matches created and not yet released (:meth:`hold`)."""
        rows = self.conn.execute("SELECT server_match FROM ladder_inflight ORDER BY rowid")
        return [m for (m,) in rows]

    def add_version(self, name: str, bot: str, version: str, predecessor: str) -> None:
        """Entry ``name`` of a server's ladder is ``version`` of ``bot``, after the entry
        ``predecessor`` ("" for its first)."""
        self.conn.execute(
            "INSERT OR IGNORE INTO ladder_versions (name, bot, version, predecessor) "
            "VALUES (?, ?, ?, ?)",
            (name, bot, version, predecessor),
        )

    def versions(self, name: str) -> list[tuple[str, str]]:
        """Every version of the bot whose entry ``name`` is, in the order they joined:
        (entry, version label); empty for an entry that is no bot's version (a file's)."""
        row = self.conn.execute("SELECT bot FROM ladder_versions WHERE name = ?", (name,))
        found = row.fetchone()
        if found is None:
            return []
        rows = self.conn.execute(
            "SELECT name, version FROM ladder_versions WHERE bot = ? ORDER BY rowid", found
        )
        return [(entry, version) for entry, version in rows]


class Results(LadderTables):
    """The results of one output directory (``results.sqlite`` in it) or of one ladder on
    a PostgreSQL server (:class:`~capicua.common.sqldb.LadderLocation`): created on first
    use, or opened read-only by :meth:`open_existing`. The same methods and the same SQL
    for both (:mod:`capicua.common.sqldb` translates it); :mod:`.store_pg` says what
    differs on PostgreSQL."""

    conn: Connection

    def __init__(self, where: Where, *, read_only: bool = False) -> None:
        self.where = where
        if isinstance(where, LadderLocation):
            self.conn = store_pg.open_reader(where) if read_only else store_pg.open_store(
                where, SCHEMA
            )  # fmt: skip
            return
        directory = where
        if (directory / EXPERIMENT_DB).is_file():
            raise OtherResultsError(f"{holds_other(directory, EXPERIMENT)}; use another --out")
        self.path = directory / DB_NAME
        if read_only:
            self._open_read_only()
            return
        # refused here with the cause and the place: SQLite finds a directory or a file
        # that cannot be written only at the first write ("attempt to write a readonly
        # database"), after the run has started
        prepare_output(directory, journal_files(DB_NAME))
        conn = self.conn = sqlite3.connect(self.path, isolation_level=None)  # explicit BEGINs
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.executescript(SCHEMA)
            _add_missing(conn, SCHEMA, write=True)
        except sqlite3.DatabaseError as e:
            conn.close()
            raise OtherResultsError(
                f"{self.path}: not a readable results database ({e}); nothing was changed"
            ) from None

    @property
    def on_postgres(self) -> bool:
        return isinstance(self.where, LadderLocation)

    def _open_read_only(self) -> None:
        try:
            self.conn = connect_read_only(self.path, SCHEMA)
        except sqlite3.DatabaseError as e:
            raise OtherResultsError(
                f"{self.path}: not a readable results database ({e}); nothing was changed"
            ) from None

    @classmethod
    def open_existing(cls, where: Where) -> Results:
        """Open the results of a finished or running tournament to read them: nothing is
        created or written, so results on read-only media read as well (any write raises
        :class:`sqlite3.OperationalError`; on PostgreSQL, psycopg's error).
        :class:`FileNotFoundError` where there are none."""
        if isinstance(where, Path) and not (where / DB_NAME).is_file():
            raise FileNotFoundError(f"{where}: no arena results here ({DB_NAME} missing)")
        return cls(where, read_only=True)

    @staticmethod
    def missing(where: Where) -> str | None:
        """Why ``where`` holds no results, in a few words (None: it holds some)."""
        if isinstance(where, LadderLocation):
            return store_pg.missing(where)
        if not (where / DB_NAME).is_file():
            return "does not exist" if not where.exists() else f"has no {DB_NAME}"
        return None

    def close(self) -> None:
        self.conn.close()

    def discard(self) -> None:
        """Remove the (closed) database of a run that recorded nothing."""
        if isinstance(self.where, LadderLocation):
            store_pg.discard(self.where, _declared(SCHEMA))
            return
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    # -- tournament ----------------------------------------------------------------------

    def bind(
        self, study: str, name: str, config: dict[str, Any], digest: str, version: str
    ) -> bool:
        """Record the study (``tournament``: a tournament or an SPRT; ``experiment``), or
        check that the directory holds the same one.

        Returns True for a new study, False when resuming; raises
        :class:`OtherResultsError` for another kind of study and
        :class:`ConfigMismatchError` for another one of the same kind."""
        row = self.conn.execute(
            "SELECT name, config_sha256, config_json, study FROM tournament"
        ).fetchone()
        if row is None:
            self.conn.execute(
                "INSERT INTO tournament (id, name, config_json, config_sha256, created, "
                "capicua_version, study) VALUES (1, ?, ?, ?, ?, ?, ?)",
                (name, json.dumps(config, sort_keys=True), digest, now(), version, study),
            )
            return True
        stored = row[3] or TOURNAMENT
        if stored != study:
            raise OtherResultsError(f"{holds_other(self.where, stored)}; use another --out")
        if row[1] != digest:
            raise ConfigMismatchError(
                _mismatch(self.where, study, row[0], json.loads(row[2]), config)
            )
        return False

    def study(self) -> str:
        """What the directory holds: ``tournament`` (a tournament or an SPRT) or
        ``experiment``; raises FileNotFoundError before anything was recorded."""
        row = self.conn.execute("SELECT study FROM tournament").fetchone()
        if row is None:
            raise FileNotFoundError(f"{self.where}: nothing recorded yet")
        return str(row[0] or TOURNAMENT)

    def tournament(self) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT name, config_json, config_sha256, created, capicua_version FROM tournament"
        ).fetchone()
        if row is None:
            raise FileNotFoundError(f"{self.where}: no tournament recorded yet")
        return {
            "name": row[0],
            "config": json.loads(row[1]),
            "config_sha256": row[2],
            "created": row[3],
            "capicua_version": row[4],
        }

    # -- bots ----------------------------------------------------------------------------

    def add_bot(self, name: str, spec: str) -> None:
        self.conn.execute("INSERT OR IGNORE INTO bots (name, spec) VALUES (?, ?)", (name, spec))

    def enter(self, names: Collection[str]) -> None:
        """Record that the latest run's file names these bots and no other (a ladder's
        entries now: the others have left, as ``ladder show`` says without the file)."""
        with self.transaction():
            self.conn.execute("UPDATE bots SET entered = 0")
            self.conn.executemany(
                "UPDATE bots SET entered = 1 WHERE name = ?", [(name,) for name in names]
            )

    def entered(self) -> set[str] | None:
        """The bots the latest run's file named (:meth:`enter`); None when no run recorded
        them (results written before they were)."""
        rows = self.conn.execute("SELECT name, entered FROM bots").fetchall()
        if all(flag is None for _, flag in rows):
            return None
        return {name for name, flag in rows if flag}

    def disqualify(self, name: str, reason: str) -> None:
        self.conn.execute(
            "UPDATE bots SET disqualified = 1, disqualified_reason = ? WHERE name = ?",
            (reason, name),
        )

    def disqualified(self) -> dict[str, str]:
        """Every disqualified bot and why, in the order the bots were added."""
        return {
            b.name: b.disqualified_reason or "no reason recorded"
            for b in self.bots()
            if b.disqualified
        }

    def bots(self) -> list[BotRow]:
        rows = self.conn.execute(
            "SELECT name, spec, disqualified, disqualified_reason FROM bots ORDER BY rowid"
        )
        return [BotRow(r[0], r[1], bool(r[2]), r[3]) for r in rows]

    # -- matches -------------------------------------------------------------------------

    def finished_keys(self) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT key FROM matches")}

    def insert(self, rows: NewMatches) -> None:
        """Add finished matches with their hands and think times (idempotent per key: a
        second record of the same key is ignored, so a resumed run never duplicates). In
        the caller's :meth:`transaction`, which commits them with all of their rows."""
        self.conn.executemany(
            f"INSERT OR IGNORE INTO matches ({_MATCH_COLUMNS}) VALUES ({_MATCH_VALUES})",
            rows.matches,
        )
        self.conn.executemany("INSERT OR IGNORE INTO think VALUES (?, ?, ?, ?, ?, ?)", rows.think)
        self.conn.executemany(
            f"INSERT OR IGNORE INTO hands ({_HAND_COLUMNS}) VALUES ({_HAND_VALUES})", rows.hands
        )
        if rows.replays:
            self.conn.executemany(
                "INSERT OR IGNORE INTO replays (path, replay) VALUES (?, ?)", rows.replays
            )

    def keep_replay(self, key: str, replay: replay_pb2.Replay, rows: NewMatches) -> str:
        """Keep the replay of the finished match ``key``, which ``rows`` is to record;
        returns its name (the match row's ``replay_path``). A directory's is a file, written
        now (atomically): the match's transaction comes after it. On PostgreSQL its bytes
        join ``rows``, written in the match's transaction: never one without the other."""
        if isinstance(self.where, Path):
            return write_match_replay(self.where, key, replay)
        name = replay_name(key)
        rows.replays.append((name, replay_bytes(replay, name)))
        return name

    def replay(self, match: MatchRow) -> Replay:
        """The replay of a stored match: :class:`~capicua.wire.codec.ReplayError` (one line,
        beginning with :meth:`replay_source`) when none was kept or it cannot be read. The
        one reading of a match's replay, wherever the results are."""
        source = self.replay_source(match)
        if match.replay_path is None:
            raise ReplayError(f"{source}: no replay was kept")
        if isinstance(self.where, Path):
            return read_replay(self.where / match.replay_path)
        row = self.conn.execute(
            "SELECT replay FROM replays WHERE path = ?", (match.replay_path,)
        ).fetchone()
        if row is None:
            raise ReplayError(f"{source}: cannot read: not in the store")
        return replay_from_bytes(row[0], match.replay_path, source)

    def replay_source(self, match: MatchRow) -> str:
        """How :meth:`replay`'s errors name the replay of ``match``."""
        name = match.replay_path or match.key
        if isinstance(self.where, Path):
            return f"replay {self.where / name}"
        return f"replay {name} of {self.where}"

    def facts(self, games: int) -> dict[int, list[MatchFacts]]:
        """The engine's facts of every complete set of ``games`` matches (an experiment's
        pairs): set number -> the facts of each match, by rotation."""
        by_key: dict[str, list[HandFacts]] = {}
        for row in self.conn.execute(f"SELECT {_HAND_FACTS} FROM hands ORDER BY match_key, hand"):
            by_key.setdefault(row[0], []).append(_hand_facts(row))
        sets: dict[int, list[MatchFacts]] = {}
        for row in self.conn.execute(_MATCH_FACTS):
            sets.setdefault(row[1], []).append(_match_facts(row, by_key.get(row[0], [])))
        return {seq: matches for seq, matches in sets.items() if len(matches) == games}

    def complete_sets(self, games: int) -> int:
        """How many sets hold all their ``games`` matches."""
        row = self.conn.execute(
            "SELECT count(*) FROM (SELECT seq FROM matches GROUP BY seq HAVING count(*) = ?) "
            "AS complete",
            (games,),
        ).fetchone()
        return int(row[0])

    def matches(self, *, from_seq: int = 0) -> list[MatchRow]:
        """Every finished match (of the sets from ``from_seq`` on), in schedule order."""
        rows = self.conn.execute(
            f"SELECT {_MATCH_ROW} FROM matches WHERE seq >= ? ORDER BY seq, rotation", (from_seq,)
        )
        return [_match_row(r) for r in rows]

    def matches_after(self, mark: int) -> tuple[list[MatchRow], int]:
        """The matches committed after ``mark`` (0: all), in the order they were committed,
        and the mark to ask from next time: what a run that follows its results as they
        grow reads of them, each match once. (A run's own results: ``rowid`` is the
        table's, never a reader's view of older results.)"""
        rows = self.conn.execute(
            f"SELECT rowid, {_MATCH_ROW} FROM matches WHERE rowid > ? ORDER BY rowid", (mark,)
        ).fetchall()
        return [_match_row(r[1:]) for r in rows], int(rows[-1][0]) if rows else mark

    def mark(self) -> int:
        """The mark of the last match committed so far (:meth:`matches_after`): 0 for none."""
        return int(self.conn.execute("SELECT coalesce(max(rowid), 0) FROM matches").fetchone()[0])

    def whole_sets_page(self, after: int, limit: int) -> list[tuple[int, MatchRow]]:
        """The matches of at most ``limit`` of a ladder's whole sets (:data:`_WHOLE`) whose
        last match was committed after the mark ``after``, each with that mark (its
        set's), by set mark and rotation. A set is read whole once its last match is
        stored, so a reader paging by set marks misses none, however its matches were
        interleaved with other sets'. Read a window of marks at a time (a set's matches
        are stored close together): a page costs the same however many sets follow."""
        end, window = self.mark(), 8 * limit
        out: list[tuple[int, MatchRow]] = []
        marks: set[int] = set()
        while after < end and len(marks) < limit:
            for mark, m in self._whole_sets_between(after, after + window):
                if mark not in marks and len(marks) == limit:
                    return out
                marks.add(mark)
                out.append((mark, m))
            after += window
        return out

    def _whole_sets_between(self, lo: int, hi: int) -> list[tuple[int, MatchRow]]:
        """The matches of the whole sets whose last match's mark is in (lo, hi]."""
        rows = self.conn.execute(
            f"WITH whole AS (SELECT set_key, max(rowid) AS mark FROM matches "
            f"WHERE set_key IN (SELECT set_key FROM matches WHERE rowid > ? AND rowid <= ?) "
            f"GROUP BY set_key HAVING {_WHOLE} AND max(rowid) > ? AND max(rowid) <= ?) "
            f"SELECT whole.mark, {_MATCH_ROW_OF_M} FROM whole JOIN matches m "
            f"ON m.set_key = whole.set_key ORDER BY whole.mark, m.rotation",
            (lo, hi, lo, hi),
        )
        return [(int(r[0]), _match_row(r[1:])) for r in rows]

    def whole_sets(self, set_keys: Collection[str]) -> set[str]:
        """Which of a ladder's ``set_keys`` are whole (:data:`_WHOLE`)."""
        marks = ", ".join("?" * len(set_keys))
        rows = self.conn.execute(
            f"SELECT set_key FROM matches WHERE set_key IN ({marks}) GROUP BY set_key "
            f"HAVING {_WHOLE}",
            tuple(set_keys),
        )
        return {r[0] for r in rows}

    def recent_matches(self, bot: str, limit: int) -> list[MatchRow]:
        """The last ``limit`` matches ``bot`` played in, the latest first."""
        rows = self.conn.execute(
            f"SELECT {_MATCH_ROW} FROM matches WHERE instr(sides_json, ?) > 0 "
            "ORDER BY rowid DESC LIMIT ?",
            # the name as JSON quotes it: "e1" is no substring of ["e10", ...]
            (json.dumps(bot), limit),
        )
        return [m for m in map(_match_row, rows) if bot in m.sides]

    def match(self, key: str) -> MatchRow | None:
        """The finished match ``key`` (None: no such match is stored)."""
        row = self.conn.execute(f"SELECT {_MATCH_ROW} FROM matches WHERE key = ?", (key,))
        found = row.fetchone()
        return None if found is None else _match_row(found)

    def hands_of(self, keys: Sequence[str]) -> list[HandRow]:
        """The hands of the matches ``keys``, by match and hand."""
        marks = ", ".join("?" * len(keys))
        rows = self.conn.execute(
            "SELECT match_key, hand, winner_side, blocked, points_json FROM hands "
            f"WHERE match_key IN ({marks}) ORDER BY match_key, hand",
            tuple(keys),
        )
        return [HandRow(r[0], r[1], r[2], bool(r[3]), tuple(json.loads(r[4]))) for r in rows]

    def think_totals(self) -> dict[str, tuple[int, int]]:
        """bot -> (decisions, total think µs) over every stored match, summed in SQL."""
        rows = self.conn.execute(
            "SELECT bot, sum(decisions), sum(total_us) FROM think GROUP BY bot"
        )
        return {r[0]: (int(r[1]), int(r[2])) for r in rows}

    def failure_counts(self) -> dict[str, dict[str, int]]:
        """bot -> failure kind -> how many were recorded, counted in SQL."""
        out: dict[str, dict[str, int]] = {}
        for bot, kind, n in self.conn.execute(
            "SELECT bot, kind, count(*) FROM failures GROUP BY bot, kind"
        ):
            out.setdefault(bot, {})[kind] = int(n)
        return out

    def rated_matches(self) -> list[MatchRow]:
        """The matches that ratings count, in schedule order: every one, but a ladder's
        validation matches (:func:`ladder_rated`). The one choice of what is rated, for the
        ladder's table and the arena's standings of the same directory alike."""
        return self.rated_of(self.matches())

    def rated_of(self, matches: list[MatchRow]) -> list[MatchRow]:
        """Those of ``matches`` (read from this directory) that ratings count
        (:meth:`rated_matches`), for a reader that holds them already."""
        if self._kind() != LADDER:
            return matches
        return [m for m in matches if ladder_rated(m)]

    def _kind(self) -> str | None:
        try:
            return self.study()
        except FileNotFoundError:
            return None

    def hands(self) -> list[HandRow]:
        rows = self.conn.execute(
            "SELECT match_key, hand, winner_side, blocked, points_json FROM hands "
            "ORDER BY match_key, hand"
        )
        return [HandRow(r[0], r[1], r[2], bool(r[3]), tuple(json.loads(r[4]))) for r in rows]

    def think(self) -> list[ThinkRow]:
        rows = self.conn.execute(
            "SELECT match_key, seat, bot, decisions, total_us, max_us FROM think "
            "ORDER BY match_key, seat"
        )
        return [ThinkRow(*r) for r in rows]

    # -- failures and interrupts ---------------------------------------------------------

    def record_failure(
        self, bot: str, kind: str, detail: str, match_key: str | None = None
    ) -> None:
        if kind not in FAILURE_KINDS:
            raise ValueError(f"unknown failure kind {kind!r}")
        self.conn.execute(
            "INSERT INTO failures (bot, kind, match_key, detail, time) VALUES (?, ?, ?, ?, ?)",
            (bot, kind, match_key, detail, now()),
        )

    def failures(self) -> list[FailureRow]:
        rows = self.conn.execute(
            "SELECT bot, kind, match_key, detail, time FROM failures ORDER BY id"
        )
        return [FailureRow(*r) for r in rows]

    def record_abandoned(self, match_key: str, reason: str) -> None:
        self.conn.execute(
            "INSERT INTO abandoned (match_key, reason, time) VALUES (?, ?, ?)",
            (match_key, reason, now()),
        )

    def abandoned(self) -> list[tuple[str, str, str]]:
        return list(self.conn.execute("SELECT match_key, reason, time FROM abandoned ORDER BY id"))

    def transaction(self) -> Transaction:
        """One transaction: the matches recorded inside are committed together, or none.
        Writers wait for each other (on PostgreSQL too: :mod:`.store_pg`)."""
        lock = store_pg.writer_key(self.where) if isinstance(self.where, LadderLocation) else None
        return Transaction(self.conn, lock)

    def read_snapshot(self) -> None:
        """Begin a read transaction that sees the store as it is now, whatever is
        committed meanwhile, until the connection closes (SQLite's WAL gives a reader that;
        PostgreSQL's default isolation sees each statement's own moment)."""
        if isinstance(self.where, LadderLocation):
            self.conn.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        else:
            self.conn.execute("BEGIN")


def replay_name(key: str) -> str:
    """The name of match ``key``'s replay: a file relative to the results directory (or,
    on PostgreSQL, its row's key in ``replays``)."""
    return f"{REPLAY_DIR}/{key}.binpb.gz"


def write_match_replay(directory: Path, key: str, replay: replay_pb2.Replay) -> str:
    """Write a match's replay as ``replays/KEY.binpb.gz`` under ``directory`` (atomically):
    the message's protobuf bytes as the server served them (or as the in-process backend
    built them, the same message), gzipped, with no round trip through the engine's values
    or JSON. Returns the path relative to ``directory``. (Directories written before keep
    ``replays/KEY.json.gz``: the row names its file and :func:`read_replay` reads both.)"""
    relative = replay_name(key)
    (directory / REPLAY_DIR).mkdir(parents=True, exist_ok=True)
    write_replay(directory / relative, replay)
    return relative
