"""A ladder's results in PostgreSQL (``postgresql://USER@HOST/DB#LADDER_ID``: the arena's
results store in the schema ``ladder_ID``), on a real server the suite starts
(tests/pgkit.py; skipped with its reason where Debian's ``postgresql`` is absent, failing
under CI). The ladders are real runs of built-in entries in process, compared with the same
runs into a directory; the leaderboard is a real ``ladder web`` process read over HTTP."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from capicua.arena.ladder import actions, control
from capicua.arena.ladder.control import CHALLENGE
from capicua.arena.ladder.hosted import directory_of, workdir_of
from capicua.arena.store import CHALLENGE_SET, Results, Where, location
from capicua.common.sqldb import LadderLocation, connect_postgres
from tests.clientkit import Proc, capicua_args, until
from tests.test_arena_run import EVENT_BOUND_S
from tests.test_arena_standings import run
from tests.test_ladder import SMALL, ladder_cli, write_ladder
from tests.test_ladder_web import command

#: What two runs of the same ladder store alike (not when: started, finished, seconds).
SAME = ("key", "set_key", "seq", "seed", "rotation", "seats", "sides", "termination",
        "winner_side", "ranking", "scores", "forfeited_side", "hands")  # fmt: skip


def ok(*args: str) -> str:
    r = ladder_cli(*args)
    assert r.exit_code == 0, (args, r.output, r.stderr)
    return str(r.output)


def played(where: Where) -> list[tuple[Any, ...]]:
    """Every stored match in the order it was committed (what two runs store alike), and
    none if nothing is stored yet."""
    try:
        results = Results.open_existing(where)
    except FileNotFoundError:
        return []
    try:
        matches, _ = results.matches_after(0)
    finally:
        results.close()
    return [tuple(getattr(m, name) for name in SAME) for m in matches]


def shown(where: Where) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ok("show", str(where), "--json"))
    return data


def schemas(url: str) -> list[str]:
    """The ladders' schemas on the server (what was written there)."""
    conn = connect_postgres(url)
    try:
        rows = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'ladder%' ORDER BY nspname"
        )
        return [name for (name,) in rows]
    finally:
        conn.close()


@pytest.fixture
def small(postgres_url: str, tmp_path: Path) -> tuple[Path, LadderLocation]:
    """The small ladder's file, and its location in a fresh database."""
    where = location(f"{postgres_url}#small")
    assert isinstance(where, LadderLocation)
    return write_ladder(tmp_path / "l.toml", SMALL), where


def test_a_ladder_in_postgresql_plays_and_resumes_as_one_in_a_directory(
    small: tuple[Path, LadderLocation], tmp_path: Path
) -> None:
    f, pg = small
    directory = tmp_path / "out"
    for where in (directory, pg):
        ok("run", str(f), "--out", str(where), "--matches", "20", "--quiet")
    first = played(pg)
    assert len(first) >= 20 and first == played(directory)  # the same matches, in order
    assert shown(pg) == shown(directory)  # the same table: ratings, bands, counts
    for where in (directory, pg):  # resumed: more matches, the matchmaker going on
        r = ladder_cli("run", str(f), "--out", str(where), "--matches", "40", "--quiet")
        assert r.exit_code == 0, r.output + r.stderr
        assert f"{len(first)} kept from an earlier run" in r.stderr
    again = played(pg)
    assert len(again) >= 40 and again[: len(first)] == first  # continued, none twice
    assert len({m[0] for m in again}) == len(again)
    assert again == played(directory) and shown(pg) == shown(directory)
    standings = [run_json(["arena", "standings", str(w), "--json"]) for w in (pg, directory)]
    assert standings[0] == standings[1]
    page = tmp_path / "report.html"
    r = run("arena", "report", str(pg), "--out", str(page))
    assert r.exit_code == 0, r.stderr
    # every match's replay was kept with it, and the report reads them all back
    assert page.read_text().count('"k":"') == len(again)


def run_json(args: list[str]) -> dict[str, Any]:
    r = run(*args)
    assert r.exit_code == 0, r.stderr
    data: dict[str, Any] = json.loads(r.stdout.strip().splitlines()[-1])
    return data


@pytest.fixture
def served(small: tuple[Path, LadderLocation], tmp_path: Path) -> Iterator[tuple[str, str]]:
    """``ladder web`` serving the same ladder from PostgreSQL and from a directory: their
    URLs."""
    f, pg = small
    for where in (tmp_path / "out", pg):
        ok("run", str(f), "--out", str(where), "--matches", "24", "--quiet")
    with (
        command(["ladder", "web", str(pg), "--http", "0"], tmp_path) as (_, pg_url),
        command(["ladder", "web", "out", "--http", "0"], tmp_path) as (_, dir_url),
    ):
        yield pg_url, dir_url


def test_the_leaderboard_serves_a_ladder_in_postgresql_and_its_replays(
    served: tuple[str, str], small: tuple[Path, LadderLocation]
) -> None:
    pg_url, dir_url = served
    table = httpx.get(f"{pg_url}api/ladders/small").json()
    assert table == httpx.get(f"{dir_url}api/ladders/small").json()
    assert table.pop("slug") == "small" and table.pop("live") == []
    for e in table["entries"]:
        assert e.pop("playing_now") is False
    assert table == shown(small[1])
    page = "api/ladders/small/matches?limit=1000"
    matches, theirs = (httpx.get(url + page).json() for url in (pg_url, dir_url))
    assert matches["next"] == theirs["next"] and len(matches["matches"]) >= 24
    when = ("started", "finished", "seconds")
    assert [{k: v for k, v in m.items() if k not in when} for m in matches["matches"]] == [
        {k: v for k, v in m.items() if k not in when} for m in theirs["matches"]
    ]  # the same sets in the same order, with the same marks
    for m in matches["matches"][:3] + matches["matches"][-3:]:
        mine = httpx.get(f"{pg_url}ladders/small/{m['replay']}")
        assert mine.status_code == 200, mine.text
        assert mine.text == httpx.get(f"{dir_url}ladders/small/{m['replay']}").text
    assert httpx.get(f"{pg_url}ladders/small/matches/L999999-r0").status_code == 404


def test_control_written_by_one_process_is_read_by_the_run_of_another(
    small: tuple[Path, LadderLocation], tmp_path: Path
) -> None:
    f, pg = small
    playing = Proc(capicua_args("ladder", "run", str(f), "--out", str(pg), "--quiet"), cwd=tmp_path)
    try:
        asyncio.run(until(lambda: len(played(pg)) >= 8, EVENT_BOUND_S, "a few sets"))
        twice = ladder_cli("run", str(f), "--out", str(pg), "--matches", "100", "--quiet")
        assert twice.exit_code == 2 and len(twice.stderr.splitlines()) == 1, twice.stderr
        holder = f"#small is in use by another run (capicua pid {playing.proc.pid})"
        assert holder in twice.stderr, twice.stderr
        assert ok("challenge", str(pg), "random", "medium", "--sets", "2").startswith("random")

        def challenged() -> int:
            return sum(m[1].startswith(CHALLENGE_SET) for m in played(pg))

        asyncio.run(until(lambda: challenged() >= 4, EVENT_BOUND_S, "the challenge's sets"))
        assert ok("pause", str(pg)) == "the ladder is paused\n"
        code = asyncio.run(playing.wait(EVENT_BOUND_S))  # paused: the run ends
    finally:
        playing.kill()
    assert code == 0, playing.report()
    assert "; the ladder is paused" in playing.stderr, playing.report()
    sets = {m[1]: m[6] for m in played(pg) if m[1].startswith(CHALLENGE_SET)}
    assert len(sets) == 2 and all(set(s) == {"random", "medium"} for s in sets.values())
    assert ok("resume", str(pg)) == "the ladder plays again\n"


def test_a_control_action_waits_for_another_writer_as_on_sqlite(
    small: tuple[Path, LadderLocation],
) -> None:
    """Two writers, two connections: an action's checks see what a writer that went first
    committed (the cap on open challenges holds), however the two interleave."""
    f, pg = small
    ok("run", str(f), "--out", str(pg), "--matches", "6", "--quiet")
    first = Results(pg)
    refused: list[str] = []

    def second() -> None:
        with actions.opened(pg) as results:
            try:
                actions.challenge(results, "random", "easy", 1)
            except actions.ControlError as e:
                refused.append(str(e))

    watcher = connect_postgres(pg.url)
    thread = threading.Thread(target=second)
    try:
        with first.transaction():
            for _ in range(actions.MAX_OPEN_REQUESTS):
                control.log(first, CHALLENGE, "random", {"opponents": ["medium"], "sets": 1})
            thread.start()

            def waiting() -> bool:
                row = watcher.execute(
                    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                ).fetchone()
                return bool(row[0])

            asyncio.run(until(waiting, EVENT_BOUND_S, "the second writer to wait"))
        thread.join(EVENT_BOUND_S)
    finally:
        first.close()
        watcher.close()
    assert refused == ["random has 3 open challenges, the most it may have; ask again when one "
                       "is played"]  # fmt: skip


def test_bad_locations_are_one_line_and_write_nothing(
    small: tuple[Path, LadderLocation], postgres_url: str, tmp_path: Path
) -> None:
    f, _ = small
    down = f"postgresql://me:secret@/db?host={tmp_path}#small"  # no server on that socket
    nope = f"{postgres_url}#nope"
    remote = write_ladder(
        tmp_path / "remote.toml", {**SMALL, "entries": {**SMALL["entries"], "mine": "remote:me"}}
    )
    cases = [
        (("show", down), "cannot connect"),
        (("run", str(f), "--out", down, "--matches", "2"), "cannot connect"),
        (("pause", down), "cannot connect"),
        (("show", postgres_url), "name the ladder after the URL"),
        (("show", f"{postgres_url}#Small_Ladder"), "'Small_Ladder' is no ladder id"),
        (("show", nope), f"{nope}: no ladder results here (no such ladder)"),
        (("web", nope, "--http", "0"), f"{nope}: no ladder results here (no such ladder)"),
        (("block", nope, "random", "easy"), f"{nope}: no ladder results here (no such ladder)"),
        (("season", "start", nope), f"{nope}: no ladder results here (no such ladder)"),
        (("run", str(remote), "--out", f"{postgres_url}#small"), "built-in entries only"),
        (("run", str(f), "--out", nope), "the ladder of this file is 'small' (its name's id)"),
    ]
    for args, says in cases:
        r = ladder_cli(*args)
        lines = r.stderr.splitlines()
        assert r.exit_code == 2 and len(lines) == 1, (args, r.output, r.stderr)
        assert says in lines[0] and "secret" not in lines[0], (args, lines)
    page = str(tmp_path / "x.html")
    for arena_args in (["arena", "standings", nope], ["arena", "report", nope, "--out", page]):
        r = run(*arena_args)
        assert r.exit_code == 2 and len(r.stderr.splitlines()) == 1, (arena_args, r.stderr)
        assert "nope" in r.stderr and "Traceback" not in r.stderr
    assert schemas(postgres_url) == []  # not a table, not a schema
    assert not (tmp_path / "x.html").exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "l.toml", "remote.toml"
    ]  # fmt: skip


def test_a_servers_ladder_with_a_database_keeps_its_results_there_and_its_logs_in_data(
    tmp_path: Path,
) -> None:
    url = "postgresql://capicua@db.example/ladders"
    assert directory_of(tmp_path, "ladders/club-ladder") == tmp_path / "ladders" / "club-ladder"
    where = directory_of(tmp_path, "ladders/club-ladder", url)
    assert where == LadderLocation(url, "club-ladder") and where.schema == "ladder_club_ladder"
    assert workdir_of(tmp_path, "ladders/club-ladder") == tmp_path / "ladders" / "club-ladder"
