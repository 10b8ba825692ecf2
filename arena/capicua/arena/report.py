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

from capicua.common.errors import CapicuaError
from capicua.common.sqldb import LadderLocation
from capicua.engine.display import outcome_text, result_text, rules_text, side_name
from capicua.engine.line import Line
from capicua.engine.records import (
    Defer,
    Draw,
    Pass,
    Play,
    RedealChoice,
    Replay,
)
from capicua.engine.rules import Ruleset

from . import ratings
from .charts import Timeline, rating_chart_svg, signed_text, timeline_svg
from .config import Tournament, tournament_from_mapping
from .schedule import schedule
from .standings import Standings, band_text, compute_rows, think_text
from .store import (
    COUNTED,
    FAILURE_KINDS,
    BotRow,
    MatchRow,
    Results,
    Where,
    make_directory,
    remove_created,
)

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
        line = Line()
        for e in record.events:
            if isinstance(e, Play):
                placed = line.placed(e.tile, e.end)
                events.append(["P", e.seat, str(e.tile), e.end.letter, [placed.left, placed.right]])
            elif isinstance(e, Pass):
                events.append(["X", e.seat])
            elif isinstance(e, Draw):
                events.append(["D", e.seat, None if e.tile is None else str(e.tile)])
            elif isinstance(e, Defer):
                events.append(["F", e.seat])
            elif isinstance(e, RedealChoice):
                events.append(["R", e.seat, int(e.redeal)])
            line = line.apply(e)  # a granted redeal starts an empty line
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
    odd = [m for m in with_file if m.termination not in COUNTED]
    chosen = {m.key for m in odd[:limit]}
    for m in with_file:
        if len(chosen) >= limit:
            break
        chosen.add(m.key)
    return [m for m in with_file if m.key in chosen]


def _reason(error: Exception, source: str) -> str:
    """Why a replay could not be read, without the ``replay PATH:`` prefix (``source``)
    that :meth:`Results.replay` puts on its messages (the page shows the path next to it)."""
    text = str(error)
    prefix = f"{source}: "
    return text.split(prefix, 1)[1] if prefix in text else text


def _load_replays(
    results: Results, matches: Sequence[MatchRow]
) -> tuple[list[dict[str, Any]], Ruleset | None, list[ReplayProblem]]:
    """Compact replays of ``matches``, the ruleset of the first one, and the matches whose
    replay file is missing or unreadable (named on the page, never silently dropped)."""
    out: list[dict[str, Any]] = []
    problems: list[ReplayProblem] = []
    ruleset: Ruleset | None = None
    for m in matches:
        assert m.replay_path is not None
        try:
            replay = results.replay(m)
        except (CapicuaError, OSError) as e:
            reason = _reason(e, results.replay_source(m))
            problems.append(ReplayProblem(m.key, m.replay_path, reason))
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


# -- the page -----------------------------------------------------------------------------------
# The HTML is in templates/report.html.j2 and its partials (templates/report/); the charts
# are capicua.arena.charts'. What is computed here is data: rows, counts, formats.


def _num(x: float) -> str:
    x = round(x, 2)
    return f"{x:g}" if x != int(x) else str(int(x))


def _heat(frac: float) -> str:
    """Background of a crosstable cell: red (0) through pale yellow (0.5) to green (1)."""
    hue = round(120 * min(max(frac, 0.0), 1.0))
    return f"hsl({hue}, 65%, {82 - 10 * abs(frac - 0.5):.0f}%)"


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def _key(x: float | None) -> str:
    """A sort key for ``data-v``: missing values sort last (descending) or first."""
    return "-1e12" if x is None or not math.isfinite(x) else f"{x:.6f}"


def _knob(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _settings_rows(
    info: dict[str, Any], ruleset: Ruleset | None, scheduled: int | None, st: Standings
) -> list[tuple[str, str]]:
    """The rules and settings section, as (label, value) rows."""
    config: dict[str, Any] = info.get("config", {})
    rows: list[tuple[str, str]] = []
    preset = str(config.get("preset", ruleset.name if ruleset else "?"))
    overrides = config.get("overrides") or []
    rows.append(("rules", preset + (f" with {', '.join(overrides)}" if overrides else "")))
    if ruleset is not None:
        # from the ruleset played, overrides included; the preset's own words only when
        # nothing overrides them ("to 100" beside "target=50" told two games)
        rows.append(("game", rules_text(ruleset)))
        if ruleset.summary and not overrides:
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
    return rows


def _rule_knobs(ruleset: Ruleset) -> dict[str, Any]:
    """The rules' knobs for the settings' table, as ``capicua rules show`` lists them: the
    preset's name and summary are words about the preset, not rules (and the summary does
    not follow an override: "to 100" beside target=30), so they are left out."""
    return {k: v for k, v in ruleset.knobs().items() if k not in ("name", "summary")}


def _failure_kinds(st: Standings) -> list[str]:
    """The error table's columns: every known kind, then any other a bot has."""
    kinds = list(FAILURE_KINDS)
    for b in st.bots:
        kinds.extend(k for k in b.errors if k not in kinds)
    return kinds


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
    env = Environment(
        loader=PackageLoader("capicua.arena", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        signed=signed_text, pct=_pct, sortkey=_key, num=_num, heat=_heat, think=think_text,
        knob=_knob, g=_general, bandtext=band_text,
    )  # fmt: skip
    return env


def _general(x: float) -> str:
    return f"{x:g}"


def render_page(template: str, **context: Any) -> str:
    """A page of ``templates/`` (one extending base.html.j2) with ``context`` and the
    layout's style sheet."""
    page = _environment().get_template(template)
    return page.render(css=Markup(asset("report.css")), **context)


def render_fragment(template: str, **context: Any) -> str:
    """A part of a page (``templates/``, extending nothing) with ``context``: what a live
    page swaps in as its data change."""
    return _environment().get_template(template).render(**context)


#: Failures listed one by one in the page (the last ones), and replay problems.
SHOWN_FAILURES = 200
SHOWN_PROBLEMS = 100


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
    replays, ruleset, problems = _load_replays(results, chosen)
    problems += [ReplayProblem(m.key, None, "no replay file was recorded")
                 for m in matches if not m.replay_path]  # fmt: skip
    stored = _tournament(info.get("config", {}))
    scheduled = None if stored is None else len(schedule(stored))
    if ruleset is None and stored is not None:
        ruleset = stored.ruleset
    embedded = {r["k"] for r in replays}
    with_file = sum(1 for m in matches if m.replay_path)
    return render_page(
        "report.html.j2",
        name=str(info.get("name", "tournament")),
        summary=_summary(view, scheduled, bots, len(abandoned)),
        created=str(info.get("created", "?")),
        st=view,
        rows=_settings_rows(info, ruleset, scheduled, view),
        knobs=_rule_knobs(ruleset) if ruleset is not None else None,
        met=any(view.crosstable.values()),
        rating_chart=rating_chart_svg(view.bots),
        timeline=timeline_svg(elo_timeline(matches), view.bots),
        kinds=_failure_kinds(view),
        bots=bots,
        failures=failures[-SHOWN_FAILURES:],
        failure_count=len(failures),
        abandoned=abandoned,
        capped=len(chosen) < with_file,
        embedded=len(embedded),
        with_file=with_file,
        max_replays=max_replays,
        problems=problems,
        shown_problems=SHOWN_PROBLEMS,
        matches=[m for m in matches if m.key in embedded],
        replay_data=Markup(script_json(replays)),  # escaped for a <script> by script_json
        js=Markup(asset("report.js")),
    )


def _tournament(config: dict[str, Any]) -> Tournament | None:
    """The stored tournament (None if the stored configuration is no longer valid)."""
    try:
        return tournament_from_mapping(dict(config), Path("."))
    except (CapicuaError, TypeError, ValueError, KeyError):
        return None


def write_report(directory: Where, out: Path | None = None, max_replays: int = MAX_REPLAYS) -> Path:
    """Write the report of the tournament in ``directory`` (to ``out``, by default
    ``DIR/report.html``; a ladder's in PostgreSQL names its ``out``) atomically; returns
    the path written."""
    if isinstance(directory, Path) and not directory.is_dir():
        what = "not a directory" if directory.exists() else "no such directory"
        raise ReportError(f"{directory}: {what}")
    target = out if out is not None else _default_page(directory)
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
    return write_page(target, page)


def _default_page(directory: Where) -> Path:
    """Where the report of ``directory`` goes when no ``--out`` says: in it."""
    if isinstance(directory, LadderLocation):
        raise ReportError(f"{directory}: a ladder in PostgreSQL: name the page with --out FILE")
    return directory / REPORT_NAME


def write_page(target: Path, page: str) -> Path:
    """Write an HTML page atomically (readers never see half a page); returns ``target``.

    A place that cannot be written (a read-only directory, a file in the way) is one
    :class:`ReportError` line naming the page and the cause; the directories this call
    made for it are removed again, so a refused page leaves nothing behind."""
    created: list[Path] = []
    try:
        created = make_directory(target.parent)
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
        remove_created(created)
        raise ReportError(
            f"cannot write the report to {target}: {e.strerror or e} (write it elsewhere "
            "with --out FILE)"
        ) from None
    return target


# -- ratings over the tournament --------------------------------------------------------------

MAX_TIMELINE_POINTS = 50
"""Points of the rating-over-time chart at most: each is one Elo fit, and a fit reads every
set before it, so a big tournament's report stays quick to write (and its page small)."""


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
