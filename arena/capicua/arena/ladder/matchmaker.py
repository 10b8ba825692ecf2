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
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from capicua.engine.seeds import derive

from ..ratings import Skill
from .config import Matchmaking

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

    @property
    def key(self) -> tuple[str, ...]:
        """The group as a pairing (whatever the order of its sides)."""
        return tuple(sorted(self.group))


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

    @classmethod
    def of(cls, issued: Iterable[Issued]) -> History:
        h = cls()
        for s in issued:
            h.add(s)
        return h

    def add(self, s: Issued) -> None:
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
) -> Issued | None:
    """Set number ``seq``: who meets (None: fewer than ``sides`` entries can play).
    ``entries`` in the ladder's order; ``issued`` every set before, stored or in flight (or
    their :class:`History`, kept by the caller as it issues them); ``excluded``: entries not
    to schedule (failed validation, disqualified); ``focus``: the entries a set may be for
    (rules 1 to 5 choose among them; the others only as opponents), None: all."""
    active = [e for e in entries if e not in excluded]
    if len(active) < sides:
        return None
    h = issued if isinstance(issued, History) else History.of(issued)
    rng = random.Random(derive("capicua-ladder", seed, seq))
    focused = active if focus is None else [e for e in active if e in focus]
    if not focused:
        return None
    for name in focused:
        if name not in h.validated:
            return Issued(seq, _validation_group(name, active, h, sides), validation=True)
    seed_entry = _seed(seq, focused, h, skills, mm, rng)
    return Issued(seq, _group(seq, seed_entry, active, h, skills, sides, mm, rng))


def _validation_group(name: str, active: Sequence[str], h: History, sides: int) -> tuple[str, ...]:
    """The entry and its validation opponents: anchors weakest first, then the entries
    with the most rated sets (then in the ladder's order)."""
    others = [e for e in active if e != name]
    order = sorted(
        others,
        key=lambda e: (
            ANCHORS.index(e) if e in ANCHORS else len(ANCHORS),
            -h.sets.get(e, 0),
            others.index(e),
        ),
    )
    return (name, *order[: sides - 1])


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
) -> tuple[str, ...]:
    """The seed entry and its opponents (see the module)."""
    spacing = _spacing(mm, len(active), sides)

    def free(group: tuple[str, ...]) -> bool:
        key = tuple(sorted(group))
        if h.pair_sets.get(key, 0) < mm.pair_cap:
            return True
        return seq - h.pair_last.get(key, -spacing) >= spacing

    mu = _skill(skills, seed_entry).mu
    others = sorted(
        (e for e in active if e != seed_entry),
        key=lambda e: (abs(_skill(skills, e).mu - mu), active.index(e)),
    )
    near = others[: _window(rng, sides)]
    groups = [
        g for combo in itertools.combinations(near, sides - 1) if free(g := (seed_entry, *combo))
    ]
    if not groups:  # every group in the window is throttled: the nearest free one
        groups = [
            next(
                g
                for combo in itertools.combinations(others, sides - 1)
                if free(g := (seed_entry, *combo))
            )
        ]
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    weights = [_quality(model, skills, g) for g in groups]
    return rng.choices(groups, weights=weights)[0]


def _quality(model: Any, skills: Mapping[str, Skill], group: Sequence[str]) -> float:
    """openskill's predicted draw probability of the group: the closer, the better."""
    teams = [[model.rating(mu=_skill(skills, e).mu, sigma=_skill(skills, e).sigma)] for e in group]
    return max(float(model.predict_draw(teams)), 1e-12)
