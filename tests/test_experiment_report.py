"""``capicua experiment report``: the HTML page of an A/B experiment and of a sweep, checked
as text and in Chromium (the ``browser`` fixture of tests/conftest.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from capicua.arena.experiment.report import write_report
from capicua.cli import main
from tests.clirunner import cli_runner

NAME = "tie </script> & <b>rule</b>"


def _run(args: list[str]) -> dict[str, Any]:
    res = cli_runner().invoke(main, ["experiment", *args, "--json"])
    assert res.exit_code == 0, (res.output, res.stderr)
    data: dict[str, Any] = json.loads(res.stdout.strip().splitlines()[-1])
    return data


@pytest.fixture(scope="module")
def ab_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("ab") / "results"
    data = _run(
        ["ab", "--base", "dominican", "--candidate-set", "block_tie=no_winner",
         "--candidate-set", "finish_bonus.capicua.effect=add:60", "--bots", "easy",
         "--hands", "300", "--name", NAME, "--out", str(out)]
    )  # fmt: skip
    return out, data


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("sweep") / "results"
    data = _run(
        ["sweep", "--rules", "block", "--knob", "target", "--values", "50,100,150",
         "--unit", "match", "--matches", "30", "--out", str(out)]
    )  # fmt: skip
    return out, data


def test_the_ab_page_lays_out_the_stored_numbers(ab_dir: tuple[Path, dict[str, Any]]) -> None:
    out, data = ab_dir
    res = cli_runner().invoke(main, ["experiment", "report", str(out)])
    assert res.exit_code == 0, res.stderr
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "http" not in page.replace("https://", "")
    assert "<script" not in page  # no script at all: the name is escaped, not executed
    assert "tie &lt;/script&gt; &amp; &lt;b&gt;rule&lt;/b&gt;" in page
    significant = {s["metric"] for s in data["significant"]}
    assert "points_per_hand" in significant and "no_winner_rate" in significant
    forest = re.findall(r'<g class="row (sig|ns)" data-metric="([^"]+)"', page)
    shown = dict((m, cls) for cls, m in forest)
    for metric in significant:
        if data["metrics"][metric]["base"]:
            assert shown[metric] == "sig", metric
    assert "no_winner_rate" not in shown  # 0 in the base: listed apart, no relative scale
    assert "no_winner_rate: 0.00% →" in page
    for metric, m in data["metrics"].items():
        if m["base"] == m["candidate"] == 0:
            assert f">{metric}<" not in page, metric  # always 0: left out of the table
    assert page.count('class="dist"') == 2  # points and moves per hand


def test_the_sweep_page_has_a_chart_per_varying_metric(
    sweep_dir: tuple[Path, dict[str, Any]],
) -> None:
    out, data = sweep_dir
    page = write_report(out).read_text(encoding="utf-8")
    charts = set(re.findall(r'<svg class="sweep" data-metric="([^"]+)"', page))
    varying = {
        name
        for name, m in data["metrics"].items()
        if any(v["diff"] or v["ci95"] != [0, 0] for v in m["by_value"].values())
    }
    assert "hands_per_match" in charts and charts == varying
    assert page.count('class="candidate"') == 2  # 100 and 150 against 50
    assert page.count('class="dist"') == 3  # and hands per match
    assert len(re.findall(r'<polyline class="arm" data-arm="(50|100|150)"', page)) == 9


def test_a_directory_without_an_experiment_is_one_line(tmp_path: Path) -> None:
    res = cli_runner().invoke(main, ["experiment", "report", str(tmp_path)])
    assert res.exit_code == 2 and "no experiment results" in res.stderr
    assert "Traceback" not in res.stderr


@pytest.fixture
def open_page(browser: Any) -> Iterator[Any]:
    pages: list[Any] = []

    def opener(path: Path, width: int) -> tuple[Any, list[str]]:
        errors: list[str] = []
        pg = browser.new_page(viewport={"width": width, "height": 900})
        pages.append(pg)
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on(
            "request",
            lambda r: None if r.url.startswith("file:") else errors.append(f"request {r.url}"),
        )
        pg.goto(path.as_uri())
        return pg, errors

    yield opener
    for pg in pages:
        pg.close()


@pytest.mark.parametrize("width", [1280, 390])
def test_both_pages_render_in_chromium(
    open_page: Any,
    ab_dir: tuple[Path, dict[str, Any]],
    sweep_dir: tuple[Path, dict[str, Any]],
    width: int,
) -> None:
    for out, _ in (ab_dir, sweep_dir):
        pg, errors = open_page(write_report(out), width)
        assert errors == []
        boxes = pg.eval_on_selector_all(
            "svg",
            "els => els.map(e => [e.clientWidth || e.getBoundingClientRect().width,"
            " e.getBoundingClientRect().height])",
        )
        assert boxes and all(w > 100 and h > 50 for w, h in boxes), boxes
        # On a phone nothing makes the page scroll sideways: charts shrink, tables scroll
        # inside their own section.
        assert pg.evaluate("document.documentElement.scrollWidth") <= width
        assert pg.title().endswith("capicua experiment")
