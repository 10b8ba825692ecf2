"""Bad places and damaged files give one clear line and lose nothing.

- an ``--out`` that cannot be written (a tournament, an SPRT, an experiment): one line naming
  the directory and the cause, exit 2, nothing created;
- results on read-only media (a copy without write permission): the reading commands work
  and write nothing; a journal SQLite cannot read there is named, not skipped;
- ``capicua serve --data A/B`` creates B, never A;
- a ``.json.gz`` replay that is not gzip says so.

Read-only is made with chmod, which does not stop root (CAP_DAC_OVERRIDE). Where the tests
run as root, the commands run in a subprocess under ``setpriv`` without the capabilities
that bypass file modes; where that is not possible either, a probe write succeeds and the
tests that need read-only places are skipped, saying why.
"""

from __future__ import annotations

import concurrent.futures
import gzip
import json
import multiprocessing
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from capicua.arena.store import DB_NAME, Results
from capicua.cli import main
from tests.arenakit import play_results, tournament
from tests.clirunner import cli_runner
from tests.serverkit import server_process

PY = sys.executable
#: The capabilities that let root ignore file modes (and chmod them back).
_BYPASS = "-dac_override,-dac_read_search,-fowner"
#: Run a command as this process's user, but bound by file modes even as root.
UNPRIVILEGED = (
    ["setpriv", "--bounding-set", _BYPASS, "--inh-caps", _BYPASS]
    if os.geteuid() == 0 and shutil.which("setpriv")
    else []
)
FAST_SPRT = ["--base", "random", "--candidate", "easy", "--rules", "iq-1v1", "--set", "target=30"]
FAST_EXPERIMENT = ["--base", "block", "--candidate-set", "target=50", "--matches", "4"]


def capicua(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real program in a subprocess, bound by file modes (see UNPRIVILEGED)."""
    env = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}
    return subprocess.run(
        [*UNPRIVILEGED, PY, "-m", "capicua", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def errors(stderr: str) -> list[str]:
    """The error lines of stderr (progress lines may come before); never a traceback."""
    assert "Traceback" not in stderr, stderr
    return [line for line in stderr.splitlines() if line.startswith("capicua: error: ")]


def make_read_only(root: Path) -> None:
    """chmod -R a-w."""
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)


def make_writable(root: Path) -> None:
    """chmod -R u+w (so that pytest can remove the directory afterwards)."""
    for path in [root, *root.rglob("*")] if root.exists() else []:
        path.chmod(path.stat().st_mode | 0o200)


def listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    """An empty directory that cannot be written (mode 555), or a skip when chmod does not
    stop writes here (root without setpriv, a file system that ignores modes)."""
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    probe = subprocess.run(
        [*UNPRIVILEGED, PY, "-c", "import sys; open(sys.argv[1], 'w').close()", str(ro / "p")],
        capture_output=True,
        check=False,
    )
    if probe.returncode == 0:
        ro.chmod(0o755)
        pytest.skip("a chmod 555 directory is still writable here (running as root without "
                    "setpriv, or a file system that ignores modes)")  # fmt: skip
    yield ro
    make_writable(tmp_path)


# -- 1. an --out that cannot be written -------------------------------------------------------

RUNS = {
    "experiment": ["experiment", "ab", *FAST_EXPERIMENT],
    "arena run": ["arena", "run", "t.toml"],
    "arena sprt": ["arena", "sprt", *FAST_SPRT],
}


@pytest.mark.parametrize("out", ["ro/x", "ro"])
@pytest.mark.parametrize("command", list(RUNS))
def test_an_unwritable_out_is_one_line_and_creates_nothing(
    read_only: Path, command: str, out: str
) -> None:
    cwd = read_only.parent
    (cwd / "t.toml").write_text(
        'name = "t"\npreset = "block"\ngames = 1\n[bots]\na = "builtin:random"\n'
        'b = "builtin:easy"\n'
    )
    done = capicua(*RUNS[command], "--out", out, cwd=cwd)
    assert done.returncode == 2, done.stderr
    # the arena names the directory as it resolved it (absolute): both name `out`
    [line] = errors(done.stderr)
    assert re.fullmatch(
        rf"capicua: error: cannot write results to (\S*/)?{out}: Permission denied", line
    ), line
    assert listing(read_only) == []


def test_a_deep_out_names_the_directory_it_could_not_create(read_only: Path) -> None:
    done = capicua("experiment", "ab", *FAST_EXPERIMENT, "--out", "ro/a/b", cwd=read_only.parent)
    assert done.returncode == 2
    assert errors(done.stderr) == [
        "capicua: error: cannot write results to ro/a/b: cannot create ro/a: Permission denied"
    ]
    assert listing(read_only) == []


def test_a_read_only_database_in_a_writable_directory_is_named(
    read_only: Path, experiment_dir: Path
) -> None:
    """The directory can be written, the database in it cannot: SQLite would only say
    "attempt to write a readonly database" at the first write; the file is named at once."""
    copy = read_only.parent / "copy"
    shutil.copytree(experiment_dir, copy)
    (copy / "results.sqlite").chmod(0o444)
    done = capicua("experiment", "ab", *FAST_EXPERIMENT, "--out", "copy", cwd=read_only.parent)
    assert done.returncode == 2
    assert errors(done.stderr) == [
        "capicua: error: cannot write results to copy: results.sqlite: Permission denied"
    ]


# -- 2. results on read-only media -----------------------------------------------------------


@pytest.fixture(scope="module")
def experiment_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("experiment") / "exp"
    done = cli_runner().invoke(
        main, ["experiment", "ab", *FAST_EXPERIMENT, "--out", str(out), "--quiet"]
    )
    assert done.exit_code == 0, (done.output, done.stderr)
    return out


@pytest.fixture(scope="module")
def arena_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("arena") / "club"
    play_results(out, tournament(name="club", games=1)).close()
    return out


def test_read_only_results_read_as_they_are(
    read_only: Path, experiment_dir: Path, arena_dir: Path
) -> None:
    """show, standings and the reports (written elsewhere) of read-only copies say what the
    originals say, and put no file (journal, report) in them."""
    where = read_only.parent
    shutil.copytree(experiment_dir, where / "exp")
    shutil.copytree(arena_dir, where / "club")
    # an experiment played over the protocol records who was disqualified in its results:
    # read from a read-only copy too
    results = Results(where / "exp")
    results.add_bot("easy", "builtin:easy")
    results.disqualify("easy", "its process failed 3 times")
    results.close()
    before = {d: listing(where / d) for d in ("exp", "club")}
    for d in before:
        make_read_only(where / d)

    shown = capicua("experiment", "show", "exp", "--json", cwd=where)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout.splitlines()[-1])
    assert data["pairs"] == 4
    assert data["disqualified"] == {"easy": "its process failed 3 times"}

    report = capicua("experiment", "report", "exp", "--out", str(where / "e.html"), cwd=where)
    assert report.returncode == 0, report.stderr
    assert (where / "e.html").stat().st_size > 0

    original = cli_runner().invoke(main, ["arena", "standings", str(arena_dir), "--json"])
    standings = capicua("arena", "standings", "club", "--json", cwd=where)
    assert standings.returncode == 0, standings.stderr
    assert json.loads(standings.stdout) == json.loads(original.stdout)

    arena_report = capicua("arena", "report", "club", "--out", str(where / "a.html"), cwd=where)
    assert arena_report.returncode == 0, arena_report.stderr
    assert (where / "a.html").stat().st_size > 0

    # the report's default place is in the directory: the cause, and where else to write
    for command in (["arena", "report", "club"], ["experiment", "report", "exp"]):
        refused = capicua(*command, cwd=where)
        assert refused.returncode == 2
        name = command[-1]
        assert errors(refused.stderr) == [
            f"capicua: error: cannot write the report to {name}/report.html: Permission "
            "denied (write it elsewhere with --out FILE)"
        ]
    # and a rerun, which would write, names the cause
    rerun = capicua("experiment", "ab", *FAST_EXPERIMENT, "--out", "exp", cwd=where)
    assert errors(rerun.stderr) == [
        "capicua: error: cannot write results to exp: Permission denied"
    ]
    assert {d: listing(where / d) for d in before} == before


def _killed_run(source: Path, where: Path) -> None:
    """``where``: a copy of ``source`` taken while a writer had committed a change that is
    still only in the journal (``-wal``, with its ``-shm``), as a run killed then leaves it."""
    shutil.copytree(source, where.with_name("live"))
    live = sqlite3.connect(where.with_name("live") / DB_NAME, isolation_level=None)
    try:
        live.execute("PRAGMA wal_autocheckpoint=0")  # keep the change in the journal
        live.execute(
            "UPDATE bots SET disqualified = 1, disqualified_reason = 'late' WHERE name = 'easy'"
        )
        shutil.copytree(where.with_name("live"), where)
    finally:
        live.close()
    assert (where / f"{DB_NAME}-wal").stat().st_size > 0


def test_a_journal_not_yet_merged_is_read_or_named(read_only: Path, arena_dir: Path) -> None:
    where = read_only.parent
    _killed_run(arena_dir, where / "killed")
    shutil.copytree(where / "killed", where / "no-shm")
    (where / "no-shm" / f"{DB_NAME}-shm").unlink()
    make_read_only(where / "killed")
    make_read_only(where / "no-shm")

    # with its -shm, SQLite reads the journal in place: the change is there
    done = capicua("arena", "standings", "killed", "--json", cwd=where)
    assert done.returncode == 0, done.stderr
    assert "late" in done.stdout
    # without it, reading it would need a write: said, rather than showing less
    done = capicua("arena", "standings", "no-shm", cwd=where)
    assert done.returncode == 2
    [line] = errors(done.stderr)
    assert line.startswith(
        f"capicua: error: cannot read no-shm/{DB_NAME}: its journal {DB_NAME}-wal holds "
        "results not yet merged into it"
    ), line
    assert "copy the directory somewhere writable" in line


def test_an_unreadable_database_names_the_cause(read_only: Path, arena_dir: Path) -> None:
    where = read_only.parent
    shutil.copytree(arena_dir, where / "club")
    (where / "club" / DB_NAME).chmod(0o000)
    done = capicua("arena", "standings", "club", cwd=where)
    assert done.returncode == 2
    assert errors(done.stderr) == [f"capicua: error: cannot read club/{DB_NAME}: Permission denied"]


def test_reading_writes_nothing_even_where_it_could(tmp_path: Path, arena_dir: Path) -> None:
    """open_existing in a writable directory: every write is refused, and no journal file is
    left behind (a mode=ro connection would leave -wal and -shm)."""
    club = tmp_path / "club"
    shutil.copytree(arena_dir, club)
    before = listing(club)
    results = Results.open_existing(club)
    try:
        assert results.matches()
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            results.add_bot("intruder", "builtin:random")
    finally:
        results.close()
    assert listing(club) == before


def _open_and_close(club: Path, times: int) -> list[str]:
    """Open ``club``'s results to read, read them and close them ``times`` times: the
    errors, as text."""
    errors: list[str] = []
    for _ in range(times):
        try:
            results = Results.open_existing(club)
            try:
                results.matches_after(0)
            finally:
                results.close()
        except Exception as e:  # noqa: BLE001 - any error is the finding
            errors.append(repr(e))
    return errors


def test_readers_opening_and_closing_at_once_all_read(tmp_path: Path, arena_dir: Path) -> None:
    """Several processes reading the same results at once, as a leaderboard's requests and
    a `ladder show` do: whichever closes last removes the WAL journal, at any moment of
    another's open, and no open fails for it (one did, when the journal vanished between
    asking whether it existed and asking its size)."""
    club = tmp_path / "club"
    shutil.copytree(arena_dir, club)
    with concurrent.futures.ProcessPoolExecutor(
        3, mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        found = list(pool.map(_open_and_close, [club] * 6, [250] * 6))
    assert [e for errors in found for e in errors] == []
    assert listing(club) == listing(arena_dir)  # the last to close removed the journal


def test_results_of_an_older_version_read_without_being_changed(
    tmp_path: Path, arena_dir: Path
) -> None:
    """A database without a table this version added (``think``) reads as empty there, as
    it does when a writer opens it and adds the table, but the file is not changed."""
    club = tmp_path / "club"
    shutil.copytree(arena_dir, club)
    with sqlite3.connect(club / DB_NAME) as conn:
        conn.execute("DROP TABLE think")
    conn.close()
    raw = (club / DB_NAME).read_bytes()
    results = Results.open_existing(club)
    try:
        assert results.think() == [] and results.matches()
    finally:
        results.close()
    assert (club / DB_NAME).read_bytes() == raw


# -- 3. capicua serve --data -----------------------------------------------------------------


def test_serve_data_with_a_missing_parent_is_one_line(tmp_path: Path) -> None:
    data = tmp_path / "missing" / "deep" / "data"
    done = cli_runner().invoke(main, ["serve", "--port", "0", "--data", str(data)])
    assert done.exit_code == 2
    assert done.stderr == (
        f"capicua: error: --data {data}: cannot open the store: its parent {data.parent} "
        "does not exist (only the last directory of --data is created; create the parent "
        "first)\n"
    )
    assert not (tmp_path / "missing").exists()


def test_serve_creates_the_last_directory_of_data(tmp_path: Path) -> None:
    data = tmp_path / "new"
    with server_process(["--data", str(data)], tmp_path / "logs"):
        assert (data / "capicua.sqlite3").is_file()


def test_serve_help_says_what_data_creates() -> None:
    done = cli_runner().invoke(main, ["serve", "--help"])
    text = " ".join(done.stdout.split())  # as one line, whatever the terminal's width
    assert "Created if missing, but not its parent (like mkdir without -p)" in text


# -- 4. damaged replays ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        # `head -c 300 /dev/urandom`, seeded: it starts neither like gzip nor like JSON
        (random.Random(0).randbytes(300), "not a gzip file"),
        (b"hello, not a replay\n", "not a gzip file"),
        (gzip.compress(b'{"format_version": 1}' * 50)[:40], "corrupt or truncated gzip data"),
    ],
    ids=["random bytes", "text", "truncated gzip"],
)
@pytest.mark.parametrize("command", ["verify", "show"])
def test_a_damaged_gzip_replay_says_what_it_is(
    tmp_path: Path, command: str, content: bytes, message: str
) -> None:
    path = tmp_path / "x.json.gz"
    path.write_bytes(content)
    done = cli_runner().invoke(main, ["replay", command, str(path)])
    assert done.exit_code == 2, done.output
    assert done.stderr.startswith(f"capicua: error: replay {path}: {message} ("), done.stderr
    assert done.stderr.count("\n") == 1 and "UTF-8" not in done.stderr
