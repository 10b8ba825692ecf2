"""The control actions on a ladder (docs/ladder.md, "Control"): plain functions over its
open results store, each checking its input and refusing it with one line
(:class:`ControlError`), each one transaction that appends to the control log.

Who may take them is the caller's to enforce (``capicua ladder`` trusts whoever can write
the directory; a server checks its tokens first): an entry's **owner** blocks and unblocks
opponents, challenges, runs private gauntlets and reads their results; an **admin** pauses
and resumes the ladder, removes entries, starts and ends seasons.

None of them needs the run's directory lock: SQLite serializes their short transactions with
a running ``ladder run``'s (its busy timeout waits for the other writer; on PostgreSQL the
ladder's transaction lock does the same: :mod:`capicua.arena.store_pg`), and the run reads
what they wrote before its next choice (:mod:`.control`).
"""

from __future__ import annotations

import functools
import json
import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Concatenate, ParamSpec, TypeVar

from .. import ratings, standings
from ..config import study_rules
from ..store import CHALLENGE_SET, GAUNTLET_SET, MatchRow, Results, Where, ladder_rated, now
from . import control, table
from .config import LadderError
from .control import (
    BLOCK,
    CHALLENGE,
    FINALS,
    GAUNTLET,
    OPEN,
    PAUSE,
    REMOVE,
    RESUME,
    SEASON_END,
    SEASON_START,
    UNBLOCK,
    Season,
)
from .matchmaker import History
from .plan import stored_sets

#: Sets one challenge, or one gauntlet per opponent, may ask for.
MAX_REQUEST_SETS = 50
#: Open challenges (and, apart, open gauntlets) an entry may have at once: what it asks for
#: takes at most every other set of the ladder, and its turns are shared with the others'.
MAX_OPEN_REQUESTS = 3
#: Opponents of one gauntlet.
MAX_GAUNTLET_OPPONENTS = 20
#: A season's finals: sets per group (default and bounds), and sets in all.
FINALS_SETS, MAX_FINALS_SETS_PER_GROUP, MAX_FINALS_SETS = 2, 100, 10_000
#: A season's name: free text a line long (a name of digits alone is a season's number).
MAX_NAME = 60


class ControlError(LadderError):
    """A control action refused: one line saying why."""


P = ParamSpec("P")
R = TypeVar("R")


def _atomic(action: Callable[Concatenate[Results, P], R]) -> Callable[Concatenate[Results, P], R]:
    """The action's checks and its write in one transaction (BEGIN IMMEDIATE: writers wait
    for each other), so that two actions at once cannot both pass a check that only one
    may (a cap, a season that is open); a refusal rolls back, leaving nothing."""

    @functools.wraps(action)
    def atomic(results: Results, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with results.transaction():
            return action(results, *args, **kwargs)

    return atomic


@contextmanager
def opened(directory: Where) -> Iterator[Results]:
    """A ladder directory's results, to write control actions in (no lock: see the
    module); one line of error for a directory that holds no ladder."""
    table.check_ladder(directory)
    results = Results(directory)
    try:
        yield results
    finally:
        results.close()


# -- an owner's ----------------------------------------------------------------------------------


@_atomic
def block(results: Results, entry: str, opponent: str) -> bool:
    """``entry`` blocks ``opponent``: no set of any kind groups them from the next choice
    on (but a season's finals). False: it already did."""
    _pair(results, entry, opponent, "block")
    if (entry, opponent) in control.load(results).blocks:
        return False
    _log(results, BLOCK, entry, opponent=opponent)
    return True


@_atomic
def unblock(results: Results, entry: str, opponent: str) -> None:
    """``entry`` lifts its block of ``opponent``."""
    _pair(results, entry, opponent, "unblock")
    if (entry, opponent) not in control.load(results).blocks:
        raise ControlError(f"{entry} does not block {opponent}")
    _log(results, UNBLOCK, entry, opponent=opponent)


@_atomic
def challenge(results: Results, entry: str, opponent: str, sets: int) -> int:
    """``entry`` challenges ``opponent`` to ``sets`` duplicate sets, rated, played before
    the matchmaker's (every other set while challenges are open); the request's id."""
    _pair(results, entry, opponent, "challenge")
    _sets(sets, MAX_REQUEST_SETS)
    state = control.load(results)
    _playing(state, entry, opponent)
    _not_blocked(state, entry, opponent)
    _under_cap(results, state, entry, CHALLENGE)
    return _log(results, CHALLENGE, entry, opponents=[opponent], sets=sets)


@_atomic
def gauntlet(results: Results, entry: str, opponents: Sequence[str], sets: int) -> int:
    """``entry`` plays ``sets`` duplicate sets against each of ``opponents``, unrated and
    out of the public table (:func:`gauntlet_results` reads them); the request's id."""
    if not opponents:
        raise ControlError("a gauntlet needs at least one opponent")
    if len(opponents) > MAX_GAUNTLET_OPPONENTS:
        raise ControlError(
            f"a gauntlet has at most {MAX_GAUNTLET_OPPONENTS} opponents, got {len(opponents)}"
        )
    if len(set(opponents)) != len(opponents):
        raise ControlError(f"an opponent is named twice: {', '.join(opponents)}")
    for opponent in opponents:
        _pair(results, entry, opponent, "play a gauntlet against")
    _sets(sets, MAX_REQUEST_SETS)
    state = control.load(results)
    for opponent in opponents:
        _playing(state, entry, opponent)
        _not_blocked(state, entry, opponent)
    _under_cap(results, state, entry, GAUNTLET)
    return _log(results, GAUNTLET, entry, opponents=list(opponents), sets=sets)


@dataclass(frozen=True)
class GauntletLine:
    """A gauntlet entry's results against one opponent, over all its gauntlets' sets:
    ``elo`` the entry's rating minus the opponent's with its 95% interval (None: no
    counted set yet; no interval under :data:`~.table.MIN_INTERVAL_SETS` sets)."""

    opponent: str
    sets: int
    wins: int
    draws: int
    losses: int
    elo: float | None
    lo: float | None
    hi: float | None


def gauntlet_results(results: Results, entry: str) -> list[GauntletLine]:
    """What ``entry``'s private gauntlets gave, per opponent (in the order first met)."""
    _known(results, entry)
    theirs = [
        m for m in results.matches() if m.set_key.startswith(GAUNTLET_SET) and _asker(m) == entry
    ]
    opponents = list(dict.fromkeys(name for m in theirs for name in m.sides if name != entry))
    return [_line(entry, o, [m for m in theirs if o in m.sides]) for o in opponents]


def _asker(m: MatchRow) -> str:
    """The entry that asked for a request's set: side 0 of its first rotation."""
    return m.sides[-m.rotation % len(m.sides)]


def _line(entry: str, opponent: str, matches: list[MatchRow]) -> GauntletLine:
    rows = standings.compute_rows(bots=(), matches=matches, hands=()).bots
    mine = next(b for b in rows if b.name == entry)
    fit = ratings.elo_ratings(ratings.duplicate_sets(matches)).get(entry)
    elo = lo = hi = None
    if fit is not None:  # two entries, mean 0: the difference is twice the entry's rating
        elo = 2 * fit.elo
        if fit.sets >= table.MIN_INTERVAL_SETS:
            lo, hi = 2 * fit.lo, 2 * fit.hi
    return GauntletLine(opponent, mine.sets, mine.wins, mine.draws, mine.losses, elo, lo, hi)


# -- an admin's ----------------------------------------------------------------------------------


@_atomic
def pause(results: Results) -> bool:
    """No new set is handed out; those in flight finish (a ``ladder run`` then ends).
    False: it was paused already."""
    if control.load(results).paused:
        return False
    _log(results, PAUSE, None)
    return True


@_atomic
def resume(results: Results) -> bool:
    """Sets are handed out again (from the next run: a paused run has ended). False: it
    was not paused."""
    if not control.load(results).paused:
        return False
    _log(results, RESUME, None)
    return True


@_atomic
def remove(results: Results, entry: str) -> None:
    """``entry`` gets no new set (its sets stored in part are not finished either); its
    results stay, in the table as ``removed``. Final: a removed entry does not come back
    (a new version joins as a new entry)."""
    _known(results, entry)
    if entry in control.load(results).removed:
        raise ControlError(f"{entry} is removed already")
    _log(results, REMOVE, entry)


@_atomic
def start_season(results: Results, name: str | None = None) -> Season:
    """Open a season (named by its number unless ``name``): its table counts its own sets,
    from the next set handed out. Refused while another is open or in its finals."""
    current = control.current_season(results)
    if current is not None:
        raise ControlError(f"season {current.name} is {_doing(current)}")
    number = max((s.number for s in control.seasons(results)), default=0) + 1
    name = _season_name(results, name, number)
    results.conn.execute(
        "INSERT INTO ladder_seasons (number, name, state, started) VALUES (?, ?, ?, ?)",
        (number, name, OPEN, now()),
    )
    control.log(results, SEASON_START, None, {"season": number, "name": name})
    return _season(results, number)


@_atomic
def end_season(
    results: Results,
    name: str | None = None,
    finals_sets: int = FINALS_SETS,
    next_name: str | None = None,
) -> Season:
    """End the open season (``name``, if given, must be it): its entries are frozen (the
    field: those playing now, validated, neither removed, disqualified nor failed), and its
    finals, a duplicate round robin of ``finals_sets`` sets per group, are played before
    anything else; their table is then published and kept, and the next season (``next_name``,
    or its number) opens by itself."""
    current = control.current_season(results)
    if current is None:
        raise ControlError("no season is open; capicua ladder season start DIR opens one")
    if name is not None and name not in (current.name, str(current.number)):
        raise ControlError(f"season {name} is not the open one: season {current.name} is")
    if current.state != OPEN:
        raise ControlError(f"season {current.name} is {_doing(current)}")
    _sets(finals_sets, MAX_FINALS_SETS_PER_GROUP)
    if next_name is not None:
        _season_name(results, next_name, current.number + 1)
    field = _field(results)
    sides = _sides(results)
    if len(field) < sides:
        raise ControlError(
            f"the finals need at least {sides} entries that play; {len(field)} do"
            + (f" ({', '.join(field)})" if field else "")
        )
    total = math.comb(len(field), sides) * finals_sets
    if total > MAX_FINALS_SETS:
        raise ControlError(
            f"the finals of {len(field)} entries at {finals_sets} sets per group would be "
            f"{total} sets; at most {MAX_FINALS_SETS}: ask for fewer sets per group"
        )
    results.conn.execute(
        "UPDATE ladder_seasons SET state = ?, finals_sets = ?, field_json = ? WHERE number = ?",
        (FINALS, finals_sets, json.dumps(list(field)), current.number),
    )
    args = {"season": current.number, "sets": finals_sets, "next": next_name}
    control.log(results, SEASON_END, None, args)
    return _season(results, current.number)


def find_season(results: Results, name: str) -> Season:
    """A season by its name or its number."""
    for s in control.seasons(results):
        if name in (s.name, str(s.number)):
            return s
    known = ", ".join(s.name for s in control.seasons(results)) or "none yet"
    raise ControlError(f"no season {name!r} (seasons: {known})")


# -- checks --------------------------------------------------------------------------------------


def _log(results: Results, action: str, entry: str | None, **args: object) -> int:
    return control.log(results, action, entry, args)


def _known(results: Results, entry: str) -> None:
    names = [b.name for b in results.bots()]
    if entry not in names:
        raise ControlError(f"no entry {entry!r} in {results.where}")


def _pair(results: Results, entry: str, opponent: str, what: str) -> None:
    _known(results, entry)
    _known(results, opponent)
    if entry == opponent:
        raise ControlError(f"an entry cannot {what} itself ({entry})")


def _sets(sets: int, most: int) -> None:
    if not 1 <= sets <= most:
        raise ControlError(f"sets: expected an integer from 1 to {most}, got {sets}")


def _playing(state: control.Control, *entries: str) -> None:
    for entry in entries:
        if entry in state.removed:
            raise ControlError(f"{entry} is removed from the ladder")


def _not_blocked(state: control.Control, entry: str, opponent: str) -> None:
    if state.blocked(entry, opponent):
        a, b = (entry, opponent) if (entry, opponent) in state.blocks else (opponent, entry)
        raise ControlError(f"{a} blocks {b}: they do not meet")


def _under_cap(results: Results, state: control.Control, entry: str, action: str) -> None:
    """At most :data:`MAX_OPEN_REQUESTS` of ``entry``'s requests of a kind open at once
    (counted on the stored sets: sets in flight still count as open)."""
    kind = CHALLENGE_SET if action == CHALLENGE else GAUNTLET_SET
    history = History.of(s for s, _ in stored_sets(results.matches()).values())
    lanes = control.open_lanes(state.requests, history.requested)
    open_ = {lane.request for lane in lanes if lane.kind == kind and lane.entry == entry}
    if len(open_) >= MAX_OPEN_REQUESTS:
        raise ControlError(
            f"{entry} has {len(open_)} open {action}s, the most it may have; ask again "
            "when one is played"
        )


def _doing(season: Season) -> str:
    return "open (capicua ladder season end DIR ends it)" if season.state == OPEN else (
        "playing its finals (the next season opens once they are played)"
    )  # fmt: skip


def _season_name(results: Results, name: str | None, number: int) -> str:
    if name is None:
        return str(number)
    if not name.strip() or len(name) > MAX_NAME or not name.isprintable():
        raise ControlError(f"a season's name is one line of 1 to {MAX_NAME} characters")
    if re.fullmatch(r"\d+", name) and name != str(number):
        raise ControlError(f"a season named by digits is season number {name}: choose a word")
    if any(name in (s.name, str(s.number)) for s in control.seasons(results)):
        raise ControlError(f"there is a season {name} already")
    return name


def _season(results: Results, number: int) -> Season:
    return next(s for s in control.seasons(results) if s.number == number)


def _field(results: Results) -> tuple[str, ...]:
    """The entries a season's finals are among: those of the latest run's file (all, in
    results that never recorded it), validated (or rated), and neither removed,
    disqualified nor failed."""
    matches = results.matches()
    entered = results.entered()
    validated = {s.group[0] for s, _ in stored_sets(matches).values() if s.validation}
    # a server's own entries (its anchors) play no validation match: their rated sets say
    # they play
    validated |= {name for m in matches if ladder_rated(m) for name in m.sides}
    gone = (
        control.load(results).removed
        | set(results.disqualified())
        | table.failed_validation(matches)
    )
    return tuple(
        b.name
        for b in results.bots()
        if (entered is None or b.name in entered) and b.name in validated and b.name not in gone
    )


def _sides(results: Results) -> int:
    config = results.tournament()["config"]
    return study_rules(config["preset"], config["overrides"], "", ControlError).num_sides
