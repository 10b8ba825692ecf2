"""The charts of the HTML reports, drawn inline (no script, no external URL).

The tournament report (:mod:`capicua.arena.report`) draws the Elo of every bot with its
interval (:func:`rating_chart_svg`) and over the tournament (:func:`timeline_svg`); the
experiment report (:mod:`capicua.arena.experiment.report`) draws paired differences with
their intervals (:func:`forest_html`, one panel per scale), distributions per arm
(:func:`distribution_svg`), differences against a swept knob (:func:`sweep_svg`) and the
win rates of a skill trace (:func:`trace_svg`); the SPRT report
(:mod:`capicua.arena.sprt_report`) draws the LLR over the pairs (:func:`llr_chart_svg`).
They share the axis steps, the grid lines, the number formats and the palette. Every
chart takes plain values (the callers turn their own types into them), returns markup,
and escapes every text it is given. The SVG ones have a ``viewBox``: the pages' CSS
scales them to their card, so none is wider than a phone; the forest plot is HTML, its
rows reflowing instead.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

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


def _grid(
    at: Callable[[float], float],
    ticks: Iterator[tuple[float, str]],
    start: float,
    stop: float,
    label: Callable[[float], str],
    *,
    vertical: bool,
) -> list[str]:
    """A grid line per tick across the plot from ``start`` to ``stop`` (y for a vertical
    line, x for a horizontal one), at ``at(tick)``, labelled above it (vertical) or left of
    it (horizontal)."""
    out = []
    for tick, cls in ticks:
        pos = _f(at(tick))
        if vertical:
            line = f'x1="{pos}" x2="{pos}" y1="{start}" y2="{stop}"'
            text = f'x="{pos}" y="{start - 6}" text-anchor="middle"'
        else:
            line = f'x1="{start}" x2="{stop}" y1="{pos}" y2="{pos}"'
            text = f'x="{start - 6}" y="{_f(at(tick) + 4)}" text-anchor="end"'
        out.append(f'<line class="{cls}" {line}/><text class="axis" {text}>{label(tick)}</text>')
    return out


def _count_ticks(lo: float, hi: float) -> Iterator[int]:
    """Whole, round steps from ``lo`` to ``hi`` (set numbers, pairs): an x axis's labels."""
    step = max(1, round(nice_step(hi - lo)))
    tick = math.ceil(lo / step) * step
    while tick <= hi:
        yield tick
        tick += step


def _x_labels(
    x: Callable[[float], float], ticks: Iterator[int], y: float, title: str, mid: float,
    title_y: float,
) -> list[str]:  # fmt: skip
    """An x axis's labels at ``y`` and its ``title`` below them, centred on ``mid``."""
    out = [
        f'<text class="axis" x="{_f(x(tick))}" y="{y}" text-anchor="middle">{tick}</text>'
        for tick in ticks
    ]
    out.append(f'<text class="axis" x="{mid:.0f}" y="{title_y}" text-anchor="middle">'
               f"{escape(title)}</text>")  # fmt: skip
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
    parts += _grid(x, _ticks(lo, hi, step), top - 6, height - 10, signed_text, vertical=True)
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
    parts += _grid(y, _ticks(lo, hi, step), left, width - right, signed_text, vertical=False)
    parts += _x_labels(x, _count_ticks(x_lo, x_hi), height - bottom + 20, "set number",
                       (left + width - right) / 2, height - 2)  # fmt: skip
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


# -- the SPRT report -----------------------------------------------------------------------


def _plot(
    attributes: str, aria: str, scale: tuple[float, float, float], last: int, x_title: str,
    height: int,
) -> tuple[Callable[[float], float], Callable[[float], float], list[str]]:  # fmt: skip
    """A line chart's frame, 760 wide: x from 0 to ``last`` (counted, ``x_title``), y over
    ``scale`` (lo, hi, step) with a labelled grid line per step; its ``x`` and ``y`` and
    the SVG so far (the caller draws, then closes the ``svg`` element)."""
    lo, hi, step = scale
    left, right, top, bottom, width = 56, 16, 14, 44, 760

    def x(i: float) -> float:
        return left + i / last * (width - left - right)

    def y(v: float) -> float:
        return top + (hi - v) / (hi - lo) * (height - top - bottom)

    parts = [
        f'<svg {attributes} viewBox="0 0 {width} {height}" width="{width}" '
        f'height="{height}" role="img" aria-label="{aria}">'
    ]
    parts += _grid(y, _ticks(lo, hi, step), left, width - right,
                   lambda tick: tick_text(tick, step), vertical=False)  # fmt: skip
    parts += _x_labels(x, _count_ticks(0, last), height - bottom + 20, x_title,
                       (left + width - right) / 2, height - 2)  # fmt: skip
    return x, y, parts


def llr_chart_svg(path: Sequence[float], lower: float, upper: float) -> Markup:
    """The LLR of an SPRT after each counted pair (``path[i]``: after pair ``i + 1``) as a
    line between its two bounds, dashed and labelled with the hypothesis the test accepts
    past each: the test stops where the line leaves them."""
    lo, hi, step = _rounded_range(min([lower, *path]), max([upper, *path]))
    pairs = max(1, len(path))
    width, left, right = 760, 56, 16
    x, y, parts = _plot(
        'id="llr-chart" class="llr"', "LLR after each pair", (lo, hi, step), pairs, "pairs", 280
    )
    for bound, label in ((upper, "H1 at"), (lower, "H0 at")):
        parts.append(
            f'<line class="bound" x1="{left}" x2="{width - right}" y1="{_f(y(bound))}" '
            f'y2="{_f(y(bound))}"/><text class="bound" x="{left + 4}" y="{_f(y(bound) - 5)}">'
            f"{label} {bound:+.2f}</text>"
        )
    points = " ".join(f"{_f(x(i + 1))},{_f(y(v))}" for i, v in enumerate(path))
    parts.append(f'<polyline class="path" points="{points}"/></svg>')
    return Markup(f'<div class="chart">{"".join(parts)}</div>')


# -- the ladder's pages ----------------------------------------------------------------------


def history_svg(points: Sequence[tuple[int, float, float | None, float | None]]) -> Markup:
    """A ladder entry's rating after each number of the ladder's rated sets
    (``(sets, rating, lo, hi)``, in order) as a line, with its 95% band shaded where it has
    one (:func:`capicua.arena.ladder.table.history`)."""
    values = [v for _, r, lo, hi in points for v in (r, lo, hi) if v is not None]
    last = max(1, points[-1][0])
    x, y, parts = _plot(
        'id="history-chart"', "rating after each number of sets",
        _rounded_range(min(values), max(values)), last, "rated sets of the ladder", 240,
    )  # fmt: skip
    banded = [(n, lo, hi) for n, _, lo, hi in points if lo is not None and hi is not None]
    if banded:
        upper = [f"{_f(x(n))},{_f(y(hi))}" for n, _, hi in banded]
        lower = [f"{_f(x(n))},{_f(y(lo))}" for n, lo, _ in reversed(banded)]
        parts.append(f'<polygon class="band" points="{" ".join(upper + lower)}"/>')
    line = " ".join(f"{_f(x(n))},{_f(y(r))}" for n, r, _, _ in points)
    parts.append(f'<polyline class="path" points="{line}"/></svg>')
    return Markup(f'<div class="chart">{"".join(parts)}</div>')


# -- the experiment report ------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """A value with its 95% interval, as a chart draws it: ``label`` names it, ``tip`` is
    its tooltip, ``significant`` colors it. ``text`` is what a forest row prints beside it
    and ``key`` names it in the markup (default: ``label``). ``low_limit``/``high_limit``
    flag an end lying on the bound of what the quantity can be (see :func:`within`), and
    ``base`` the reference point of a sweep."""

    label: str
    value: float
    low: float
    high: float
    significant: bool
    tip: str
    text: str = ""
    key: str = ""
    low_limit: bool = False
    high_limit: bool = False
    base: bool = False


#: How close to a bound an end counts as lying on it (the values are shares or means: far
#: above float noise, far below anything a chart can show).
LIMIT_EPS = 1e-9


def within(iv: Interval, floor: float | None, ceiling: float | None) -> Interval:
    """``iv`` with its interval cut to ``[floor, ceiling]``, the values the quantity can take
    (None: no bound), and each end that lies on a bound flagged. The charts mark a flagged
    end, so the reader sees that the interval stops at what is possible (a rate cannot fall
    below 0), not at what was measured."""
    low_limit = floor is not None and iv.low <= floor + LIMIT_EPS
    high_limit = ceiling is not None and iv.high >= ceiling - LIMIT_EPS
    low = max(iv.low, floor) if floor is not None else iv.low
    high = min(iv.high, ceiling) if ceiling is not None else iv.high
    return replace(iv, low=low, high=high, low_limit=low_limit, high_limit=high_limit)


def tick_text(tick: float, step: float) -> str:
    """An axis label of a difference: ``0``, or signed (``+2.5``, ``-10``)."""
    return "0" if abs(tick) < step / 1000 else f"{tick:+g}"


def forest_html(
    name: str, caption: str, unit: str, rows: Sequence[Interval], scale: float = 1.0
) -> Markup:
    """One panel of a forest plot: differences with their 95% intervals, a row each, on one
    axis that always shows 0, drawn times ``scale`` (100: shares as percentage points) and
    labelled in ``unit``; ``caption`` heads the panel, ``name`` identifies it.

    HTML and CSS rather than SVG: each row is its label, a track and its printed value; on
    a wide screen these are three columns, on a phone the label and the value share a line
    above a track as wide as the screen. The text keeps its size at any width and only the
    track stretches, where a scaled SVG shrinks its text with it. Positions are in % of the
    track (``left``); ``data-lo``/``data-hi`` give the axis range in ``unit``."""
    if not rows:
        return Markup("")
    ends = [0.0] + [scale * v for r in rows for v in (r.low, r.high, r.value)]
    lo, hi, step = _rounded_range(min(ends), max(ends))

    def pos(axis: float) -> str:
        return f"{(axis - lo) / (hi - lo) * 100:.2f}%"

    ticks = list(_ticks(lo, hi, step))
    grid = "".join(f'<i class="{cls}" style="left:{pos(t)}"></i>' for t, cls in ticks)
    labels = "".join(
        f'<span class="tk" style="left:{pos(t)}">{tick_text(t, step)}</span>' for t, _ in ticks
    )
    parts = [
        f'<figure class="forest" data-name="{escape(name)}" data-unit="{escape(unit)}" '
        f'data-lo="{lo:g}" data-hi="{hi:g}"><figcaption>{escape(caption)}</figcaption>'
        '<div class="frow fhead"><span class="flabel">metric</span>'
        f'<div class="ftrack">{labels}</div>'
        f'<span class="fvalue">{escape(unit)} [95% interval]</span></div>'
    ]
    for r in rows:
        # a long dotted name (hand_win_rate.hard_vs_random) wraps after a dot on a
        # phone rather than anywhere
        label = str(escape(r.label)).replace(".", ".<wbr>")
        low, high = scale * r.low, scale * r.high
        limits = (" low-limit" if r.low_limit else "") + (" high-limit" if r.high_limit else "")
        parts.append(
            f'<div class="frow {"sig" if r.significant else "ns"}" '
            f'data-metric="{escape(r.key or r.label)}" title="{escape(r.tip)}">'
            f'<span class="flabel">{label}</span><div class="ftrack">{grid}'
            f'<i class="ci{limits}" style="left:{pos(low)};'
            f'width:{(high - low) / (hi - lo) * 100:.2f}%"></i>'
            f'<i class="pt" style="left:{pos(scale * r.value)}"></i></div>'
            f'<span class="fvalue">{escape(r.text)}</span></div>'
        )
    parts.append("</figure>")
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
    one line per series (``arms[i]`` the values of ``series[i]``) over the same bins, and
    a legend in HTML below it (it wraps on a phone, where the chart is scaled down)."""
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
    left, right, top, bottom = 56, 20, 16, 40
    width, height = 640, 240
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
    # at most six bin labels: on a phone the text is drawn larger (the chart is scaled
    # down) and a range such as 100-104 needs about a sixth of the width
    label_every = max(1, math.ceil(nbins / 6))
    for b in range(0, nbins, label_every):
        value = start + b * width_bin
        text = str(value) if width_bin == 1 else f"{value}–{value + width_bin - 1}"
        parts.append(
            f'<text class="axis" x="{_f(x(b))}" y="{height - 12}" text-anchor="middle">'
            f"{text}</text>"
        )
    parts.append(
        f'<text class="axis" x="{left - 6}" y="{top + 8}" text-anchor="end">'
        f"{100 * top_share:.0f}%</text>"
    )
    legend = []
    for i, (arm, share) in enumerate(zip(series, shares, strict=True)):
        color = COLORS[i % len(COLORS)]
        points = " ".join(f"{_f(x(b))},{_f(y(s))}" for b, s in enumerate(share))
        parts.append(
            f'<polyline class="arm" data-arm="{escape(arm)}" fill="none" stroke="{color}" '
            f'stroke-width="2" points="{points}"><title>{escape(arm)}</title></polyline>'
        )
        legend.append(
            f'<li><i style="background:{color}"></i>{escape(arm)} (n = {len(arms[i])})</li>'
        )
    parts.append("</svg>")
    return Markup(
        f'<div class="chart">{"".join(parts)}</div><ul class="series-legend">{"".join(legend)}</ul>'
    )


def sweep_svg(name: str, title: str, scale: float, points: Sequence[Interval]) -> Markup:
    """Differences from the base point (0 by definition, drawn as a ring and labelled
    ``(base)``) against the swept value, in the order given (the caller sorts them), with
    their 95% band; an end on a bound of what the quantity can be gets a bar. ``name``
    identifies the chart, ``title`` heads it (say the unit there), the y axis shows values
    times ``scale`` (100: shares as percentage points). A figure: the title, then the SVG."""
    lo, hi, step = _rounded_range(
        min([0.0] + [scale * p.low for p in points]), max([0.0] + [scale * p.high for p in points])
    )
    left, right, top, bottom = 52, 14, 12, 40
    width, height = 420, 220
    pw, ph = width - left - right, height - top - bottom
    n = len(points)

    def x(i: int) -> float:
        return left + (i + 0.5) / n * pw

    def y(v: float) -> float:  # v in axis units (times scale)
        return top + (hi - v) / (hi - lo) * ph

    band = [f"{_f(x(i))},{_f(y(scale * p.high))}" for i, p in enumerate(points)]
    band += [f"{_f(x(i))},{_f(y(scale * p.low))}" for i, p in reversed(list(enumerate(points)))]
    # the title is HTML above the chart: a long metric name wraps there, where the SVG
    # would cut it at its edge
    parts = [
        f"<figure><figcaption>{escape(title)}</figcaption>"
        f'<svg class="sweep" data-metric="{escape(name)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">'
    ]
    parts += _grid(y, _ticks(lo, hi, step), left, width - right,
                   lambda tick: tick_text(tick, step), vertical=False)  # fmt: skip
    parts += [
        f'<polygon class="band" points="{" ".join(band)}"/>',
        f'<polyline class="line" fill="none" points="'
        f'{" ".join(f"{_f(x(i))},{_f(y(scale * p.value))}" for i, p in enumerate(points))}"/>',
    ]
    for i, p in enumerate(points):
        # the band joins the values; each one's own interval is a whisker over it
        parts.append(
            f'<line class="whisker" x1="{_f(x(i))}" x2="{_f(x(i))}" '
            f'y1="{_f(y(scale * p.low))}" y2="{_f(y(scale * p.high))}"/>'
        )
        for end, flagged in ((p.low, p.low_limit), (p.high, p.high_limit)):
            if flagged and p.high > p.low:
                parts.append(
                    f'<line class="limit" x1="{_f(x(i) - 7)}" x2="{_f(x(i) + 7)}" '
                    f'y1="{_f(y(scale * end))}" y2="{_f(y(scale * end))}"/>'
                )
        cls = "base" if p.base else "sig" if p.significant else "ns"
        label = f"{p.label} (base)" if p.base else p.label
        parts.append(
            f'<circle class="{cls}" data-label="{escape(p.label)}" cx="{_f(x(i))}" '
            f'cy="{_f(y(scale * p.value))}" r="{5 if p.base else 4}">'
            f"<title>{escape(p.tip)}</title></circle>"
            f'<text class="axis{" base" if p.base else ""}" x="{_f(x(i))}" y="{height - 14}" '
            f'text-anchor="middle">{escape(label)}</text>'
        )
    parts.append("</svg></figure>")
    return Markup("".join(parts))


def trace_svg(
    name: str,
    title: str,
    rungs: Sequence[tuple[str, str]],
    series: Sequence[tuple[str, Sequence[Interval]]],
    even: float,
    scale: float = 100.0,
) -> Markup:
    """A skill trace: for every rung (a ``(stronger, weaker)`` level, the weakest first,
    along the x axis) the stronger level's win rate with its 95% interval, one line per
    series (``series[j]``: its label and a point per rung), beside one another at each
    rung so that their intervals do not hide each other; a dashed line at ``even``, what
    a level no stronger than the one below wins; a point of class ``sig`` differs
    significantly from the first series'. Values are shares drawn in % (``scale``). A
    figure: the title, the SVG, then the legend in HTML (it wraps on a phone)."""
    values = [even] + [v for _, points in series for p in points for v in (p.low, p.high)]
    lo, hi, step = _rounded_range(scale * min(values), scale * max(values))
    lo, hi = max(lo, 0.0), min(hi, scale)  # a share stays within 0% and 100%
    left, right, top, bottom = 46, 44, 12, 46
    width, height = 440, 240
    pw, ph = width - left - right, height - top - bottom
    slot = pw / max(1, len(rungs))
    dodge = min(12.0, slot / (len(series) + 1))

    def x(i: int, j: int) -> float:  # rung i, series j
        return left + (i + 0.5) * slot + (j - (len(series) - 1) / 2) * dodge

    def axis_y(v: float) -> float:  # v in axis units (%)
        return top + (hi - v) / (hi - lo) * ph

    def y(v: float) -> float:  # v a share
        return axis_y(scale * v)

    parts = [
        f"<figure><figcaption>{escape(title)}</figcaption>"
        f'<svg class="trace" data-name="{escape(name)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(title)}">'
    ]
    # every grid line a plain tick: 0% is a bound of a win rate, not a zero difference
    ticks = ((tick, "tick") for tick, _ in _ticks(lo, hi, step))
    parts += _grid(axis_y, ticks, left, width - right, lambda tick: f"{tick:g}%",
                   vertical=False)  # fmt: skip
    parts.append(
        f'<line class="even" x1="{left}" x2="{width - right}" y1="{_f(y(even))}" '
        f'y2="{_f(y(even))}"/><text class="axis" x="{width - right + 4}" '
        f'y="{_f(y(even) + 4)}">even</text>'
    )
    for i, (strong, weak) in enumerate(rungs):
        cx = _f(x(i, 0) + (len(series) - 1) / 2 * dodge)
        parts.append(
            f'<text class="axis" x="{cx}" y="{height - 26}" text-anchor="middle">'
            f'{escape(strong)}</text><text class="axis" x="{cx}" y="{height - 10}" '
            f'text-anchor="middle">vs {escape(weak)}</text>'
        )
    legend = []
    for j, (label, points) in enumerate(series):
        color = COLORS[j % len(COLORS)]
        line = " ".join(f"{_f(x(i, j))},{_f(y(p.value))}" for i, p in enumerate(points))
        parts.append(
            f'<polyline class="arm" data-arm="{escape(label)}" fill="none" stroke="{color}" '
            f'stroke-width="2" points="{line}"/>'
        )
        for i, p in enumerate(points):
            # the series' color inline: the page's CSS colors whiskers and points of the
            # other charts by class, and a class rule beats a presentation attribute
            parts.append(
                f'<line class="whisker" style="stroke:{color}" x1="{_f(x(i, j))}" '
                f'x2="{_f(x(i, j))}" y1="{_f(y(p.low))}" y2="{_f(y(p.high))}"/>'
                f'<circle class="rung{" sig" if p.significant else ""}" '
                f'data-arm="{escape(label)}" data-rung="{escape(p.key or p.label)}" '
                f'data-value="{p.value:.6f}" data-low="{p.low:.6f}" data-high="{p.high:.6f}" '
                f'style="fill:{color}" cx="{_f(x(i, j))}" cy="{_f(y(p.value))}" r="4">'
                f"<title>{escape(p.tip)}</title></circle>"
            )
        legend.append(f'<li><i style="background:{color}"></i>{escape(label)}</li>')
    parts.append(f'</svg><ul class="series-legend">{"".join(legend)}</ul></figure>')
    return Markup("".join(parts))
