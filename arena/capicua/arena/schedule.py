"""The pairing generator: a pure function from a tournament to its list of matches.

Every match is **duplicate**: one deal seed is played once per distinct rotation of the
sides over the seats, so every side holds every side's cards once and no bot profits from
the deal. The matches of one seed form a *set*, the unit for statistics.

* Two sides (one against one, or two teams): each pairing of bots plays 2 matches per set,
  A as side 0 then B as side 0. On a team preset a bot partners **its own copy**: both seats
  of a side belong to the same bot (one Play stream plays both).
* k individual seats (k > 2): each group of k different bots (every combination of the
  field; with a gauntlet, the candidate with every (k-1)-combination of the others) plays k
  matches per set, rotated one seat each time. A field smaller than k is padded with
  copies (each copy a separate side).

Sets are ordered by game first, then pairing, so a tournament cut short is still balanced.
Each match has a stable ``key`` (``sNNNNN-rR``): resuming filters out the keys already in the
results (:class:`capicua.arena.run.TournamentRun`), so nothing is replayed or duplicated.
"""

from __future__ import annotations

import itertools
from collections.abc import Container, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import combinations

from capicua.engine.rules import Ruleset
from capicua.engine.seeds import derive

from .config import Tournament


@dataclass(frozen=True)
class MatchSpec:
    """One scheduled match."""

    key: str
    set_key: str
    seq: int  # the set's number, from 0
    rotation: int
    seed: int
    seats: tuple[str, ...]  # bot name per seat
    sides: tuple[str, ...]  # bot name per side
    # The rules of this match when they are not the tournament's (an experiment's arms).
    preset: str | None = None
    overrides: tuple[str, ...] = ()

    @property
    def bots(self) -> frozenset[str]:
        return frozenset(self.sides)


def deal_seed(seed: int, game: int) -> int:
    """The deal seed of game ``game``: the same for every pairing, so all of them play the
    same deals (a 63-bit value derived from the tournament seed)."""
    return derive("capicua-arena", seed, game) >> 1


def bot_seed(match_seed: int, seat: int) -> int:
    """The seed of the in-process bot at ``seat`` of a match dealt from ``match_seed``: its
    own randomness, reproducible per seat and the same whatever the rules."""
    return match_seed ^ (seat + 1)


def groups(tournament: Tournament) -> list[tuple[str, ...]]:
    """The bot groups that meet, one per set of each game, sides in their first order."""
    names = [b.name for b in tournament.bots]
    k = tournament.ruleset.num_sides
    if tournament.format == "gauntlet":
        assert tournament.candidate is not None
        others = [n for n in names if n != tournament.candidate]
        return [
            (tournament.candidate, *_pad(list(g), others, k - 1)) for g in _combos(others, k - 1)
        ]
    return [_pad(list(g), names, k) for g in _combos(names, k)]


def _combos(names: Sequence[str], k: int) -> Iterable[tuple[str, ...]]:
    if len(names) >= k:
        return combinations(names, k)
    return [tuple(names)]


def _pad(group: list[str], field: Sequence[str], k: int) -> tuple[str, ...]:
    """Fill a group smaller than k with copies, cycling through ``field``."""
    i = 0
    while len(group) < k:
        group.append(field[i % len(field)])
        i += 1
    return tuple(group)


def seats_for(ruleset: Ruleset, sides: Sequence[str]) -> tuple[str, ...]:
    """The bot of every seat when ``sides[s]`` holds side s."""
    return tuple(sides[ruleset.side_of(seat)] for seat in range(ruleset.seats))


def rotations(group: Sequence[str]) -> list[tuple[str, ...]]:
    """Each distinct rotation of the sides: k for k sides (2 for two)."""
    k = len(group)
    return [tuple(group[(i + r) % k] for i in range(k)) for r in range(k)]


def schedule(tournament: Tournament) -> list[MatchSpec]:
    """Every match of the tournament, in playing order."""
    out: list[MatchSpec] = []
    seq = 0
    gs = groups(tournament)
    for game in range(tournament.games):
        seed = deal_seed(tournament.seed, game)
        for group in gs:
            out.extend(duplicate_set(tournament.ruleset, group, f"s{seq:05d}", seq, seed))
            seq += 1
    return out


def duplicate_set(
    ruleset: Ruleset,
    group: Sequence[str],
    set_key: str,
    seq: int,
    seed: int,
    *,
    overrides: tuple[str, ...] = (),
    preset: str | None = None,
) -> list[MatchSpec]:
    """The matches of one duplicate set: deal ``seed`` once per rotation of ``group`` (its
    bots, side 0 first) over the sides, keyed ``SET_KEY-rR``; ``preset``/``overrides``: its
    own rules when they are not the run's."""
    return [
        MatchSpec(
            key=f"{set_key}-r{r}",
            set_key=set_key,
            seq=seq,
            rotation=r,
            seed=seed,
            seats=seats_for(ruleset, sides),
            sides=sides,
            preset=preset,
            overrides=overrides,
        )
        for r, sides in enumerate(rotations(group))
    ]


def sets(matches: Iterable[MatchSpec]) -> Iterator[list[MatchSpec]]:
    """``matches`` by duplicate set, as they come (a plan hands out each set's matches
    together, in order)."""
    for _, unit in itertools.groupby(matches, key=lambda spec: spec.set_key):
        yield list(unit)


def remaining(matches: Iterable[MatchSpec], finished: Container[str]) -> list[MatchSpec]:
    """The matches still to play, given the keys already recorded."""
    return [m for m in matches if m.key not in finished]
