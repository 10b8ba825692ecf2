"""``capicua arena report``: one self-contained HTML page, checked as text and in Chromium.

The results are real (tests/arenakit.py plays scheduled matches in-process). The browser
test drives Debian's ``chromium`` through Playwright; it skips without one on a user's
machine and fails in CI (``CI`` set), where .ci/run installs it.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from capicua.arena.report import (
    MAX_REPLAYS,
    MAX_TIMELINE_POINTS,
    asset,
    compact_replay,
    elo_timeline,
    sample_indices,
    script_json,
    write_report,
)
from capicua.arena.schedule import schedule
from capicua.arena.standings import compute
from capicua.arena.store import TOURNAMENT, Results
from capicua.cli import main
from capicua.engine.display import replay_lines
from capicua.engine.records import ThinkTime, with_think_times
from capicua.engine.rules import load_preset
from capicua.wire.codec import read_replay, write_replay
from tests.arenakit import play_results, record, tournament

BOTS = {"random": "builtin:random", "easy": "builtin:easy", "medium": "builtin:medium"}
NAME = "club </script> night & <b>co</b>"
# a bot run from a deep checkout: one unbroken word wider than a desktop window's table
LONG_SPEC = (
    "cmd:node /very/long/path/" + "/".join(["a-deeply-nested-checkout"] * 8)
    + "/clients/node/examples/random_bot.js"
)  # fmt: skip
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}


@pytest.fixture(scope="module")
def results_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished round robin of three bots on `block` to 30, with a disqualified bot, a
    few failures and an abandoned match recorded the way the arena records them."""
    out = tmp_path_factory.mktemp("arena") / "results"
    results = play_results(
        out,
        tournament(name=NAME, preset="block", games=1, overrides=["target=30"], bots=BOTS),
    )
    results.record_failure("easy", "crash", "exit status 1 </script>", "s00000-r0")
    results.record_failure("easy", "crash", "exit status 1")
    results.record_failure("random", "timeout", "no decision in 5000 ms", "s00001-r1")
    results.disqualify("easy", "crashed 2 times (max_crashes = 2)")
    results.record_abandoned("s00002-r1", "interrupted (Ctrl-C)")
    results.close()
    return out


@pytest.fixture(scope="module")
def report(results_dir: Path) -> Path:
    return write_report(results_dir)


@pytest.fixture(scope="module")
def gauntlet_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A gauntlet whose candidate's spec is a very long command line (the bots play
    in-process as built-ins; the stored spec is what the report shows)."""
    out = tmp_path_factory.mktemp("gauntlet") / "results"
    t = tournament(
        name="gauntlet night",
        preset="block",
        games=1,
        overrides=["target=30"],
        format="gauntlet",
        candidate="node",
        bots={"node": "builtin:random", "easy": "builtin:easy", "medium": "builtin:medium"},
    )
    results = Results(out)
    results.bind(TOURNAMENT, t.name, t.canonical(), t.digest(), "test")
    for b in t.bots:
        results.add_bot(b.name, LONG_SPEC if b.name == "node" else b.spec)
    for m in schedule(t):
        record(results, t, m)
    results.close()
    return write_report(out)


def embedded(page: str) -> list[dict[str, Any]]:
    m = re.search(r'<script type="application/json" id="replay-data">(.*?)</script>', page, re.S)
    assert m is not None
    data: list[dict[str, Any]] = json.loads(m.group(1))
    return data


def test_cli_writes_the_report_and_prints_its_path(results_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "sub" / "page.html"
    res = CliRunner().invoke(main, ["arena", "report", str(results_dir), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert res.output.strip() == str(out)
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")

    res = CliRunner().invoke(main, ["arena", "report", str(results_dir)])
    assert res.exit_code == 0, res.output
    assert res.output.strip() == str(results_dir / "report.html")


@pytest.mark.parametrize("kind", ["missing", "empty", "file"])
def test_no_results_is_one_line_and_exit_2(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "nothing"
    if kind == "empty":
        target.mkdir()
    elif kind == "file":
        target.write_text("not a directory")
    res = CliRunner().invoke(main, ["arena", "report", str(target)])
    assert res.exit_code == 2
    assert "Traceback" not in res.output
    lines = res.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("capicua: error: ")
    assert str(target) in lines[0]
    assert not (tmp_path / "nothing" / "report.html").exists()


def test_page_is_self_contained_and_complete(report: Path, results_dir: Path) -> None:
    page = report.read_text(encoding="utf-8")
    assert not re.search(r"https?://", page)  # no CDN, no remote anything
    assert not re.search(r"<(link|img|iframe)\b|\bsrc=", page)
    # the name is escaped in the page and never closes a script
    assert "club &lt;/script&gt; night &amp; &lt;b&gt;co&lt;/b&gt;" in page
    assert page.count("</script>") == 2  # the replay data and the viewer
    at = page.index('id="standings"')
    standings = page[at : page.index("</table>", at)]
    for name in BOTS:
        assert f"<b>{name}</b>" in standings
    for section in ("crosstable", "rating-chart", "errors", "disqualified", "abandoned"):
        assert f'id="{section}"' in page
    assert "crashed 2 times (max_crashes = 2)" in page
    assert "Abandoned matches: <b>1</b>" in page
    assert "block with target=30" in page
    # what the settings say of the game comes from the rules played: the preset's own
    # summary ("partners to 100") would contradict the override beside it
    assert "double-6, 4 seats, teams, to 30 pts" in page
    assert "to 100" not in page and load_preset("block").summary not in page
    assert "<svg" in page and "<style>" in page
    # one compact replay per match, with every event of the stored replay
    results = Results.open_existing(results_dir)
    try:
        rows = results.matches()
    finally:
        results.close()
    data = embedded(page)
    assert [d["k"] for d in data] == [m.key for m in rows]
    first = read_replay(results_dir / str(rows[0].replay_path))
    assert [len(h["ev"]) for h in data[0]["hands"]] == [len(h.events) for h in first.hands]
    assert data[0]["sc"] == list(first.outcome.scores if first.outcome else ())


def test_replays_are_capped_and_the_page_says_so(results_dir: Path, tmp_path: Path) -> None:
    assert MAX_REPLAYS >= 100
    page = write_report(results_dir, tmp_path / "r.html", max_replays=2).read_text("utf-8")
    assert len(embedded(page)) == 2
    assert 'id="replay-cap"' in page and "2 of 6 replays" in page


def test_script_json_cannot_close_the_script() -> None:
    data = {"a": "</script><!-- & \u2028"}
    text = script_json(data)
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == data


def test_compact_replay_keeps_deals_and_results(results_dir: Path) -> None:
    results = Results.open_existing(results_dir)
    try:
        row = results.matches()[0]
    finally:
        results.close()
    replay = read_replay(results_dir / str(row.replay_path))
    c = compact_replay(replay, row)
    assert c["seats"] == list(replay.players)
    hand = c["hands"][0]
    deal = replay.hands[0].deals[0]
    assert hand["deals"][0][:-1] == [[str(t) for t in seat] for seat in deal.hands]
    assert hand["pre"] == [0, 0]
    assert replay.hands[0].result is not None
    assert hand["res"]["sc"] == list(replay.hands[0].result.scores)


# -- in a real browser --------------------------------------------------------------------


@contextmanager
def opened(
    browser: Any, url: str, viewport: dict[str, int] = DESKTOP
) -> Iterator[tuple[Any, list[str]]]:
    """``url`` in a new page (a phone's when ``viewport`` is narrow: touch, and the meta
    viewport honoured), with every console error, page error and request for anything but
    the file itself collected (a self-contained page makes none)."""
    errors: list[str] = []
    phone = viewport["width"] < 600
    pg = browser.new_page(viewport=viewport, is_mobile=phone, has_touch=phone)
    try:
        pg.set_default_timeout(10_000)
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on(
            "request",
            lambda r: None if r.url.startswith("file:") else errors.append(f"request {r.url}"),
        )
        pg.goto(url)
        yield pg, errors
    finally:
        pg.close()


@pytest.fixture
def page(browser: Any, report: Path) -> Iterator[tuple[Any, list[str]]]:
    with opened(browser, report.as_uri()) as opened_page:
        yield opened_page


def test_report_renders_in_chromium(
    page: tuple[Any, list[str]], results_dir: Path, tmp_path: Path
) -> None:
    pg, errors = page
    assert pg.title().startswith("club </script> night")
    assert pg.locator("#standings tbody tr").count() == len(BOTS)
    assert pg.locator("#crosstable td.heat").count() == len(BOTS) * (len(BOTS) - 1)
    assert pg.locator("#rating-chart circle").count() == len(BOTS)
    assert pg.locator("#disqualified").inner_text().count("easy") == 1
    shot = tmp_path / "report.png"
    pg.screenshot(path=str(shot), full_page=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000
    assert errors == []


def test_replay_viewer_steps_through_a_match(
    page: tuple[Any, list[str]], results_dir: Path, tmp_path: Path
) -> None:
    pg, errors = page
    results = Results.open_existing(results_dir)
    try:
        row = max(results.matches(), key=lambda m: m.hands)  # one with several hands
    finally:
        results.close()
    replay = read_replay(results_dir / str(row.replay_path))
    assert pg.locator("#viewer-body").is_hidden()
    pg.click(f'#match-list button[data-key="{row.key}"]')
    assert pg.locator("#viewer-body").is_visible()
    assert row.key in pg.inner_text("#match-title")
    chain = pg.locator("#chain")
    position = pg.locator("#position")
    # dealt: an empty chain, every seat's full hand
    assert chain.get_attribute("data-text") == ""
    assert pg.locator("#seats .seat").count() == len(replay.players)
    assert pg.locator("#seats .tile").count() == sum(len(s) for s in replay.hands[0].deals[0].hands)
    seen = [chain.get_attribute("data-text")]
    start_scores = pg.inner_text("#scores")
    for _ in range(3):
        pg.click("#btn-next")
        seen.append(chain.get_attribute("data-text"))
    pg.keyboard.press("ArrowRight")
    seen.append(chain.get_attribute("data-text"))
    assert "event 4/" in position.inner_text()
    assert len(set(seen)) > 2  # the chain grew
    assert pg.locator("#chain .tile").count() >= 2
    assert pg.locator("#chain .tile.new").count() <= 1
    assert pg.locator("#events li:not(.hd)").count() == 4
    pg.click("#btn-prev")
    assert "event 3/" in position.inner_text()
    # the end of the first hand: each seat holds what the hand's result says is left
    if len(replay.hands) > 1:
        pg.click("#btn-next-hand")
        assert "hand 2 of" in position.inner_text()
        pg.keyboard.press("ArrowLeft")
        first = replay.hands[0].result
        assert first is not None
        for seat, tiles in enumerate(first.remaining):
            shown = pg.locator(f'#seats .seat[data-seat="{seat}"] .tile').all()
            assert sorted(t.get_attribute("title") or "" for t in shown) == sorted(
                str(t) for t in tiles
            )
        assert "Hand 1:" in pg.inner_text("#result")
        # the viewer lays the engine's halves: its chain is the one `replay show` prints
        shown = [line for line in replay_lines(replay, hand=1) if line.startswith("  chain: ")]
        assert shown == [
            "  chain: " + "".join(f"[{p}]" for p in chain.get_attribute("data-text").split())
        ]
    # the end of the match: final scores and the outcome
    pg.click("#btn-last")
    assert pg.inner_text("#scores") != start_scores
    for score in row.scores:
        assert str(score) in pg.inner_text("#scores")
    assert "Match:" in pg.inner_text("#result")
    assert pg.locator("#btn-next").is_disabled()
    pg.keyboard.press("Home")
    assert "hand 1 of" in position.inner_text() and "event 0/" in position.inner_text()
    pg.locator("#s-replays").screenshot(path=str(tmp_path / "viewer.png"))
    assert (tmp_path / "viewer.png").stat().st_size > 0
    assert errors == []


def test_free_for_all_report(tmp_path: Path) -> None:
    """Four individual seats, three bots (one plays two seats): openskill is shown and the
    viewer gets four sides."""
    out = tmp_path / "ffa"
    play_results(out, tournament(preset="iq-ffa", games=1, bots=BOTS)).close()
    page = write_report(out).read_text("utf-8")
    assert ">openskill</th>" in page
    data = embedded(page)
    assert len(data) == 4 and all(len(d["sides"]) == 4 and len(d["seats"]) == 4 for d in data)


# -- the page's parts: assets, replay problems, the rating timeline -----------------------


def test_css_and_js_are_package_files_inlined(report: Path) -> None:
    page = report.read_text("utf-8")
    css, js = asset("report.css"), asset("report.js")
    assert "overflow-x:auto" in css and "history.replaceState" in js
    assert f"<style>{css}</style>" in page and f"<script>{js}</script>" in page


def test_missing_and_corrupt_replays_are_named(results_dir: Path, tmp_path: Path) -> None:
    out, rows = _copy_results(results_dir, tmp_path)
    gone, bad = rows[0], rows[1]
    (out / str(gone.replay_path)).unlink()
    (out / str(bad.replay_path)).write_bytes(b"\x1f\x8b this is not gzip")
    page = write_report(out).read_text("utf-8")
    at = page.index('id="replay-problems"')
    problems = page[at : page.index("</div>", at)]
    assert "2 replays are missing or unreadable" in problems
    assert f"<b>{gone.key}</b> <code>{gone.replay_path}</code>: cannot read" in problems
    assert f"<b>{bad.key}</b> <code>{bad.replay_path}</code>: corrupt or truncated gzip" in (
        problems
    )
    assert 'id="replay-cap"' not in page  # nothing was left out for size
    keys = [d["k"] for d in embedded(page)]
    assert keys == [m.key for m in rows[2:]]
    assert f'data-key="{gone.key}"' not in page.split('id="match-list"', 1)[1]


def test_sample_indices_spread_along_the_schedule() -> None:
    assert sample_indices(0) == []
    assert sample_indices(7) == list(range(7))
    many = sample_indices(10_000)
    assert len(many) == MAX_TIMELINE_POINTS
    assert many[0] == 0 and many[-1] == 9_999 and many == sorted(set(many))
    assert sample_indices(5, limit=1) == [4]


def test_timeline_ends_at_the_standings_elo(results_dir: Path, report: Path) -> None:
    results = Results.open_existing(results_dir)
    try:
        rows = results.matches()
        standings = compute(results, samples=0)
    finally:
        results.close()
    timeline = elo_timeline(rows)
    assert timeline.sets == tuple(range(1, max(m.seq for m in rows) + 2))
    for b in standings.bots:
        assert b.elo is not None
        assert timeline.elo[b.name][-1] == pytest.approx(b.elo)
    short = elo_timeline(rows, limit=2)
    assert len(short.sets) == 2 and short.sets[-1] == timeline.sets[-1]
    # the page: one line per bot, ending where the standings are
    page = report.read_text("utf-8")
    at = page.index('id="rating-timeline"')
    chart = page[at : page.index("</svg>", at)]
    lines = re.findall(r'<g class="series[^"]*" data-bot="([^"]+)" data-last="([^"]+)"', chart)
    assert sorted(name for name, _ in lines) == sorted(BOTS)
    for name, last in lines:
        assert float(last) == pytest.approx(standings.bot(name).elo, abs=0.05)
    assert chart.count('<path class="line"') == len(BOTS)


# -- responsive, the address, problems: in a real browser ----------------------------------

KEY_PARTS = ("header h1", "nav", "#standings", "#crosstable", "#rating-chart",
             "#rating-timeline", "#errors", "#match-list")  # fmt: skip


def overflow(pg: Any) -> int:
    """How far the page reaches past the viewport's right edge (0: it does not)."""
    width: int = pg.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    return width


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone", "desktop"])
@pytest.mark.parametrize("which", ["round-robin", "gauntlet"])
def test_page_fits_the_screen(
    browser: Any, report: Path, gauntlet_report: Path, which: str, viewport: dict[str, int]
) -> None:
    path = report if which == "round-robin" else gauntlet_report
    with opened(browser, path.as_uri(), viewport) as (pg, errors):
        assert pg.evaluate("window.innerWidth") == viewport["width"]
        assert overflow(pg) <= 0
        for selector in KEY_PARTS:
            part = pg.locator(selector)
            assert part.is_visible(), selector
        # every section lies within the screen; wide tables scroll inside their card
        right = pg.evaluate(
            "Math.max(...[...document.querySelectorAll('main > section')]"
            ".map(s => s.getBoundingClientRect().right))"
        )
        assert right <= viewport["width"]
        # the charts are scaled to their card, not cut off by it
        for chart in ("#rating-chart", "#rating-timeline"):
            fits = pg.evaluate(
                "sel => { const s = document.querySelector(sel);"
                " return s.getBoundingClientRect().width <= s.parentElement.clientWidth + 1 }",
                chart,
            )
            assert fits, chart
        assert pg.locator("#rating-timeline g.series").count() == 3
        if which == "gauntlet":
            spec = pg.locator("#standings .spec", has_text="random_bot.js")
            assert spec.is_visible()
            box = spec.bounding_box()
            assert box is not None and box["x"] + box["width"] <= viewport["width"]
        # a match on screen, at its end (most tiles on the table): still no overflow
        pg.locator("#match-list button.match").first.click()
        pg.click("#btn-last")
        assert pg.locator("#viewer-body").is_visible() and pg.locator("#chain").is_visible()
        assert overflow(pg) <= 0
        assert errors == []


def test_the_selected_match_is_in_the_address(browser: Any, report: Path) -> None:
    data = embedded(report.read_text("utf-8"))
    first, second, third = (d["k"] for d in data[:3])
    with opened(browser, report.as_uri()) as (pg, errors):
        before = pg.evaluate("history.length")
        pg.click(f'#match-list button[data-key="{first}"]')
        assert pg.evaluate("location.hash") == f"#match={first}"
        pg.click(f'#match-list button[data-key="{second}"]')
        assert pg.evaluate("location.hash") == f"#match={second}"
        assert pg.evaluate("history.length") == before  # replaced, not pushed
        # the address changed by hand (or Back/Forward): the viewer follows
        pg.evaluate(f"location.hash = 'match={third}'")
        pg.wait_for_function(f"document.getElementById('match-title').textContent"
                             f".indexOf('{third}') === 0")  # fmt: skip
        assert errors == []
    # a link to a match opens it, with the match list showing which one
    with opened(browser, f"{report.as_uri()}#match={second}", PHONE) as (pg, errors):
        assert pg.locator("#viewer-body").is_visible()
        assert pg.inner_text("#match-title").startswith(f"{second}:")
        assert pg.locator("#match-list button.sel").get_attribute("data-key") == second
        assert "event 0/" in pg.inner_text("#position")
        assert pg.locator("#viewer").is_visible()
        assert errors == []
    with opened(browser, f"{report.as_uri()}#match=nope") as (pg, errors):
        assert pg.locator("#viewer-body").is_hidden()
        assert "nope is not in this page" in pg.inner_text("#viewer-empty")
        assert errors == []


def _copy_results(results_dir: Path, tmp_path: Path) -> tuple[Path, list[Any]]:
    """A copy of the module's results to spoil, and its matches in schedule order."""
    out = tmp_path / "results"
    shutil.copytree(results_dir, out)
    results = Results.open_existing(out)
    try:
        return out, results.matches()
    finally:
        results.close()


def test_unreadable_replays_are_listed_in_the_browser(
    browser: Any, results_dir: Path, tmp_path: Path
) -> None:
    out, rows = _copy_results(results_dir, tmp_path)
    gone, bad = rows[0], rows[-1]
    (out / str(gone.replay_path)).unlink()
    (out / str(bad.replay_path)).write_text("{ not json", encoding="utf-8")
    page = write_report(out)
    with opened(browser, f"{page.as_uri()}#match={gone.key}", PHONE) as (pg, errors):
        box = pg.locator("#replay-problems")
        assert box.is_visible()
        items = box.locator("li")
        assert items.count() == 2
        assert gone.key in items.nth(0).inner_text() and "cannot read" in items.nth(0).inner_text()
        assert bad.key in items.nth(1).inner_text()
        assert pg.locator("#match-list button.match").count() == len(rows) - 2
        assert "its replay could not be read" in pg.inner_text("#viewer-empty")
        assert overflow(pg) <= 0
        assert errors == []


def test_the_viewer_shows_each_decisions_think_time(
    browser: Any, results_dir: Path, tmp_path: Path
) -> None:
    out, rows = _copy_results(results_dir, tmp_path)
    row = rows[0]
    path = out / str(row.replay_path)
    replay = read_replay(path)
    # as a server would have measured them: decisions 1 and 3 of the first hand
    seats = [e.seat for e in replay.hands[0].events]
    timed = {0: [ThinkTime(1, 2_500, seats[1]), ThinkTime(3, 40, seats[3])]}
    write_replay(path, with_think_times(replay, timed))
    page = write_report(out)
    with opened(browser, f"{page.as_uri()}#match={row.key}") as (pg, errors):
        for _ in range(4):
            pg.click("#btn-next")
        items = pg.locator("#events li:not(.hd)")
        assert items.count() == 4
        texts = [items.nth(i).inner_text() for i in range(4)]
        assert texts[1].endswith(" · 2.5 ms") and texts[3].endswith(" · 0.04 ms")
        assert not texts[0].endswith(" ms") and not texts[2].endswith(" ms")
        assert errors == []
