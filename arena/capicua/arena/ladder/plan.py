"""The ladder as a study of the one run (:class:`capicua.arena.run.TournamentRun`): an
endless plan that reads the run's results and asks the matchmaker for each next set.

Keys are stable for resume: set number ``n`` is ``LNNNNNN`` (a rated duplicate set, one
match per rotation of its entries over the sides, ``LNNNNNN-rR``) or ``VNNNNNN`` (a new
entry's one-hand validation match, ``VNNNNNN-r0``); its deal is
:func:`~capicua.arena.schedule.deal_seed` of the ladder's seed and ``n``. A resumed run
first hands out what is left of the sets stored in part, then numbers on from the last
stored set, so the same results always give the same next sets.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ..ratings import OnlineSkills
from ..schedule import MatchSpec, deal_seed, duplicate_set
from ..store import LADDER, RATED_SET, VALIDATION_SET, MatchRow, Results, ladder_rated
from ..study import Study
from .config import Ladder, LadderError
from .matchmaker import History, Issued, choose

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
    return f"{VALIDATION_SET if issued.validation else RATED_SET}{issued.seq:06d}"


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
        issued = Issued(m.seq, group, validation=not ladder_rated(m))
        out[m.seq] = (issued, out.get(m.seq, (issued, 0))[1] + 1)
    return out


def failed_validation(matches: Sequence[MatchRow]) -> set[str]:
    """Entries whose side forfeited their validation match."""
    return {m.sides[0] for m in matches if not ladder_rated(m) and m.forfeited_side == 0}


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
        entries = {b.name for b in self.ladder.tournament.bots}
        if self.roster is not None:  # who will be there is not known: begin afresh
            sets = {}
        for issued, held in sets.values():  # what an interrupt left half-played
            # (but not with an entry that has left the file: its process is not started)
            if held < len(specs(self.ladder, issued)) and set(issued.group) <= entries:
                count += len(specs(self.ladder, issued)) - held
                yield specs(self.ladder, issued)
        history = History.of(issued for issued, _ in stored_sets(stored).values())
        seq = max(stored_sets(stored), default=-1) + 1
        online = Online()
        while self.limit is None or count < self.limit:
            chosen = self._next(results, online, seq, history)
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

    def _next(self, results: Results, online: Online, seq: int, issued: History) -> Issued | None:
        """The matchmaker's choice from the results as they are now (sets in flight are
        in ``issued``)."""
        t = self.ladder.tournament
        online.catch_up(results)
        excluded = frozenset(online.failed | set(results.disqualified()))
        names = [b.name for b in t.bots]
        focus = None
        if self.roster is not None:
            names = list(self.roster.names())
            excluded |= frozenset(names) - frozenset(self.roster.available())
            focus = frozenset(names) - frozenset(self.roster.built_in()) - excluded
            if not focus:  # only anchors are there: their ratings are fixed, wait
                return None
        mm = self.ladder.matchmaking
        skills = online.skills.skills()
        sides = t.ruleset.num_sides
        return choose(seq, names, issued, skills, sides, mm, t.seed, excluded, focus)

    def _check_entries(self, results: Results) -> None:
        """An entry keeps its spec: a changed bot under an old name would mix two bots'
        results in one rating."""
        stored = {b.name: b.spec for b in results.bots()}
        for bot in self.ladder.tournament.bots:
            if stored.get(bot.name, bot.label) != bot.label:
                raise LadderError(
                    f"entries.{bot.name}: it was {stored[bot.name]!r} in {results.directory} "
                    f"and is {bot.label!r} now; a new version is a new entry: give it a new name"
                )


def study(ladder: Ladder, limit: int | None = None, roster: Roster | None = None) -> Study:
    """The ladder as a study: its endless plan, no stopping rule (``roster``: a hosted
    ladder's entries, as they come and go)."""
    plan = LadderPlan(ladder, limit, roster)
    return Study(LADDER, ladder.name, ladder.canonical(), ladder.digest(), plan)
