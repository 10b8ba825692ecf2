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

import html
import json
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from capicua.engine.errors import CapicuaError
from capicua.engine.records import Defer, Draw, Pass, Play, RedealChoice, Replay
from capicua.engine.rules import Ruleset

from .config import Tournament, tournament_from_mapping
from .schedule import schedule
from .standings import BotStanding, Standings, compute_rows, signed
from .store import FAILURE_KINDS, BotRow, FailureRow, MatchRow, Results

MAX_REPLAYS = 300
"""Replays embedded in a report by default; a big tournament's page stays small enough."""

REPORT_NAME = "report.html"


class ReportError(CapicuaError):
    """The report cannot be written (no results in the directory, unwritable output...)."""


# -- replays in the compact form the viewer reads --------------------------------------------


def compact_replay(replay: Replay, row: MatchRow) -> dict[str, Any]:
    """What the replay viewer needs of one match, small.

    Tiles are their text ``"a-b"``; events are ``["P", seat, tile, "L"|"R"]`` (play),
    ``["X", seat]`` (pass), ``["D", seat, tile|null]`` (draw), ``["F", seat]`` (defer the
    opening), ``["R", seat, 1|0]`` (redeal or keep). Each hand has its deals (a redeal
    adds one), the scores before it and its result (text and scores after it).
    """
    # not at module level: importing capicua.cli registers the arena commands, this one too
    from capicua.cli.display import outcome_text, result_text, side_name

    rules = replay.ruleset
    n_sides = rules.num_sides
    scores: list[int] = [0] * n_sides
    hands: list[dict[str, Any]] = []
    for record in replay.hands:
        events: list[list[Any]] = []
        for e in record.events:
            if isinstance(e, Play):
                events.append(["P", e.seat, str(e.tile), e.end.letter])
            elif isinstance(e, Pass):
                events.append(["X", e.seat])
            elif isinstance(e, Draw):
                events.append(["D", e.seat, None if e.tile is None else str(e.tile)])
            elif isinstance(e, Defer):
                events.append(["F", e.seat])
            elif isinstance(e, RedealChoice):
                events.append(["R", e.seat, int(e.redeal)])
        hand: dict[str, Any] = {
            "n": record.hand + 1,
            "deals": [
                [[str(t) for t in seat] for seat in d.hands] + [[str(t) for t in d.stock]]
                for d in record.deals
            ],
            "ev": events,
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


def _load_replays(
    directory: Path, matches: Sequence[MatchRow]
) -> tuple[list[dict[str, Any]], Ruleset | None, list[str]]:
    """Compact replays of ``matches``, the ruleset of the first one, and unreadable files."""
    from capicua.engine.codec import read_replay

    out: list[dict[str, Any]] = []
    problems: list[str] = []
    ruleset: Ruleset | None = None
    for m in matches:
        assert m.replay_path is not None
        try:
            replay = read_replay(directory / m.replay_path)
        except (CapicuaError, OSError) as e:
            problems.append(f"{m.replay_path}: {e}")
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
            f'<table class="knobs">{items}</table></details>'
        )
    return f'<dl class="settings">{dl}</dl>{knobs}'


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _key(x: float | None) -> str:
    """A sort key for ``data-v``: missing values sort last (descending) or first."""
    return "-1e12" if x is None or not math.isfinite(x) else f"{x:.6f}"


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
            f'<td data-v="{b.errors_total}">{b.errors_total}</td>'
            f'<td class="status" data-v="{int(b.disqualified)}">{status}</td></tr>'
        )
    return (
        f'<table id="standings" class="grid sortable"><thead>{head}</thead>'
        f"<tbody>{''.join(body)}</tbody></table>"
        '<p class="note">Elo is relative to the field (mean 0), fitted over duplicate sets '
        "(the same deals played from every seat), with a bootstrap 95% interval. Score: wins "
        "plus half the draws, per match; hands won: of the hands with a winner. "
        "Click a column to sort.</p>"
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
        f'<table id="crosstable" class="grid cross"><thead><tr><th></th>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{legend}"
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
        f'<table id="errors" class="grid"><thead><tr><th>bot</th>{head}<th>total</th></tr>'
        f"</thead><tbody>{''.join(rows)}</tbody></table>"
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
            '<table class="grid small"><thead><tr><th>time</th><th>bot</th><th>kind</th>'
            f"<th>match</th><th>detail</th></tr></thead><tbody>{lis}</tbody></table></details>"
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
        '<details><summary>abandoned matches</summary><table class="grid small"><thead><tr>'
        f"<th>time</th><th>match</th><th>reason</th></tr></thead><tbody>{items}</tbody>"
        "</table></details>"
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
        abandoned=len(abandoned),
        tournament=info,
    )
    chosen = _pick_replays(matches, max_replays)
    replays, ruleset, problems = _load_replays(results.directory, chosen)
    stored = _tournament(info.get("config", {}))
    scheduled = None if stored is None else len(schedule(stored))
    if ruleset is None and stored is not None:
        ruleset = stored.ruleset
    name = str(info.get("name", "tournament"))
    embedded = {r["k"] for r in replays}
    with_file = sum(1 for m in matches if m.replay_path)
    note = ""
    if len(embedded) < with_file:
        note = (
            f'<p class="note" id="replay-cap">{len(embedded)} of {with_file} replays are '
            "embedded in this page (matches that did not end normally first, then in "
            "schedule order; at most "
            f"{max_replays}); every replay is in the directory's <code>replays/</code>.</p>"
        )
    if problems:
        note += (
            '<p class="note warn">Unreadable replays: '
            + "; ".join(_e(p) for p in problems)
            + "</p>"
        )
    summary = (
        f"{view.matches_total} matches"
        + (f" of {scheduled}" if scheduled is not None else "")
        + f" · {len(bots)} bots · {len(abandoned)} abandoned"
        + (
            f" · {sum(1 for b in bots if b.disqualified)} disqualified"
            if any(b.disqualified for b in bots)
            else ""
        )
    )
    body = f"""
<header><h1>{_e(name)}</h1><p class="sub">{_e(summary)}</p></header>
<nav><a href="#s-settings">rules &amp; settings</a><a href="#s-standings">standings</a>
<a href="#s-cross">crosstable</a><a href="#s-ratings">ratings</a><a href="#s-errors">errors</a>
<a href="#s-replays">replays</a></nav>
<main>
<section id="s-settings"><h2>Rules and settings</h2>
{_settings_html(info, ruleset, scheduled, view)}</section>
<section id="s-standings"><h2>Standings</h2>{_standings_html(view)}</section>
<section id="s-cross"><h2>Crosstable</h2>{_crosstable_html(view)}</section>
<section id="s-ratings"><h2>Ratings</h2>{rating_chart_svg(view.bots)}
<p class="note">Elo (dot) with its 95% interval (bar); the line marks the field's average.
</p></section>
<section id="s-errors"><h2>Errors and disqualifications</h2>
{_errors_html(view, bots, failures)}{_abandoned_html(abandoned)}</section>
<section id="s-replays"><h2>Replays</h2>{note}
<div class="replays">
<aside><input id="match-filter" type="search" placeholder="filter matches (bot, key)"
 aria-label="filter matches"><ul id="match-list">{_match_list_html(matches, embedded)}</ul>
</aside>
<div id="viewer" tabindex="0">
<p class="note" id="viewer-empty">Pick a match from the list.</p>
<div id="viewer-body" hidden>
<div class="vhead"><h3 id="match-title"></h3><div id="position"></div></div>
<div class="controls">
<button type="button" id="btn-first" title="first event of the match (Home)">first</button>
<button type="button" id="btn-prev-hand" title="previous hand (↑ / PageUp)">« hand</button>
<button type="button" id="btn-prev" title="previous event (←)">‹ prev</button>
<button type="button" id="btn-play" title="play / pause (space)">▶ play</button>
<button type="button" id="btn-next" title="next event (→)">next ›</button>
<button type="button" id="btn-next-hand" title="next hand (↓ / PageDown)">hand »</button>
<button type="button" id="btn-last" title="end of the match (End)">last</button>
<span class="keys">keys: ← → event, ↑ ↓ hand, Home/End, space</span>
</div>
<div id="scores"></div>
<div class="chainbox"><div class="label">chain <span id="ends"></span></div>
<div id="chain"></div></div>
<div id="seats"></div>
<div id="stock"></div>
<div id="result"></div>
<ol id="events"></ol>
</div></div></div></section>
</main>
<footer>Written by <code>capicua arena report</code> · the standings are those of
<code>capicua arena standings</code> (method: docs/arena.md) ·
tournament created {_e(info.get("created", "?"))}</footer>
<script type="application/json" id="replay-data">{script_json(replays)}</script>
"""
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(name)} · capicua arena report</title><style>{_CSS}</style></head>"
        f"<body>{body}<script>{_JS}</script></body></html>\n"
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


@click.command("report")
@click.argument("directory", type=click.Path(path_type=Path))
@click.option(
    "--out",
    "out",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="The HTML file to write (default: DIR/report.html).",
)
@click.option(
    "--max-replays",
    type=click.IntRange(min=0),
    default=MAX_REPLAYS,
    show_default=True,
    help="Replays embedded in the page for the replay viewer.",
)
def report_cmd(directory: Path, out: Path | None, max_replays: int) -> None:
    """Write the HTML report of a tournament directory: standings, crosstable, ratings,
    errors and a replay viewer, in one self-contained file. Prints the path written."""
    click.echo(str(write_report(directory, out, max_replays)))


_CSS = """
:root{--fg:#1d232a;--muted:#5e6b78;--bg:#f6f7f9;--card:#fff;--line:#dde2e8;--acc:#1f6feb;
--bad:#c62828;--tile:#fffdf6;--tileb:#3b3b3b}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;
color:var(--fg);background:var(--bg)}
header{padding:18px 28px 8px;background:#18324d;color:#fff}
header h1{margin:0;font-size:24px}
header .sub{margin:4px 0 8px;color:#c9d6e3}
nav{position:sticky;top:0;z-index:2;background:#18324d;padding:0 28px 8px;display:flex;gap:16px}
nav a{color:#9fc3ff;text-decoration:none}
nav a:hover{text-decoration:underline}
main{padding:8px 28px 28px;max-width:1400px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;
padding:12px 18px;margin:16px 0}
h2{margin:4px 0 10px;font-size:18px}
h3{margin:4px 0;font-size:15px}
.note{color:var(--muted);font-size:12.5px}
.warn{color:var(--bad)}
dl.settings{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:0}
dl.settings dt{color:var(--muted)}
dl.settings dd{margin:0}
table.grid{border-collapse:collapse;margin:4px 0}
table.grid th,table.grid td{border:1px solid var(--line);padding:4px 8px;text-align:right}
table.grid th{background:#eef1f5;font-weight:600;white-space:nowrap}
table.grid td.name{white-space:nowrap}
table.grid td.status{min-width:160px}
table.grid td.name,table.grid td.status,table.grid th.rowname,table.grid th.name{text-align:left}
table.small td,table.small th{font-size:12px;text-align:left}
table.knobs th{text-align:left;padding-right:12px;font-weight:normal;color:var(--muted)}
.sortable th{cursor:pointer;user-select:none}
.sortable th.asc::after{content:" ▲";font-size:10px}
.sortable th.desc::after{content:" ▼";font-size:10px}
.spec{color:var(--muted);font-size:11.5px}
.dq{background:var(--bad);color:#fff;border-radius:4px;padding:1px 6px;font-weight:600}
.reason{color:var(--bad);font-size:12px}
.ok{color:#2e7d32}
tr.dqrow td,tr.dqrow th{background:#fdecea}
tr.dqrow .name b{text-decoration:line-through}
table.cross td{min-width:64px;text-align:center}
table.cross td small{display:block;color:#333;font-size:11px}
table.cross td.self{background:#e4e7eb;color:#999}
table.cross th.colname{max-width:90px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.legend{display:flex;align-items:center;gap:2px;margin:6px 0;font-size:11px;color:var(--muted)}
.legend i{display:inline-block;width:18px;height:12px}
.legend span{margin:0 6px}
td.err{background:#fdecea;color:var(--bad);font-weight:600}
td.zero{color:#b0b7bf}
.callout{border-left:4px solid var(--bad);background:#fdecea;padding:6px 12px;margin:8px 0}
.callout ul{margin:4px 0;padding-left:18px}
svg text{font:12px system-ui,sans-serif;fill:var(--fg)}
svg text.axis{fill:var(--muted);font-size:11px}
svg line.tick{stroke:#e3e7ec}
svg line.zero{stroke:#8a96a3;stroke-dasharray:4 3}
svg .bar line{stroke:var(--acc);stroke-width:2}
svg circle.bar{fill:var(--acc)}
svg .bar.dq line{stroke:var(--bad);stroke-dasharray:3 2}
svg circle.bar.dq{fill:var(--bad)}
.replays{display:grid;grid-template-columns:300px 1fr;gap:16px;align-items:start}
aside input{width:100%;padding:5px 8px;margin-bottom:6px;border:1px solid var(--line);
border-radius:4px}
#match-list{list-style:none;margin:0;padding:0;max-height:640px;overflow:auto;
border:1px solid var(--line);border-radius:4px}
#match-list button{display:block;width:100%;text-align:left;border:0;
border-bottom:1px solid var(--line);background:none;padding:5px 8px;cursor:pointer;font:inherit}
#match-list button:hover{background:#eef4ff}
#match-list button.sel{background:#dbe8ff}
.mk{font-family:ui-monospace,monospace;color:var(--muted);font-size:12px}
.mr{display:block;font-size:12px;color:var(--muted)}
#viewer{outline:none;min-width:0}
.vhead{display:flex;justify-content:space-between;align-items:baseline;gap:12px}
#position{color:var(--muted);font-family:ui-monospace,monospace}
.controls{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:8px 0}
.controls button{font:inherit;padding:4px 10px;border:1px solid #b9c3ce;border-radius:4px;
background:#fff;cursor:pointer}
.controls button:hover{background:#eef4ff}
.controls button:disabled{opacity:.4;cursor:default}
.keys{color:var(--muted);font-size:12px;margin-left:8px}
#scores{display:flex;gap:10px;flex-wrap:wrap;margin:6px 0}
.score{border:1px solid var(--line);border-radius:6px;padding:3px 10px;background:#f8fafc}
.score b{font-size:16px;margin-left:6px}
.chainbox{background:#24623a;border-radius:8px;padding:8px 10px;margin:8px 0;min-height:64px}
.chainbox .label{color:#d7f0de;font-size:12px;margin-bottom:4px}
#chain{display:flex;flex-wrap:wrap;gap:3px;align-items:center}
.tile{display:inline-flex;border:1.5px solid var(--tileb);border-radius:4px;background:var(--tile);
font:600 13px ui-monospace,monospace;line-height:1;box-shadow:0 1px 1px rgba(0,0,0,.25)}
.tile span{display:inline-block;width:20px;text-align:center;padding:5px 0}
.tile span+span{border-left:1px solid #999}
.tile.dbl{flex-direction:column}
.tile.dbl span{padding:2px 0}
.tile.dbl span+span{border-left:0;border-top:1px solid #999}
.tile.new{outline:3px solid #ffd54f}
.empty{color:#d7f0de;font-style:italic}
#seats{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:8px}
.seat{border:1px solid var(--line);border-radius:6px;padding:6px 8px}
.seat.acted{border-color:var(--acc);box-shadow:0 0 0 2px #bcd4ff}
.seat .who{font-size:12.5px;margin-bottom:4px}
.seat .who .c{color:var(--muted)}
.seat .tiles{display:flex;flex-wrap:wrap;gap:3px;min-height:30px}
#stock{font-size:12.5px;color:var(--muted);margin:6px 0;display:flex;flex-wrap:wrap;gap:3px;
align-items:center}
#stock .tile{font-size:11px}
#stock .tile span{width:15px;padding:3px 0}
#stock .tile.dbl span{padding:1px 0}
#result{margin:6px 0;font-weight:600}
#events{max-height:220px;overflow:auto;margin:6px 0;padding-left:34px;font-size:12.5px;
border-top:1px solid var(--line)}
#events li.cur{background:#fff3c4}
#events li.hd{list-style:none;margin-left:-20px;color:var(--muted)}
footer{color:var(--muted);font-size:12px;padding:0 28px 24px}
@media (max-width:900px){.replays{grid-template-columns:1fr}}
"""

_JS = r"""
(function () {
  "use strict";
  // sortable tables
  document.querySelectorAll("table.sortable").forEach(function (table) {
    var ths = table.tHead.rows[0].cells;
    Array.prototype.forEach.call(ths, function (th, col) {
      th.addEventListener("click", function () {
        var asc = !th.classList.contains("asc");
        Array.prototype.forEach.call(ths, function (h) { h.classList.remove("asc", "desc"); });
        th.classList.add(asc ? "asc" : "desc");
        var num = th.getAttribute("data-sort") === "num";
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[col].getAttribute("data-v"), y = b.cells[col].getAttribute("data-v");
          var c = num ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
          return asc ? c : -c;
        });
        rows.forEach(function (r) { body.appendChild(r); });
      });
    });
  });

  var data = JSON.parse(document.getElementById("replay-data").textContent);
  var byKey = {};
  data.forEach(function (m) { byKey[m.k] = m; });
  var $ = function (id) { return document.getElementById(id); };
  var cur = null, h = 0, k = 0, timer = null;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function tileEl(a, b, extra) {
    var t = el("span", "tile" + (a === b ? " dbl" : "") + (extra ? " " + extra : ""));
    t.appendChild(el("span", "", String(a)));
    t.appendChild(el("span", "", String(b)));
    t.title = a + "-" + b;
    return t;
  }
  function halves(tile) {
    var p = tile.split("-");
    return [parseInt(p[0], 10), parseInt(p[1], 10)];
  }
  function who(m, seat) { return "seat " + seat + " (" + m.seats[seat] + ")"; }
  function eventText(m, e) {
    switch (e[0]) {
      case "P":
        return who(m, e[1]) + " plays " + e[2] + " on the " + (e[3] === "L" ? "left" : "right");
      case "X": return who(m, e[1]) + " passes";
      case "D": return who(m, e[1]) + " draws " + (e[2] || "a tile");
      case "F": return who(m, e[1]) + " defers the opening to its partner";
      case "R": return who(m, e[1]) + (e[2] ? " asks for a redeal" : " keeps its tiles");
    }
    return String(e);
  }
  function removeTile(list, tile) {
    var i = list.indexOf(tile);
    if (i >= 0) list.splice(i, 1);
  }
  // the table after the first n events of hand `hand`
  function stateAt(m, hand, n) {
    var H = m.hands[hand], di = 0;
    function deal(d) {
      var seats = d.slice(0, d.length - 1).map(function (s) { return s.slice(); });
      return { seats: seats, stock: d[d.length - 1].slice() };
    }
    var s = H.deals.length ? deal(H.deals[0]) : { seats: m.seats.map(function () { return []; }),
                                                  stock: [] };
    var chain = [], ends = null, lastSeat = null, redeals = 0;
    for (var i = 0; i < n; i++) {
      var e = H.ev[i];
      lastSeat = e[1];
      if (e[0] === "P") {
        var hv = halves(e[2]), lo = hv[0], hi = hv[1];
        removeTile(s.seats[e[1]], e[2]);
        if (ends === null) {
          chain.push([lo, hi]); ends = [lo, hi];
        } else if (e[3] === "L") {
          var nl = lo === ends[0] ? hi : lo;
          chain.unshift([nl, ends[0]]); ends = [nl, ends[1]];
        } else {
          var nr = lo === ends[1] ? hi : lo;
          chain.push([ends[1], nr]); ends = [ends[0], nr];
        }
      } else if (e[0] === "D") {
        if (e[2]) { removeTile(s.stock, e[2]); s.seats[e[1]].push(e[2]); }
        else if (s.stock.length) { s.seats[e[1]].push(s.stock.shift()); }
      } else if (e[0] === "R" && e[2] && di + 1 < H.deals.length) {
        di += 1; redeals += 1; s = deal(H.deals[di]); chain = []; ends = null;
      }
    }
    var last = n > 0 ? H.ev[n - 1] : null;
    var lastIdx = -1;
    if (last && last[0] === "P") lastIdx = last[3] === "L" ? 0 : chain.length - 1;
    return { seats: s.seats, stock: s.stock, chain: chain, ends: ends, lastSeat: lastSeat,
             lastIdx: lastIdx, redeals: redeals };
  }
  function render() {
    if (!ready()) return;
    var m = cur, H = m.hands[h], n = H.ev.length;
    var st = stateAt(m, h, k);
    var done = k === n && H.res;
    $("position").textContent = "hand " + H.n + " of " + m.hands.length + " · event " + k + "/" + n;
    // scores
    var sc = done ? H.res.sc : H.pre;
    var box = $("scores"); box.textContent = "";
    m.sides.forEach(function (name, i) {
      var d = el("span", "score", name);
      d.appendChild(el("b", "", String(sc[i])));
      box.appendChild(d);
    });
    // chain
    var chain = $("chain"); chain.textContent = "";
    if (!st.chain.length) chain.appendChild(el("span", "empty", "(empty)"));
    st.chain.forEach(function (p, i) {
      chain.appendChild(tileEl(p[0], p[1], i === st.lastIdx ? "new" : ""));
    });
    $("ends").textContent = st.ends ? "· open ends " + st.ends[0] + " | " + st.ends[1] : "";
    chain.setAttribute("data-text",
      st.chain.map(function (p) { return p[0] + "|" + p[1]; }).join(" "));
    // seats
    var seats = $("seats"); seats.textContent = "";
    st.seats.forEach(function (tiles, seat) {
      var d = el("div", "seat" + (seat === st.lastSeat ? " acted" : ""));
      d.setAttribute("data-seat", String(seat));
      var w = el("div", "who");
      w.appendChild(el("b", "", "seat " + seat + " · " + m.seats[seat]));
      w.appendChild(el("span", "c",
        " · " + m.sides[m.sideOf[seat]] + " · " + tiles.length +
        (tiles.length === 1 ? " tile" : " tiles")));
      d.appendChild(w);
      var t = el("div", "tiles");
      tiles.slice().sort(function (a, b) {
        var x = halves(a), y = halves(b); return x[0] - y[0] || x[1] - y[1];
      }).forEach(function (tile) { var hv = halves(tile); t.appendChild(tileEl(hv[0], hv[1])); });
      d.appendChild(t);
      seats.appendChild(d);
    });
    var stock = $("stock"); stock.textContent = "";
    if (st.stock.length) {
      stock.appendChild(document.createTextNode("stock (" + st.stock.length + "): "));
      st.stock.forEach(function (tile) {
        var hv = halves(tile); stock.appendChild(tileEl(hv[0], hv[1]));
      });
    }
    // result
    var res = "";
    if (done) res = "Hand " + H.n + ": " + H.res.t;
    if (k === n && !H.res) res = "Hand " + H.n + " not finished.";
    if (k === n && h === m.hands.length - 1) res += (res ? " — " : "") + "Match: " + m.out;
    $("result").textContent = res;
    // events so far
    var ol = $("events"); ol.textContent = "";
    var dealt = H.deals.length > 1 ? " (" + H.deals.length + " deals)" : "";
    ol.appendChild(el("li", "hd", "hand " + H.n + ": dealt" + dealt));
    for (var i = 0; i < k; i++) {
      var li = el("li", i === k - 1 ? "cur" : "", eventText(m, H.ev[i]));
      li.value = i + 1;
      ol.appendChild(li);
    }
    ol.scrollTop = ol.scrollHeight;
    var atStart = h === 0 && k === 0;
    $("btn-prev").disabled = $("btn-first").disabled = $("btn-prev-hand").disabled = atStart;
    var atEnd = h === m.hands.length - 1 && k === n;
    $("btn-next").disabled = $("btn-last").disabled = atEnd;
    $("btn-next-hand").disabled = h === m.hands.length - 1;
    if (atEnd) stop();
  }
  function go(nh, nk) { h = nh; k = nk; render(); }
  function ready() { return cur !== null && cur.hands.length > 0; }
  function next() {
    if (!ready()) return;
    if (k < cur.hands[h].ev.length) go(h, k + 1);
    else if (h + 1 < cur.hands.length) go(h + 1, 0);
  }
  function prev() {
    if (!ready()) return;
    if (k > 0) go(h, k - 1);
    else if (h > 0) go(h - 1, cur.hands[h - 1].ev.length);
  }
  function nextHand() { if (ready() && h + 1 < cur.hands.length) go(h + 1, 0); }
  function prevHand() { if (!ready()) return; if (k > 0) go(h, 0); else if (h > 0) go(h - 1, 0); }
  function first() { if (ready()) go(0, 0); }
  function last() {
    if (ready()) go(cur.hands.length - 1, cur.hands[cur.hands.length - 1].ev.length);
  }
  function stop() {
    if (timer !== null) { clearInterval(timer); timer = null; }
    $("btn-play").textContent = "▶ play";
  }
  function play() {
    if (!ready()) return;
    if (timer !== null) { stop(); return; }
    $("btn-play").textContent = "❚❚ pause";
    timer = setInterval(next, 600);
  }
  function select(key) {
    var m = byKey[key];
    if (!m) return;
    stop();
    cur = m;
    document.querySelectorAll("#match-list button.match").forEach(function (b) {
      b.classList.toggle("sel", b.getAttribute("data-key") === key);
    });
    $("viewer-empty").hidden = true;
    $("viewer-body").hidden = false;
    $("match-title").textContent = key + ": " + m.sides.join(" v ") + " · final " + m.sc.join("–");
    if (!m.hands.length) {
      ["scores", "chain", "seats", "stock", "events", "position"].forEach(function (id) {
        $(id).textContent = "";
      });
      $("result").textContent = "No hand was played. Match: " + m.out;
      return;
    }
    go(0, 0);
    $("viewer").focus({ preventScroll: true });
  }
  document.querySelectorAll("#match-list button.match").forEach(function (b) {
    b.addEventListener("click", function () { select(b.getAttribute("data-key")); });
  });
  $("match-filter").addEventListener("input", function () {
    var q = this.value.toLowerCase();
    document.querySelectorAll("#match-list li").forEach(function (li) {
      li.hidden = q !== "" && li.textContent.toLowerCase().indexOf(q) < 0;
    });
  });
  $("btn-next").addEventListener("click", next);
  $("btn-prev").addEventListener("click", prev);
  $("btn-next-hand").addEventListener("click", nextHand);
  $("btn-prev-hand").addEventListener("click", prevHand);
  $("btn-first").addEventListener("click", first);
  $("btn-last").addEventListener("click", last);
  $("btn-play").addEventListener("click", play);
  document.addEventListener("keydown", function (ev) {
    if (!cur || ev.altKey || ev.ctrlKey || ev.metaKey) return;
    var t = ev.target;
    if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA" || t.tagName === "SELECT")) return;
    var act = { ArrowRight: next, ArrowLeft: prev, ArrowDown: nextHand, PageDown: nextHand,
                ArrowUp: prevHand, PageUp: prevHand, Home: first, End: last, " ": play }[ev.key];
    if (act) { ev.preventDefault(); act(); }
  });
  if (data.length && location.hash.indexOf("#match=") === 0) {
    select(decodeURIComponent(location.hash.slice(7)));
  }
})();
"""
