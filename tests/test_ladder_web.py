"""The ladder's leaderboard in the browser (``capicua ladder run --http``, ``capicua ladder
web``): real processes serving on real loopback sockets, read over HTTP (httpx) and in
Debian's chromium (Playwright; skipped with the reason where it is absent, as every browser
test of the suite: tests/conftest.py).

The ladders are real: built-in bots playing in-process (``ladder run``), so the numbers the
pages show are checked against ``capicua ladder show --json`` of the same directory.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import signal
import sqlite3
import tempfile
from collections.abc import Coroutine, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from capicua.arena.ladder import table
from capicua.arena.ladder.board import LadderBoard
from capicua.arena.ladder.config import ladder_from_mapping
from capicua.arena.ladder.matchmaker import Issued
from capicua.arena.ladder.plan import specs
from capicua.arena.ladder.web import live_json, make_app, serving
from capicua.arena.recorder import Finished, commit_matches
from capicua.arena.schedule import MatchSpec
from capicua.arena.store import GAUNTLET_SET, LADDER, MatchRow, Results, ladder_rated
from capicua.common.errors import CapicuaError
from tests.clientkit import Proc, capicua_args, until
from tests.test_arena_report import DESKTOP, PHONE, overflow
from tests.test_arena_run import EVENT_BOUND_S, count_matches
from tests.test_ladder import (
    LADDER_FILE,
    SMALL,
    drawn_sets,
    ladder_cli,
    outcome,
    write_ladder,
)

URL_LINE = r"^leaderboard: (http://\S+)$"
T = TypeVar("T")


def waited(wait: Coroutine[Any, Any, T]) -> T:
    """``wait`` run to its end on a loop of its own thread: a test holding Playwright's
    sync API has a loop running in its own."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, wait).result()


def url_of(proc: Proc) -> str:
    """The URL the command printed once it was serving (waited for: an event)."""
    line = waited(proc.wait_for(URL_LINE, timeout=EVENT_BOUND_S))
    found = re.match(URL_LINE, line)
    assert found is not None
    return found.group(1)


@contextmanager
def command(args: list[str], cwd: Path) -> Iterator[tuple[Proc, str]]:
    """``capicua ARGS`` running (killed at the end if still running), and its URL."""
    proc = Proc(capicua_args(*args), cwd=cwd)
    try:
        yield proc, url_of(proc)
    finally:
        proc.kill()


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stored ladder of three built-in entries, 60 matches and more (whole sets)."""
    tmp = tmp_path_factory.mktemp("ladder")
    f = write_ladder(tmp / "l.toml", SMALL)
    r = ladder_cli("run", str(f), "--out", str(tmp / "out"), "--matches", "60", "--quiet")
    assert r.exit_code == 0, r.output
    return tmp / "out"


@pytest.fixture(scope="module")
def served(stored: Path) -> Iterator[str]:
    """``capicua ladder web`` serving the stored ladder: its URL."""
    with command(["ladder", "web", str(stored), "--http", "0"], stored.parent) as (_, url):
        yield url


def shown(directory: Path) -> dict[str, Any]:
    r = ladder_cli("show", str(directory), "--json")
    assert r.exit_code == 0, r.output
    data: dict[str, Any] = json.loads(r.stdout)
    return data


# -- the JSON API and the export, over real HTTP ------------------------------------------------


def test_the_api_table_is_the_published_table(served: str, stored: Path) -> None:
    got = httpx.get(f"{served}api/ladders/small").json()
    assert got.pop("slug") == "small" and got.pop("live") == []  # nothing plays: no run
    for e in got["entries"]:
        assert e.pop("playing_now") is False
    assert got == shown(stored)


def test_an_entry_has_its_history_head_to_head_rates_and_think_time(
    served: str, stored: Path
) -> None:
    t = shown(stored)
    names = [e["name"] for e in t["entries"]]
    entries = {n: httpx.get(f"{served}api/ladders/small/entries/{n}").json() for n in names}
    for name, e in entries.items():
        line = next(x for x in t["entries"] if x["name"] == name)
        assert {k: e[k] for k in line} == line  # its line of the table, as published
        assert e["history"][-1]["sets"] == t["rated_sets"]  # the last point: every set
        sets = [p["sets"] for p in e["history"]]
        assert sets == sorted(sets) and len(sets) <= table.HISTORY_POINTS
        assert set(e["rates"]) == {"timeout", "crash", "disconnect"}
        assert e["rates"]["timeout"] == 0  # built-in bots in process: no forfeit
        assert e["think"]["decisions"] == 0  # in process: no server measured a think time
        assert set(e["head_to_head"]) == set(names) - {name}  # three entries: all met
    # each pair's scores are the two sides of the same sets
    a, b = names[:2]
    ab, ba = entries[a]["head_to_head"][b], entries[b]["head_to_head"][a]
    assert ab["sets"] == ba["sets"] > 0
    assert ab["score"] + ba["score"] == pytest.approx(1.0)
    assert ab["lo"] <= ab["score"] <= ab["hi"]
    assert {"ahead": "behind", "behind": "ahead", "even": "even"}[ab["verdict"]] == ba["verdict"]


def by_set(directory: Path) -> list[str]:
    """The keys of the directory's matches in whole sets, as the API gives them: set by
    set in the order each set's last match was stored, by rotation within a set."""
    results = Results.open_existing(directory)
    try:
        matches, _ = results.matches_after(0)  # in the order stored
    finally:
        results.close()
    last = {m.set_key: i for i, m in enumerate(matches)}
    return [m.key for m in sorted(matches, key=lambda m: (last[m.set_key], m.rotation))]


def paged(url: str, limit: int) -> list[str]:
    """Every match key the API gives, asked ``limit`` sets at a time from the start."""
    keys: list[str] = []
    after = 0
    while True:
        page = httpx.get(f"{url}api/ladders/small/matches?after={after}&limit={limit}").json()
        if not page["matches"]:
            assert page["next"] == after
            return keys
        assert len({m["set_key"] for m in page["matches"]}) <= limit
        assert {m["mark"] for m in page["matches"]} <= set(range(after + 1, page["next"] + 1))
        keys += [m["key"] for m in page["matches"]]
        after = page["next"]


def exported(url: str) -> list[dict[str, Any]]:
    with httpx.stream("GET", f"{url}api/ladders/small/export.ndjson") as r:
        assert r.headers["content-type"].startswith("application/x-ndjson")
        return [json.loads(line) for line in r.iter_lines() if line]


def test_matches_are_paged_by_set_and_the_export_streams_every_game(
    served: str, stored: Path
) -> None:
    keys = by_set(stored)
    assert paged(served, 7) == keys  # each once
    results = Results.open_existing(stored)
    try:
        hands = {m.key: m.hands for m in results.matches()}
    finally:
        results.close()
    games = exported(served)
    assert [g["key"] for g in games] == keys
    for g in games:
        assert len(g["hand_results"]) == g["hands"] == hands[g["key"]]
        assert g["replay"] == f"matches/{g['key']}"


def test_a_set_still_being_played_shows_none_of_its_matches(stored: Path, tmp_path: Path) -> None:
    # the last rated set with its last match not stored yet: its first match's deal is
    # the one still being played (the seats rotated)
    copy = tmp_path / "out"
    shutil.copytree(stored, copy)
    with sqlite3.connect(copy / "results.sqlite") as conn:
        (set_key,) = conn.execute("SELECT max(set_key) FROM matches WHERE set_key LIKE 'L%'")
        (last,) = conn.execute("SELECT max(key) FROM matches WHERE set_key = ?", set_key)
        conn.execute("DELETE FROM hands WHERE match_key = ?", last)
        conn.execute("DELETE FROM think WHERE match_key = ?", last)
        conn.execute("DELETE FROM matches WHERE key = ?", last)
        first, sides = conn.execute(
            "SELECT key, sides_json FROM matches WHERE set_key = ? ORDER BY key", set_key
        ).fetchone()
    conn.close()
    with command(["ladder", "web", str(copy), "--http", "0"], tmp_path) as (_, url):
        keys = by_set(copy)
        assert first in keys
        keys.remove(first)
        assert paged(url, 5) == keys
        assert [g["key"] for g in exported(url)] == keys
        assert httpx.get(f"{url}ladders/small/matches/{first}").status_code == 404
        for entry in json.loads(sides):  # its entries' recent matches
            page = httpx.get(f"{url}ladders/small/entries/{entry}").text
            assert 'id="recent"' in page and first not in page


@settings(max_examples=30, deadline=None)
@given(drawn_sets, st.randoms(), st.integers(1, 6), st.integers(0, 3))
def test_paging_by_set_gives_each_whole_set_once_in_the_order_it_became_whole(
    drawn: list[tuple[bool, int, int, int, int]], rnd: Any, limit: int, unfinished: int
) -> None:
    # the matches of sets in flight side by side, stored one at a time in any order, some
    # sets never finished
    lad = ladder_from_mapping(dict(LADDER_FILE), Path("."))
    names = [b.name for b in lad.tournament.bots]
    matches = []
    for seq, (validation, a, step, first, second) in enumerate(drawn):
        group = (names[a], names[(a + step) % len(names)])
        unit = specs(lad, Issued(seq, group, validation=validation))
        matches += [
            Finished(spec, outcome(code), None, None, "2026-12-06T00:00:00Z", 0.0)
            for spec, code in zip(unit, (first, second), strict=False)
        ][: None if seq >= unfinished or validation else 1]
    rnd.shuffle(matches)
    with tempfile.TemporaryDirectory() as tmp:
        results = Results(Path(tmp))
        try:
            results.bind(LADDER, "t", lad.canonical(), lad.digest(), "test")
            for m in matches:
                commit_matches(results, [m])
            stored, _ = results.matches_after(0)
            expected = [m.key for _, m in sorted(whole_by_set(stored), key=lambda x: x[0])]
            got: list[str] = []
            after = 0
            while page := results.whole_sets_page(after, limit):
                assert len({mark for mark, _ in page}) <= limit
                got += [m.key for _, m in page]
                after = page[-1][0]
        finally:
            results.close()
    assert got == expected


def whole_by_set(stored: list[MatchRow]) -> list[tuple[tuple[int, int], MatchRow]]:
    """The matches of whole sets (as many as the sides; a validation set: one), each with
    (the position of its set's last match, its rotation)."""
    by_set: dict[str, list[int]] = {}
    for i, m in enumerate(stored):
        by_set.setdefault(m.set_key, []).append(i)
    out = []
    for m in stored:
        wanted = 1 if not ladder_rated(m) else len(m.sides)
        if len(by_set[m.set_key]) >= wanted:
            out.append(((max(by_set[m.set_key]), m.rotation), m))
    return out


def test_a_private_gauntlet_is_neither_shown_nor_counted(tmp_path: Path) -> None:
    f = write_ladder(tmp_path / "l.toml", SMALL)
    out = tmp_path / "out"
    for matches, step in ((12, ("gauntlet", str(out), "medium", "easy", "--sets", "3")),
                          (40, None)):  # fmt: skip
        r = ladder_cli("run", str(f), "--out", str(out), "--matches", str(matches), "--quiet")
        assert r.exit_code == 0, r.output + r.stderr
        if step is not None:
            assert ladder_cli(*step).exit_code == 0
    with sqlite3.connect(out / "results.sqlite") as conn:
        private = [k for (k,) in conn.execute("SELECT key FROM matches WHERE set_key LIKE ?",
                                                (f"{GAUNTLET_SET}%",))]  # fmt: skip
    conn.close()
    assert len(private) == 6  # 3 sets of 2 matches
    with command(["ladder", "web", str(out), "--http", "0"], tmp_path) as (_, url):
        got = httpx.get(f"{url}api/ladders/small").json()
        assert got["matches"] == shown(out)["matches"]  # the public table's count
        keys = paged(url, 4)
        assert keys == [k for k in by_set(out) if k not in private]
        assert [g["key"] for g in exported(url)] == keys
        assert httpx.get(f"{url}ladders/small/matches/{private[0]}").status_code == 404
        medium = httpx.get(f"{url}api/ladders/small/entries/medium").json()
        public_sets = {key.split("-")[0] for key in keys if key.startswith("L")}
        met = sum(x["sets"] for x in medium["head_to_head"].values())
        assert met == len([s for s in public_sets if s in medium_sets(out)])


def medium_sets(out: Path) -> set[str]:
    with sqlite3.connect(out / "results.sqlite") as conn:
        rows = conn.execute("SELECT set_key, sides_json FROM matches").fetchall()
    conn.close()
    return {key for key, sides in rows if "medium" in json.loads(sides)}


def test_bad_urls_get_a_clear_404_or_400(served: str) -> None:
    for path, what in [
        ("ladders/nope/", "no ladder 'nope' here"),
        ("ladders/small/entries/nobody", "no entry 'nobody' in ladder 'small'"),
        ("ladders/small/matches/L999999-r0", "no finished match 'L999999-r0'"),
        ("no/such/page", "no page /no/such/page"),
    ]:
        r = httpx.get(served + path)
        assert r.status_code == 404, path
        assert r.headers["content-type"].startswith("text/html")
        assert "Not found" in r.text and what in r.text.replace("&#39;", "'"), path
        assert "Traceback" not in r.text
    r = httpx.get(f"{served}api/ladders/small/entries/nobody")
    assert r.status_code == 404 and r.json() == {"error": "no entry 'nobody' in ladder 'small'"}
    r = httpx.get(f"{served}api/ladders/small/matches?after=x")
    assert r.status_code == 400 and r.json() == {"error": "after: a whole number, not 'x'"}
    r = httpx.get(f"{served}api/ladders/small/matches?limit=0")
    assert r.status_code == 400 and r.json() == {"error": "limit: from 1 to 1000, not 0"}


def test_a_directory_that_holds_no_ladder_is_one_line(tmp_path: Path) -> None:
    r = ladder_cli("web", str(tmp_path / "none"), "--http", "0")
    assert r.exit_code != 0 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        f"capicua: error: {tmp_path / 'none'}: no ladder results here (does not exist)"
    ]


def test_ladder_web_follows_a_ladder_another_process_plays(tmp_path: Path) -> None:
    f = write_ladder(tmp_path / "l.toml", SMALL)
    run = Proc(capicua_args("ladder", "run", str(f), "--out", "out", "--quiet"), cwd=tmp_path)
    try:
        waited(until(lambda: count_matches(tmp_path / "out") > 0, EVENT_BOUND_S, "a match"))
        args = ["ladder", "web", "out", "--http", "0"]
        with (
            command(args, tmp_path) as (_, url),
            httpx.stream("GET", f"{url}ladders/small/events", timeout=EVENT_BOUND_S) as events,
        ):
            first = httpx.get(f"{url}api/ladders/small").json()["matches"]
            # the server's table events, until one counts matches stored since
            for line in events.iter_lines():
                found = re.search(r'data-matches="(\d+)"', line)
                if found is not None and int(found.group(1)) > first:
                    break
            else:
                pytest.fail("the events ended before the table grew")
    finally:
        run.kill()


def test_ctrl_c_stops_ladder_web_with_one_line_while_a_page_follows_it(stored: Path) -> None:
    args = ["ladder", "web", str(stored), "--http", "0"]
    with (
        command(args, stored.parent) as (proc, url),
        httpx.stream("GET", f"{url}ladders/small/events") as events,
    ):
        assert next(events.iter_lines()) == ": following"  # the stream is open
        proc.proc.send_signal(signal.SIGINT)
        code = waited(proc.wait(EVENT_BOUND_S))
    assert code == 130, proc.report()
    assert proc.stderr.strip().splitlines()[-1] == (
        "capicua: interrupted; nothing was changed: the same command serves the leaderboard again"
    ), proc.report()


def test_a_port_in_use_is_one_line(served: str, stored: Path) -> None:
    port = served.rstrip("/").rsplit(":", 1)[1]
    r = ladder_cli("web", str(stored), "--http", port)
    assert r.exit_code != 0
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"capicua: error: --http 127.0.0.1:{port}: cannot listen there: "
    ), r.stderr


def test_two_ladders_under_one_url_are_refused(tmp_path: Path) -> None:
    boards = [LadderBoard(tmp_path, "Club Ladder"), LadderBoard(tmp_path, "club-ladder")]
    with pytest.raises(CapicuaError, match=r"^ladders share a URL: club-ladder \(rename one\)$"):
        make_app(boards)


async def test_a_page_asked_for_as_the_server_stops_is_a_503_not_a_wait(tmp_path: Path) -> None:
    board = LadderBoard(tmp_path, "x", stored=False)  # its run never comes: no snapshot yet
    async with serving([board], "127.0.0.1", 0) as url, httpx.AsyncClient() as client:
        await board.close()  # as the server stops
        page = await client.get(f"{url}ladders/x/")
        api = await client.get(f"{url}api/ladders/x")
    assert page.status_code == 503 and "the leaderboard of &#39;x&#39; is stopping" in page.text
    assert api.status_code == 503 and api.json() == {"error": "the leaderboard of 'x' is stopping"}


def test_a_match_playing_now_shows_who_plays_and_nothing_hidden(tmp_path: Path) -> None:
    board = LadderBoard(tmp_path, "x", stored=False)
    spec = MatchSpec("L000004-r1", "L000004", 4, 1, 123456789, ("b", "a"), ("b", "a"))
    board.handed_out(iter([spec]))
    (live,) = live_json(board)
    # no seed, no key (the store's name of a match whose replay is not out yet)
    assert live == {"set": 5, "rated": True, "rotation": 1, "sides": ["b", "a"],
                    "seats": ["b", "a"], "watch": None}  # fmt: skip
    assert board.busy() == {"a", "b"}


# -- in the browser ---------------------------------------------------------------------------


@contextmanager
def opened(browser: Any, url: str, viewport: dict[str, int]) -> Iterator[tuple[Any, list[str]]]:
    """``url`` in a new page, with every console error, page error, failed request and
    request to anywhere but the server itself collected (the pages need no CDN)."""
    origin = re.match(r"http://[^/]+/", url)
    assert origin is not None
    errors: list[str] = []
    phone = viewport["width"] < 600
    pg = browser.new_page(viewport=viewport, is_mobile=phone, has_touch=phone)
    try:
        pg.set_default_timeout(EVENT_BOUND_S * 1000)
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("requestfailed", lambda r: errors.append(f"failed {r.url}"))
        pg.on(
            "request",
            lambda r: None if r.url.startswith(origin[0]) else errors.append(f"request {r.url}"),
        )
        pg.goto(url)
        yield pg, errors
    finally:
        pg.close()


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
def test_every_page_loads_fits_the_screen_and_logs_no_error(
    browser: Any, served: str, stored: Path, viewport: dict[str, int]
) -> None:
    t = shown(stored)
    first = t["entries"][0]["name"]
    key = httpx.get(f"{served}api/ladders/small/matches?limit=1").json()["matches"][0]["key"]
    pages = {
        "ladders/small/": "#ladder-table",
        f"ladders/small/entries/{first}": "#h2h",
        "ladders/small/live": "#live-table",
        f"ladders/small/matches/{key}": "#match-list",
    }
    for path, part in pages.items():
        with opened(browser, served + path, viewport) as (pg, errors):
            assert pg.locator(part).is_visible(), path
            assert overflow(pg) <= 0, path
            if path.startswith("ladders/small/entries"):
                assert pg.locator("#history-chart").is_visible()
                assert pg.locator("#recent a").count() > 0  # into the replay viewer
            if path.startswith("ladders/small/matches"):
                pg.locator("#match-list button.match").first.click()  # the viewer works
                assert pg.locator("#viewer-body").is_visible()
            assert errors == [], (path, errors)
    with opened(browser, served + "ladders/small/", viewport) as (pg, errors):
        rows = pg.locator("#ladder-table tbody tr")
        assert rows.count() == len(t["entries"])
        assert pg.locator("#counts").get_attribute("data-matches") == str(t["matches"])


def test_the_table_updates_live_as_matches_end_and_ctrl_c_resumes(
    browser: Any, tmp_path: Path
) -> None:
    f = write_ladder(tmp_path / "l.toml", SMALL)
    args = ["ladder", "run", str(f), "--out", "out", "--quiet", "--http", "0"]
    for run in (1, 2):
        with command(args, tmp_path) as (proc, url):
            with opened(browser, url, DESKTOP) as (pg, errors):
                pg.evaluate("window.loadedOnce = true")  # gone if the page reloads
                before = pg.locator("#counts").get_attribute("data-matches")
                # the server's `table` event swaps the fragment: the count changes in place
                pg.wait_for_function(
                    "([before]) => window.loadedOnce && "
                    "document.querySelector('#counts').dataset.matches !== before",
                    arg=[before],
                )
                assert errors == []
                proc.proc.send_signal(signal.SIGINT)  # the page still following it
                code = waited(proc.wait(EVENT_BOUND_S))
            assert code == 130, proc.report()
            assert "Traceback" not in proc.stderr
            last = proc.stderr.strip().splitlines()[-1]
            kept = r"; \d+ kept from an earlier run" if run == 2 else ""
            assert re.fullmatch(
                rf"capicua: interrupted; \d+ matches played{kept}(; \d+ abandoned \(played "
                r"again on resume\))?; results in out: the same command resumes",
                last,
            ), proc.report()
