"""The SVG charts of the HTML reports, drawn inline (no script, no external URL).

The tournament report (:mod:`capicua.arena.report`) draws the Elo of every bot with its
interval (:func:`rating_chart_svg`) and over the tournament (:func:`timeline_svg`); the
experiment report (:mod:`capicua.arena.experiment.report`) draws paired differences with
their intervals (:func:`forest_svg`), distributions per arm (:func:`distribution_svg`) and
differences against a swept knob (:func:`sweep_svg`). They share the axis steps, the number
formats and the palette. Every chart takes plain values (the callers turn their own types
into them), returns markup, and escapes every text it is given.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from .standings import BotStanding, signed

#: The series colors, in order (a series past the last one starts over).
COLORS = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7d8c",
          "#6e7781", "#e16f24", "#2da44e")  # fmt: skip
#: Bins of a distribution at most.
MAX_BINS = 40
NO_RATINGS = Markup('<p class="note">No ratings yet.</p>')


def nice_step(span: float) -> float:
    """A round step (1, 2, 2.5 or 5 times a power of ten) cutting ``span`` in about six."""
    raw = span / 6 if span > 0 else 50
    mag = float(10 ** math.floor(math.log10(raw)))
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def signed_text(x: float | None) -> str:
    """An Elo as the standings show it (``+12``), or ``n/a``."""
    return "n/a" if x is None or not math.isfinite(x) else signed(x)


def _f(x: float) -> str:
    return f"{x:.1f}"


def _rounded_range(lo: float, hi: float) -> tuple[float, float, float]:
    """``lo``/``hi`` widened to whole steps (never empty), and the step."""
    step = nice_step(hi - lo)
    lo, hi = math.floor(lo / step) * step, math.ceil(hi / step) * step
    if hi == lo:
        lo, hi = lo - step, hi + step
    return lo, hi, step


def _ticks(lo: float, hi: float, step: float) -> Iterator[tuple[float, str]]:
    """Every ``step`` from ``lo`` to ``hi`` (included, whatever the float error), each
    with the class of its grid line: ``zero`` for 0, else ``tick``."""
    tick = lo
    while tick <= hi + step / 2:
        yield tick, "zero" if abs(tick) < step / 1000 else "tick"
        tick += step


def _vertical_grid(
    x: Callable[[float], float],
    ticks: Iterator[tuple[float, str]],
    y1: float,
    y2: float,
    label: Callable[[float], str],
) -> list[str]:
    """A vertical grid line from ``y1`` to ``y2`` per tick, labelled above it."""
    out = []
    for tick, cls in ticks:
        tx = _f(x(tick))
        out.append(
            f'<line class="{cls}" x1="{tx}" x2="{tx}" y1="{y1}" y2="{y2}"/>'
            f'<text class="axis" x="{tx}" y="{y1 - 6}" text-anchor="middle">{label(tick)}</text>'
        )
    return out


# -- the tournament report ------------------------------------------------------------------


def rating_chart_svg(bots: Sequence[BotStanding]) -> Markup:
    """Elo with its 95% interval per bot, as a horizontal error-bar chart."""
    rated = [b for b in bots if b.elo is not None and math.isfinite(b.elo)]
    if not rated:
        return NO_RATINGS
    values = [0.0]
    for b in rated:
        assert b.elo is not None
        values.append(b.elo)
        values.extend(v for v in b.elo_ci95 or () if math.isfinite(v))
    lo, hi, step = _rounded_range(min(values), max(values))
    left, right, top, row = 150, 70, 28, 30
    width = 760
    plot = width - left - right
    height = top + row * len(rated) + 16

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * plot

    parts = [
        f'<svg id="rating-chart" viewBox="0 0 {width} '
        f'{height}" width="{width}" height="{height}" role="img" '
        'aria-label="Elo ratings with 95% intervals">'
    ]
    parts += _vertical_grid(x, _ticks(lo, hi, step), top - 6, height - 10, signed_text)
    for i, b in enumerate(rated):
        assert b.elo is not None
        cy = top + row * i + row / 2
        cls = "bar dq" if b.disqualified else "bar"
        title = f"{b.name}: Elo {signed_text(b.elo)}"
        if b.elo_ci95 is not None and all(math.isfinite(v) for v in b.elo_ci95):
            low, high = b.elo_ci95
            title += f", 95% interval {signed_text(low)} … {signed_text(high)}"
            x1, x2 = x(low), x(high)
            parts.append(
                f'<g class="{cls}"><title>{escape(title)}</title>'
                f'<line x1="{x1:.1f}" x2="{x2:.1f}" y1="{cy:.1f}" y2="{cy:.1f}"/>'
                f'<line x1="{x1:.1f}" x2="{x1:.1f}" y1="{cy - 7:.1f}" y2="{cy + 7:.1f}"/>'
                f'<line x1="{x2:.1f}" x2="{x2:.1f}" y1="{cy - 7:.1f}" y2="{cy + 7:.1f}"/></g>'
            )
        label = escape(b.name) + (" (DQ)" if b.disqualified else "")
        parts.append(
            f'<text class="label" x="{left - 10}" y="{cy + 4:.1f}" text-anchor="end">'
            f"{label}</text>"
            f'<circle class="{cls}" cx="{x(b.elo):.1f}" cy="{cy:.1f}" r="5">'
            f"<title>{escape(title)}</title></circle>"
            f'<text class="value" x="{width - right + 8}" y="{cy + 4:.1f}">'
            f"{signed_text(b.elo)}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


@dataclass(frozen=True)
class Timeline:
    """Elo after the first sets of the schedule: ``sets[i]`` is a set number (1-based, as
    in the schedule) and ``elo[bot][i]`` the bot's Elo once every set up to it is counted
    (None before the bot's first rated set)."""

    sets: tuple[int, ...]
    elo: dict[str, tuple[float | None, ...]]
    rated_sets: int  # sets with a counted match; more than len(sets) when sampled


def _path(points: Sequence[tuple[float, float]]) -> str:
    return "M" + "L".join(f"{x:.1f},{y:.1f}" for x, y in points)


def timeline_svg(timeline: Timeline, bots: Sequence[BotStanding]) -> Markup:
    """The Elo of every rated bot by set number, one colored line each, and a legend in
    HTML below it (it wraps on a phone, where the chart is scaled down)."""
    order = [b for b in bots if b.name in timeline.elo]
    values = [v for b in order for v in timeline.elo[b.name] if v is not None]
    if not timeline.sets or not values:
        return NO_RATINGS
    lo, hi, step = _rounded_range(min([0.0, *values]), max([0.0, *values]))
    first, last = timeline.sets[0], timeline.sets[-1]
    x_lo, x_hi = (first, last) if last > first else (first - 1, first + 1)
    left, right, top, bottom, width, height = 64, 16, 14, 44, 760, 300

    def x(v: float) -> float:
        return left + (v - x_lo) / (x_hi - x_lo) * (width - left - right)

    def y(v: float) -> float:
        return top + (hi - v) / (hi - lo) * (height - top - bottom)

    parts = [
        f'<svg id="rating-timeline" viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="Elo of every bot by set number">'
    ]
    for tick, cls in _ticks(lo, hi, step):
        parts.append(
            f'<line class="{cls}" x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" '
            f'y2="{y(tick):.1f}"/><text class="axis" x="{left - 6}" y="{y(tick) + 4:.1f}" '
            f'text-anchor="end">{signed_text(tick)}</text>'
        )
    x_step = max(1, round(nice_step(x_hi - x_lo)))
    x_tick = math.ceil(x_lo / x_step) * x_step
    while x_tick <= x_hi:
        parts.append(
            f'<text class="axis" x="{x(x_tick):.1f}" y="{height - bottom + 20}" '
            f'text-anchor="middle">{x_tick}</text>'
        )
        x_tick += x_step
    parts.append(
        f'<text class="axis" x="{(left + width - right) / 2:.0f}" y="{height - 2}" '
        'text-anchor="middle">set number</text>'
    )
    legend = []
    for i, b in enumerate(order):
        color = COLORS[i % len(COLORS)]
        pts = [
            (x(s), y(v)) for s, v in zip(timeline.sets, timeline.elo[b.name], strict=True)
            if v is not None
        ]  # fmt: skip
        final = next(v for v in reversed(timeline.elo[b.name]) if v is not None)
        title = f"{b.name}: Elo {signed_text(final)} after set {last}"
        dq = " dq" if b.disqualified else ""
        parts.append(
            f'<g class="series{dq}" data-bot="{escape(b.name)}" data-last="{final:.1f}">'
            f"<title>{escape(title)}</title>"
            f'<path class="line" d="{_path(pts)}" stroke="{color}"/>'
            f'<circle cx="{pts[-1][0]:.1f}" cy="{pts[-1][1]:.1f}" r="3.5" fill="{color}"/></g>'
        )
        legend.append(
            f'<li><i style="background:{color}"></i>{escape(b.name)}'
            f"{' (DQ)' if b.disqualified else ''} <b>{signed_text(final)}</b></li>"
        )
    parts.append("</svg>")
    sampled = (
        f" ({len(timeline.sets)} points of {timeline.rated_sets} sets)"
        if len(timeline.sets) < timeline.rated_sets
        else ""
    )
    return Markup(
        f'<div class="chart">{"".join(parts)}</div>'
        f'<ul class="series-legend">{"".join(legend)}</ul>'
        '<p class="note">Elo of every bot counting the sets up to each set number '
        f"(the same fit as the standings, without the interval){escape(sampled)}; a dashed "
        "line is a disqualified bot.</p>"
    )


# -- the experiment report ------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """A value with its 95% interval, as a chart draws it: ``label`` names it, ``tip`` is
    its tooltip, ``significant`` colors it."""

    label: str
    value: float
    low: float
    high: float
    significant: bool
    tip: str


def forest_text(value: float, low: float, high: float) -> str:
    """A forest row's value and interval, in % (``+1.2% [-0.5, +2.9]``)."""
    return f"{value:+.1f}% [{low:+.1f}, {high:+.1f}]"


def forest_svg(rows: Sequence[Interval], title: str) -> Markup:
    """Relative differences (in %) with their 95% intervals, one row each, around 0."""
    if not rows:
        return Markup('<p class="note">No metric with a non-zero base value differs.</p>')
    spans = [abs(v) for r in rows for v in (r.low, r.high, r.value)]
    extent = max(max(spans), 1.0)
    step = nice_step(2 * extent)
    extent = math.ceil(extent / step) * step
    left, right, top, height_row = 210, 190, 30, 24
    width = 860
    plot = width - left - right
    height = top + height_row * len(rows) + 12

    def x(v: float) -> float:
        return left + (v + extent) / (2 * extent) * plot

    parts = [
        f'<svg class="forest" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}">'
    ]
    parts += _vertical_grid(
        x, _ticks(-extent, extent, step), top - 6, height - 6, lambda tick: f"{tick:+g}%"
    )
    for i, r in enumerate(rows):
        cy = top + height_row * i + height_row / 2
        cls = "sig" if r.significant else "ns"
        parts.append(
            f'<g class="row {cls}" data-metric="{escape(r.label)}"><title>{escape(r.tip)}</title>'
            f'<text class="label" x="{left - 10}" y="{_f(cy + 4)}" text-anchor="end">'
            f"{escape(r.label)}</text>"
            f'<line x1="{_f(x(r.low))}" x2="{_f(x(r.high))}" y1="{_f(cy)}" y2="{_f(cy)}"/>'
            f'<rect x="{_f(x(r.value) - 5)}" y="{_f(cy - 5)}" width="10" height="10"/>'
            f'<text class="value" x="{width - right + 10}" y="{_f(cy + 4)}">'
            f"{forest_text(r.value, r.low, r.high)}</text></g>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _bins(values: Sequence[int]) -> tuple[int, int]:
    """(first bin's start, bin width) covering ``values`` in at most :data:`MAX_BINS` bins."""
    lo, hi = min(values), max(values)
    width = max(1, math.ceil((hi - lo + 1) / MAX_BINS))
    return lo - lo % width, width


def distribution_svg(
    name: str, label: str, series: Sequence[str], arms: Sequence[Sequence[int]]
) -> Markup:
    """The share of units in each bin of a quantity (``name``, described by ``label``),
    one line per series (``arms[i]`` the values of ``series[i]``) over the same bins."""
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
        f'<svg class="dist" data-name="{escape(name)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(label)}">',
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
    for i, (arm, share) in enumerate(zip(series, shares, strict=True)):
        color = COLORS[i % len(COLORS)]
        points = " ".join(f"{_f(x(b))},{_f(y(s))}" for b, s in enumerate(share))
        parts.append(
            f'<polyline class="arm" data-arm="{escape(arm)}" fill="none" stroke="{color}" '
            f'stroke-width="2" points="{points}"><title>{escape(arm)}</title></polyline>'
        )
        parts.append(
            f'<text class="legend" x="{width - right - 8}" y="{top + 14 * (i + 1)}" '
            f'text-anchor="end" style="fill:{color}">{escape(arm)} (n = {len(arms[i])})</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def sweep_svg(name: str, title: str, scale: float, points: Sequence[Interval]) -> Markup:
    """Differences from the first point (0 by definition) against the swept value, with
    their 95% band; ``name`` identifies the chart, ``title`` heads it, the axis shows
    values times ``scale`` (100: rates as percentage points)."""
    values = [p.value for p in points]
    lows = [p.low for p in points]
    highs = [p.high for p in points]
    lo, hi = min(lows + [0.0]), max(highs + [0.0])
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    pad = (hi - lo) * 0.08
    lo, hi = lo - pad, hi + pad
    left, right, top, bottom = 64, 16, 26, 34
    width, height = 420, 220
    pw, ph = width - left - right, height - top - bottom
    n = len(points)

    def x(i: int) -> float:
        return left + (i + 0.5) / n * pw

    def y(v: float) -> float:
        return top + (hi - v) / (hi - lo) * ph

    band = [f"{_f(x(i))},{_f(y(h))}" for i, h in enumerate(highs)]
    band += [f"{_f(x(i))},{_f(y(v))}" for i, v in reversed(list(enumerate(lows)))]
    parts = [
        f'<svg class="sweep" data-metric="{escape(name)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(name)}">',
        f'<text class="title" x="{left}" y="14">{escape(title)}</text>',
        f'<line class="zero" x1="{left}" x2="{width - right}" y1="{_f(y(0))}" y2="{_f(y(0))}"/>',
        f'<polygon class="band" points="{" ".join(band)}"/>',
        f'<polyline class="line" fill="none" points="'
        f'{" ".join(f"{_f(x(i))},{_f(y(v))}" for i, v in enumerate(values))}"/>',
        f'<text class="axis" x="{left - 6}" y="{_f(y(hi) + 10)}" text-anchor="end">'
        f"{scale * hi:+.3g}</text>",
        f'<text class="axis" x="{left - 6}" y="{_f(y(lo))}" text-anchor="end">'
        f"{scale * lo:+.3g}</text>",
    ]
    for i, p in enumerate(points):
        parts.append(
            f'<circle class="{"sig" if p.significant else "ns"}" cx="{_f(x(i))}" '
            f'cy="{_f(y(p.value))}" r="4"><title>{escape(p.tip)}</title></circle>'
            f'<text class="axis" x="{_f(x(i))}" y="{height - 14}" text-anchor="middle">'
            f"{escape(p.label)}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))
