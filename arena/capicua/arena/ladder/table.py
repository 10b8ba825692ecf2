"""The ladder's published table: a pure function of its results (docs/ladder.md, "The
table").

* **The fit.** The arena's own Bradley-Terry fit over duplicate sets with bootstrap 95%
  intervals (:func:`capicua.arena.ratings.elo_ratings`, through
  :func:`capicua.arena.standings.compute_rows`) over every rated set (validation matches
  are not rated). A forfeit (a timeout, a disconnect, a crashed bot, illegal actions) is a
  loss, as the engine ranks it; each is counted by kind.
* **Anchors.** The fit fixes differences only. When built-in bots are entries, the scale is
  shifted so that their mean rating is the mean of :data:`ANCHOR_ELO` (their ratings as
  measured, see there): the gaps between the anchors are fitted, not forced, so their
  ratings show how the ladder's rules spread them. Without anchors the field's mean is 0.
* **Rank bands.** Entries whose intervals overlap are tied: each entry's band runs from 1
  plus the entries wholly above it to the field's size minus those wholly below
  (:func:`capicua.arena.ratings.rank_bands`).
* **Few sets.** Under :data:`MIN_INTERVAL_SETS` rated sets an entry has no interval (the
  bootstrap cannot measure so few, see there) and its rank band is the whole field: every
  other entry's band makes room for it.
* **Provisional.** Fewer than :data:`PROVISIONAL_SETS` rated sets, or an interval wider than
  :data:`PROVISIONAL_WIDTH` Elo.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from .. import ratings, standings
from ..report import sample_indices
from ..store import (
    CHALLENGE_SET,
    GAUNTLET_SET,
    LADDER,
    RATED_SET,
    VALIDATION_SET,
    MatchRow,
    Results,
    Where,
    holds_other,
)
from . import control
from .config import LadderError

#: The built-in bots' ratings on the table's scale (Elo points, random at 0), as measured on
#: 2026-12-06 by a ladder of the four of them alone on iq-1v1 to 50 points (the rules of
#: examples/ladder.toml; in-process, hard at its in-process default iterations):
#: ``capicua ladder run`` to 800 matches (398 rated sets, about 190 per entry), whose fit
#: (field mean 0) gave medium +76 [+52, +99], hard +38 [+15, +62], easy +2 [-21, +26],
#: random -116 [-142, -91]; shifted so that random is 0 and rounded to 10. On other rules
#: the anchors' gaps differ (the table fits them); only their mean is fixed.
ANCHOR_ELO = {"random": 0.0, "easy": 120.0, "medium": 190.0, "hard": 150.0}
PROVISIONAL_SETS = 10
#: Fewer rated sets than this: no interval, a rank band over the whole field. With so few
#: sets the fit's prior (one draw against a 0-rated opponent) outweighs them, and the
#: bootstrap resamples sets that are all alike: an entry with 6 sets, each won against an
#: anchor 700 Elo below the field, was rated +61 [+25, +96]; 3 won against it and 3 split
#: against the field's middle, +12 [-14, +37], narrower than an entry of 36 sets (by
#: ratings.elo_ratings on constructed results). From 10 sets on, the data outweigh the
#: prior tenfold.
MIN_INTERVAL_SETS = PROVISIONAL_SETS
UNKNOWN = (-math.inf, math.inf)
PROVISIONAL_WIDTH = 400.0
#: The terminations a side loses by forfeit, as the store names them.
FORFEITS = ("timeout", "disconnect", "illegal_actions", "forfeit")


@dataclass(frozen=True)
class Entry:
    """One line of the table."""

    name: str
    spec: str
    rating: float | None  # Elo on the anchored scale (None: no rated set yet)
    lo: float | None
    hi: float | None
    band: tuple[int, int] | None  # best and worst rank consistent with the intervals
    sets: int
    matches: int
    wins: int
    draws: int
    losses: int
    forfeits: dict[str, int]  # matches lost by forfeit, by termination
    provisional: bool
    anchor: bool
    # "playing", "left" (not in the file now), "removed" (by an admin), "failed
    # validation", "disqualified"
    status: str


@dataclass(frozen=True)
class LadderTable:
    name: str | None
    preset: str | None
    anchored: tuple[str, ...]  # the anchors that fixed the scale (empty: mean 0)
    rated_sets: int
    matches: int
    entries: tuple[Entry, ...]  # rated best first, then the unrated


def _forfeits(matches: list[MatchRow]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for m in matches:
        if m.forfeited_side is not None and m.termination in FORFEITS:
            kinds = out.setdefault(m.sides[m.forfeited_side], {})
            kinds[m.termination] = kinds.get(m.termination, 0) + 1
    return out


def _shift(lines: tuple[standings.BotStanding, ...]) -> tuple[float, tuple[str, ...]]:
    """What moves the fitted scale (mean 0) onto the anchors', and the anchors used."""
    return anchor_shift({b.name: b.elo for b in lines if b.elo is not None})


def anchor_shift(fitted: Mapping[str, float]) -> tuple[float, tuple[str, ...]]:
    """What moves a fit's ratings (entry -> Elo, mean 0) onto the anchors' scale, and the
    anchors used (in the fit's order)."""
    anchors = tuple(name for name in fitted if name in ANCHOR_ELO)
    if not anchors:
        return 0.0, ()
    mean = sum(fitted[name] for name in anchors) / len(anchors)
    fixed = sum(ANCHOR_ELO[name] for name in anchors) / len(anchors)
    return fixed - mean, anchors


def _interval(b: standings.BotStanding) -> tuple[float, float] | None:
    """The entry's 95% interval, None under :data:`MIN_INTERVAL_SETS` rated sets."""
    return b.elo_ci95 if b.sets >= MIN_INTERVAL_SETS else None


def failed_validation(matches: Sequence[MatchRow]) -> set[str]:
    """Entries whose side forfeited their validation match."""
    return {
        m.sides[0]
        for m in matches
        if m.set_key.startswith(VALIDATION_SET) and m.forfeited_side == 0
    }


def public(match: MatchRow) -> bool:
    """Whether a match is the public table's: every one but private gauntlets'."""
    return not match.set_key.startswith(GAUNTLET_SET)


def _status(
    b: standings.BotStanding, playing: set[str] | None, failed: set[str], removed: frozenset[str]
) -> str:
    if b.disqualified:
        return "disqualified"
    if b.name in removed:
        return "removed"
    if b.name in failed:
        return "failed validation"
    if playing is not None and b.name not in playing:
        return "left"
    return "playing"


def compute(
    results: Results,
    playing: set[str] | None = None,
    *,
    samples: int = ratings.DEFAULT_SAMPLES,
    select: Callable[[MatchRow], bool] = public,
    everything: list[MatchRow] | None = None,
) -> LadderTable:
    """The table of a ladder's results; ``playing``: the entries of its file now (None:
    unknown: results written before the run recorded them); ``select``: the matches it
    counts (a season's, its finals'; by default all but private gauntlets');
    ``everything``: its stored matches, when the caller has read them already (they are
    the expensive part to read)."""
    stored = results.matches() if everything is None else everything
    everything = [m for m in stored if select(m)]
    matches = [m for m in results.rated_of(stored) if select(m)]
    bots = results.bots()
    if select is not public:  # a season's table: the entries that played in it
        met = {name for m in everything for name in m.sides}
        bots = [b for b in bots if b.name in met]
    lines = standings.compute_rows(
        bots=bots, matches=matches, hands=(), failures=results.failures(), samples=samples,
    ).bots  # fmt: skip
    shift, anchored = _shift(lines)
    intervals = {b.name: _interval(b) for b in lines if b.elo_ci95 is not None}
    # an entry without an interval may be anywhere: it is tied with every other
    bands = ratings.rank_bands({n: UNKNOWN if i is None else i for n, i in intervals.items()})
    forfeits = _forfeits(matches)
    failed = failed_validation(stored)
    removed = control.load(results).removed
    entries = []
    for b in lines:
        lo, hi = intervals.get(b.name) or (None, None)
        wide = lo is None or hi is None or hi - lo > PROVISIONAL_WIDTH
        entries.append(
            Entry(
                name=b.name, spec=b.spec,
                rating=None if b.elo is None else b.elo + shift,
                lo=None if lo is None else lo + shift, hi=None if hi is None else hi + shift,
                band=bands.get(b.name), sets=b.sets, matches=b.matches, wins=b.wins,
                draws=b.draws, losses=b.losses, forfeits=forfeits.get(b.name, {}),
                provisional=b.sets < PROVISIONAL_SETS or wide, anchor=b.name in anchored,
                status=_status(b, playing, failed, removed),
            )
        )  # fmt: skip
    info = _info(results)
    return LadderTable(
        name=standings.info_get(info, "name"),
        preset=standings.info_get(info.get("config"), "preset"),
        anchored=anchored,
        rated_sets=len({m.set_key for m in matches}),
        matches=len(everything),
        entries=tuple(entries),
    )


def _info(results: Results) -> dict[str, Any]:
    try:
        return results.tournament()
    except FileNotFoundError:
        return {}


def check_ladder(directory: Where) -> None:
    """Refuse, in one line, a directory (or a PostgreSQL location) that holds no ladder's
    results."""
    what = Results.missing(directory)
    if what is not None:
        raise LadderError(f"{directory}: no ladder results here ({what})")
    results = Results.open_existing(directory)
    try:
        try:
            kind = results.study()
        except FileNotFoundError:
            kind = None
    finally:
        results.close()
    if kind is None:
        raise LadderError(f"{directory}: no ladder results here (nothing recorded yet)")
    if kind != LADDER:
        raise LadderError(f"{holds_other(directory, kind)}, not a ladder's")


@contextmanager
def reading(directory: Where) -> Iterator[Results]:
    """A ladder directory's results, to read (one line of error for anything else)."""
    check_ladder(directory)
    results = Results.open_existing(directory)
    try:
        yield results
    finally:
        results.close()


def load(directory: Where) -> LadderTable:
    """The table of a ladder directory; one line of error for anything else."""
    with reading(directory) as results:
        return compute(results, results.entered())


# -- an entry's history and its head-to-head results -------------------------------------------

#: Points of an entry's rating history at most (each is one fit over the sets before it),
#: and the bootstrap resamples of each point's band: coarser than the table's interval
#: (:data:`capicua.arena.ratings.DEFAULT_SAMPLES`), so that the whole history of a ladder
#: of 100,000 matches is a few seconds' work, done once per refresh of the cached table.
HISTORY_POINTS = 12
HISTORY_SAMPLES = 30


@dataclass(frozen=True)
class Point:
    """An entry's rating after the ladder's first ``sets`` rated sets, on the anchored
    scale, with its 95% band (None under :data:`MIN_INTERVAL_SETS` of its own sets)."""

    sets: int
    rating: float
    lo: float | None
    hi: float | None


def history(
    sets: Sequence[ratings.SetGames],
    points: int = HISTORY_POINTS,
    samples: int = HISTORY_SAMPLES,
) -> dict[str, list[Point]]:
    """Each entry's rating after the first k rated sets, for at most ``points`` values of
    k evenly spread (the last is every set: the table's rating, up to its band's samples)."""
    out: dict[str, list[Point]] = {}
    for i in sample_indices(len(sets), points):
        fit = ratings.elo_ratings(sets[: i + 1], samples=samples)
        shift, _ = anchor_shift({name: e.elo for name, e in fit.items()})
        for name, e in fit.items():
            banded = e.sets >= MIN_INTERVAL_SETS  # as the table: no band under so few
            out.setdefault(name, []).append(
                Point(i + 1, e.elo + shift, e.lo + shift if banded else None,
                      e.hi + shift if banded else None)
            )  # fmt: skip
    return out


@dataclass(frozen=True)
class Meeting:
    """The row entry's results against the column entry over their duplicate sets: the
    mean set score (1: every match placed ahead) with its 95% interval (normal, over the
    sets' scores; None under two sets)."""

    sets: int
    score: float
    lo: float | None
    hi: float | None

    @property
    def verdict(self) -> str:
        """``ahead`` or ``behind`` when the interval excludes an even score, else ``even``."""
        if self.lo is not None and self.lo > 0.5:
            return "ahead"
        if self.hi is not None and self.hi < 0.5:
            return "behind"
        return "even"


def head_to_head(sets: Sequence[ratings.SetGames]) -> dict[str, dict[str, Meeting]]:
    """row -> column -> :class:`Meeting`, both ways, for every pair that met."""
    scores: dict[tuple[str, str], list[float]] = {}
    for st in sets:
        for g in st.games:
            scores.setdefault((g.a, g.b), []).append(g.score)
    out: dict[str, dict[str, Meeting]] = {}
    for (a, b), xs in scores.items():
        forward = _meeting(xs)
        out.setdefault(a, {})[b] = forward
        out.setdefault(b, {})[a] = _meeting([1.0 - x for x in xs])
    return out


def _meeting(xs: Sequence[float]) -> Meeting:
    n = len(xs)
    mean = sum(xs) / n
    if n < 2:
        return Meeting(n, mean, None, None)
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1))
    half = 1.96 * sd / math.sqrt(n)
    return Meeting(n, mean, max(0.0, mean - half), min(1.0, mean + half))


# -- output ------------------------------------------------------------------------------------


def to_dict(table: LadderTable) -> dict[str, Any]:
    """Plain JSON values (Elo rounded to 0.1)."""
    out = asdict(table)

    def r(value: float | None) -> float | None:
        return None if value is None else round(value, 1)

    for entry, e in zip(out["entries"], table.entries, strict=True):
        entry["rating"], entry["lo"], entry["hi"] = map(r, (e.rating, e.lo, e.hi))
        entry["band"] = None if e.band is None else list(e.band)
        entry["rank_band"] = standings.band_text(e.band)
    out["anchored"] = list(table.anchored)
    return out


def from_dict(data: dict[str, Any]) -> LadderTable:
    """A table from :func:`to_dict`'s values (a season's finals table, as kept)."""
    entries = []
    for e in data["entries"]:
        values = {k: v for k, v in e.items() if k != "rank_band"}
        values["band"] = None if e["band"] is None else tuple(e["band"])
        entries.append(Entry(**values))
    return LadderTable(
        name=data["name"], preset=data["preset"], anchored=tuple(data["anchored"]),
        rated_sets=data["rated_sets"], matches=data["matches"], entries=tuple(entries),
    )  # fmt: skip


def in_season(season: control.Season) -> Callable[[MatchRow], bool]:
    """The selection of a season's own sets: those the matchmaker and challenges handed
    out from its first set to its finals (none before a run began it)."""
    first = math.inf if season.first_seq is None else season.first_seq
    end = math.inf if season.finals_seq is None else season.finals_seq

    def select(m: MatchRow) -> bool:
        return m.set_key.startswith((RATED_SET, CHALLENGE_SET)) and first <= m.seq < end

    return select


def to_json(table: LadderTable) -> str:
    return json.dumps(to_dict(table), separators=(",", ":"), ensure_ascii=False)


def render(table: LadderTable) -> Table:
    """The table: rank band, entry, rating with its interval, sets, W-D-L, forfeits,
    flags."""
    head = f"Ladder: {table.name or 'ladder'}" + (f" ({table.preset})" if table.preset else "")
    out = Table(title=head, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in ("rank", "entry", "Elo", "95% CI", "sets", "W-D-L", "forfeits", ""):
        right = column not in ("entry", "")
        out.add_column(column, justify="right" if right else "left", no_wrap=True)
    for e in table.entries:
        flags = [f for f, on in (("anchor", e.anchor), ("provisional", e.provisional)) if on]
        if e.status != "playing":
            flags.append(e.status)
        lost = ", ".join(f"{kind} {n}" for kind, n in sorted(e.forfeits.items())) or "0"
        out.add_row(
            standings.band_text(e.band), Text(e.name, style="bold"),
            "-" if e.rating is None else standings.signed(e.rating),
            "-" if e.lo is None or e.hi is None
            else f"[{standings.signed(e.lo)}, {standings.signed(e.hi)}]",
            str(e.sets), f"{e.wins}-{e.draws}-{e.losses}", lost, " ".join(flags),
        )  # fmt: skip
    scale = (
        f"anchored on {', '.join(table.anchored)}" if table.anchored else "field mean 0 (no anchor)"
    )
    out.caption = (
        f"{table.rated_sets} rated duplicate sets, {table.matches} matches; Elo {scale}; "
        "rank: the ranks its 95% interval allows (overlapping entries are tied); no interval "
        f"under {MIN_INTERVAL_SETS} rated sets (tied with all); forfeits count as losses"
    )
    out.caption_justify = "left"
    return out
