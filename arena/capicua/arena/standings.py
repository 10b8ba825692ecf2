"""Standings of a tournament directory: per-bot results, ratings, a crosstable, errors.

:func:`compute` reads the results (:class:`capicua.arena.store.Results`) and returns a
:class:`Standings`; :func:`compute_rows` does the same from plain rows (a pure function).
The render functions take a :class:`Standings` and return ``rich`` tables, for the
``capicua arena standings`` command, the live display of ``capicua arena run`` and anything
else; :func:`to_json` gives the one-line JSON. The method is in docs/arena.md, section
"Standings and ratings", and in :mod:`capicua.arena.ratings`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from capicua.common.errors import CapicuaError

from . import ratings
from .store import BotRow, FailureRow, HandRow, MatchRow, Results, ThinkRow, Where


class StandingsError(CapicuaError):
    """A directory without arena results."""


@dataclass(frozen=True)
class OpenSkill:
    mu: float
    sigma: float
    ordinal: float


@dataclass(frozen=True)
class BotStanding:
    """One bot's line. Counts are over counted matches (every termination but
    ``cancelled``); a bot holding two sides of a match (a copy) counts the match once."""

    name: str
    spec: str
    matches: int
    wins: int  # the bot held the winning side
    draws: int  # no winner
    losses: int
    match_score: float | None  # (wins + draws / 2) / matches
    hands: int  # hands of its matches
    hands_decided: int  # of those, hands with a winner
    hand_wins: int  # decided hands won by the bot's side(s)
    hand_win_rate: float | None  # hand_wins / hands_decided
    points: int  # points gained by the bot's side(s), hand by hand
    points_per_hand: float | None
    forfeits: int  # matches lost by forfeit (timeout, disconnect, illegal actions, forfeit)
    elo: float | None  # None: never met another bot in a counted match
    elo_ci95: tuple[float, float] | None
    sets: int  # duplicate sets rated
    openskill: OpenSkill | None
    errors: dict[str, int]  # failures by kind
    disqualified: bool
    disqualified_reason: str | None
    # its decisions' server-measured think time over every stored match (0 / None: no
    # decision was measured, e.g. results from before think times were recorded)
    think_decisions: int = 0
    think_mean_ms: float | None = None
    think_max_ms: float | None = None
    #: the ranks its Elo interval allows (best, worst): bots whose intervals overlap are
    #: tied (:func:`capicua.arena.ratings.rank_bands`); None without an Elo
    rank_band: tuple[int, int] | None = None

    @property
    def errors_total(self) -> int:
        return sum(self.errors.values())


@dataclass(frozen=True)
class Cell:
    """Row bot against column bot: mean set score, mean pairwise match score, counts."""

    score: float
    match_score: float
    sets: int
    matches: int


@dataclass(frozen=True)
class Standings:
    tournament: str | None
    preset: str | None
    sides: int  # sides per match (the largest seen; 0 without matches)
    matches_total: int  # stored (finished) matches, cancelled ones included
    cancelled: int
    abandoned: int  # matches cut short by an interrupt (played again on resume)
    terminations: dict[str, int]
    bots: tuple[BotStanding, ...]  # by Elo, best first
    crosstable: dict[str, dict[str, Cell]] = field(default_factory=dict)

    def bot(self, name: str) -> BotStanding:
        for b in self.bots:
            if b.name == name:
                return b
        raise KeyError(name)


# -- computing -------------------------------------------------------------------------------


def compute(results: Results, *, samples: int = ratings.DEFAULT_SAMPLES) -> Standings:
    """The standings of a results database (``samples``: Elo bootstrap replicates)."""
    try:
        info = results.tournament()
    except FileNotFoundError:
        info = None
    return compute_rows(
        bots=results.bots(),
        matches=results.rated_matches(),  # a ladder's as its table: rated sets only
        hands=results.hands(),
        failures=results.failures(),
        think=results.think(),
        abandoned=len(results.abandoned()),
        tournament=info,
        samples=samples,
    )


def _think_totals(rows: Iterable[ThinkRow]) -> dict[str, dict[str, Any]]:
    """bot -> its BotStanding think fields, summed over its seats of every match."""
    acc: dict[str, list[int]] = {}
    for r in rows:
        n, total, most = acc.setdefault(r.bot, [0, 0, 0])
        acc[r.bot] = [n + r.decisions, total + r.total_us, max(most, r.max_us)]
    return {
        bot: {
            "think_decisions": n,
            "think_mean_ms": total / n / 1000 if n else None,
            "think_max_ms": most / 1000 if n else None,
        }
        for bot, (n, total, most) in acc.items()
    }


def _rate(num: float, den: float) -> float | None:
    return num / den if den else None


def compute_rows(
    *,
    bots: Sequence[BotRow],
    matches: Sequence[MatchRow],
    hands: Iterable[HandRow],
    failures: Iterable[FailureRow] = (),
    think: Iterable[ThinkRow] = (),
    abandoned: int = 0,
    tournament: dict[str, Any] | None = None,
    samples: int = ratings.DEFAULT_SAMPLES,
) -> Standings:
    """The standings from plain rows (``matches`` in schedule order, as the store gives
    them: openskill is sequential). Bots named only by matches or failures are included."""
    names: list[str] = [b.name for b in bots]
    rows = {b.name: b for b in bots}
    fails = list(failures)
    for m in matches:
        names.extend(n for n in m.sides if n not in names)
    names.extend(f.bot for f in fails if f.bot not in names)

    stat: dict[str, dict[str, int]] = {
        n: dict.fromkeys(
            ("matches", "wins", "draws", "losses", "hands", "decided", "hand_wins", "points",
             "forfeits"),
            0,
        )
        for n in names
    }  # fmt: skip
    by_match: dict[str, list[HandRow]] = {}
    for h in hands:
        by_match.setdefault(h.match_key, []).append(h)
    terminations: dict[str, int] = {}
    cancelled = 0
    for m in matches:
        terminations[m.termination] = terminations.get(m.termination, 0) + 1
        if not ratings.counted(m):
            cancelled += 1
            continue
        match_hands = by_match.get(m.key, [])
        for name in dict.fromkeys(m.sides):
            own = {side for side, n in enumerate(m.sides) if n == name}
            s = stat[name]
            s["matches"] += 1
            if m.winner_side is None:
                s["draws"] += 1
            elif m.winner_side in own:
                s["wins"] += 1
            else:
                s["losses"] += 1
            if m.forfeited_side in own:
                s["forfeits"] += 1
            for h in match_hands:
                s["hands"] += 1
                if h.winner_side is not None:
                    s["decided"] += 1
                    s["hand_wins"] += h.winner_side in own
                s["points"] += sum(p for side, p in enumerate(h.points) if side in own)

    sets = ratings.duplicate_sets(matches)
    elo = ratings.elo_ratings(sets, samples=samples)
    skill = ratings.openskill_ratings(matches)
    thinking = _think_totals(think)
    errors: dict[str, dict[str, int]] = {n: {} for n in names}
    for f in fails:
        errors[f.bot][f.kind] = errors[f.bot].get(f.kind, 0) + 1

    lines = []
    for n in names:
        s = stat[n]
        row = rows.get(n)
        e = elo.get(n)
        sk = skill.get(n)
        lines.append(
            BotStanding(
                name=n,
                spec=row.spec if row else "",
                matches=s["matches"],
                wins=s["wins"],
                draws=s["draws"],
                losses=s["losses"],
                match_score=_rate(s["wins"] + 0.5 * s["draws"], s["matches"]),
                hands=s["hands"],
                hands_decided=s["decided"],
                hand_wins=s["hand_wins"],
                hand_win_rate=_rate(s["hand_wins"], s["decided"]),
                points=s["points"],
                points_per_hand=_rate(s["points"], s["hands"]),
                forfeits=s["forfeits"],
                elo=e.elo if e else None,
                elo_ci95=(e.lo, e.hi) if e else None,
                sets=e.sets if e else 0,
                openskill=OpenSkill(sk.mu, sk.sigma, sk.ordinal) if sk else None,
                errors=dict(sorted(errors[n].items())),
                disqualified=row.disqualified if row else False,
                disqualified_reason=row.disqualified_reason if row else None,
                **thinking.get(n, {}),
            )
        )
    bands = ratings.rank_bands({n: (e.lo, e.hi) for n, e in elo.items()})
    lines = [dataclasses.replace(b, rank_band=bands.get(b.name)) for b in lines]
    lines.sort(
        key=lambda b: (
            b.elo is None,
            -(b.elo or 0.0),
            -(b.match_score or 0.0),
            b.name,
        )
    )
    return Standings(
        tournament=info_get(tournament, "name"),
        preset=info_get((tournament or {}).get("config"), "preset"),
        sides=max((len(m.sides) for m in matches), default=0),
        matches_total=len(matches),
        cancelled=cancelled,
        abandoned=abandoned,
        terminations=dict(sorted(terminations.items())),
        bots=tuple(lines),
        crosstable=crosstable(sets, [b.name for b in lines]),
    )


def info_get(data: Any, key: str) -> str | None:
    value = data.get(key) if isinstance(data, dict) else None
    return value if isinstance(value, str) else None


def crosstable(
    sets: Iterable[ratings.SetGames], names: Sequence[str]
) -> dict[str, dict[str, Cell]]:
    """Row bot against column bot for every pair that met (both directions)."""
    acc: dict[tuple[str, str], list[float]] = {}
    for st in sets:
        for g in st.games:
            for row, col, score in ((g.a, g.b, g.score), (g.b, g.a, 1.0 - g.score)):
                a = acc.setdefault((row, col), [0.0, 0.0, 0.0, 0.0])
                a[0] += score
                a[1] += score * g.matches
                a[2] += 1
                a[3] += g.matches
    table: dict[str, dict[str, Cell]] = {}
    for row in names:
        cells = {
            col: Cell(v[0] / v[2], v[1] / v[3], int(v[2]), int(v[3]))
            for col in names
            if (v := acc.get((row, col))) is not None
        }
        table[row] = cells
    return table


# -- JSON ------------------------------------------------------------------------------------


def _r(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def to_dict(s: Standings) -> dict[str, Any]:
    """Plain JSON values (rounded: Elo to 0.1, rates to 4 decimals)."""
    return {
        "tournament": s.tournament,
        "preset": s.preset,
        "sides": s.sides,
        "matches_total": s.matches_total,
        "cancelled": s.cancelled,
        "abandoned": s.abandoned,
        "terminations": s.terminations,
        "bots": [
            {
                "name": b.name,
                "spec": b.spec,
                "matches": b.matches,
                "wins": b.wins,
                "draws": b.draws,
                "losses": b.losses,
                "match_score": _r(b.match_score, 4),
                "hands": b.hands,
                "hands_decided": b.hands_decided,
                "hand_wins": b.hand_wins,
                "hand_win_rate": _r(b.hand_win_rate, 4),
                "points": b.points,
                "points_per_hand": _r(b.points_per_hand, 4),
                "forfeits": b.forfeits,
                "elo": _r(b.elo, 1),
                "elo_ci95": None if b.elo_ci95 is None else [round(v, 1) for v in b.elo_ci95],
                "rank_band": None if b.rank_band is None else list(b.rank_band),
                "sets": b.sets,
                "openskill": None
                if b.openskill is None
                else {
                    "mu": round(b.openskill.mu, 4),
                    "sigma": round(b.openskill.sigma, 4),
                    "ordinal": round(b.openskill.ordinal, 4),
                },
                "errors": b.errors,
                "errors_total": b.errors_total,
                "disqualified": b.disqualified,
                "disqualified_reason": b.disqualified_reason,
                "think": {
                    "decisions": b.think_decisions,
                    "mean_ms": _r(b.think_mean_ms, 3),
                    "max_ms": _r(b.think_max_ms, 3),
                },
            }
            for b in s.bots
        ],
        "crosstable": {
            row: {
                col: {
                    "score": round(c.score, 4),
                    "match_score": round(c.match_score, 4),
                    "sets": c.sets,
                    "matches": c.matches,
                }
                for col, c in cells.items()
            }
            for row, cells in s.crosstable.items()
        },
    }


def to_json(s: Standings, **head: Any) -> str:
    """One compact line of JSON (see :func:`to_dict`), ``head``'s keys first (what a run
    adds about itself: ``complete``, ``matches_planned``)."""
    return json.dumps(head | to_dict(s), separators=(",", ":"), ensure_ascii=False)


# -- rendering -------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def signed(value: float) -> str:
    """``+12``, ``-7``, ``0`` (never ``-0``)."""
    n = round(value)
    return f"{n:+d}" if n else "0"


def think_text(ms: float | None) -> str:
    """A think time in ms, to 3 significant digits (a random bot answers in well under 1)."""
    if ms is None:
        return "-"
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def band_text(band: tuple[int, int] | None) -> str:
    """``#3-#5`` (tied from 3rd to 5th), ``#1``; ``-`` without a rating."""
    if band is None:
        return "-"
    best, worst = band
    return f"#{best}" if best == worst else f"#{best}-#{worst}"


def _elo_text(b: BotStanding) -> str:
    return "-" if b.elo is None else signed(b.elo)


def _ci_text(b: BotStanding) -> str:
    if b.elo is None or b.elo_ci95 is None:
        return "-"
    lo, hi = b.elo_ci95
    return f"[{signed(lo)}, {signed(hi)}]"


def standings_table(s: Standings, *, title: str | None = None) -> Table:
    """The standings, best Elo first: matches, W/D/L, match score, hands, points, Elo with
    its 95% interval, openskill (with more than two sides), errors, disqualification."""
    multi = s.sides > 2
    head = title or f"Standings: {s.tournament or 'tournament'}"
    if s.preset:
        head += f" ({s.preset})"
    # short headers and no wrapping: the table fits an 80-column terminal
    table = Table(title=head, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("rank", justify="right", no_wrap=True)
    table.add_column("bot", no_wrap=True)
    table.add_column("Elo", justify="right", no_wrap=True)
    table.add_column("95% CI", justify="right", no_wrap=True)
    if multi:
        table.add_column("openskill", justify="right", no_wrap=True)
    table.add_column("M", justify="right", no_wrap=True)
    table.add_column("W-D-L", justify="right", no_wrap=True)
    table.add_column("score", justify="right", no_wrap=True)
    table.add_column("hands", justify="right", no_wrap=True)
    table.add_column("pts/h", justify="right", no_wrap=True)
    timed = any(b.think_decisions for b in s.bots)
    if timed:
        table.add_column("ms", justify="right", no_wrap=True)
    table.add_column("err", justify="right", no_wrap=True)
    for i, b in enumerate(s.bots, 1):
        rank = band_text(b.rank_band) if b.rank_band is not None else f"({i})"
        cells: list[str | Text] = [rank, Text(b.name, style="bold"), _elo_text(b), _ci_text(b)]
        if multi:
            cells.append(
                "-" if b.openskill is None
                else f"{b.openskill.mu:.1f}±{b.openskill.sigma:.1f}"
            )  # fmt: skip
        errors = Text(str(b.errors_total), style="red" if b.errors_total else "")
        if b.disqualified:
            errors.append(" DQ", style="bold red")
        cells += [
            str(b.matches),
            f"{b.wins}-{b.draws}-{b.losses}",
            _pct(b.match_score),
            _pct(b.hand_win_rate),
            "-" if b.points_per_hand is None else f"{b.points_per_hand:.2f}",
        ]
        if timed:
            cells.append(think_text(b.think_mean_ms))
        cells.append(errors)
        table.add_row(*cells)
    notes = [f"{s.matches_total} matches"]
    if s.cancelled:
        notes.append(f"{s.cancelled} cancelled (not counted)")
    if s.abandoned:
        notes.append(f"{s.abandoned} abandoned")
    table.caption = (
        "; ".join(notes) + "; Elo over duplicate sets, mean 0; rank: the ranks its 95% interval"
        " allows (overlapping bots are tied); M: matches; score: match"
        " points share; hands: share of decided hands won; pts/h: points per hand"
        + ("; ms: mean think time per decision, server-measured" if timed else "")
    )
    table.caption_justify = "left"
    return table


def crosstable_table(s: Standings) -> Table:
    """Row bot's mean set score against each column bot, with the number of sets."""
    table = Table(title="Crosstable (row's set score vs column; sets)", title_justify="left")
    table.add_column("")
    names = [b.name for b in s.bots]
    for n in names:
        table.add_column(n, justify="right")
    for row in names:
        cells: list[str | Text] = [Text(row, style="bold")]
        for col in names:
            c = s.crosstable.get(row, {}).get(col)
            if row == col or c is None:
                cells.append(Text("·", style="dim"))
                continue
            style = "green" if c.score > 0.5 else "red" if c.score < 0.5 else ""
            cells.append(Text(f"{c.score:.3f} ({c.sets})", style=style))
        table.add_row(*cells)
    return table


def errors_table(s: Standings) -> Table | None:
    """Failures by bot and kind, with disqualifications; None when there were none."""
    faulty = [b for b in s.bots if b.errors or b.disqualified]
    if not faulty:
        return None
    kinds = sorted({k for b in faulty for k in b.errors})
    table = Table(title="Errors", title_justify="left")
    table.add_column("bot")
    for k in kinds:
        table.add_column(k, justify="right")
    table.add_column("disqualified")
    for b in faulty:
        table.add_row(
            b.name,
            *[str(b.errors.get(k, 0)) for k in kinds],
            Text(b.disqualified_reason or "yes", style="red") if b.disqualified else "",
        )
    return table


def render(s: Standings) -> list[Table]:
    """Every table: standings, crosstable (when any pair met), errors (when any)."""
    out = [standings_table(s)]
    if any(s.crosstable.values()):
        out.append(crosstable_table(s))
    errors = errors_table(s)
    if errors is not None:
        out.append(errors)
    return out


def render_live(s: Standings) -> RenderableType:
    """The compact view for a live display: the standings table only (errors are in it)."""
    return standings_table(s, title="Standings")


def print_standings(s: Standings, console: Console | None = None) -> None:
    """Print the tables on ``console`` (default: stdout; off a terminal, where rich would
    assume 80 columns and cut columns short, 160 columns: a log has room)."""
    if console is None:
        console = Console()
        if not console.is_terminal:
            console.width = 160
    console.print(Group(*render(s)))


# -- a directory -----------------------------------------------------------------------------


def load(directory: Where, *, samples: int = ratings.DEFAULT_SAMPLES) -> Standings:
    """The standings of a tournament directory (or of a ladder in PostgreSQL);
    :class:`StandingsError` without results."""
    what = Results.missing(directory)
    if what is not None:
        raise StandingsError(f"{directory}: no arena results here ({what})")
    results = Results.open_existing(directory)
    try:
        return compute(results, samples=samples)
    finally:
        results.close()
