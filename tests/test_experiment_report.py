"""``capicua experiment report``: the HTML page of an A/B experiment and of a sweep, checked
as text and in Chromium (the ``browser`` fixture of tests/conftest.py, which skips without
a chromium): the same numbers as ``capicua experiment show``, forest plots on scales that
cannot explode (rates in percentage points, means in their own units, a panel per unit),
intervals drawn inside what a metric can be, sweeps in numeric order with the base marked,
and a page that fits a 390 px phone as well as a 1280 px screen."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any

import pytest

from capicua.arena.experiment.analysis import Analysis
from capicua.arena.experiment.metrics import Comparison, Metric
from capicua.arena.experiment.report import forest_panels, sweep_order, write_report
from capicua.cli import main
from tests.arenakit import assert_in_layout
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
    """A sweep whose values are not given in order: 100 (the base), 50, 200."""
    out = tmp_path_factory.mktemp("sweep") / "results"
    data = _run(
        ["sweep", "--rules", "block", "--knob", "target", "--values", "100,50,200",
         "--bots", "random", "--unit", "match", "--matches", "30", "--out", str(out)]
    )  # fmt: skip
    return out, data


# -- the forest plot as drawn: parsed back from the page ------------------------------------


@dataclass(frozen=True)
class Row:
    """One drawn forest row: positions in % of its track, the flags of its ends."""

    metric: str
    significant: bool
    low: float  # the interval's left end
    high: float  # its right end
    point: float
    low_limit: bool
    high_limit: bool
    text: str


@dataclass(frozen=True)
class Panel:
    name: str
    unit: str
    lo: float  # the axis range, in unit
    hi: float
    rows: dict[str, Row]

    def value(self, percent: float) -> float:
        """A position on the track, in the panel's unit."""
        return self.lo + percent / 100 * (self.hi - self.lo)


FIGURE = re.compile(
    r'<figure class="forest" data-name="([^"]+)" data-unit="([^"]+)" data-lo="([^"]+)" '
    r'data-hi="([^"]+)">(.*?)</figure>'
)
ROW = re.compile(
    r'<div class="frow (sig|ns)" data-metric="([^"]+)" title="[^"]*">.*?'
    r'<i class="ci( low-limit)?( high-limit)?" style="left:([-\d.]+)%;width:([-\d.]+)%"></i>'
    r'<i class="pt" style="left:([-\d.]+)%"></i></div><span class="fvalue">([^<]*)</span>'
)


def forests(html: str) -> list[list[Panel]]:
    """Every candidate's forest panels, in page order."""
    out = []
    for section in html.split('<section class="candidate"')[1:]:
        panels = []
        for name, unit, lo, hi, body in FIGURE.findall(section):
            rows = {
                m: Row(m, cls == "sig", float(left), float(left) + float(width), float(pt),
                       bool(low), bool(high), text)
                for cls, m, low, high, left, width, pt, text in ROW.findall(body)
            }  # fmt: skip
            panels.append(Panel(name, unit, float(lo), float(hi), rows))
        out.append(panels)
    return out


def show_lines(out: Path) -> list[str]:
    res = cli_runner().invoke(main, ["experiment", "show", str(out)])
    assert res.exit_code == 0, res.stderr
    return res.stdout.splitlines()


def test_the_ab_page_lays_out_the_stored_numbers(ab_dir: tuple[Path, dict[str, Any]]) -> None:
    out, data = ab_dir
    res = cli_runner().invoke(main, ["experiment", "report", str(out)])
    assert res.exit_code == 0, res.stderr
    page = (out / "report.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "http" not in page.replace("https://", "")
    assert "<script" not in page  # no script at all: the name is escaped, not executed
    assert "tie &lt;/script&gt; &amp; &lt;b&gt;rule&lt;/b&gt;" in page
    # the table: every cell as `capicua experiment show` prints it, on the metric's line
    table = page[page.index('<table class="grid comparisons">') :]
    cells = re.findall(r'<tr class="[^"]*"><td class="name" title="[^"]*">([^<]+)</td>'
                       r"<td>([^<]+)</td><td>([^<]+)</td><td>([^<]+)</td><td>([^<]+)</td>"
                       r'<td class="flag">([^<]*)</td></tr>', table)  # fmt: skip
    shown = {line.split("│")[1].strip(): line for line in show_lines(out) if "│" in line}
    assert len(cells) == len(shown) >= 8
    for metric, *rest in cells:
        assert metric in shown, metric
        for cell in rest:
            assert f" {cell} " in shown[metric], (metric, cell, shown[metric])
    for metric, m in data["metrics"].items():
        if m["base"] == m["candidate"] == 0:
            assert f">{metric}<" not in page, metric  # always 0: left out, as show does
    assert page.count('class="dist"') == 2  # points and moves per hand


def test_the_forest_plot_has_a_scale_per_unit_and_no_relative_one(
    ab_dir: tuple[Path, dict[str, Any]],
) -> None:
    out, data = ab_dir
    page = write_report(out).read_text(encoding="utf-8")
    assert "% of the base" not in page and "no relative scale" not in page
    (panels,) = forests(page)
    by_name = {p.name: p for p in panels}
    assert list(by_name) == ["rates", "mean-points", "mean-moves", "mean-passes"]
    assert [p.unit for p in panels] == ["pp", "points", "moves", "passes"]
    rates = by_name["rates"]
    drawn = {m for p in panels for m in p.rows}
    for metric, m in data["metrics"].items():
        if m["base"] == m["candidate"] == 0:
            assert metric not in drawn, metric
            continue
        panel = rates if m["diff_unit"] == "pp" else by_name[f"mean-{m['diff_unit']}"]
        row = panel.rows[metric]  # every metric shown: 0 in the base is no special case
        assert row.significant == (metric in {s["metric"] for s in data["significant"]})
        scale = 100 if panel is rates else 1
        assert panel.value(row.point) == pytest.approx(scale * m["diff"], abs=0.01 * panel.hi)
        assert row.text.startswith(f"{scale * m['diff']:+.{2 if scale == 100 else 3}f} ")
    # no_winner_rate goes from 0 to 2%: a finite difference in pp, not "+inf %", and the
    # axis stays that of ordinary rates (a few pp), not hundreds of %
    assert data["metrics"]["no_winner_rate"]["base"] == 0 and "no_winner_rate" in rates.rows
    assert -100 <= rates.lo < 0 < rates.hi <= 100 and rates.hi - rates.lo <= 25
    # two ordinary rates 4 pp apart are far apart on the track (a 1280 px screen draws the
    # track over 600 px: this is more than 60 px; the browser test measures it)
    opener, no_winner = rates.rows["opener_side_win_rate"], rates.rows["no_winner_rate"]
    assert no_winner.point - opener.point >= 10


def _comparison(name: str, base: float, diff: float, low: float, high: float,
                significant: bool = False) -> Comparison:  # fmt: skip
    return Comparison(name, base, base + diff, diff, 0.01, (low, high), 0.5,
                      significant=significant, differing=50, pairs=500)  # fmt: skip


def _analysis(metrics: list[Metric], row: list[Comparison]) -> Analysis:
    return Analysis(kind="ab", unit="hand", knob=None, labels=("base", "candidate"),
                    pairs=500, excluded=0, metrics=tuple(metrics), rows=(tuple(row),),
                    planned=500)  # fmt: skip


def test_a_metric_near_zero_does_not_squeeze_the_others() -> None:
    """The case a relative scale drew +300.0% [-30.7, +630.7] on an axis of ±750%, every
    other row collapsed onto 0: here it is +0.30 pp among rates moving by a few pp."""
    metrics = [Metric("rare_rate", "rare"), Metric("block_rate", "blocked"),
               Metric("opener_rate", "opener"),
               Metric("points", "points", rate=False, unit="points", high=None),
               Metric("hands", "hands", rate=False, unit="hands", high=None)]  # fmt: skip
    row = [
        _comparison("rare_rate", 0.001, 0.003, -0.000307, 0.006307),
        _comparison("block_rate", 0.20, 0.02, 0.01, 0.03, significant=True),
        _comparison("opener_rate", 0.55, -0.01, -0.02, 0.0),
        _comparison("points", 20.0, 3.0, 1.5, 4.5, significant=True),
        _comparison("hands", 7.0, -0.05, -0.1, 0.0),
    ]
    html = "".join(p.html() for p in forest_panels(_analysis(metrics, row), 0))
    (panels,) = forests(f'<section class="candidate">{html}')
    rates, points, hands = panels
    assert (rates.unit, points.unit, hands.unit) == ("pp", "points", "hands")
    assert rates.hi - rates.lo <= 10  # a few pp, not hundreds of %
    block, opener, rare = (rates.rows[m] for m in ("block_rate", "opener_rate", "rare_rate"))
    assert block.point - opener.point >= 30  # 3 pp apart: a third of the track and more
    assert rates.value(rare.point) == pytest.approx(0.3, abs=0.05)
    # a mean's large scale (3 points) is not the scale of another's (0.05 hands)
    assert hands.hi - hands.lo <= 0.2 and points.hi - points.lo >= 3
    assert (
        hands.rows["hands"].point < 90 and hands.rows["hands"].high - hands.rows["hands"].low >= 20
    )


def test_a_rates_drawn_interval_stays_in_its_possible_range() -> None:
    """A rate at 8% cannot fall by more than 8 pp, nor one at 95% rise by more than 5: an
    interval reaching past that is drawn up to the bound, the bound marked."""
    metrics = [Metric("low_rate", "low"), Metric("high_rate", "high"),
               Metric("free_rate", "free")]  # fmt: skip
    row = [
        _comparison("low_rate", 0.08, -0.07, -0.147, 0.007),
        _comparison("high_rate", 0.95, 0.03, -0.01, 0.08),
        _comparison("free_rate", 0.50, 0.01, -0.02, 0.04),
    ]
    html = "".join(p.html() for p in forest_panels(_analysis(metrics, row), 0))
    ((rates,),) = forests(f'<section class="candidate">{html}')
    low, high, free = rates.rows["low_rate"], rates.rows["high_rate"], rates.rows["free_rate"]
    assert rates.value(low.low) == pytest.approx(-8.0, abs=0.05) and low.low_limit
    assert not low.high_limit
    assert rates.value(high.high) == pytest.approx(5.0, abs=0.05) and high.high_limit
    assert not high.low_limit and not free.low_limit and not free.high_limit
    assert rates.lo >= -10 and rates.hi <= 10
    # the printed numbers stay show's (the statistics decide them, the chart only draws)
    assert low.text == "-7.00 pp [-14.70, +0.70]"


def test_every_drawn_rate_interval_is_possible(
    ab_dir: tuple[Path, dict[str, Any]], sweep_dir: tuple[Path, dict[str, Any]]
) -> None:
    """In real experiments: a rate's drawn interval lies in [-base, 1 - base] (in pp), and
    an end on that bound is marked."""
    checked = limits = 0
    for out, data in (ab_dir, sweep_dir):
        for panels in forests(write_report(out).read_text(encoding="utf-8")):
            rates = next(p for p in panels if p.name == "rates")
            for metric, row in rates.rows.items():
                base = 100 * data["metrics"][metric]["base"]
                # opener_side_advantage lies in [-1, 1], every other rate in [0, 1]
                floor = (-100 if metric == "opener_side_advantage" else 0) - base
                ceiling = 100 - base
                low, high = rates.value(row.low), rates.value(row.high)
                step = (rates.hi - rates.lo) / 1000  # the drawing's rounding
                assert floor - step <= low <= high <= ceiling + step, (metric, low, high)
                assert row.low_limit == (low <= floor + step), metric
                assert row.high_limit == (high >= ceiling - step), metric
                checked += 1
                limits += row.low_limit + row.high_limit
    assert checked >= 20 and limits >= 1  # a sweep of 30 matches reaches a bound


def test_the_sweep_page_has_a_chart_per_varying_metric(
    sweep_dir: tuple[Path, dict[str, Any]],
) -> None:
    out, data = sweep_dir
    page = write_report(out).read_text(encoding="utf-8")
    charts = set(re.findall(r'<svg class="sweep" data-metric="([^"]+)"', page))
    shown = {
        name
        for name, m in data["metrics"].items()
        if m["base"] or any(v["candidate"] for v in m["by_value"].values())
    }
    assert "hands_per_match" in charts and charts == shown
    assert page.count('class="candidate"') == 2  # 50 and 200 against 100
    assert page.count('class="dist"') == 3  # and hands per match
    arms = re.findall(r'<polyline class="arm" data-arm="(50|100|150|200)"', page)
    assert arms == ["50", "100", "200"] * 3  # in the charts' order


def test_sweep_values_are_drawn_in_numeric_order_with_the_base_marked(
    sweep_dir: tuple[Path, dict[str, Any]],
) -> None:
    out, data = sweep_dir
    assert data["values"] == ["100", "50", "200"]  # as given: the base first
    page = write_report(out).read_text(encoding="utf-8")
    svgs = re.findall(r'<svg class="sweep" data-metric="([^"]+)"(.*?)</svg>', page)
    assert len(svgs) >= 10
    for metric, svg in svgs:
        points = re.findall(r'<circle class="(\w+)" data-label="([^"]+)" cx="([\d.]+)" '
                            r'cy="([\d.]+)"', svg)  # fmt: skip
        xs = {label: float(cx) for _, label, cx, _ in points}
        assert xs["50"] < xs["100"] < xs["200"], (metric, xs)
        assert [label for cls, label, _, _ in points if cls == "base"] == ["100"], metric
        assert ">100 (base)</text>" in svg
        # the base is 0 by definition: its point sits on the zero line
        zero = re.search(r'<line class="zero" x1="[\d.]+" x2="[\d.]+" y1="([\d.]+)"', svg)
        assert zero is not None
        assert [cy for _, label, _, cy in points if label == "100"] == [zero.group(1)]
    assert "the values in numeric order" in " ".join(page.split())


def test_sweep_order() -> None:
    assert sweep_order(["100", "50", "200"]) == [1, 0, 2]
    assert sweep_order(["0.5", "-1", "1e2"]) == [1, 0, 2]
    assert sweep_order(["add:25", "add:0", "add:10"]) == [1, 2, 0]
    assert sweep_order(["add:25", "mul:2", "add:10"]) == [0, 1, 2]  # not the same word
    assert sweep_order(["true", "false"]) == [0, 1]
    assert sweep_order(["v1", "10", "5"]) == [0, 1, 2]  # not all numbers: as given
    assert sweep_order(["nan", "1"]) == [0, 1]


def test_the_page_is_drawn_in_the_reports_layout(ab_dir: tuple[Path, dict[str, Any]]) -> None:
    """The experiment's page is the layout every report page shares (templates/base.html.j2)
    with its one style sheet, not a page of its own: the same header, nav, main and footer,
    and no second style sheet."""
    html = write_report(ab_dir[0]).read_text(encoding="utf-8")
    assert_in_layout(html, "tie &lt;/script&gt; &amp; &lt;b&gt;rule&lt;/b&gt;",
                     "Written by <code>capicua experiment report")  # fmt: skip
    # the nav leads to every section the page has
    nav = html.split("<nav>")[1].split("</nav>")[0]
    targets = re.findall(r'<a href="#([^"]+)">', nav)
    assert targets == ["settings", "verdict", "candidate-1", "distributions"]
    assert all(f'id="{target}"' in html for target in targets)


def test_stored_labels_are_escaped(tmp_path: Path) -> None:
    """An arm's label from an experiment file (any 1-40 characters without spaces or
    commas, so markup too) reaches the page as text wherever it is shown: no markup of it
    survives the template's autoescaping, the charts' or the nav's."""
    label = "<script>alert(1)</script><b>x</b>&"
    spec = tmp_path / "exp.toml"
    spec.write_text(
        'name = "labels"\nhands = 40\nbots = ["random"]\n[base]\npreset = "block"\n'
        f'[candidate]\npreset = "block"\noverrides = ["block_tie=no_winner"]\nlabel = "{label}"\n',
        encoding="utf-8",
    )
    out = tmp_path / "results"
    _run(["run", str(spec), "--out", str(out)])
    html = write_report(out).read_text(encoding="utf-8")
    assert "<script" not in html and "<b>x" not in html
    heading = re.search(r"<h2>base vs ([^<]*)</h2>", html)
    assert heading is not None and unescape(heading[1]) == label
    column = re.findall(r"<th>([^<]*)</th><th>diff</th>", html)
    assert [unescape(c) for c in column] == [label]
    arms = re.findall(r'<polyline class="arm" data-arm="([^"]*)"', html)
    assert arms and {unescape(a) for a in arms} == {"base", label}


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


#: What must be on screen of every chart: the zero lines, every point and interval.
KEY_PARTS = (".forest i.zero, .forest i.pt, .forest i.ci, svg.sweep line.zero, svg.sweep circle, "
             "svg.dist polyline")  # fmt: skip


@pytest.mark.parametrize("width", [1280, 390])
@pytest.mark.parametrize("which", ["ab", "sweep"])
def test_the_page_fits_the_screen(
    open_page: Any,
    ab_dir: tuple[Path, dict[str, Any]],
    sweep_dir: tuple[Path, dict[str, Any]],
    which: str,
    width: int,
) -> None:
    out = (ab_dir if which == "ab" else sweep_dir)[0]
    pg, errors = open_page(write_report(out), width)
    assert errors == []
    assert pg.title().endswith("capicua experiment")
    assert pg.evaluate("window.innerWidth") == width
    # nothing makes the page scroll sideways: the SVG charts scale to their card, the
    # forest rows reflow, a wide table scrolls inside its own box
    assert pg.evaluate("document.documentElement.scrollWidth") <= width
    right = pg.evaluate(
        "Math.max(...[...document.querySelectorAll('main > section, .scroll')]"
        ".map(s => s.getBoundingClientRect().right))"
    )
    assert right <= width
    # every chart's zero line, point and interval is on screen, not cropped off its edge
    key = pg.evaluate(
        "sel => [...document.querySelectorAll(sel)].map(e => e.getBoundingClientRect())"
        ".filter(r => r.width + r.height > 0).map(r => [r.left, r.right])",
        KEY_PARTS,
    )
    assert len(key) >= (30 if which == "ab" else 100)
    assert all(left >= 0 and right <= width for left, right in key), key
    charts = pg.evaluate(
        "[...document.querySelectorAll('svg')].map(e => { const r = e.getBoundingClientRect();"
        " return [r.width, r.height, e.parentElement.clientWidth] })"
    )
    assert charts and all(100 < w <= box + 1 and h > 50 for w, h, box in charts), charts
    # and legible: no text of a chart drawn under 9 px, the forest's at its own size
    smallest = pg.evaluate(
        "Math.min(...[...document.querySelectorAll('svg text')]"
        ".map(t => t.getBoundingClientRect().height))"
    )
    assert smallest >= 9
    sizes = pg.evaluate(
        "[...document.querySelectorAll('.forest .flabel, .forest .fvalue, .forest .tk')]"
        ".map(e => parseFloat(getComputedStyle(e).fontSize))"
    )
    assert sizes and min(sizes) >= 11
    if which == "ab":
        # two rates 4 pp apart (-2 and +2) are far apart on screen, at any width
        xs = pg.evaluate(
            "ms => ms.map(m => document.querySelector("
            "`.forest .frow[data-metric='${m}'] i.pt`).getBoundingClientRect().x)",
            ["opener_side_win_rate", "no_winner_rate"],
        )
        assert xs[1] - xs[0] >= (40 if width < 500 else 80), xs


@pytest.fixture(scope="module")
def skill_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """An A/B with --skill and a skill trace at the match unit: drawing from the stock in
    iq-1v1; medium against random is a pairing of its own, the trace's rungs easy against
    random and medium against easy."""
    out = tmp_path_factory.mktemp("skill") / "results"
    data = _run(
        ["ab", "--base", "iq-1v1", "--candidate-set", "stock=draw", "--bots", "random",
         "--unit", "match", "--matches", "20", "--skill", "--skill-bots", "medium:random",
         "--skill-trace", "random,easy,medium", "--out", str(out)]
    )  # fmt: skip
    return out, data


#: What --skill measures on the arms' own games at the match unit.
OWN_GAMES = ("choice_rate", "actions_per_choice", "lead_changes_per_match", "decisiveness")


def test_the_skill_section_shows_every_arm_with_its_interval(
    skill_dir: tuple[Path, dict[str, Any]],
) -> None:
    out, data = skill_dir
    html = write_report(out).read_text(encoding="utf-8")
    section = html.split('<section id="skill">')[1].split("</section>")[0]
    names = ["hand_win_rate.medium_vs_random", "match_win_rate.medium_vs_random", *OWN_GAMES]
    shown = "\n".join(show_lines(out))
    for name in names:
        assert f'data-name="{name}"' in section, name  # a panel per skill metric
        diff = data["metrics"][name]
        low, high = diff["ci95"]
        assert f"[{100 * low:+.2f}" in section or f"[{low:+.3f}" in section, name
        assert name in shown  # show's skill table has the same rows
    # the arms' own values, as show prints them, are the ones drawn
    for line in shown.splitlines():
        if line.startswith("│ hand_win_rate.medium_vs_random"):
            base_cell = line.split("│")[2].strip()
            assert base_cell in section
    # the trace's rungs are in the trace's section only, and no skill metric is repeated
    # in the comparison table above
    assert "easy_vs_random" not in section and "medium_vs_easy" not in section
    comparisons = html.split('<section class="candidate"')[1].split("</section>")[0]
    assert "_vs_" not in comparisons and "decisiveness" not in comparisons


def test_a_measure_page_lists_every_metric_with_its_interval(tmp_path: Path) -> None:
    out = tmp_path / "m"
    data = _run(["measure", "--rules", "block", "--bots", "random", "--hands", "200",
                 "--out", str(out)])  # fmt: skip
    html = write_report(out).read_text(encoding="utf-8")
    assert "one ruleset measured on its own" in html and "200 hands" in html
    table = html.split('<section id="measure">')[1].split("</section>")[0]
    block = data["metrics"]["block_rate"]
    assert f"{100 * block['value']:.2f}%" in table
    assert f"[{100 * block['ci95'][0]:.2f}%, {100 * block['ci95'][1]:.2f}%]" in table
    assert '<section class="candidate"' not in html  # nothing to compare


TRACE_POINT = re.compile(
    r'<circle class="rung( sig)?" data-arm="([^"]+)" data-rung="([^"]+)" '
    r'data-value="([\d.]+)" data-low="([\d.]+)" data-high="([\d.]+)" style="fill:[^"]+" '
    r'cx="([\d.]+)" cy="([\d.]+)"'
)


def test_the_trace_section_draws_every_rung_of_every_arm(
    skill_dir: tuple[Path, dict[str, Any]],
) -> None:
    """A chart per win rate (hands, matches), a point per arm and rung: the stronger
    level's value and interval of the JSON's trace, significance as the comparison says;
    the rungs from the weakest up, and the table below with show's trace table's cells."""
    out, data = skill_dir
    html = write_report(out).read_text(encoding="utf-8")
    section = html.split('<section id="trace">')[1].split("</section>")[0]
    trace = data["skill_trace"]
    assert trace["levels"] == ["random", "easy", "medium"] and trace["even_share"] == 0.5
    charts = re.findall(r'<svg class="trace" data-name="([^"]+)"(.*?)</svg>', section)
    assert [name for name, _ in charts] == ["hand_win_rate", "match_win_rate"]
    for measure, svg in charts:
        points = TRACE_POINT.findall(svg)
        assert len(points) == 2 * 2  # two arms, two rungs
        for sig, arm, metric, value, low, high, _cx, _cy in points:
            rung = next(r for r in trace["rungs"] if r[measure]["metric"] == metric)
            want = rung[measure]["by_arm"][arm]
            assert float(value) == pytest.approx(want["value"], abs=1e-6)
            assert [float(low), float(high)] == pytest.approx(want["ci95"], abs=1e-6)
            assert bool(sig) == (arm != "base" and data["metrics"][metric]["significant"])
        # the weakest rung on the left, for every arm
        xs = {(arm, metric): float(cx) for _, arm, metric, *_rest, cx, _ in points}
        for arm in ("base", "candidate"):
            assert xs[(arm, f"{measure}.easy_vs_random")] < xs[(arm, f"{measure}.medium_vs_easy")]
        assert "even</text>" in svg
    table = section[section.index('<table class="grid trace">') :]
    rows = re.findall(r'<td class="name" title="([^"]+)">([^<]+)</td><td>([^<]+)</td>', table)
    assert [metric for metric, _, _ in rows] == [
        "hand_win_rate.easy_vs_random", "match_win_rate.easy_vs_random",
        "hand_win_rate.medium_vs_easy", "match_win_rate.medium_vs_easy"]  # fmt: skip
    shown = {line.split("│")[1].strip(): line for line in show_lines(out) if "│" in line}
    for _metric, rung, base_cell in rows:
        assert f" {base_cell} " in shown[rung], (rung, base_cell)


@pytest.mark.parametrize("width", [1280, 390])
def test_the_skill_page_fits_the_screen(
    open_page: Any, skill_dir: tuple[Path, dict[str, Any]], width: int
) -> None:
    pg, errors = open_page(write_report(skill_dir[0]), width)
    assert errors == []
    assert pg.evaluate("document.documentElement.scrollWidth") <= width
    key = pg.evaluate(
        "[...document.querySelectorAll('#skill .forest i.pt, #skill .forest i.ci, "
        "#trace svg circle, #trace svg line.whisker, #trace svg line.even')]"
        ".map(e => e.getBoundingClientRect()).filter(r => r.width + r.height > 0)"
        ".map(r => [r.left, r.right])"
    )
    assert len(key) >= 10 + 2 * 8 + 2  # the trace: 8 points and 8 whiskers a chart
    assert all(left >= 0 and right <= width for left, right in key), key
    # the trace's charts fit their card and their text stays legible
    charts = pg.evaluate(
        "[...document.querySelectorAll('#trace svg')].map(e => { const r = "
        "e.getBoundingClientRect(); return [r.width, r.height, e.closest('section')"
        ".clientWidth] })"
    )
    assert len(charts) == 2 and all(100 < w <= box and h > 50 for w, h, box in charts), charts
    smallest = pg.evaluate(
        "Math.min(...[...document.querySelectorAll('#trace svg text')]"
        ".map(t => t.getBoundingClientRect().height))"
    )
    assert smallest >= 9
    # an arm's two points of a rung stand apart, their intervals visible side by side
    xs = pg.evaluate(
        "[...document.querySelectorAll('#trace svg[data-name=hand_win_rate] circle')]"
        ".map(c => c.getBoundingClientRect().x)"
    )
    assert min(abs(a - b) for i, a in enumerate(xs) for b in xs[i + 1 :]) >= 4
