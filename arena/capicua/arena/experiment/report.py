"""``capicua experiment report DIR``: one self-contained HTML page about an experiment.

The page needs nothing but a browser (inline CSS and SVG, no script, no external URL). It
shows the experiment's settings and, for every candidate against the base:

* the comparison table (the same numbers as ``capicua experiment show``);
* a **forest plot** of the paired differences: each metric's difference relative to the
  base value, with its 95% interval, significant ones marked (metrics that are 0 in the
  base are listed apart: a relative change from 0 has no scale);
* **distributions per arm**: points per hand and moves per hand (and hands per match with
  ``unit = "match"``), one line per arm over the same bins;
* for a sweep, **one chart per metric against the value**: the difference from the first
  value with its 95% interval as a band.

The page is rendered from ``templates/report.html.j2`` (Jinja2, autoescaped); the charts
are SVG drawn by :mod:`capicua.arena.charts`, which the tournament report shares.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from ..charts import Interval, distribution_svg, forest_svg, forest_text, sweep_svg
from ..report import ReportError, write_page
from .analysis import Analysis, diff_text, load, value_text, verdict_lines
from .config import PLURAL
from .metrics import Comparison, MatchFacts, Metric
from .store import StoreError

REPORT_NAME = "report.html"


@dataclass(frozen=True)
class Distribution:
    """A per-unit quantity whose distribution is drawn for every arm."""

    name: str
    label: str
    values: Callable[[MatchFacts], list[int]]


DISTRIBUTIONS = (
    Distribution("points_per_hand", "points scored in a hand",
                 lambda m: [h.points for h in m.hands]),
    Distribution("moves_per_hand", "turns taken in a hand (plays and passes)",
                 lambda m: [h.plays + h.passes for h in m.hands]),
)  # fmt: skip
MATCH_DISTRIBUTIONS = (
    Distribution("hands_per_match", "hands in a match", lambda m: [len(m.hands)]),
)


# -- the charts' values (drawn by capicua.arena.charts) --------------------------------------


def forest_rows(metrics: Sequence[Metric], row: Sequence[Comparison]) -> list[Interval]:
    """The relative paired differences (candidate vs base, in % of the base) with their
    95% intervals; one row per metric that varies and is not 0 in the base."""
    out = []
    for m, c in zip(metrics, row, strict=True):
        if c.identical or not c.base:
            continue
        diff, low, high = (100.0 * v / abs(c.base) for v in (c.diff, *c.ci95))
        tip = (
            f"{m.name}: {value_text(m, c.base)} → {value_text(m, c.candidate)} "
            f"({diff_text(m, c.diff)}; {forest_text(diff, low, high)})"
            f"{' significant' if c.significant else ''}"
        )
        out.append(Interval(m.name, diff, low, high, c.significant, tip))
    return out


def from_zero(metrics: Sequence[Metric], row: Sequence[Comparison]) -> list[str]:
    """Metrics that are 0 in the base and not in the candidate (no relative scale)."""
    return [
        f"{m.name}: {value_text(m, c.base)} → {value_text(m, c.candidate)} "
        f"({diff_text(m, c.ci95[0])} to {diff_text(m, c.ci95[1])})"
        for m, c in zip(metrics, row, strict=True)
        if not c.identical and not c.base
    ]


def sweep_chart(metric: Metric, labels: Sequence[str], comps: Sequence[Comparison]) -> Markup:
    """The difference from the first value against the value, with its 95% band."""

    def point(label: str, diff: float, low: float, high: float, significant: bool) -> Interval:
        ci = f"[{diff_text(metric, low)}, {diff_text(metric, high)}]"
        tip = f"{label}: {diff_text(metric, diff)} {ci}"
        return Interval(label, diff, low, high, significant, tip)

    points = [point(labels[0], 0.0, 0.0, 0.0, False)] + [
        point(label, c.diff, *c.ci95, c.significant)
        for label, c in zip(labels[1:], comps, strict=True)
    ]
    title = metric.name + (" (percentage points)" if metric.rate else "")
    return sweep_svg(metric.name, title, 100.0 if metric.rate else 1.0, points)


# -- the page ---------------------------------------------------------------------------------


def _rows(a: Analysis, c: int) -> list[dict[str, str]]:
    rows = []
    for m, comp in zip(a.metrics, a.rows[c], strict=True):
        if comp.identical and comp.base == 0.0:
            continue
        rows.append(
            {
                "metric": m.name,
                "description": m.description,
                "base": value_text(m, comp.base),
                "candidate": value_text(m, comp.candidate),
                "diff": diff_text(m, comp.diff),
                "ci": f"[{diff_text(m, comp.ci95[0])}, {diff_text(m, comp.ci95[1])}]",
                "flag": "significant"
                if comp.significant
                else "identical"
                if comp.identical
                else "",
            }
        )
    return rows


def render_report(directory: Path) -> str:
    """The report page of the experiment stored in ``directory``."""
    try:
        stored = load(directory)
    except StoreError as e:
        raise ReportError(str(e)) from None
    config, info, facts, a = stored.config, stored.info, stored.facts, stored.analysis
    arms = config["arms"]
    labels = list(a.labels)
    counted = [f for _, f in sorted(facts.items()) if all(x.counted for x in f)]
    dists = DISTRIBUTIONS + (MATCH_DISTRIBUTIONS if a.unit == "match" else ())
    distributions = [
        {
            "label": d.label,
            "svg": distribution_svg(
                d.name,
                d.label,
                labels,
                [[v for f in counted for v in d.values(f[i])] for i in range(len(labels))],
            ),
        }
        for d in dists
    ]
    candidates = [
        {
            "label": labels[c + 1],
            "rows": _rows(a, c),
            "forest": forest_svg(
                forest_rows(a.metrics, a.rows[c]), f"{labels[0]} vs {labels[c + 1]}"
            ),
            "from_zero": from_zero(a.metrics, a.rows[c]),
        }
        for c in range(len(a.rows))
    ]
    sweeps = []
    if a.kind == "sweep":
        for i, m in enumerate(a.metrics):
            comps = [row[i] for row in a.rows]
            if all(c.identical for c in comps):
                continue
            sweeps.append(sweep_chart(m, labels, comps))
    env = Environment(
        loader=PackageLoader("capicua.arena.experiment", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html.j2").render(
        name=config["name"],
        info=info,
        config=config,
        arms=arms,
        analysis=a,
        candidates=candidates,
        distributions=distributions,
        sweeps=sweeps,
        verdict=verdict_lines(a),
        plural=PLURAL[a.unit],
    )


def write_report(directory: Path, out: Path | None = None) -> Path:
    """Write the report (atomically) to ``out`` (default ``DIRECTORY/report.html``)."""
    return write_page(out or directory / REPORT_NAME, render_report(directory))
