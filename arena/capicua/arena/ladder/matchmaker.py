"""The matchmaker: which entries meet in the ladder's next duplicate set.

A pure function (:func:`choose`) of the entries, the sets issued so far (stored or in
flight, or their :class:`History`), the entries' online ratings (openskill over the rated
matches in the order they were stored, :class:`capicua.arena.ratings.OnlineSkills`) and
the ladder's seed: the same history always gives the same choice (its randomness is a
``random.Random`` seeded by the ladder's seed and the set's number). The rules, in the order
they are applied (docs/ladder.md, "The matchmaker"):

1. **Validation.** An entry that has not played yet first plays one one-hand match against
   the anchors (the built-in bots, weakest first) or, without them, the entries with the
   most sets. It is not rated; an entry whose side forfeits it (a timeout, a disconnect,
   illegal actions) is not scheduled again.
2. **Placement.** An entry with fewer than ``placement`` rated sets is chosen next (fewest
   sets first), so a new entry is placed within its first sets.
3. **No starvation.** An entry idle for :func:`starvation_bound` sets (counted in ladder
   sets, not in time) is chosen next, the longest idle first.
4. **Top entries keep a rate.** Each of the ``top`` best entries by ordinal that has been
   idle for ``top_every`` sets is chosen next.
5. **Otherwise a mix** (Halite's): half the time the entry with the widest rating
   uncertainty (openskill sigma), 30% an entry drawn with weight 1/(sets+1) (fewest games),
   20% the longest idle.

Its opponents are drawn from a window of the entries nearest to it in mu (of a heavy-tailed
size, as Halite's), each possible group weighted by its predicted match quality (openskill's
``predict_draw``). A group (the entries meeting in a set) plays at most ``pair_cap`` sets at
full rate; past that it waits ``throttle`` ladder sets between two of its sets, or fewer
when the entry has fewer groups than that (so that some group is always free, and no entry
starves). An entry never meets itself: a ladder has at least as many entries as sides.

The ladder's control state (:class:`~capicua.arena.ladder.control.Control`, passed in:
docs/ladder.md, "Control") comes first: a paused ladder hands out nothing; a season's
finals (a round robin of its frozen field) are handed out before anything else; removed
entries are not scheduled; no set groups two entries one of which blocks the other (an
entry its blocks leave without a group waits, and the rules above run among the others);
open challenges and gauntlets take every other set, in turns.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from capicua.engine.seeds import derive

from ..ratings import Skill
from ..store import (
    CHALLENGE_SET,
    FINALS_SET,
    GAUNTLET_SET,
    RATED_KINDS,
    RATED_SET,
    VALIDATION_SET,
)
from .config import Matchmaking
from .control import NO_CONTROL, Control, Finals, Lane, LaneKey, open_lanes

#: The built-in bots, weakest first: a new entry's validation opponents, and the table's
#: anchors (:mod:`capicua.arena.ladder.table`).
ANCHORS = ("random", "easy", "medium", "hard")
#: Groups considered per choice at most (a window of many entries on a 4-sided preset).
MAX_GROUPS = 200


@dataclass(frozen=True)
class Issued:
    """A set handed out: its number, its entries (side 0 first) and whether it is a
    validation match."""

    seq: int
    group: tuple[str, ...]
    validation: bool = False
    #: what asked for it, when not a validation: the matchmaker (RATED_SET), a challenge,
    #: a gauntlet, a season's finals (its set key's prefix, :mod:`capicua.arena.store`)
    kind: str = RATED_SET

    @property
    def key(self) -> tuple[str, ...]:
        """The group as a pairing (whatever the order of its sides)."""
        return tuple(sorted(self.group))

    @property
    def prefix(self) -> str:
        """Its set key's prefix."""
        return VALIDATION_SET if self.validation else self.kind

    @property
    def rated(self) -> bool:
        return self.prefix in RATED_KINDS

    @property
    def lane(self) -> LaneKey:
        """The request lane a challenge's or a gauntlet's set belongs to."""
        return (self.kind, (self.group[0], self.group[1]))


@dataclass
class History:
    """What the rules read of the sets issued so far, kept as sets are issued
    (:meth:`add`, in any order): a choice then costs the same however many sets came
    before."""

    sets: dict[str, int] = field(default_factory=dict)  # entry -> rated sets
    # entry -> number of its last set (validation included)
    last: dict[str, int] = field(default_factory=dict)
    validated: set[str] = field(default_factory=set)  # entries with a validation match issued
    pair_sets: dict[tuple[str, ...], int] = field(default_factory=dict)  # group -> rated sets
    # group -> number of its last rated set
    pair_last: dict[tuple[str, ...], int] = field(default_factory=dict)
    # challenges' and gauntlets' sets: per lane, how many and the number of the last
    requested: dict[LaneKey, int] = field(default_factory=dict)
    requested_last: dict[LaneKey, int] = field(default_factory=dict)
    last_request: int = -1  # the number of the last challenge or gauntlet set
    finals: dict[tuple[str, ...], list[int]] = field(default_factory=dict)  # group -> set numbers

    @classmethod
    def of(cls, issued: Iterable[Issued]) -> History:
        h = cls()
        for s in issued:
            h.add(s)
        return h

    def add(self, s: Issued) -> None:
        if s.kind in (CHALLENGE_SET, GAUNTLET_SET) and not s.validation:
            self.requested[s.lane] = self.requested.get(s.lane, 0) + 1
            self.requested_last[s.lane] = max(s.seq, self.requested_last.get(s.lane, s.seq))
            self.last_request = max(self.last_request, s.seq)
            if s.kind == GAUNTLET_SET:
                return  # private and unrated: the public ladder's counts never see it
        if s.kind == FINALS_SET and not s.validation:
            self.finals.setdefault(s.key, []).append(s.seq)
        for name in set(s.group):
            self.last[name] = max(s.seq, self.last.get(name, s.seq))
        if s.validation:
            self.validated.add(s.group[0])
            return
        for name in set(s.group):
            self.sets[name] = self.sets.get(name, 0) + 1
        self.pair_sets[s.key] = self.pair_sets.get(s.key, 0) + 1
        self.pair_last[s.key] = max(s.seq, self.pair_last.get(s.key, s.seq))


def starvation_bound(entries: int) -> int:
    """Sets an entry may wait before rule 3 chooses it: twice the entries."""
    return 2 * entries


def choose(
    seq: int,
    entries: Sequence[str],
    issued: Sequence[Issued] | History,
    skills: Mapping[str, Skill],
    sides: int,
    mm: Matchmaking,
    seed: int,
    excluded: frozenset[str] = frozenset(),
    focus: frozenset[str] | None = None,
    control: Control = NO_CONTROL,
) -> Issued | None:
    """Set number ``seq``: who meets (None: no set can be handed out now: the ladder is
    paused, or fewer than ``sides`` entries can play). ``entries`` in the ladder's order;
    ``issued`` every set before, stored or in flight (or their :class:`History`, kept by
    the caller as it issues them); ``excluded``: entries not to schedule (failed
    validation, disqualified); ``focus``: the entries a set may be for (rules 1 to 5
    choose among them; the others only as opponents), None: all; ``control``: the
    ladder's control state (docs/ladder.md, "Control"), applied before the rules of the
    module: a pause hands out nothing, a season's finals come first, removed entries are
    not scheduled, no set groups two entries one of which blocks the other, and challenges
    and gauntlets take every other set while any is open."""
    if control.paused:
        return None
    h = issued if isinstance(issued, History) else History.of(issued)
    gone = excluded | control.removed
    if control.finals is not None:
        group = finals_group(control.finals, h, sides, unable(control, entries, excluded))
        if group is not None:
            return Issued(seq, group, kind=FINALS_SET)
    active = [e for e in entries if e not in gone]
    if len(active) < sides:
        return None
    focused = active if focus is None else [e for e in active if e in focus]
    if not focused:
        return None
    for name in focused:
        if name not in h.validated:
            opponents = _validation_group(name, active, h, sides, control)
            if opponents is not None:
                return Issued(seq, opponents, validation=True)
    # an entry that cannot be validated (its blocks leave it no opponents) waits; those
    # outside the focus are never validated (a hosted ladder's anchors), only met
    ready = [e for e in active if e in h.validated or (focus is not None and e not in focus)]
    lanes = _playable_lanes(ready, h, skills, sides, control)
    if lanes and h.last_request != seq - 1:  # every other set at most: the ladder goes on
        return _request(seq, lanes, h)
    rng = random.Random(derive("capicua-ladder", seed, seq))
    meeting = [e for e in ready if _has_group(e, ready, sides, control)]
    candidates = [e for e in meeting if e in focused]
    if not candidates:
        return _request(seq, lanes, h) if lanes else None
    seed_entry = _seed(seq, candidates, h, skills, mm, rng)
    return Issued(seq, _group(seq, seed_entry, meeting, h, skills, sides, mm, rng, control))


def _validation_group(
    name: str, active: Sequence[str], h: History, sides: int, control: Control
) -> tuple[str, ...] | None:
    """The entry and its validation opponents: anchors weakest first, then the entries
    with the most rated sets (then in the ladder's order), none it is kept apart from by a
    block; None if its blocks leave too few."""
    others = [e for e in active if e != name]
    order = sorted(
        others,
        key=lambda e: (
            ANCHORS.index(e) if e in ANCHORS else len(ANCHORS),
            -h.sets.get(e, 0),
            others.index(e),
        ),
    )
    return _first_allowed((name,), order, sides, control)


def _first_allowed(
    start: tuple[str, ...], order: Sequence[str], sides: int, control: Control
) -> tuple[str, ...] | None:
    """``start`` and the first combination of ``order`` (in its order of preference) that
    makes a group of ``sides`` the blocks allow; None if none does. (Not greedy: the first
    choice may be the one that rules the others out.)"""
    return next(_allowed(start, order, sides, control), None)


def _has_group(name: str, ready: Sequence[str], sides: int, control: Control) -> bool:
    """Whether some group of ``ready`` entries with ``name`` is allowed by the blocks."""
    if not control.blocks:
        return len(ready) >= sides
    others = [e for e in ready if e != name]
    return next(_allowed((name,), others, sides, control), None) is not None


def unable(control: Control, entries: Sequence[str], excluded: frozenset[str]) -> frozenset[str]:
    """The entries of a season's finals field that can play no finals set now: excluded
    (failed, disqualified) or removed since the field was frozen, or no longer in the
    ladder (a run starts no process for them)."""
    field = control.finals.field if control.finals is not None else ()
    return (excluded | control.removed) & set(field) | frozenset(set(field) - set(entries))


def finals_group(
    finals: Finals, h: History, sides: int, gone: frozenset[str]
) -> tuple[str, ...] | None:
    """The next set of a season's finals (None: every one is handed out): the round robin
    of its field, round by round, each group of the field ``finals.sets`` times; groups
    with an entry of ``gone`` (:func:`unable`) are not played. Counted per group from the
    finals' first set, so sets lost to an interrupt are handed out again."""
    first = finals.first_seq if finals.first_seq is not None else math.inf
    for round_ in range(finals.sets):
        for combo in itertools.combinations(finals.field, sides):
            if gone.intersection(combo):
                continue
            played = sum(1 for n in h.finals.get(tuple(sorted(combo)), ()) if n >= first)
            if played <= round_:
                return combo
    return None


def _playable_lanes(
    ready: Sequence[str], h: History, skills: Mapping[str, Skill], sides: int, control: Control
) -> list[tuple[Lane, tuple[str, ...]]]:
    """The open requests' lanes that can be played now, each with its group: both entries
    ready and not kept apart by a block (a lane waits while they are), and, on a preset of
    more sides, the entries nearest the asking one in rating to fill the rest."""
    out = []
    for lane in open_lanes(control.requests, h.requested):
        if lane.entry not in ready or lane.opponent not in ready:
            continue
        group = _filled((lane.entry, lane.opponent), ready, skills, sides, control)
        if group is not None:
            out.append((lane, group))
    return out


def _filled(
    pair: tuple[str, str],
    ready: Sequence[str],
    skills: Mapping[str, Skill],
    sides: int,
    control: Control,
) -> tuple[str, ...] | None:
    """``pair`` and the ready entries nearest its first in mu (then in the ladder's order)
    for the other sides, each allowed by the blocks; None when they cannot be found."""
    mu = _skill(skills, pair[0]).mu
    nearest = sorted(
        (e for e in ready if e not in pair),
        key=lambda e: (abs(_skill(skills, e).mu - mu), ready.index(e)),
    )
    return _first_allowed(pair, nearest, sides, control)


def _request(seq: int, lanes: Sequence[tuple[Lane, tuple[str, ...]]], h: History) -> Issued:
    """The set of the lane waiting longest (never played first, then the oldest request):
    open requests take turns."""
    lane, group = min(
        lanes, key=lambda lg: (h.requested_last.get(lg[0].key, -1), lg[0].request, lg[1])
    )
    return Issued(seq, group, kind=lane.kind)


def _idle(seq: int, name: str, h: History) -> int:
    return seq - h.last.get(name, -1)


def _seed(
    seq: int,
    active: Sequence[str],
    h: History,
    skills: Mapping[str, Skill],
    mm: Matchmaking,
    rng: random.Random,
) -> str:
    """The entry the next set is for (rules 2 to 5 of the module)."""
    placing = [e for e in active if h.sets.get(e, 0) < mm.placement]
    if placing:
        return min(placing, key=lambda e: (h.sets.get(e, 0), active.index(e)))

    def longest_idle(names: Sequence[str]) -> str:
        return max(names, key=lambda e: (_idle(seq, e, h), -active.index(e)))

    starving = [e for e in active if _idle(seq, e, h) >= starvation_bound(len(active))]
    if starving:
        return longest_idle(starving)
    ranked = sorted(active, key=lambda e: (-_ordinal(skills, e), active.index(e)))
    waiting_top = [e for e in ranked[: mm.top] if _idle(seq, e, h) >= mm.top_every]
    if waiting_top:
        return longest_idle(waiting_top)
    roll = rng.random()
    if roll < 0.5:
        return max(active, key=lambda e: (_sigma(skills, e), -h.sets.get(e, 0), -active.index(e)))
    if roll < 0.8:
        return rng.choices(active, weights=[1 / (h.sets.get(e, 0) + 1) for e in active])[0]
    return longest_idle(active)


def _default() -> Skill:
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    return Skill(model.mu, model.sigma, model.mu - 3 * model.sigma, 0)


def _skill(skills: Mapping[str, Skill], name: str) -> Skill:
    return skills.get(name) or _default()


def _sigma(skills: Mapping[str, Skill], name: str) -> float:
    return _skill(skills, name).sigma


def _ordinal(skills: Mapping[str, Skill], name: str) -> float:
    return _skill(skills, name).ordinal


def _spacing(mm: Matchmaking, active: int, sides: int) -> int:
    """Sets a capped group waits: ``throttle``, but no more than the groups an entry
    belongs to (so that one of them is always free)."""
    return max(1, min(mm.throttle, math.comb(active - 1, sides - 1)))


def _window(rng: random.Random, sides: int) -> int:
    """How many nearest entries the opponents are drawn from: heavy-tailed (Halite's
    ``int(5 / (0.01 + rand) ** 0.65)``), and small enough that its groups stay few."""
    size = max(sides - 1, int(5 / (0.01 + rng.random()) ** 0.65))
    while size > sides - 1 and math.comb(size, sides - 1) > MAX_GROUPS:
        size -= 1
    return size


def _group(
    seq: int,
    seed_entry: str,
    active: Sequence[str],
    h: History,
    skills: Mapping[str, Skill],
    sides: int,
    mm: Matchmaking,
    rng: random.Random,
    control: Control,
) -> tuple[str, ...]:
    """The seed entry and its opponents (see the module), none kept apart by a block."""
    spacing = _spacing(mm, len(active), sides)

    def free(group: tuple[str, ...]) -> bool:
        key = tuple(sorted(group))
        if h.pair_sets.get(key, 0) < mm.pair_cap:
            return True
        return seq - h.pair_last.get(key, -spacing) >= spacing

    mu = _skill(skills, seed_entry).mu
    others = sorted(
        (e for e in active if e != seed_entry and not control.blocked(seed_entry, e)),
        key=lambda e: (abs(_skill(skills, e).mu - mu), active.index(e)),
    )
    near = others[: _window(rng, sides)]
    groups = [
        g
        for combo in itertools.combinations(near, sides - 1)
        if control.allows(g := (seed_entry, *combo)) and free(g)
    ]
    if not groups:  # every group in the window is throttled or blocked: the nearest free one
        nearest: tuple[str, ...] | None = next(
            (g for g in _allowed((seed_entry,), others, sides, control) if free(g)), None
        )
        # (blocks may leave only throttled groups: then the one that waited longest)
        groups = [
            nearest
            if nearest is not None
            else min(
                _allowed((seed_entry,), others, sides, control),
                key=lambda g: h.pair_last.get(tuple(sorted(g)), -1),
            )
        ]
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    weights = [_quality(model, skills, g) for g in groups]
    return rng.choices(groups, weights=weights)[0]


def _allowed(
    start: tuple[str, ...], others: Sequence[str], sides: int, control: Control
) -> Iterator[tuple[str, ...]]:
    """The groups of ``sides`` entries, ``start`` and some of ``others``, that the blocks
    allow, in the order of ``others`` (nearest, or preferred, first)."""
    if not control.allows(start):
        return
    others = [e for e in others if not any(control.blocked(e, s) for s in start)]
    for combo in itertools.combinations(others, sides - len(start)):
        if control.allows(combo):
            yield (*start, *combo)


def _quality(model: Any, skills: Mapping[str, Skill], group: Sequence[str]) -> float:
    """openskill's predicted draw probability of the group: the closer, the better."""
    teams = [[model.rating(mu=_skill(skills, e).mu, sigma=_skill(skills, e).sigma)] for e in group]
    return max(float(model.predict_draw(teams)), 1e-12)
