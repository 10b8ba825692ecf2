"""``capicua arena report`` of an SPRT directory shows the SPRT: its verdict, hypotheses and
bounds, the LLR path, Elo and nElo, the pentanomial and the sets, from a real test."""

from __future__ import annotations

import json
import re
import shutil
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from capicua.arena.sprt_report import counted_text, llr_path, write_sprt_report
from capicua.arena.sprt_runner import NOMINAL_GAMES, Scoreboard, SprtConfig
from capicua.arena.store import Results
from capicua.cli import main
from tests.arenakit import assert_in_layout
from tests.clirunner import cli_runner

FAST = ["--rules", "iq-1v1", "--set", "target=30"]


def sprt(out: Path, *extra: str) -> tuple[dict[str, Any], str]:
    """Run a test in-process; its JSON and its verdict line."""
    args = ["arena", "sprt", "--base", "random", "--candidate", "easy", *FAST, "--out", str(out),
            "--elo0", "-60", "--elo1", "60", "--model", "logistic", *extra]  # fmt: skip
    res = cli_runner().invoke(main, [*args, "--json"])
    data = json.loads(res.stdout.strip().splitlines()[-1])
    verdict = cli_runner().invoke(main, [*args, "--quiet"]).stdout.strip().splitlines()[-1]
    return data, verdict


def scoreboard(out: Path) -> Scoreboard:
    """The stored test's bookkeeping, counted again from its matches (the test of sprt())."""
    results = Results.open_existing(out)
    try:
        board = Scoreboard(SprtConfig(-60.0, 60.0, 0.05, 0.05, "logistic"), NOMINAL_GAMES)
        board.add(results.matches())
    finally:
        results.close()
    return board


@pytest.fixture(scope="module")
def decided(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], str]:
    out = tmp_path_factory.mktemp("sprt") / "t"
    data, verdict = sprt(out)
    assert data["decision"] == "H1"
    return out, data, verdict


def test_the_report_shows_the_test(decided: tuple[Path, dict[str, Any], str]) -> None:
    out, data, verdict = decided
    res = cli_runner().invoke(main, ["arena", "report", str(out)])
    assert res.exit_code == 0, res.stderr
    html = (out / "report.html").read_text(encoding="utf-8")
    assert f"H1 accepted after {data['pairs']:,} pairs" in html
    assert verdict.startswith("H1 accepted") and str(data["pairs"]) in verdict
    assert "candidate (builtin:easy)" in html and "base (builtin:random)" in html
    assert "candidate candidate" not in html and "1000000" not in html
    lower, upper = data["bounds"]
    # a decided test's LLR is past its bound, and says so (not "within [-2.944, +2.944]")
    assert f"{data['llr']:+.3f}, past the upper bound {upper:+.3f}: H1 accepted" in html
    assert "within [" not in html
    # no set was left out, so the page does not speak of one
    assert data["skipped_pairs"] == 0 and "left out" not in html
    section = html[html.index('<section id="pentanomial">') :]
    penta = re.findall(
        r"<tr><th>[^<]+</th><td>([\d,]+)</td></tr>", section[: section.index("</section>")]
    )
    assert [int(c.replace(",", "")) for c in penta] == data["pentanomial"]
    assert html.count("<polyline") == 1 and "H1 at" in html and "H0 at" in html
    elo, (lo, hi) = data["elo"], data["elo_ci95"]
    assert f"{elo:+.1f} [{lo:+.1f}, {hi:+.1f}]" in html


def test_the_llr_path_ends_at_the_tests_llr(decided: tuple[Path, dict[str, Any], str]) -> None:
    out, data, _ = decided
    monitor = scoreboard(out)
    path = llr_path(monitor.test, monitor.scores)
    assert len(path) == data["pairs"]
    assert path[-1] == pytest.approx(data["llr"], abs=1e-4)
    assert all(data["bounds"][0] < v < data["bounds"][1] for v in path[:-1])  # it went on


def test_an_undecided_test_says_so(tmp_path: Path) -> None:
    out = tmp_path / "u"
    data, _ = sprt(out, "--max-pairs", "4")
    assert data["complete"] is True and data["decision"] is None
    html = write_sprt_report(out).read_text(encoding="utf-8")
    assert "no decision yet after 4 pairs" in html
    lower, upper = data["bounds"]
    bounds = re.escape(f"within [{lower:+.3f}, {upper:+.3f}]")
    found = re.search(rf"([+-]\d+\.\d{{3}}) {bounds}", html)
    assert found is not None and float(found[1]) == pytest.approx(data["llr"], abs=1e-3)


def test_sets_left_out_are_said_only_when_there_are_some() -> None:
    monitor = Scoreboard(SprtConfig(0.0, 10.0, 0.05, 0.05, "normalized"), NOMINAL_GAMES)
    assert counted_text(monitor) == "0"
    monitor.skipped = 1
    assert counted_text(monitor) == "0 (1 set left out: a match of it was cancelled)"
    monitor.skipped = 3
    assert counted_text(monitor) == "0 (3 sets left out: a match of each was cancelled)"


@pytest.mark.parametrize("width", [1280, 390])
def test_the_sprt_page_fits_the_screen(
    browser: Any, decided: tuple[Path, dict[str, Any], str], width: int
) -> None:
    page = browser.new_page(viewport={"width": width, "height": 900})
    try:
        page.goto(write_sprt_report(decided[0]).as_uri())
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        box = page.evaluate(
            "(() => { const r = document.querySelector('svg.llr')"
            ".getBoundingClientRect(); return [r.left, r.right, r.height] })()"
        )
        assert box[0] >= 0 and box[1] <= width and box[2] > 50, box
    finally:
        page.close()


def test_the_page_is_drawn_in_the_reports_layout(decided: tuple[Path, dict[str, Any], str]) -> None:
    """The SPRT's page is the tournament report's layout (templates/base.html.j2) with its
    style sheet, not a page of its own: the same header, nav, main and footer."""
    html = write_sprt_report(decided[0]).read_text(encoding="utf-8")
    assert_in_layout(html, "SPRT: candidate (builtin:easy) vs base (builtin:random)",
                     "Written by <code>capicua arena report")  # fmt: skip


def test_the_llr_chart_is_the_charts_modules(decided: tuple[Path, dict[str, Any], str]) -> None:
    """The LLR chart is capicua.arena.charts' (beside the other SVG charts, on their axis
    steps and grid), drawn from the same LLR path and bounds the test ran on."""
    from capicua.arena.charts import llr_chart_svg

    out, data, _ = decided
    board = scoreboard(out)
    path = llr_path(board.test, board.scores)
    chart = str(llr_chart_svg(path, *data["bounds"]))
    assert chart in write_sprt_report(out).read_text(encoding="utf-8")
    # the y axis: round steps (the charts' nice_step) with 0 on its own grid line
    labels = re.findall(r'<text class="axis" [^>]*text-anchor="end">([^<]+)</text>', chart)
    assert "0" in labels and all(re.fullmatch(r"[+-]\d+(\.\d+)?|0", t) for t in labels)
    assert chart.count('<line class="zero"') == 1
    assert chart.count('<line class="bound"') == 2
    points = re.search(r'<polyline class="path" points="([^"]*)"', chart)
    assert points is not None and len(points[1].split()) == data["pairs"]


def test_stored_text_is_escaped(decided: tuple[Path, dict[str, Any], str], tmp_path: Path) -> None:
    """A disqualification's reason (a bot's own words) reaches the page as text, by the
    template's autoescaping: no markup of it survives."""
    copy = tmp_path / "copy"
    shutil.copytree(decided[0], copy)
    results = Results(copy)
    try:
        results.disqualify("candidate", '<script>alert("x")</script> & <b>bold</b>')
    finally:
        results.close()
    html = write_sprt_report(copy).read_text(encoding="utf-8")
    assert "<script" not in html and "<b>bold" not in html
    shown = re.search(r"<li>disqualified: candidate \(builtin:easy\): ([^<]*)</li>", html)
    assert shown is not None
    assert unescape(shown[1]) == '<script>alert("x")</script> & <b>bold</b>'
