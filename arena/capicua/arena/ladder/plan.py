"""The ladder as a study of the one run (:class:`capicua.arena.run.TournamentRun`): an
endless plan that reads the run's results and asks the matchmaker for each next set.

Keys are stable for resume: set number ``n`` is ``LNNNNNN`` (a rated duplicate set, one
match per rotation of its entries over the sides, ``LNNNNNN-rR``) or ``VNNNNNN`` (a new
entry's one-hand validation match, ``VNNNNNN-r0``), or, for a set the control state asked
for, ``CNNNNNN`` (a challenge's), ``GNNNNNN`` (a private gauntlet's), ``FNNNNNN`` (a
season's finals); its deal is :func:`~capicua.arena.schedule.deal_seed` of the ladder's seed
and ``n``. A resumed run first hands out what is left of the sets stored in part, then
numbers on from the last stored set, so the same results always give the same next sets.

Before each choice the plan reads the control state again if its change counter moved
(:mod:`.control`), records where a season (or its finals) begins, and publishes a season's
finals table once all its finals sets are stored. A paused ladder hands out nothing: the
run ends once the sets in flight are stored (the same command resumes it after
``capicua ladder resume``); a hosted ladder's runner waits instead, as it does whenever no
set can be played.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..ratings import OnlineSkills
from ..schedule import MatchSpec, deal_seed, duplicate_set
from ..store import FINALS_SET, LADDER, RATED_SET, VALIDATION_SET, MatchRow, Results, ladder_rated
from ..study import Study
from . import control, table
from .config import Ladder, LadderError
from .control import NO_CONTROL, Control, Finals
from .matchmaker import History, Issued, choose, finals_group, unable
from .table import failed_validation

#: What a validation match adds to the ladder's rules: it ends after one hand.
ONE_HAND = "max_hands=1"
#: What a hosted ladder's plan hands out when no set can be played now (too few entries
#: connected, or all at their match limit): its runner waits for a change and asks again.
IDLE: list[MatchSpec] = []


class Roster(Protocol):
    """Who is on a hosted ladder now (:mod:`capicua.arena.ladder.hosted`): the entries that
    joined since it began, and those that may start a set now."""

    def names(self) -> Sequence[str]:
        """Every entry, in the order it joined (the ladder's own entries first)."""

    def available(self) -> Collection[str]:
        """The entries that may start a set now (joined, connected, under their limit)."""

    def built_in(self) -> Collection[str]:
        """The ladder's own entries (anchors): a set is never for them alone."""


def set_key(issued: Issued) -> str:
    return f"{issued.prefix}{issued.seq:06d}"


def specs(ladder: Ladder, issued: Issued) -> list[MatchSpec]:
    """The matches of an issued set."""
    t = ladder.tournament
    seed = deal_seed(t.seed, issued.seq)
    if not issued.validation:
        return duplicate_set(t.ruleset, issued.group, set_key(issued), issued.seq, seed)
    one_hand = (*t.overrides, ONE_HAND)
    rules = duplicate_set(
        t.ruleset, issued.group, set_key(issued), issued.seq, seed, preset=t.preset,
        overrides=one_hand,
    )  # fmt: skip
    return rules[:1]  # one match: it checks the entry plays, it rates nothing


def stored_sets(matches: Sequence[MatchRow]) -> dict[int, tuple[Issued, int]]:
    """Set number -> the set as issued (its entries back in their first order, from any
    stored match's rotation) and how many of its matches are stored."""
    out: dict[int, tuple[Issued, int]] = {}
    for m in matches:
        k = len(m.sides)
        group = tuple(m.sides[(j - m.rotation) % k] for j in range(k))
        prefix = m.set_key[0]
        validation = prefix == VALIDATION_SET
        issued = Issued(m.seq, group, validation, RATED_SET if validation else prefix)
        out[m.seq] = (issued, out.get(m.seq, (issued, 0))[1] + 1)
    return out


@dataclass
class Online:
    """What the matchmaker reads of the results, kept as they grow: the online ratings of
    the rated matches in the order they were committed, and the entries that failed their
    validation. Each :meth:`catch_up` reads only the matches committed since the last, so
    a set costs the same however long the ladder has run (a resumed run reads the store
    once, its first catch-up)."""

    skills: OnlineSkills = field(default_factory=OnlineSkills)
    failed: set[str] = field(default_factory=set)
    mark: int = 0  # the store's mark of the last match read (Results.matches_after)

    def catch_up(self, results: Results) -> None:
        matches, self.mark = results.matches_after(self.mark)
        self.skills.fold(m for m in matches if ladder_rated(m))
        self.failed |= failed_validation(matches)


@dataclass
class LadderPlan:
    """The endless plan (the run calls it with its open results); ``limit``: stop handing
    out sets once the directory holds this many matches (None: until interrupted)."""

    ladder: Ladder
    limit: int | None = None
    # a hosted ladder's entries come and go (None: the file's entries, always there)
    roster: Roster | None = None

    def __call__(self, results: Results) -> Iterator[list[MatchSpec]]:
        self._check_entries(results)
        results.enter([b.name for b in self.ladder.tournament.bots])  # for `show`: who left
        stored = results.matches()
        sets = stored_sets(stored)
        count = len(stored)
        # what an interrupt left half-played, but not with an entry that has left the file
        # (its process is not started) or was removed
        entries = {b.name for b in self.ladder.tournament.bots} - control.load(results).removed
        if self.roster is not None:  # who will be there is not known: begin afresh
            sets = {}
        for issued, held in sets.values():
            if held < len(specs(self.ladder, issued)) and set(issued.group) <= entries:
                count += len(specs(self.ladder, issued)) - held
                yield specs(self.ladder, issued)
        history = History.of(issued for issued, _ in stored_sets(stored).values())
        seq = max(stored_sets(stored), default=-1) + 1
        online = Online()
        controls = Controls()
        while self.limit is None or count < self.limit:
            chosen = self._next(results, online, seq, history, controls)
            if chosen is None and self.roster is not None:
                yield IDLE
                continue
            if chosen is None:
                return
            unit = specs(self.ladder, chosen)
            count += len(unit)
            history.add(chosen)
            seq += 1
            yield unit

    def _next(
        self, results: Results, online: Online, seq: int, issued: History, controls: Controls
    ) -> Issued | None:
        """The matchmaker's choice from the results and the control state as they are now
        (sets in flight are in ``issued``)."""
        t = self.ladder.tournament
        online.catch_up(results)
        excluded = frozenset(online.failed | set(results.disqualified()))
        state = controls.read(results, seq)
        names = [b.name for b in t.bots]
        if self.roster is not None:
            names = list(self.roster.names())
        # (a season's finals wait for an entry that is busy now, never for one gone for good)
        finals, gone = state.finals, unable(state, names, excluded)
        if finals is not None and self._finals_played(results, finals, issued, gone):
            publish(results, finals, issued)
            state = controls.read(results, seq)
        focus = None
        if self.roster is not None:
            excluded |= frozenset(names) - frozenset(self.roster.available())
            focus = frozenset(names) - frozenset(self.roster.built_in()) - excluded
            if not focus:  # only anchors are there: their ratings are fixed, wait
                return None
        mm = self.ladder.matchmaking
        skills = online.skills.skills()
        sides = t.ruleset.num_sides
        return choose(seq, names, issued, skills, sides, mm, t.seed, excluded, focus, control=state)

    def _finals_played(
        self, results: Results, finals: Finals, issued: History, gone: frozenset[str]
    ) -> bool:
        """Whether every set of a season's finals is handed out and stored whole (a set of
        an entry that can no longer play, :func:`~.matchmaker.unable`, is not waited for:
        the run skips the matches of a disqualified entry)."""
        sides = self.ladder.tournament.ruleset.num_sides
        if finals.first_seq is None or finals_group(finals, issued, sides, gone) is not None:
            return False
        stored = finals_stored(results, finals.first_seq)
        return all(
            stored.get(n, 0) == sides or gone.intersection(group)
            for group, n in finals_sets(finals, issued)
        )

    def _check_entries(self, results: Results) -> None:
        """An entry keeps its spec: a changed bot under an old name would mix two bots'
        results in one rating."""
        stored = {b.name: b.spec for b in results.bots()}
        for bot in self.ladder.tournament.bots:
            if stored.get(bot.name, bot.label) != bot.label:
                raise LadderError(
                    f"entries.{bot.name}: it was {stored[bot.name]!r} in {results.where} "
                    f"and is {bot.label!r} now; a new version is a new entry: give it a new name"
                )


def study(ladder: Ladder, limit: int | None = None, roster: Roster | None = None) -> Study:
    """The ladder as a study: its endless plan, no stopping rule (``roster``: a hosted
    ladder's entries, as they come and go)."""
    plan = LadderPlan(ladder, limit, roster)
    return Study(LADDER, ladder.name, ladder.canonical(), ladder.digest(), plan)


@dataclass
class Controls:
    """The control state as the plan reads it: from the store again only when its change
    counter has moved (one indexed lookup per set otherwise)."""

    state: Control = NO_CONTROL

    def read(self, results: Results, seq: int) -> Control:
        if control.mark(results) != self.state.mark:
            # a season begun or ended since: it begins (its finals begin) at this set
            control.record_starts(results, seq)
            self.state = control.load(results)
        return self.state


def finals_sets(finals: Finals, issued: History) -> list[tuple[tuple[str, ...], int]]:
    """The sets of a season's finals handed out so far: (group, set number)."""
    first = finals.first_seq if finals.first_seq is not None else math.inf
    return [(group, n) for group, ns in issued.finals.items() for n in ns if n >= first]


def finals_stored(results: Results, first_seq: int) -> dict[int, int]:
    """Finals set number -> its matches stored, from ``first_seq`` on."""
    rows = results.conn.execute(
        "SELECT seq, count(*) FROM matches WHERE set_key LIKE ? AND seq >= ? GROUP BY seq",
        (f"{FINALS_SET}%", first_seq),
    )
    return {int(seq): int(n) for seq, n in rows}


def publish(results: Results, finals: Finals, issued: History) -> None:
    """Keep a played season's finals table (its finals sets alone), close the season and
    open the next, which begins at the set after the finals' last."""
    numbers = {n for _, n in finals_sets(finals, issued)}
    first, last = finals.first_seq or 0, max(numbers, default=(finals.first_seq or 0) - 1)

    def in_finals(m: MatchRow) -> bool:
        return m.set_key.startswith(FINALS_SET) and first <= m.seq <= last

    played = table.compute(results, results.entered(), select=in_finals)
    control.publish_finals(results, finals.season, table.to_dict(played), last + 1)
