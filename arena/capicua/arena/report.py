"""``capicua arena report DIR``: one self-contained HTML page about a tournament.

The page needs nothing but a browser: the CSS, the JavaScript and the SVG chart are inline
and there is no external URL in it, so it can be mailed, archived or opened offline. It
holds, from the output directory of ``capicua arena run``:

* the tournament's name, rules and settings (and how far it got);
* the standings table (sortable), with disqualified bots marked and their reason;
* the crosstable as a heat map (row's score against column, colored from red to green);
* the rating chart: Elo with its 95% interval as error bars (inline SVG);
* failures (crash, timeout, illegal actions...) counted by kind per bot, and the number of
  abandoned matches;
* a replay viewer: pick a match, step through it event by event or hand by hand (buttons
  or arrow keys) and see the chain with both open ends, every seat's tiles at that moment
  (the tournament is over, so all information is shown), the events so far and the scores.

Replays are embedded as compact JSON (only what the viewer needs) in a
``<script type="application/json">`` element; at most :data:`MAX_REPLAYS` of them by
default (matches that did not end normally first, then in schedule order), and the page
says so when some are left out.

The numbers are :func:`capicua.arena.standings.compute`'s (the same as ``capicua arena
standings``); the report only lays them out.
"""

from __future__ import annotations

import functools
import html
import json
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from capicua.display import outcome_text, result_text, side_name
from capicua.engine.errors import CapicuaError
from capicua.engine.records import (
    Defer,
    Draw,
    Pass,
    Play,
    RedealChoice,
    Replay,
    next_ends,
    shown_halves,
)
from capicua.engine.rules import Ruleset

from . import ratings
from .config import Tournament, tournament_from_mapping
from .schedule import schedule
from .standings import BotStanding, Standings, compute_rows, signed, think_text
from .store import FAILURE_KINDS, BotRow, FailureRow, MatchRow, Results

MAX_REPLAYS = 300
"""Replays embedded in a report by default; a big tournament's page stays small enough."""

REPORT_NAME = "report.html"


class ReportError(CapicuaError):
    """The report cannot be written (no results in the directory, unwritable output...)."""


# -- replays in the compact form the viewer reads --------------------------------------------


def compact_replay(replay: Replay, row: MatchRow) -> dict[str, Any]:
    """What the replay viewer needs of one match, small.

    Tiles are their text ``"a-b"``; events are ``["P", seat, tile, "L"|"R", [a, b]]``
    (play; ``[a, b]`` the tile's halves as the chain shows them, left to right, computed by
    the engine's reading so the viewer applies no rule),
    ``["X", seat]`` (pass), ``["D", seat, tile|null]`` (draw), ``["F", seat]`` (defer the
    opening), ``["R", seat, 1|0]`` (redeal or keep). Each hand has its deals (a redeal
    adds one), its think times (``{"event index": ms}``), the scores before it and its
    result (text and scores after it).
    """
    rules = replay.ruleset
    n_sides = rules.num_sides
    scores: list[int] = [0] * n_sides
    hands: list[dict[str, Any]] = []
    for record in replay.hands:
        events: list[list[Any]] = []
        ends: tuple[int, int] | None = None
        for e in record.events:
            if isinstance(e, Play):
                shown = list(shown_halves(ends, e.tile, e.end))
                events.append(["P", e.seat, str(e.tile), e.end.letter, shown])
                ends = next_ends(ends, e)
            elif isinstance(e, Pass):
                events.append(["X", e.seat])
            elif isinstance(e, Draw):
                events.append(["D", e.seat, None if e.tile is None else str(e.tile)])
            elif isinstance(e, Defer):
                events.append(["F", e.seat])
            elif isinstance(e, RedealChoice):
                events.append(["R", e.seat, int(e.redeal)])
                ends = None if e.redeal else ends  # a new deal starts an empty line
        hand: dict[str, Any] = {
            "n": record.hand + 1,
            "deals": [
                [[str(t) for t in seat] for seat in d.hands] + [[str(t) for t in d.stock]]
                for d in record.deals
            ],
            "ev": events,
            # think times: event index -> ms (only the decisions a client made)
            "th": {str(t.event): round(t.micros / 1000, 2) for t in record.think_times},
            "pre": list(scores),
            "res": None,
        }
        if record.result is not None:
            hand["res"] = {
                "t": result_text(rules, record.result),
                "sc": list(record.result.scores),
            }
            scores = list(record.result.scores)
        hands.append(hand)
    outcome = replay.outcome
    return {
        "k": row.key,
        "seats": list(replay.players),
        "sideOf": [rules.side_of(s) for s in range(rules.seats)],
        "sides": [f"{side_name(rules, s)} ({row.sides[s]})" for s in range(n_sides)]
        if len(row.sides) == n_sides
        else [side_name(rules, s) for s in range(n_sides)],
        "hands": hands,
        "out": outcome_text(rules, outcome) if outcome is not None else "(not finished)",
        "sc": list(outcome.scores) if outcome is not None else scores,
    }


@dataclass(frozen=True)
class ReplayProblem:
    """A match whose replay is not in the page: its key, file (if any) and why."""

    key: str
    path: str | None
    reason: str


def _pick_replays(matches: Sequence[MatchRow], limit: int) -> list[MatchRow]:
    """The matches whose replays are embedded: all when they fit, otherwise the ones that
    did not end normally first, then in schedule order (the result in schedule order)."""
    with_file = [m for m in matches if m.replay_path]
    if len(with_file) <= limit:
        return with_file
    odd = [m for m in with_file if m.termination not in ("normal", "hand_limit")]
    chosen = {m.key for m in odd[:limit]}
    for m in with_file:
        if len(chosen) >= limit:
            break
        chosen.add(m.key)
    return [m for m in with_file if m.key in chosen]


def _reason(error: Exception, path: str) -> str:
    """Why a replay could not be read, without the ``replay PATH:`` prefix that
    :func:`read_replay` puts on its messages (the page shows the path next to it)."""
    text = str(error)
    for prefix in (f"replay {path}: ", f"{path}: "):
        if prefix in text:
            return text.split(prefix, 1)[1]
    return text


def _load_replays(
    directory: Path, matches: Sequence[MatchRow]
) -> tuple[list[dict[str, Any]], Ruleset | None, list[ReplayProblem]]:
    """Compact replays of ``matches``, the ruleset of the first one, and the matches whose
    replay file is missing or unreadable (named on the page, never silently dropped)."""
    from capicua.wire.codec import read_replay

    out: list[dict[str, Any]] = []
    problems: list[ReplayProblem] = []
    ruleset: Ruleset | None = None
    for m in matches:
        assert m.replay_path is not None
        path = directory / m.replay_path
        try:
            replay = read_replay(path)
        except (CapicuaError, OSError) as e:
            problems.append(ReplayProblem(m.key, m.replay_path, _reason(e, str(path))))
            continue
        ruleset = ruleset or replay.ruleset
        out.append(compact_replay(replay, m))
    return out, ruleset, problems


def script_json(data: Any) -> str:
    """JSON that is safe inside a ``<script>`` element: no ``</script>``, no ``<!--``."""
    text = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


# -- HTML --------------------------------------------------------------------------------------


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


def _num(x: float) -> str:
    x = round(x, 2)
    return f"{x:g}" if x != int(x) else str(int(x))


def _signed(x: float | None) -> str:
    return "n/a" if x is None or not math.isfinite(x) else signed(x)


def _heat(frac: float) -> str:
    """Background of a crosstable cell: red (0) through pale yellow (0.5) to green (1)."""
    hue = round(120 * min(max(frac, 0.0), 1.0))
    return f"hsl({hue}, 65%, {82 - 10 * abs(frac - 0.5):.0f}%)"


def _settings_html(
    info: dict[str, Any],
    ruleset: Ruleset | None,
    scheduled: int | None,
    st: Standings,
) -> str:
    config: dict[str, Any] = info.get("config", {})
    rows: list[tuple[str, str]] = []
    preset = str(config.get("preset", ruleset.name if ruleset else "?"))
    overrides = config.get("overrides") or []
    rows.append(("rules", preset + (f" with {', '.join(overrides)}" if overrides else "")))
    if ruleset is not None and ruleset.summary:
        rows.append(("summary", ruleset.summary))
    fmt = str(config.get("format", "?"))
    if config.get("candidate"):
        fmt += f" (candidate {config['candidate']})"
    rows.append(("format", fmt))
    played = st.matches_total
    progress = f"{played} of {scheduled}" if scheduled is not None else str(played)
    rows.append(("matches played", progress))
    if st.terminations:
        ends = ", ".join(f"{k.replace('_', ' ')} {n}" for k, n in st.terminations.items())
        rows.append(("how they ended", ends))
    if st.cancelled:
        rows.append(("cancelled (not counted)", str(st.cancelled)))
    rows.append(("abandoned matches", str(st.abandoned)))
    for key, label in (
        ("games", "games (duplicate sets per pairing)"),
        ("seed", "seed"),
        ("time_limit_ms", "time limit per decision (ms)"),
        ("on_timeout", "on timeout"),
        ("max_crashes", "crashes before disqualification"),
    ):
        if key in config:
            rows.append((label, str(config[key])))
    rows.append(("created", str(info.get("created", "?"))))
    rows.append(("capicua version", str(info.get("capicua_version", "?"))))
    rows.append(("configuration sha256", str(info.get("config_sha256", "?"))))
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows)
    knobs = ""
    if ruleset is not None:
        items = "".join(
            f"<tr><th>{_e(k)}</th>"
            f"<td><code>{_e(json.dumps(v, ensure_ascii=False))}</code></td></tr>"
            for k, v in ruleset.knobs().items()
        )
        knobs = (
            "<details><summary>every rule knob</summary>"
            f'<div class="scroll"><table class="knobs">{items}</table></div></details>'
        )
    return f'<dl class="settings">{dl}</dl>{knobs}'


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _key(x: float | None) -> str:
    """A sort key for ``data-v``: missing values sort last (descending) or first."""
    return "-1e12" if x is None or not math.isfinite(x) else f"{x:.6f}"


def _think_cell(b: BotStanding) -> str:
    """The mean think time, with the maximum and the count in its tooltip."""
    if not b.think_decisions:
        return '<td class="think" data-v="-1e12" title="no decision measured">-</td>'
    title = (
        f"mean {think_text(b.think_mean_ms)} ms, max {think_text(b.think_max_ms)} ms over "
        f"{b.think_decisions} decisions"
    )
    return (
        f'<td class="think" data-v="{_key(b.think_mean_ms)}" title="{_e(title)}">'
        f"{think_text(b.think_mean_ms)}</td>"
    )


def _standings_html(st: Standings) -> str:
    has_os = st.sides > 2  # openskill is shown where a match has more than two sides
    head = (
        "<tr><th data-sort=num>#</th><th data-sort=str class=name>bot</th>"
        "<th data-sort=num>Elo</th><th data-sort=num>95% interval</th>"
        + ("<th data-sort=num title='mu ± sigma, sorted by mu - 3 sigma'>openskill</th>"
           if has_os else "")
        + "<th data-sort=num>matches</th>"
        "<th data-sort=num>W</th><th data-sort=num>D</th><th data-sort=num>L</th>"
        "<th data-sort=num>score</th><th data-sort=num>hands won</th>"
        "<th data-sort=num>points</th><th data-sort=num>forfeits</th>"
        "<th data-sort=num title='mean server-measured think time per decision'>"
        "think ms</th>"
        "<th data-sort=num>errors</th><th data-sort=str class=name>status</th></tr>"
    )  # fmt: skip
    body = []
    for i, b in enumerate(st.bots, 1):
        interval = (
            f"{_signed(b.elo_ci95[0])} … {_signed(b.elo_ci95[1])}"
            if b.elo_ci95 is not None
            else "n/a"
        )
        status = (
            f'<span class="dq" title="{_e(b.disqualified_reason or "")}">disqualified</span>'
            f' <span class="reason">{_e(b.disqualified_reason or "")}</span>'
            if b.disqualified
            else '<span class="ok">ok</span>'
        )
        skill = ""
        if has_os:
            o = b.openskill
            skill = (
                f'<td data-v="{_key(o.ordinal if o else None)}">'
                f"{'n/a' if o is None else f'{o.mu:.1f} ± {o.sigma:.1f}'}</td>"
            )
        hands = f' title="{b.hand_wins} of {b.hands_decided} decided hands ({b.hands} played)"'
        body.append(
            f'<tr class="{"dqrow" if b.disqualified else ""}">'
            f'<td data-v="{i}">{i}</td>'
            f'<td class="name" data-v="{_e(b.name)}"><b>{_e(b.name)}</b>'
            f' <span class="spec">{_e(b.spec)}</span></td>'
            f'<td data-v="{_key(b.elo)}"><b>{_signed(b.elo)}</b></td>'
            f'<td data-v="{_key(b.elo)}">{_e(interval)}</td>'
            f"{skill}"
            f'<td data-v="{b.matches}">{b.matches}</td>'
            f'<td data-v="{b.wins}">{b.wins}</td><td data-v="{b.draws}">{b.draws}</td>'
            f'<td data-v="{b.losses}">{b.losses}</td>'
            f'<td data-v="{_key(b.match_score)}">{_pct(b.match_score)}</td>'
            f'<td data-v="{_key(b.hand_win_rate)}"{hands}>{_pct(b.hand_win_rate)}</td>'
            f'<td data-v="{b.points}">{b.points}</td>'
            f'<td data-v="{b.forfeits}">{b.forfeits}</td>'
            f"{_think_cell(b)}"
            f'<td data-v="{b.errors_total}">{b.errors_total}</td>'
            f'<td class="status" data-v="{int(b.disqualified)}">{status}</td></tr>'
        )
    return (
        f'<div class="scroll"><table id="standings" class="grid sortable"><thead>{head}'
        f"</thead><tbody>{''.join(body)}</tbody></table></div>"
        '<p class="note">Elo is relative to the field (mean 0), fitted over duplicate sets '
        "(the same deals played from every seat), with a bootstrap 95% interval. Score: wins "
        "plus half the draws, per match; hands won: of the hands with a winner; think ms: "
        "the mean time per decision, measured by the server from sending the request to "
        "receiving the answer (hover for the maximum). Click a column to sort.</p>"
    )


def _crosstable_html(st: Standings) -> str:
    names = [b.name for b in st.bots]
    if not any(st.crosstable.values()):
        return '<p class="note">No finished match yet.</p>'
    head = "".join(f'<th class="colname" title="{_e(n)}">{_e(n)}</th>' for n in names)
    rows = []
    for a in names:
        cells = []
        row = st.crosstable.get(a, {})
        for b in names:
            if a == b:
                cells.append('<td class="self">—</td>')
                continue
            c = row.get(b)
            if c is None or c.matches == 0:
                cells.append('<td class="none"></td>')
                continue
            points = c.match_score * c.matches
            cells.append(
                f'<td class="heat" style="background:{_heat(c.score)}" '
                f'title="{_e(a)} against {_e(b)}: {_num(points)} of {c.matches} matches; '
                f'set score {_pct(c.score)} over {c.sets} sets">'
                f"{_num(points)}/{c.matches}<small>{_pct(c.score)}</small></td>"
            )
        rows.append(f'<tr><th class="rowname">{_e(a)}</th>{"".join(cells)}</tr>')
    legend = (
        '<div class="legend"><span>0%</span>'
        + "".join(f'<i style="background:{_heat(i / 10)}"></i>' for i in range(11))
        + "<span>100%</span></div>"
    )
    return (
        '<div class="scroll"><table id="crosstable" class="grid cross"><thead><tr><th></th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>{legend}"
        '<p class="note">Each cell: what the row scored against the column (1 per match '
        "placed ahead, ½ placed level), out of the matches they met in; the percentage and "
        "the color are the mean score over their duplicate sets.</p>"
    )


def nice_step(span: float) -> float:
    raw = span / 6 if span > 0 else 50
    mag = float(10 ** math.floor(math.log10(raw)))
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def rating_chart_svg(bots: Sequence[BotStanding]) -> str:
    """Elo with its 95% interval per bot, as a horizontal error-bar chart (inline SVG)."""
    rated = [b for b in bots if b.elo is not None and math.isfinite(b.elo)]
    if not rated:
        return '<p class="note">No ratings yet.</p>'
    values = [0.0]
    for b in rated:
        assert b.elo is not None
        values.append(b.elo)
        for v in b.elo_ci95 or ():
            if math.isfinite(v):
                values.append(v)
    lo, hi = min(values), max(values)
    step = nice_step(hi - lo)
    lo = math.floor(lo / step) * step
    hi = math.ceil(hi / step) * step
    if hi == lo:
        lo, hi = lo - step, hi + step
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
    tick = lo
    while tick <= hi + step / 2:
        tx = x(tick)
        cls = "zero" if abs(tick) < step / 1000 else "tick"
        parts.append(
            f'<line class="{cls}" x1="{tx:.1f}" x2="{tx:.1f}" y1="{top - 6}" '
            f'y2="{height - 10}"/><text class="axis" x="{tx:.1f}" y="{top - 12}" '
            f'text-anchor="middle">{_signed(tick)}</text>'
        )
        tick += step
    for i, b in enumerate(rated):
        assert b.elo is not None
        cy = top + row * i + row / 2
        cls = "bar dq" if b.disqualified else "bar"
        title = f"{b.name}: Elo {_signed(b.elo)}"
        if b.elo_ci95 is not None and all(math.isfinite(v) for v in b.elo_ci95):
            low, high = b.elo_ci95
            title += f", 95% interval {_signed(low)} … {_signed(high)}"
            x1, x2 = x(low), x(high)
            parts.append(
                f'<g class="{cls}"><title>{_e(title)}</title>'
                f'<line x1="{x1:.1f}" x2="{x2:.1f}" y1="{cy:.1f}" y2="{cy:.1f}"/>'
                f'<line x1="{x1:.1f}" x2="{x1:.1f}" y1="{cy - 7:.1f}" y2="{cy + 7:.1f}"/>'
                f'<line x1="{x2:.1f}" x2="{x2:.1f}" y1="{cy - 7:.1f}" y2="{cy + 7:.1f}"/></g>'
            )
        label = _e(b.name) + (" (DQ)" if b.disqualified else "")
        parts.append(
            f'<text class="label" x="{left - 10}" y="{cy + 4:.1f}" text-anchor="end">'
            f"{label}</text>"
            f'<circle class="{cls}" cx="{x(b.elo):.1f}" cy="{cy:.1f}" r="5">'
            f"<title>{_e(title)}</title></circle>"
            f'<text class="value" x="{width - right + 8}" y="{cy + 4:.1f}">'
            f"{_signed(b.elo)}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


# -- ratings over the tournament --------------------------------------------------------------

MAX_TIMELINE_POINTS = 50
"""Points of the rating-over-time chart at most: each is one Elo fit, and a fit reads every
set before it, so a big tournament's report stays quick to write (and its page small)."""

COLORS = ("#1f6feb", "#d1242f", "#1a7f37", "#9a6700", "#8250df", "#bf3989", "#0a7d8c",
          "#6e7781", "#e16f24", "#2da44e")  # fmt: skip


@dataclass(frozen=True)
class Timeline:
    """Elo after the first sets of the schedule: ``sets[i]`` is a set number (1-based, as
    in the schedule) and ``elo[bot][i]`` the bot's Elo once every set up to it is counted
    (None before the bot's first rated set)."""

    sets: tuple[int, ...]
    elo: dict[str, tuple[float | None, ...]]
    rated_sets: int  # sets with a counted match; more than len(sets) when sampled


def sample_indices(n: int, limit: int = MAX_TIMELINE_POINTS) -> list[int]:
    """At most ``limit`` of the indices ``0 .. n-1``, evenly spread, first and last
    included (all of them when they fit)."""
    if n <= limit:
        return list(range(n))
    if limit < 2:
        return [n - 1]
    return sorted({round(i * (n - 1) / (limit - 1)) for i in range(limit)})


def elo_timeline(matches: Sequence[MatchRow], limit: int = MAX_TIMELINE_POINTS) -> Timeline:
    """Each bot's Elo by set number, from :mod:`capicua.arena.ratings` (the standings'
    fit, without the bootstrap interval): the last point is the standings' Elo."""
    sets = ratings.duplicate_sets(matches)
    number = {m.set_key: m.seq + 1 for m in matches}
    points = sample_indices(len(sets), limit)
    fits = [ratings.elo_ratings(sets[: i + 1], samples=0) for i in points]
    names = sorted({name for fit in fits for name in fit})
    return Timeline(
        sets=tuple(number[sets[i].set_key] for i in points),
        elo={n: tuple(fit[n].elo if n in fit else None for fit in fits) for n in names},
        rated_sets=len(sets),
    )


def _polyline(points: Sequence[tuple[float, float]]) -> str:
    return "M" + "L".join(f"{x:.1f},{y:.1f}" for x, y in points)


def timeline_svg(timeline: Timeline, bots: Sequence[BotStanding]) -> str:
    """The Elo of every rated bot by set number, one colored line each (inline SVG), and a
    legend in HTML below it (it wraps on a phone, where the chart is scaled down)."""
    order = [b for b in bots if b.name in timeline.elo]
    values = [v for b in order for v in timeline.elo[b.name] if v is not None]
    if not timeline.sets or not values:
        return '<p class="note">No ratings yet.</p>'
    lo, hi = min([0.0, *values]), max([0.0, *values])
    step = nice_step(hi - lo)
    lo, hi = math.floor(lo / step) * step, math.ceil(hi / step) * step
    if hi == lo:
        lo, hi = lo - step, hi + step
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
    tick = lo
    while tick <= hi + step / 2:
        cls = "zero" if abs(tick) < step / 1000 else "tick"
        parts.append(
            f'<line class="{cls}" x1="{left}" x2="{width - right}" y1="{y(tick):.1f}" '
            f'y2="{y(tick):.1f}"/><text class="axis" x="{left - 6}" y="{y(tick) + 4:.1f}" '
            f'text-anchor="end">{_signed(tick)}</text>'
        )
        tick += step
    x_step = max(1, round(nice_step(x_hi - x_lo)))
    tick = math.ceil(x_lo / x_step) * x_step
    while tick <= x_hi:
        parts.append(
            f'<text class="axis" x="{x(tick):.1f}" y="{height - bottom + 20}" '
            f'text-anchor="middle">{tick}</text>'
        )
        tick += x_step
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
        title = f"{b.name}: Elo {_signed(final)} after set {last}"
        dq = " dq" if b.disqualified else ""
        parts.append(
            f'<g class="series{dq}" data-bot="{_e(b.name)}" data-last="{final:.1f}">'
            f"<title>{_e(title)}</title>"
            f'<path class="line" d="{_polyline(pts)}" stroke="{color}"/>'
            f'<circle cx="{pts[-1][0]:.1f}" cy="{pts[-1][1]:.1f}" r="3.5" fill="{color}"/></g>'
        )
        legend.append(
            f'<li><i style="background:{color}"></i>{_e(b.name)}'
            f"{' (DQ)' if b.disqualified else ''} <b>{_signed(final)}</b></li>"
        )
    parts.append("</svg>")
    sampled = (
        f" ({len(timeline.sets)} points of {timeline.rated_sets} sets)"
        if len(timeline.sets) < timeline.rated_sets
        else ""
    )
    return (
        f'<div class="chart">{"".join(parts)}</div>'
        f'<ul class="series-legend">{"".join(legend)}</ul>'
        '<p class="note">Elo of every bot counting the sets up to each set number '
        f"(the same fit as the standings, without the interval){_e(sampled)}; a dashed "
        "line is a disqualified bot.</p>"
    )


def _errors_html(st: Standings, bots: Sequence[BotRow], failures: Sequence[FailureRow]) -> str:
    kinds = list(FAILURE_KINDS)
    for b in st.bots:
        kinds.extend(k for k in b.errors if k not in kinds)
    head = "".join(f"<th>{_e(k)}</th>" for k in kinds)
    rows = []
    for b in st.bots:
        cells = "".join(
            f'<td class="{"err" if b.errors.get(k) else "zero"}">{b.errors.get(k, 0)}</td>'
            for k in kinds
        )
        rows.append(
            f'<tr class="{"dqrow" if b.disqualified else ""}"><th class="rowname">'
            f"{_e(b.name)}</th>{cells}<td>{b.errors_total}</td></tr>"
        )
    table = (
        '<div class="scroll"><table id="errors" class="grid"><thead><tr><th>bot</th>'
        f"{head}<th>total</th></tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )
    dq = [b for b in bots if b.disqualified]
    dq_html = ""
    if dq:
        items = "".join(
            f"<li><b>{_e(b.name)}</b> was disqualified: "
            f"{_e(b.disqualified_reason or 'no reason recorded')}</li>"
            for b in dq
        )
        dq_html = (
            f'<div class="callout" id="disqualified"><h3>Disqualified</h3><ul>{items}</ul></div>'
        )
    details = ""
    if failures:
        shown = failures[-200:]
        lis = "".join(
            f"<tr><td>{_e(f.time)}</td><td>{_e(f.bot)}</td><td>{_e(f.kind)}</td>"
            f"<td>{_e(f.match_key or '')}</td><td>{_e(f.detail)}</td></tr>"
            for f in shown
        )
        more = f" (the last {len(shown)} of {len(failures)})" if len(shown) < len(failures) else ""
        details = (
            f"<details><summary>every failure{more}</summary>"
            '<div class="scroll"><table class="grid small"><thead><tr><th>time</th>'
            "<th>bot</th><th>kind</th><th>match</th><th>detail</th></tr></thead>"
            f"<tbody>{lis}</tbody></table></div></details>"
        )
    return dq_html + table + details


def _abandoned_html(abandoned: Sequence[tuple[str, str, str]]) -> str:
    if not abandoned:
        return '<p id="abandoned">Abandoned matches: <b>0</b>.</p>'
    items = "".join(
        f"<tr><td>{_e(t)}</td><td>{_e(k)}</td><td>{_e(r)}</td></tr>" for k, r, t in abandoned
    )
    return (
        f'<p id="abandoned">Abandoned matches: <b>{len(abandoned)}</b> (cut short by an '
        "interrupt; not counted, played again on resume).</p>"
        '<details><summary>abandoned matches</summary><div class="scroll">'
        '<table class="grid small"><thead><tr><th>time</th><th>match</th><th>reason</th>'
        f"</tr></thead><tbody>{items}</tbody></table></div></details>"
    )


def _match_list_html(rows: Sequence[MatchRow], embedded: set[str]) -> str:
    items = []
    for m in rows:
        if m.key not in embedded:
            continue
        if m.winner_side is None:
            result = "no winner"
        else:
            result = f"{m.sides[m.winner_side]} wins" if m.winner_side < len(m.sides) else "?"
        score = "–".join(str(s) for s in m.scores)
        term = "" if m.termination == "normal" else f" · {m.termination}"
        items.append(
            f'<li><button type="button" class="match" data-key="{_e(m.key)}">'
            f'<span class="mk">{_e(m.key)}</span> {_e(" v ".join(m.sides))}'
            f'<span class="mr">{_e(score)} · {_e(result)}{_e(term)}</span></button></li>'
        )
    return "".join(items)


def _problems_html(problems: Sequence[ReplayProblem], shown: int = 100) -> str:
    """The matches whose replay is not in the page, each with why (a visible list: a
    replay that silently vanished from the viewer would look like a match never played)."""
    if not problems:
        return ""
    items = "".join(
        f'<li data-key="{_e(p.key)}"><b>{_e(p.key)}</b> '
        f"<code>{_e(p.path or '(no file recorded)')}</code>: {_e(p.reason)}</li>"
        for p in problems[:shown]
    )
    more = f"<li>and {len(problems) - shown} more</li>" if len(problems) > shown else ""
    n = len(problems)
    return (
        f'<div class="callout" id="replay-problems"><h3>{n} '
        f"{'replay is' if n == 1 else 'replays are'} missing or unreadable</h3>"
        "<p>Not in the viewer; the match still counts in the standings.</p>"
        f"<ul>{items}{more}</ul></div>"
    )


def _replay_notes(
    shown: int, with_file: int, capped: bool, max_replays: int, problems: Sequence[ReplayProblem]
) -> str:
    """What the replay viewer holds: the cap when it applies, then the missing replays."""
    note = ""
    if capped:
        note = (
            f'<p class="note" id="replay-cap">{shown} of {with_file} replays are '
            "embedded in this page (matches that did not end normally first, then in "
            "schedule order; at most "
            f"{max_replays}); every replay is in the directory's <code>replays/</code>.</p>"
        )
    return note + _problems_html(problems)


def _summary(view: Standings, scheduled: int | None, bots: Sequence[BotRow], abandoned: int) -> str:
    dq = sum(1 for b in bots if b.disqualified)
    return (
        f"{view.matches_total} matches"
        + (f" of {scheduled}" if scheduled is not None else "")
        + f" · {len(bots)} bots · {abandoned} abandoned"
        + (f" · {dq} disqualified" if dq else "")
    )


@functools.cache
def asset(name: str) -> str:
    """A file of ``templates/`` (report.css, report.js), inlined into the page. It must not
    close its own element early: the page would break where the file says ``</style`` or
    ``</script``."""
    text = (resources.files("capicua.arena") / "templates" / name).read_text(encoding="utf-8")
    for tag in ("</style", "</script", "<!--"):
        if tag in text.lower():
            raise ReportError(f"templates/{name} contains {tag!r}, which would end it early")
    return text


@functools.cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("capicua.arena", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        keep_trailing_newline=True,
    )


def render_report(results: Results, max_replays: int = MAX_REPLAYS) -> str:
    """The whole HTML page of ``results``."""
    info = results.tournament()
    bots = results.bots()
    matches = results.matches()
    abandoned = results.abandoned()
    failures = results.failures()
    view = compute_rows(
        bots=bots,
        matches=matches,
        hands=results.hands(),
        failures=failures,
        think=results.think(),
        abandoned=len(abandoned),
        tournament=info,
    )
    chosen = _pick_replays(matches, max_replays)
    replays, ruleset, problems = _load_replays(results.directory, chosen)
    problems += [ReplayProblem(m.key, None, "no replay file was recorded")
                 for m in matches if not m.replay_path]  # fmt: skip
    stored = _tournament(info.get("config", {}))
    scheduled = None if stored is None else len(schedule(stored))
    if ruleset is None and stored is not None:
        ruleset = stored.ruleset
    embedded = {r["k"] for r in replays}
    with_file = sum(1 for m in matches if m.replay_path)
    fragments = {
        "settings": _settings_html(info, ruleset, scheduled, view),
        "standings": _standings_html(view),
        "crosstable": _crosstable_html(view),
        "rating_chart": rating_chart_svg(view.bots),
        "timeline": timeline_svg(elo_timeline(matches), view.bots),
        "errors": _errors_html(view, bots, failures),
        "abandoned": _abandoned_html(abandoned),
        "replay_notes": _replay_notes(
            len(embedded), with_file, len(chosen) < with_file, max_replays, problems
        ),
        "match_list": _match_list_html(matches, embedded),
        "replay_data": script_json(replays),
        "css": asset("report.css"),
        "js": asset("report.js"),
    }
    # the fragments are built (and escaped) here: the template places them as they are
    return (
        _environment()
        .get_template("report.html.j2")
        .render(
            name=str(info.get("name", "tournament")),
            summary=_summary(view, scheduled, bots, len(abandoned)),
            created=str(info.get("created", "?")),
            **{key: Markup(value) for key, value in fragments.items()},
        )
    )


def _tournament(config: dict[str, Any]) -> Tournament | None:
    """The stored tournament (None if the stored configuration is no longer valid)."""
    try:
        return tournament_from_mapping(dict(config), Path("."))
    except (CapicuaError, TypeError, ValueError, KeyError):
        return None


def write_report(directory: Path, out: Path | None = None, max_replays: int = MAX_REPLAYS) -> Path:
    """Write the report of the tournament in ``directory`` (to ``out``, by default
    ``DIR/report.html``) atomically; returns the path written."""
    if not directory.is_dir():
        what = "not a directory" if directory.exists() else "no such directory"
        raise ReportError(f"{directory}: {what}")
    try:
        results = Results.open_existing(directory)
    except FileNotFoundError as e:
        raise ReportError(str(e)) from None
    try:
        try:
            page = render_report(results, max_replays)
        except FileNotFoundError as e:  # no tournament row yet
            raise ReportError(str(e)) from None
    finally:
        results.close()
    return write_page(out if out is not None else directory / REPORT_NAME, page)


def write_page(target: Path, page: str) -> Path:
    """Write an HTML page atomically (readers never see half a page); returns ``target``."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".report-", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(page)
            os.chmod(tmp, 0o644)  # mkstemp makes it private; a report is for sharing
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as e:
        raise ReportError(f"{target}: {e.strerror or e}") from None
    return target
