"""The deals a seat cannot tell from the true one, drawn uniformly and directly.

A *world* of one deal is every seat's tiles and the stock in drawing order. Given a deal as
one seat saw it (:class:`DealView`: its own tiles, the events it saw, the seat offered the
opening and, once the hand is over, every seat's tiles left), the deals with which the
engine, given the same decisions, shows that seat exactly the same are those that meet
these facts, each one a rule of the engine:

- a tile another seat played was in its hand then: dealt to it, or drawn by it before;
- a seat that passed, or began to draw, held no tile fitting either open end; the tiles it
  drew before the last of a run fit neither (it drew on), and a tile it played right
  after drawing is the last one it drew (after a run that ends in a pass or a block, none
  of the drawn tiles fits);
- a forced opening (``tile:A-B``, highest double): the tile opened with was dealt to the
  opener and no tile the rules would have opened with first was dealt at all
  (:func:`capicua.engine.opening.forced_order`); before the first tile, the seat offered
  the opening holds the first dealt tile of that order;
- a deal that ended with a REDEAL: the seat that asked for it held at least
  ``redeal_min_doubles`` doubles;
- another seat asked to play now (``deciding``) has a legal play (at least two legal
  actions when the game applies a single one itself); if it has just drawn, the last tile
  it drew fits.

That the hand did not block earlier says nothing more: whoever played next held that tile
then (tiles enter a hand only by drawing, and nothing blocks while the stock can be drawn).

Each hidden tile goes to a *slot*: another seat's dealt tiles, the tiles one of its draw
runs brought in (all but a last one it then played), or the stock not drawn yet; the facts
say which slots a tile may take. :class:`DealSampler` counts the assignments that fill
every slot exactly (dynamic programming over the slots' room left, one tile at a time) and
draws one uniformly, each tile's place weighed by the number of ways to finish; the order
within a seat's tiles, a run and the stock left is then shuffled. So every consistent deal
is equally likely, as the chance nodes deal them, and no world is ever rejected. The caller
plays each world again on the engine, which checks it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from capicua.engine.game import EV_DRAW, EV_PASS, EV_PLAY, Game, ends_after_code, plays_on
from capicua.engine.opening import OpeningMethod, forced_order
from capicua.engine.tiles import iter_bits

#: One event as a seat saw it: (``EV_*`` kind, seat, tile index or -1 when hidden, end), the
#: engine's raw events as :func:`capicua.engine.observation.raw_event_for_seat` masks them.
Seen = tuple[int, int, int, int]


class NoWorld(RuntimeError):
    """No deal fits a seat's view: the view is not one the engine can show."""


@dataclass(frozen=True)
class DealView:
    """One deal as ``seat`` saw it."""

    seat: int
    mine: tuple[int, ...]  # its own tiles of the deal (indices)
    events: tuple[Seen, ...]  # the deal's events as it saw them (a REDEAL ends a deal)
    offered: int  # the seat offered the deal's opening
    method: OpeningMethod  # how the hand was opened (the engine's opening_method)
    redealt_by: int | None = None  # the seat whose REDEAL ended this deal
    final: tuple[int, ...] | None = None  # each seat's tiles (masks) when the hand ended
    # another seat asked to play now: it holds at least ``choices`` legal actions (two
    # where the game applies a single legal action itself)
    deciding: int | None = None
    choices: int = 1


@dataclass
class _Slot:
    """Room for hidden tiles of one seat that entered its hand together: its deal
    (``entry`` -1), or a run of draws (``entry``: the first draw's event; ``positions``:
    the stock positions of its draws but a last one the seat played)."""

    seat: int
    entry: int
    room: int
    positions: list[int] = field(default_factory=list)
    fits: int = 0  # tiles it must be among (a run's last draw that stopped it), 0: any


@dataclass(frozen=True)
class _Item:
    """A hidden tile and the places it may take: slots, and the stock not drawn yet."""

    tile: int
    slots: tuple[int, ...]
    stock: bool


class _Reading:
    """What one deal's events say, read in order: each other seat's voids (the event and
    the tiles that fitted the ends then), its draw runs, its plays from its hand, and the
    stock's drawn positions (a tile where the seat knows it: its own draw, or a draw the
    drawer then played)."""

    def __init__(self, game: Game, view: DealView) -> None:
        self.game, self.me, self.over = game, view.seat, view.final is not None
        self.voids: dict[int, list[tuple[int, int]]] = {s: [] for s in range(game.ruleset.seats)}
        self.runs: list[_Slot] = []
        self.plays: list[tuple[int, int, int]] = []  # (event, seat, tile) of other seats
        self.stock: list[int] = []  # drawn positions: tile index, -1 where hidden
        self.played = 0  # every tile on the table (mask)
        self.first = -1  # the first tile played
        self.ends = (-1, -1)
        events = view.events
        at = 0
        while at < len(events):
            at = self._read(events, at)

    def _read(self, events: Sequence[Seen], at: int) -> int:
        kind, seat, tile, end = events[at]
        if kind == EV_DRAW and seat != self.me:
            return self._run(events, at)
        if kind == EV_PLAY:
            self._play(at, seat, tile, end, from_hand=True)
        elif kind == EV_DRAW:
            self.stock.append(tile)
        elif kind == EV_PASS and seat != self.me:
            self.voids[seat].append((at, self._fitting()))
        return at + 1

    def _fitting(self) -> int:
        left, right = self.ends
        if left < 0:
            raise NoWorld("capicua: a pass or a draw before the first tile")
        suit = self.game.suit
        return suit[left] | suit[right]

    def _play(self, at: int, seat: int, tile: int, end: int, *, from_hand: bool) -> None:
        if self.first < 0:
            self.first = tile
        self.played |= 1 << tile
        if seat != self.me and from_hand:
            self.plays.append((at, seat, tile))
        self.ends = ends_after_code(self.game, *self.ends, tile * 2 + end)

    def _run(self, events: Sequence[Seen], at: int) -> int:
        """Another seat's draws from ``at`` on, and the play of its last draw after them."""
        seat = events[at][1]
        stop = at
        while stop < len(events) and events[stop][0] == EV_DRAW and events[stop][1] == seat:
            stop += 1
        self.voids[seat].append((at, self._fitting()))
        positions = list(range(len(self.stock), len(self.stock) + stop - at))
        self.stock += [-1] * (stop - at)
        if stop < len(events) and events[stop][:2] == (EV_PLAY, seat):
            _, _, tile, end = events[stop]
            self.stock[positions.pop()] = tile  # it played the one tile that fitted
            self._play(stop, seat, tile, end, from_hand=False)
            stop += 1
        elif stop == len(events) and not self.over:  # it is to play now: the last one fits
            # (it came in after every draw before it: the run's void is not its)
            self.runs.append(_Slot(seat, stop, 1, [positions.pop()], self._fitting()))
        self.runs.append(_Slot(seat, at, len(positions), positions))
        return stop

    def void_between(self, seat: int, start: int, stop: int) -> int:
        """Tiles ``seat`` showed it lacked at events ``start <= e < stop``."""
        out = 0
        for at, fitting in self.voids[seat]:
            if start <= at < stop:
                out |= fitting
        return out


#: The most numbers one count may keep (256 MiB): the largest seen, four seats drawing from
#: a 27-tile stock with hands of 7, is about a twentieth of it.
_MAX_CELLS = 2**25


@dataclass(frozen=True)
class _Tally:
    """A sum over the tiles put in some slots, of at least ``minimum``: ``weight`` per tile
    (absent: 0). The seat that asked for a redeal held ``redeal_min_doubles`` doubles; the
    seat asked to play holds its legal actions (a tile's weight: the plays it offers)."""

    slots: frozenset[int]
    weight: dict[int, int]
    minimum: int


class _Count:
    """The assignments of items to slots that fill every slot exactly (the other items go
    to the stock) and meet the ``tally``, counted tile by tile: ``tables[i][room used,
    tally so far]`` is the number of ways to place items ``i..`` from there (the tally
    saturates at its minimum: more is as good)."""

    def __init__(self, rooms: Sequence[int], items: Sequence[_Item], tally: _Tally | None) -> None:
        self.rooms, self.items, self.tally = list(rooms), list(items), tally
        dims = [room + 1 for room in rooms]
        full: tuple[int, ...] = tuple(rooms)
        if tally is not None:
            dims.append(tally.minimum + 1)
            full += (tally.minimum,)
        cells = math.prod(dims) * (len(self.items) + 1)
        if cells > _MAX_CELLS:  # a clear refusal rather than memory running out
            raise NoWorld(f"capicua: too many ways to count a deal ({cells:,} table cells)")
        end = np.zeros(dims)
        end[full] = 1.0
        self.dims = dims
        tables = [end]
        for item in reversed(self.items):
            tables.append(self._before(item, tables[-1]))
        tables.reverse()
        self.tables = tables
        self.count = float(tables[0][(0,) * len(dims)])

    def _gain(self, item: _Item, slot: int) -> int:
        tally = self.tally
        if tally is None or slot not in tally.slots:
            return 0
        return tally.weight.get(item.tile, 0)

    def _before(self, item: _Item, after: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        here = after.copy() if item.stock else np.zeros_like(after)
        every: list[slice | int] = [slice(None)] * after.ndim
        for slot in item.slots:
            low, high = list(every), list(every)
            low[slot], high[slot] = slice(0, -1), slice(1, None)
            gain = self._gain(item, slot)
            if not gain:
                here[tuple(low)] += after[tuple(high)]
                continue
            top = self.dims[-1] - 1
            for have in range(top + 1):
                low[-1], high[-1] = have, min(have + gain, top)
                here[tuple(low)] += after[tuple(high)]
        return here

    def sample(self, rng: random.Random) -> tuple[list[list[int]], list[int]]:
        """A uniform assignment: each slot's tiles, and the stock's."""
        used = [0] * len(self.dims)
        slots: list[list[int]] = [[] for _ in self.rooms]
        stock: list[int] = []
        for i, item in enumerate(self.items):
            after = self.tables[i + 1]
            choices: list[tuple[int, list[int]]] = []
            weights: list[float] = []
            if item.stock:
                choices.append((-1, used))
                weights.append(float(after[tuple(used)]))
            for slot in item.slots:
                if used[slot] < self.rooms[slot]:
                    there = list(used)
                    there[slot] += 1
                    gain = self._gain(item, slot)
                    if gain:
                        there[-1] = min(there[-1] + gain, self.dims[-1] - 1)
                    choices.append((slot, there))
                    weights.append(float(after[tuple(there)]))
            slot, used = _weighted(rng, choices, weights)
            (stock if slot < 0 else slots[slot]).append(item.tile)
        return slots, stock


def _weighted(rng: random.Random, choices: Sequence[Any], weights: Sequence[float]) -> Any:
    total = sum(weights)
    if total <= 0:
        raise NoWorld("capicua: no way to finish a deal (the counts disagree)")
    x = rng.random() * total
    for choice, weight in zip(choices, weights, strict=True):
        x -= weight
        if x < 0 and weight > 0:
            return choice
    return next(c for c, w in zip(reversed(choices), reversed(weights), strict=True) if w > 0)


class _Case:
    """The deals of a view whose forced opening tile is ``forced`` (None: any tile opened,
    or none is forced), counted: slots no tile tells apart merged into one, and the slots
    split into groups no tile links (a finished hand: one group per seat), each counted
    on its own."""

    def __init__(self, sampler: DealSampler, forced: int | None) -> None:
        self.sampler = sampler
        items = sampler.items_for(forced)
        tally = sampler.tally()
        self.members, merged, merged_tally = _merged(sampler.slots, items, tally)
        rooms = [sum(sampler.slots[k].room for k in group) for group in self.members]
        self.parts: list[tuple[list[int], _Count]] = []
        for slots in _linked(len(rooms), merged, merged_tally):
            local = {k: i for i, k in enumerate(slots)}
            here = [
                _Item(item.tile, tuple(local[k] for k in item.slots), item.stock)
                for item in merged
                if item.slots and item.slots[0] in local
            ]
            counted = None
            if merged_tally is not None and merged_tally.slots & set(slots):
                counted = _Tally(
                    frozenset(local[k] for k in merged_tally.slots),
                    merged_tally.weight,
                    merged_tally.minimum,
                )
            self.parts.append((slots, _Count([rooms[k] for k in slots], here, counted)))
        self.stock = [item.tile for item in merged if not item.slots]
        if not all(item.stock for item in merged if not item.slots):
            self.count = 0.0
            return
        # each way to fill a merged group is as many ways to share it among its slots
        splits = [_multinomial([sampler.slots[k].room for k in group]) for group in self.members]
        self.count = float(np.prod([count.count for _, count in self.parts])) * math.prod(splits)

    def sample(self, rng: random.Random) -> tuple[list[list[int]], list[int]]:
        slots = self.sampler.slots
        groups: list[list[int]] = [[] for _ in self.members]
        stock = list(self.stock)
        for part, count in self.parts:
            filled, more = count.sample(rng)
            for k, group in zip(part, filled, strict=True):
                groups[k] = group
            stock += more
        out: list[list[int]] = [[] for _ in slots]
        for members, tiles in zip(self.members, groups, strict=True):
            rng.shuffle(tiles)
            for k in members:
                out[k] = tiles[: slots[k].room]
                tiles = tiles[slots[k].room :]
        return out, stock


def _multinomial(rooms: Sequence[int]) -> int:
    return math.factorial(sum(rooms)) // math.prod(math.factorial(r) for r in rooms)


def _merged(
    slots: Sequence[_Slot], items: Sequence[_Item], tally: _Tally | None
) -> tuple[list[list[int]], list[_Item], _Tally | None]:
    """Slots every item may take or not alike, as one (kept apart where a tally counts):
    their groups, the items over the groups, the tally over the groups."""
    kinds: dict[tuple[int, ...], int] = {}
    members: list[list[int]] = []
    merged_of: list[int] = []
    for k in range(len(slots)):
        takers = tuple(i for i, item in enumerate(items) if k in item.slots)
        key = (-k - 1,) if tally is not None and k in tally.slots else takers
        if key not in kinds:
            kinds[key] = len(members)
            members.append([])
        members[kinds[key]].append(k)
        merged_of.append(kinds[key])
    merged = [
        _Item(item.tile, tuple(sorted({merged_of[k] for k in item.slots})), item.stock)
        for item in items
    ]
    if tally is None:
        return members, merged, None
    over = _Tally(frozenset(merged_of[k] for k in tally.slots), tally.weight, tally.minimum)
    return members, merged, over


def _linked(slots: int, items: Sequence[_Item], tally: _Tally | None) -> list[list[int]]:
    """The slots in groups that no item (nor the tally) links to another group."""
    root = list(range(slots))

    def find(k: int) -> int:
        while root[k] != k:
            root[k] = root[root[k]]
            k = root[k]
        return k

    links = [item.slots for item in items]
    if tally is not None:
        links.append(tuple(sorted(tally.slots)))
    for linked in links:
        for k in linked[1:]:
            root[find(k)] = find(linked[0])
    groups: dict[int, list[int]] = {}
    for k in range(slots):
        groups.setdefault(find(k), []).append(k)
    return list(groups.values())


class DealSampler:
    """Every deal consistent with a :class:`DealView`, counted (:attr:`count`: tile
    assignments; each stands for the same number of dealing orders) and drawn uniformly
    (:meth:`sample`). Raises :class:`NoWorld` when none is."""

    def __init__(self, game: Game, view: DealView) -> None:
        self.game, self.view = game, view
        rules = game.ruleset
        self.reading = _Reading(game, view)
        others = [s for s in range(rules.seats) if s != view.seat]
        self.slots = [_Slot(s, -1, rules.hand_size) for s in others]
        self.slots += [run for run in self.reading.runs if run.room]
        self.cases = [_Case(self, forced) for forced in self._forced_tiles()]
        self.count = sum(case.count for case in self.cases)
        if self.count <= 0:
            raise NoWorld(f"capicua: no deal fits seat {view.seat}'s view")

    @property
    def orders(self) -> float:
        """The consistent deals in dealing order: each assignment counted stands for every
        order of each seat's tiles, of each run's draws but a played last one, and of the
        stock not drawn yet."""
        rules = self.game.ruleset
        drawn = len(self.reading.stock)
        ways = math.factorial(rules.hand_size) ** rules.seats
        ways *= math.prod(math.factorial(s.room) for s in self.slots if s.entry >= 0)
        return float(self.count * ways * math.factorial(rules.stock_size - drawn))

    def _forced_tiles(self) -> list[int | None]:
        """The tiles a forced opening may have been with: the first tile played; before
        it, the first of the seat's own if it was offered the opening, else any tile that
        comes before all of its own (one case each)."""
        view = self.view
        if not view.method.forced_tile:
            return [None]
        if self.reading.first >= 0:
            return [self.reading.first]
        rank = self._rank()
        top = min(rank[t] for t in view.mine)
        if view.offered == view.seat:
            return [next(t for t in view.mine if rank[t] == top)]
        return [t for t in self.game.deck if rank[t] < top]

    def _rank(self) -> dict[int, int]:
        return {t: i for i, t in enumerate(forced_order(self.game, self.view.method))}

    def tally(self) -> _Tally | None:
        """What a count of tiles says: the seat that asked for a redeal held enough
        doubles; the seat deciding now (once the hand is opened) has its legal actions."""
        view, game = self.view, self.game
        who = view.redealt_by
        if who is not None and who != view.seat:
            dealt = frozenset(k for k, s in enumerate(self.slots) if s.seat == who and s.entry < 0)
            doubles = dict.fromkeys(iter_bits(game.doubles), 1)
            return _Tally(dealt, doubles, game.ruleset.redeal_min_doubles)
        who = view.deciding
        if who is None or who == view.seat or self.reading.first < 0:
            return None
        left, right = self.reading.ends
        held = frozenset(k for k, s in enumerate(self.slots) if s.seat == who)
        held_now = [t for t in game.deck if not self.reading.played >> t & 1]
        options = {t: len(plays_on(game, 1 << t, left, right)) for t in held_now}
        return _Tally(held, options, view.choices)

    def items_for(self, forced: int | None) -> list[_Item]:
        """Every hidden tile with the places it may take, given the forced opening tile."""
        view, reading = self.view, self.reading
        before = 0  # tiles a forced opening would have chosen first: none was dealt
        if forced is not None:
            rank = self._rank()
            before = sum(1 << t for t, r in rank.items() if r < rank[forced])
        items = [
            self._item(tile, seat, at, before, stock=False) for at, seat, tile in reading.plays
        ]
        known = reading.played | sum(1 << t for t in view.mine)
        known |= sum(1 << t for t in reading.stock if t >= 0)
        owners = self._owners()
        end = len(view.events)
        for tile in iter_bits(sum(self.game.deck_bits) & ~known):
            if tile == forced:
                items.append(self._item(tile, view.offered, end, before, stock=False, dealt=True))
            elif owners is None:
                items.append(self._item(tile, None, end, before, stock=True))
            elif owners.get(tile) is None:
                items.append(_Item(tile, (), True))  # left in the stock at the end
            else:
                items.append(self._item(tile, owners[tile], end, before, stock=False))
        return items

    def _item(
        self,
        tile: int,
        seat: int | None,
        until: int,
        before: int,
        *,
        stock: bool,
        dealt: bool = False,
    ) -> _Item:
        """``tile`` in ``seat``'s hand (None: any other seat's) up to event ``until``: the
        slots that entered before it and whose seat showed no void it fits since."""
        bit = 1 << tile
        places = []
        for k, slot in enumerate(self.slots):
            if seat is not None and slot.seat != seat or slot.entry > until:
                continue
            if dealt and slot.entry >= 0 or slot.entry < 0 and before & bit:
                continue
            if slot.fits and not slot.fits & bit:
                continue
            if not self.reading.void_between(slot.seat, slot.entry, until) & bit:
                places.append(k)
        return _Item(tile, tuple(places), stock)

    def _owners(self) -> dict[int, int] | None:
        """Who holds each tile at the end of a finished hand (None while it is played)."""
        final = self.view.final
        if final is None:
            return None
        return {t: s for s, mask in enumerate(final) for t in iter_bits(mask)}

    def sample(self, rng: random.Random) -> list[int]:
        """A uniformly drawn deal: the tiles in dealing order (seat 0's, ..., the stock in
        drawing order), as the chance nodes deal them."""
        case: _Case = _weighted(rng, self.cases, [case.count for case in self.cases])
        slots, stock = case.sample(rng)
        hands: dict[int, list[int]] = {self.view.seat: list(self.view.mine)}
        drawn = list(self.reading.stock)
        for slot, tiles in zip(self.slots, slots, strict=True):
            if slot.entry < 0:
                hands[slot.seat] = tiles
                continue
            rng.shuffle(tiles)
            for position, tile in zip(slot.positions, tiles, strict=True):
                drawn[position] = tile
        order: list[int] = []
        for seat in range(self.game.ruleset.seats):
            block = hands[seat]
            rng.shuffle(block)
            order += block
        rng.shuffle(stock)
        return order + drawn + stock
