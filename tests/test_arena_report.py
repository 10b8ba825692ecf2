"""``capicua arena report``: one self-contained HTML page, checked as text and in Chromium.

The results are real (tests/arenakit.py plays scheduled matches in-process). The browser
test drives Debian's ``chromium`` through Playwright; it skips without one on a user's
machine and fails in CI (``CI`` set), where .ci/run installs it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from capicua.arena.report import MAX_REPLAYS, compact_replay, script_json, write_report
from capicua.arena.store import Results
from capicua.cli import main
from capicua.engine.codec import read_replay
from tests.arenakit import play_results, tournament

BOTS = {"random": "builtin:random", "easy": "builtin:easy", "medium": "builtin:medium"}
NAME = "club </script> night & <b>co</b>"


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


@pytest.fixture
def page(browser: Any, report: Path) -> Iterator[tuple[Any, list[str]]]:
    """The report in a new page, with every console error, page error and request for
    anything but the file itself collected (a self-contained page makes none)."""
    errors: list[str] = []
    pg = browser.new_page(viewport={"width": 1280, "height": 900})
    try:
        pg.set_default_timeout(10_000)
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on(
            "request",
            lambda r: None if r.url.startswith("file:") else errors.append(f"request {r.url}"),
        )
        pg.goto(report.as_uri())
        yield pg, errors
    finally:
        pg.close()


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
