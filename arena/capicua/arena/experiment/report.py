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
are built here as SVG.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape

from ..report import ReportError, nice_step, write_page
from .analysis import Analysis, diff_text, load, value_text, verdict_lines
from .config import PLURAL
from .metrics import Comparison, MatchFacts, Metric
from .store import StoreError

REPORT_NAME = "report.html"
COLORS = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7d8c")
MAX_BINS = 40


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


def _f(x: float) -> str:
    return f"{x:.1f}"


# -- the forest plot --------------------------------------------------------------------------


def forest_svg(metrics: Sequence[Metric], row: Sequence[Comparison], title: str) -> Markup:
    """The relative paired differences (candidate vs base, in % of the base) with their
    95% intervals; one row per metric that varies and is not 0 in the base."""
    shown = [(m, c) for m, c in zip(metrics, row, strict=True) if not c.identical and c.base]
    if not shown:
        return Markup('<p class="note">No metric with a non-zero base value differs.</p>')

    def rel(x: float, base: float) -> float:
        return 100.0 * x / abs(base)

    spans = [abs(rel(v, c.base)) for _, c in shown for v in (*c.ci95, c.diff)]
    extent = max(max(spans), 1.0)
    step = nice_step(2 * extent)
    extent = math.ceil(extent / step) * step
    left, right, top, height_row = 210, 190, 30, 24
    width = 860
    plot = width - left - right
    height = top + height_row * len(shown) + 12

    def x(v: float) -> float:
        return left + (v + extent) / (2 * extent) * plot

    parts = [
        f'<svg class="forest" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}">'
    ]
    tick = -extent
    while tick <= extent + step / 2:
        cls = "zero" if abs(tick) < step / 1000 else "tick"
        parts.append(
            f'<line class="{cls}" x1="{_f(x(tick))}" x2="{_f(x(tick))}" y1="{top - 6}" '
            f'y2="{height - 6}"/><text class="axis" x="{_f(x(tick))}" y="{top - 12}" '
            f'text-anchor="middle">{tick:+g}%</text>'
        )
        tick += step
    for i, (m, c) in enumerate(shown):
        cy = top + height_row * i + height_row / 2
        lo, hi = (rel(v, c.base) for v in c.ci95)
        d = rel(c.diff, c.base)
        cls = "sig" if c.significant else "ns"
        text = f"{d:+.1f}% [{lo:+.1f}, {hi:+.1f}]"
        tip = escape(
            f"{m.name}: {value_text(m, c.base)} → {value_text(m, c.candidate)} "
            f"({diff_text(m, c.diff)}; {text}){' significant' if c.significant else ''}"
        )
        parts.append(
            f'<g class="row {cls}" data-metric="{escape(m.name)}"><title>{tip}</title>'
            f'<text class="label" x="{left - 10}" y="{_f(cy + 4)}" text-anchor="end">'
            f"{escape(m.name)}</text>"
            f'<line x1="{_f(x(lo))}" x2="{_f(x(hi))}" y1="{_f(cy)}" y2="{_f(cy)}"/>'
            f'<rect x="{_f(x(d) - 5)}" y="{_f(cy - 5)}" width="10" height="10"/>'
            f'<text class="value" x="{width - right + 10}" y="{_f(cy + 4)}">{text}</text></g>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def from_zero(metrics: Sequence[Metric], row: Sequence[Comparison]) -> list[str]:
    """Metrics that are 0 in the base and not in the candidate (no relative scale)."""
    return [
        f"{m.name}: {value_text(m, c.base)} → {value_text(m, c.candidate)} "
        f"({diff_text(m, c.ci95[0])} to {diff_text(m, c.ci95[1])})"
        for m, c in zip(metrics, row, strict=True)
        if not c.identical and not c.base
    ]


# -- distributions ----------------------------------------------------------------------------


def _bins(values: Sequence[int]) -> tuple[int, int]:
    """(first bin's start, bin width) covering ``values`` in at most :data:`MAX_BINS` bins."""
    lo, hi = min(values), max(values)
    width = max(1, math.ceil((hi - lo + 1) / MAX_BINS))
    return lo - lo % width, width


def distribution_svg(
    dist: Distribution, labels: Sequence[str], arms: Sequence[list[int]]
) -> Markup:
    """The share of units in each bin, one line per arm over the same bins."""
    everything = [v for a in arms for v in a]
    if not everything:
        return Markup('<p class="note">No data.</p>')
    start, width_bin = _bins(everything)
    nbins = (max(everything) - start) // width_bin + 1
    shares = []
    for values in arms:
        counts = Counter((v - start) // width_bin for v in values)
        shares.append([counts.get(b, 0) / max(1, len(values)) for b in range(nbins)])
    top_share = max(max(s) for s in shares) or 1.0
    left, right, top, bottom = 50, 20, 16, 34
    width, height = 860, 230
    pw, ph = width - left - right, height - top - bottom

    def x(b: float) -> float:
        return left + (b + 0.5) / nbins * pw

    def y(s: float) -> float:
        return top + ph - s / top_share * ph

    parts = [
        f'<svg class="dist" data-name="{escape(dist.name)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(dist.label)}">',
        f'<line class="tick" x1="{left}" x2="{width - right}" y1="{top + ph}" y2="{top + ph}"/>',
    ]
    label_every = max(1, nbins // 12)
    for b in range(0, nbins, label_every):
        value = start + b * width_bin
        text = str(value) if width_bin == 1 else f"{value}–{value + width_bin - 1}"
        parts.append(
            f'<text class="axis" x="{_f(x(b))}" y="{height - 16}" text-anchor="middle">'
            f"{text}</text>"
        )
    parts.append(
        f'<text class="axis" x="{left - 6}" y="{top + 8}" text-anchor="end">'
        f"{100 * top_share:.0f}%</text>"
    )
    for i, (label, share) in enumerate(zip(labels, shares, strict=True)):
        color = COLORS[i % len(COLORS)]
        points = " ".join(f"{_f(x(b))},{_f(y(s))}" for b, s in enumerate(share))
        parts.append(
            f'<polyline class="arm" data-arm="{escape(label)}" fill="none" stroke="{color}" '
            f'stroke-width="2" points="{points}"><title>{escape(label)}</title></polyline>'
        )
        parts.append(
            f'<text class="legend" x="{width - right - 8}" y="{top + 14 * (i + 1)}" '
            f'text-anchor="end" style="fill:{color}">{escape(label)} (n = {len(arms[i])})</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


# -- sweep charts -----------------------------------------------------------------------------


def sweep_svg(metric: Metric, labels: Sequence[str], comps: Sequence[Comparison]) -> Markup:
    """The difference from the first value against the value, with its 95% band."""
    values = [0.0, *(c.diff for c in comps)]
    lows = [0.0, *(c.ci95[0] for c in comps)]
    highs = [0.0, *(c.ci95[1] for c in comps)]
    lo, hi = min(lows + [0.0]), max(highs + [0.0])
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    pad = (hi - lo) * 0.08
    lo, hi = lo - pad, hi + pad
    left, right, top, bottom = 64, 16, 26, 34
    width, height = 420, 220
    pw, ph = width - left - right, height - top - bottom
    n = len(labels)

    def x(i: int) -> float:
        return left + (i + 0.5) / n * pw

    def y(v: float) -> float:
        return top + (hi - v) / (hi - lo) * ph

    scale = 100.0 if metric.rate else 1.0
    band = [f"{_f(x(i))},{_f(y(h))}" for i, h in enumerate(highs)]
    band += [f"{_f(x(i))},{_f(y(v))}" for i, v in reversed(list(enumerate(lows)))]
    parts = [
        f'<svg class="sweep" data-metric="{escape(metric.name)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(metric.name)}">',
        f'<text class="title" x="{left}" y="14">{escape(metric.name)}'
        f"{' (percentage points)' if metric.rate else ''}</text>",
        f'<line class="zero" x1="{left}" x2="{width - right}" y1="{_f(y(0))}" y2="{_f(y(0))}"/>',
        f'<polygon class="band" points="{" ".join(band)}"/>',
        f'<polyline class="line" fill="none" points="'
        f'{" ".join(f"{_f(x(i))},{_f(y(v))}" for i, v in enumerate(values))}"/>',
        f'<text class="axis" x="{left - 6}" y="{_f(y(hi) + 10)}" text-anchor="end">'
        f"{scale * hi:+.3g}</text>",
        f'<text class="axis" x="{left - 6}" y="{_f(y(lo))}" text-anchor="end">'
        f"{scale * lo:+.3g}</text>",
    ]
    for i, label in enumerate(labels):
        sig = i > 0 and comps[i - 1].significant
        parts.append(
            f'<circle class="{"sig" if sig else "ns"}" cx="{_f(x(i))}" cy="{_f(y(values[i]))}" '
            f'r="4"><title>{escape(label)}: {diff_text(metric, values[i])} '
            f"[{diff_text(metric, lows[i])}, {diff_text(metric, highs[i])}]</title></circle>"
            f'<text class="axis" x="{_f(x(i))}" y="{height - 14}" text-anchor="middle">'
            f"{escape(label)}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


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
                d,
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
            "forest": forest_svg(a.metrics, a.rows[c], f"{labels[0]} vs {labels[c + 1]}"),
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
            sweeps.append(sweep_svg(m, labels, comps))
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
