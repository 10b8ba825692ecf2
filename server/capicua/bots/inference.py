"""What a seat can infer about the hidden tiles, and sampling worlds consistent with it.

Everything here reads only an :class:`~capicua.engine.observation.Observation`: the seat's
own tiles, the public events of the current hand, tile counts, the stock count, the
ruleset and the results of finished hands. Nothing reads another seat's tiles.

**Hard facts** (:func:`infer`). The tiles a seat cannot see (the *pool*: the set minus its
own tiles and the tiles played) are split between the other seats' hands and the stock.
Each other seat's hidden tiles are tracked as *groups* of tiles that entered its hand at
the same moment, each with a mask of tiles it cannot contain:

* a **pass** on ends ``a``/``b`` means the seat held no tile showing ``a`` or ``b``: every
  tile it still holds was held then (a tile only leaves a hand by being played), so each of
  its groups forbids both suits;
* a seat that **draws** could not play the ends at that moment (its groups forbid both
  suits, as for a pass); the tiles it drew are new groups that forbid those suits too,
  except the last one when it then played (that tile is the one it played);
* with ``highest_double`` openings (or a ``tile:A-B`` opening that fell back to it) the
  forced first tile tells that no higher double (no double at all, and no higher tile, if
  the opener played a non-double) was dealt to anyone: those tiles are forbidden in every
  seat's dealt group (with a drawing stock, a later draw may still bring them in);
* tile counts: each group holds exactly its count, and the rest of the pool is the stock.

When a seat plays a tile that could have come from several of its groups (possible only
after draws), those groups are merged into one whose mask is what they have in common: a
sound over-approximation, so the true deal always stays possible.

**Sampling** (:class:`WorldSampler`). A world gives every hidden tile a place. Tiles are
placed most-constrained first, each into a group (or the stock) that allows it, chosen with
probability proportional to the room left, which is exactly uniform without constraints
and close to uniform with them; a dead end restarts, and after repeated dead ends a
backtracking search finds a consistent world if one exists. Soft evidence (how likely each
world makes the moves the other seats chose) is weighed by the caller: see
:func:`play_likelihoods`.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache
from typing import Final

from capicua.bots import draws
from capicua.bots.policy import play_odds
from capicua.common.pickling import by_constructor
from capicua.engine.game import Game
from capicua.engine.observation import Observation
from capicua.engine.opening import OpeningMethod, opening_method
from capicua.engine.records import (
    Draw,
    HandResult,
    Pass,
    Play,
    RedealChoice,
    ends_after,
)
from capicua.engine.rules import (
    Ruleset,
    Stock,
)
from capicua.engine.tiles import highest_tile_key, iter_bits


@lru_cache(maxsize=64)
def game_for(ruleset: Ruleset) -> Game:
    """A shared :class:`Game` (tables) for ``ruleset``."""
    return Game(ruleset)


@lru_cache(maxsize=64)
def one_hand_game(ruleset: Ruleset) -> Game:
    """``ruleset`` with ``max_hands = 1``: a position built from it at hand 0 ends the match
    when its hand ends (target reached, or the hand limit), so a rollout never deals."""
    return Game(dataclasses.replace(ruleset, max_hands=1))


class Opening(Enum):
    """How the first tile of the current hand was decided."""

    ANY = "any"  # the opener chose any tile
    HIGHEST = "highest"  # highest dealt double (or highest tile), forced
    TILE = "tile"  # the named tile if dealt, else as HIGHEST


def opening_rule(ruleset: Ruleset, previous: HandResult | None) -> Opening:
    """What the opening of a hand tells about the deal, given the previous hand's result
    (None for the first hand): the engine's :func:`~capicua.engine.opening.opening_method`,
    seen from a seat."""
    method = opening_method(ruleset, None if previous is None else (previous.end, previous.winner))
    if method is OpeningMethod.TILE:
        return Opening.TILE
    if method is OpeningMethod.HIGHEST:
        return Opening.HIGHEST
    return Opening.ANY


def not_dealt_mask(game: Game, rule: Opening, first: int) -> int:
    """Tiles that cannot have been dealt to any seat, given that tile index ``first`` was
    the hand's (forced) opening tile under ``rule``."""
    table = game.table
    deck = sum(game.deck_bits)
    if rule is Opening.ANY:
        return 0
    out = 0
    if rule is Opening.TILE:
        wanted = game.opening_index
        if first == wanted:
            return 0
        out |= 1 << wanted  # it would have opened
    tile = table.tiles[first]
    doubles = game.doubles & deck
    if tile.is_double:
        # canonical order lists doubles by pip, so higher doubles have higher indices
        out |= doubles & ~((1 << (first + 1)) - 1)
    else:
        out |= doubles
        key = highest_tile_key(tile)
        for i in iter_bits(deck):
            if highest_tile_key(table.tiles[i]) > key:
                out |= 1 << i
    return out & deck


@dataclass(slots=True)
class Group:
    """Hidden tiles of one seat that entered its hand together (the deal, or one draw),
    with the tiles they cannot be."""

    seat: int
    count: int
    forbidden: int
    dealt: bool = False


@dataclass(frozen=True, slots=True)
class SeatPlay:
    """A play by another seat from its own choice (not a forced draw-and-play), with what
    the seat's hand could have been at that moment: its current hidden tiles plus
    ``later`` (tiles it played after this one)."""

    seat: int
    tile: int
    code: int  # action code (tile * 2 + end)
    left: int  # open ends before the play (-1 for the opening)
    right: int
    later: int  # mask of the tiles this seat played after this play
    forced_open: bool  # the opening tile was forced by the rules


@dataclass(frozen=True, slots=True)
class Knowledge:
    """The hard facts about the hidden tiles at one decision."""

    game: Game
    me: int
    mine: int  # my tiles (mask)
    played: int  # tiles in the chain (mask)
    pool: int  # tiles I cannot see: the other hands and the stock
    groups: tuple[Group, ...]  # the other seats' hidden tiles
    stock_count: int
    counts: tuple[int, ...]  # every seat's tile count
    ends: tuple[int, int] | None
    last: int | None  # the last seat that played
    plays: tuple[SeatPlay, ...]  # the other seats' chosen plays, in order
    needs: tuple[int, ...] = ()  # masks: each has a tile in some other seat's hand
    relaxed: bool = False  # the facts were inconsistent and had to be loosened

    def seat_forbidden(self, seat: int) -> int:
        """Tiles ``seat`` certainly does not hold now (tiles every group of it forbids)."""
        mask = -1
        for g in self.groups:
            if g.seat == seat and g.count:
                mask &= g.forbidden
        return 0 if mask == -1 else mask

    def may_hold(self, seat: int) -> int:
        """Tiles ``seat`` may hold now (mine exactly for my own seat)."""
        return self.mine if seat == self.me else self.pool & ~self.seat_forbidden(seat)

    def void_suits(self, seat: int) -> int:
        """Bitmask over pip numbers that ``seat`` certainly cannot play now."""
        held = self.may_hold(seat)
        suit = self.game.suit
        out = 0
        for p in range(self.game.width):
            if not held & suit[p]:
                out |= 1 << p
        return out


def infer(obs: Observation) -> Knowledge:
    """The hard facts of ``obs`` (the seat's own view)."""
    if obs.seat is None:
        raise ValueError("infer: needs a seat's observation, not a spectator's")
    me = obs.seat
    r = obs.ruleset
    game = game_for(r)
    table = game.table
    suit = game.suit
    index = table.index
    mine = table.mask_of(obs.tiles)
    previous = obs.results[obs.hand - 1] if 0 < obs.hand <= len(obs.results) else None
    rule = opening_rule(r, previous)

    def fresh() -> list[list[Group]]:
        return [[Group(s, r.hand_size, 0, dealt=True)] if s != me else [] for s in range(r.seats)]

    groups = fresh()
    played = 0
    left = right = -1
    last: int | None = None
    plays: list[tuple[int, int, int, int, int, bool]] = []  # seat, tile, code, l, r, forced
    draw_seat = -1  # another seat drawing right now
    drawn = 0
    draw_void = 0

    def void(seat: int, mask: int) -> None:
        for g in groups[seat]:
            g.forbidden |= mask

    def flush(played_drawn: bool, passed: bool = False) -> None:
        """End a run of another seat's draws: every drawn tile but a played last one
        joins its hand, unable to fit the ends it was drawn on."""
        nonlocal draw_seat, drawn
        if draw_seat >= 0:
            keep = drawn - 1 if played_drawn else drawn
            for _ in range(keep):
                groups[draw_seat].append(Group(draw_seat, 1, draw_void))
            if not played_drawn and not passed and drawn:
                # no play or pass followed (only a view that ends here): the last draw
                # may have been playable, leave it unconstrained
                g = groups[draw_seat][-1]
                g.forbidden = 0
        draw_seat = -1
        drawn = 0

    def take(seat: int, bit: int) -> None:
        """Remove one tile (``bit``) from ``seat``'s groups."""
        gs = groups[seat]
        cands = [g for g in gs if g.count and not g.forbidden & bit]
        if not cands:
            cands = [g for g in gs if g.count]
        if not cands:
            return
        if len(cands) == 1:
            cands[0].count -= 1
            return
        merged = Group(seat, sum(g.count for g in cands) - 1, -1, any(g.dealt for g in cands))
        for g in cands:
            merged.forbidden &= g.forbidden
        groups[seat] = [g for g in gs if g not in cands] + [merged]

    for ev in obs.events:
        if isinstance(ev, RedealChoice):
            if ev.redeal:
                groups = fresh()
                played = 0
                left = right = -1
                plays.clear()
                draw_seat = -1
                drawn = 0
            continue
        if isinstance(ev, Draw):
            s = ev.seat
            if s == me:
                continue
            if draw_seat != s:
                flush(False)
                draw_seat = s
                draw_void = suit[left] | suit[right] if left >= 0 else 0
                void(s, draw_void)
            drawn += 1
            continue
        if isinstance(ev, Play):
            s = ev.seat
            t = index[ev.tile]
            bit = 1 << t
            from_draw = draw_seat == s and drawn > 0
            flush(from_draw)
            if s != me and not from_draw:
                take(s, bit)
                plays.append((s, t, t * 2 + int(ev.end), left, right, left < 0))
            played |= bit
            last = s
            if left < 0:
                left, right = ev.tile.low, ev.tile.high
                if rule is not Opening.ANY:
                    nd = not_dealt_mask(game, rule, t)
                    for s2 in range(r.seats):
                        for g in groups[s2]:
                            if g.dealt:
                                g.forbidden |= nd
            else:
                left, right = ends_after((left, right), ev.tile, ev.end)
            continue
        if isinstance(ev, Pass):
            flush(False, passed=draw_seat == ev.seat)
            if ev.seat != me and left >= 0:
                void(ev.seat, suit[left] | suit[right])
            continue
        flush(False)  # Defer
    flush(False)

    deck = sum(game.deck_bits)
    pool = deck & ~mine & ~played
    relaxed = False
    flat: list[Group] = []
    for s in range(r.seats):
        if s == me:
            continue
        gs = [g for g in groups[s] if g.count > 0]
        want = obs.tile_counts[s]
        if sum(g.count for g in gs) != want:
            # Should not happen; keep the common constraints and the public count.
            common = -1
            for g in gs:
                common &= g.forbidden
            gs = [Group(s, want, 0 if common == -1 else common)] if want else []
            relaxed = True
        for g in gs:
            g.forbidden &= pool
        flat.extend(gs)
    hidden = sum(g.count for g in flat)
    stock_count = pool.bit_count() - hidden
    if stock_count < 0 or stock_count != obs.stock_count:
        relaxed = True
        stock_count = max(0, pool.bit_count() - hidden)
    # Later plays of each seat, for the likelihood of its choices.
    seat_plays: list[SeatPlay] = []
    after = [0] * r.seats
    for s, t, code, lft, rgt, opening in reversed(plays):
        forced = opening and rule is not Opening.ANY
        seat_plays.append(SeatPlay(s, t, code, lft, rgt, after[s], forced))
        after[s] |= 1 << t
    seat_plays.reverse()
    return Knowledge(
        game=game,
        me=me,
        mine=mine,
        played=played,
        pool=pool,
        groups=tuple(flat),
        stock_count=stock_count,
        counts=tuple(obs.tile_counts),
        ends=obs.ends,
        last=last,
        plays=tuple(seat_plays),
        needs=_needs(obs, game, me, mine, pool),
        relaxed=relaxed,
    )


def _needs(obs: Observation, game: Game, me: int, mine: int, pool: int) -> tuple[int, ...]:
    """What "the hand did not block" says: after every play the seats together still
    held a tile for the open ends (else the engine would have ended the hand). When my own
    hand then held none, another seat did: one of its tiles then is either played since
    or still hidden. Each result is a mask of hidden tiles at least one of which is in
    another seat's hand (not in the stock)."""
    r = obs.ruleset
    suit = game.suit
    index = game.table.index
    events = list(obs.events)
    for i in range(len(events) - 1, -1, -1):
        ev = events[i]
        if isinstance(ev, RedealChoice) and ev.redeal:
            events = events[i + 1 :]
            break
    drawing = r.stock is Stock.DRAW
    stock = r.stock_size
    after: list[tuple[int, int] | None] = []  # ends after each event, if a play, and
    stocks: list[int] = []  # the stock count then
    ends: tuple[int, int] | None = None
    for ev in events:
        if isinstance(ev, Draw):
            stock -= 1
        if isinstance(ev, Play):
            ends = ends_after(ends, ev.tile, ev.end)
            after.append(ends)
        else:
            after.append(None)
        stocks.append(stock)
    out: list[int] = []
    my_later = 0  # tiles I played after the event
    my_drawn = 0  # tiles I drew after the event
    others_later = 0  # tiles the other seats played after the event
    others_drew = False
    for i in range(len(events) - 1, -1, -1):
        ev = events[i]
        ends = after[i]
        if ends is not None and not (drawing and stocks[i] > 0) and not others_drew:
            fits = suit[ends[0]] | suit[ends[1]]
            mine_then = (mine | my_later) & ~my_drawn
            if not mine_then & fits and not others_later & fits:
                need = fits & pool
                if need and need not in out:
                    out.append(need)
        if isinstance(ev, Play):
            bit = 1 << index[ev.tile]
            if ev.seat == me:
                my_later |= bit
            else:
                others_later |= bit
        elif isinstance(ev, Draw):
            if ev.seat == me:
                if ev.tile is not None:
                    my_drawn |= 1 << index[ev.tile]
            else:
                others_drew = True
    # a need that contains another one is implied by it
    out.sort(key=lambda m: m.bit_count())
    kept: list[int] = []
    for m in out:
        if not any(k & m == k for k in kept):
            kept.append(m)
    return tuple(kept)


class World:
    """One guess of every hidden tile: a mask per seat (mine included) and the stock (in
    drawing order as tile indices when the stock is drawn from; a sleeping stock is never
    used by play or scoring, so only its mask is kept).

    A plain class with final attributes, not a frozen dataclass: ``hard`` makes a few
    hundred a decision, and the compiled build runs a dataclass's generated ``__init__``
    interpreted (about 5,000 instructions a world)."""

    __slots__ = ("hands", "stock", "stock_mask")

    def __init__(self, hands: tuple[int, ...], stock: tuple[int, ...], stock_mask: int = 0) -> None:
        self.hands: Final = hands
        self.stock: Final = stock  # drawing order; empty for a sleeping stock
        self.stock_mask: Final = stock_mask  # the stock's tiles

    def __repr__(self) -> str:
        return f"World(hands={self.hands!r}, stock={self.stock!r}, stock_mask={self.stock_mask!r})"


class WorldSampler:
    """Samples worlds consistent with a :class:`Knowledge`."""

    def __init__(self, knowledge: Knowledge, *, tries: int = 40) -> None:
        self.k = knowledge
        self.tries = tries
        k = knowledge
        self.seats = len(k.counts)
        self.drawing = k.game.ruleset.stock is Stock.DRAW
        groups = [g for g in k.groups if g.count > 0]
        self.group_seat = [g.seat for g in groups]
        # the stock is the last "group": it accepts every tile
        self.capacity = [g.count for g in groups] + [k.stock_count]
        n = len(self.capacity)
        self.stock_slot = n - 1
        pool_tiles = list(iter_bits(k.pool))
        self.options: dict[int, list[int]] = {}
        for t in pool_tiles:
            bit = 1 << t
            opts = [i for i, g in enumerate(groups) if not g.forbidden & bit]
            if k.stock_count:
                opts.append(self.stock_slot)
            self.options[t] = opts
        self.tiles = pool_tiles
        # Fast path: one hidden group (two seats) -> choose its tiles among the allowed.
        self.single = len(groups) == 1
        if self.single:
            g = groups[0]
            self.allowed = [t for t in pool_tiles if not g.forbidden & (1 << t)]
            self.single_count = g.count
            self.single_ok = len(self.allowed) >= g.count
        self.feasible = self._check()

    def _check(self) -> bool:
        """Whether some world satisfies every constraint (Hall's condition via a flow)."""
        if self.single:
            return self.single_ok
        return self._search(random.Random(0)) is not None

    def sample(self, rng: random.Random) -> World:
        """A world consistent with the facts (with loosened facts if none is: the caller
        can read :attr:`feasible`)."""
        slots: list[int] | None = None
        for _ in range(self.tries):
            slots = self._slots(rng)
            if slots is None:
                break
            if self._meets_needs(slots):
                return self._from_slots(slots, rng)
        if slots is None:
            slots = self._search(rng) if self.feasible else None
        if slots is None:
            slots = self._loose_slots(rng)
        return self._from_slots(self._repair(slots, rng), rng)

    def _slots(self, rng: random.Random) -> list[int] | None:
        """One assignment of the hidden tiles to groups (last: the stock), meeting the
        masks and counts but not yet the needs; None if none could be found."""
        if self.single and self.single_ok:
            mask = 0
            for t in draws.sample(rng, self.allowed, self.single_count):
                mask |= 1 << t
            return [mask, self.k.pool & ~mask]
        if not self.feasible:
            return None
        for _ in range(self.tries):
            slots = self._greedy(rng)
            if slots is not None:
                return slots
        return self._search(rng)

    def _meets_needs(self, slots: list[int]) -> bool:
        held = 0
        for m in slots[:-1]:
            held |= m
        return all(need & held for need in self.k.needs)

    def _repair(self, slots: list[int], rng: random.Random) -> list[int]:
        """Move tiles from the stock into hands until every need is met (where the masks
        allow it): used only when rejection keeps failing."""
        slots = list(slots)
        stock = self.stock_slot
        for need in self.k.needs:
            held = 0
            for m in slots[:-1]:
                held |= m
            if need & held:
                continue
            cands = [
                (u, i)
                for u in iter_bits(need & slots[stock])
                for i in self.options.get(u, ())
                if i != stock and slots[i]
            ]
            if not cands:
                continue
            u, i = cands[rng.randrange(len(cands))]
            out = list(iter_bits(slots[i]))
            v = out[rng.randrange(len(out))]
            slots[i] = (slots[i] & ~(1 << v)) | (1 << u)
            slots[stock] = (slots[stock] & ~(1 << u)) | (1 << v)
        return slots

    # -- internals ------------------------------------------------------------------------

    def _greedy(self, rng: random.Random) -> list[int] | None:
        rem = list(self.capacity)
        tiles = self.tiles[:]
        draws.shuffle(rng, tiles)
        options = self.options
        tiles.sort(key=lambda t: len(options[t]))
        slot_tiles = [0] * len(rem)
        for t in tiles:
            opts = [i for i in options[t] if rem[i] > 0]
            if not opts:
                return None
            if len(opts) == 1:
                i = opts[0]
            else:
                total = sum(rem[i] for i in opts)
                x = rng.random() * total
                for i in opts:
                    x -= rem[i]
                    if x < 0:
                        break
            rem[i] -= 1
            slot_tiles[i] |= 1 << t
        return slot_tiles

    def _search(self, rng: random.Random) -> list[int] | None:
        """Randomized backtracking: a consistent assignment if one exists."""
        options = self.options
        tiles = self.tiles[:]
        rng.shuffle(tiles)
        tiles.sort(key=lambda t: len(options[t]))
        rem = list(self.capacity)
        if sum(rem) != len(tiles):
            return None
        slot_tiles = [0] * len(rem)
        budget = [20000]

        def go(pos: int) -> bool:
            if pos == len(tiles):
                return True
            budget[0] -= 1
            if budget[0] < 0:
                return False
            t = tiles[pos]
            opts = [i for i in options[t] if rem[i] > 0]
            rng.shuffle(opts)
            for i in opts:
                rem[i] -= 1
                slot_tiles[i] |= 1 << t
                if go(pos + 1):
                    return True
                rem[i] += 1
                slot_tiles[i] &= ~(1 << t)
            return False

        return slot_tiles if go(0) else None

    def _loose_slots(self, rng: random.Random) -> list[int]:
        """Ignore the masks: uniform over the counts (only when the facts contradict)."""
        tiles = self.tiles[:]
        rng.shuffle(tiles)
        slots = []
        pos = 0
        for c in self.capacity:
            m = 0
            for t in tiles[pos : pos + c]:
                m |= 1 << t
            slots.append(m)
            pos += c
        return slots

    def _from_slots(self, slots: list[int], rng: random.Random) -> World:
        return self._world(slots[:-1], slots[-1], rng)

    def _world(self, group_masks: Sequence[int], stock: int, rng: random.Random) -> World:
        hands = [0] * self.seats
        hands[self.k.me] = self.k.mine
        seats = self.group_seat
        for i in range(len(seats)):  # (zip() is a generic call in the compiled build)
            hands[seats[i]] |= group_masks[i]
        if not self.drawing:
            # a sleeping stock is never drawn from nor counted: its order is irrelevant
            return World(tuple(hands), (), stock)
        order = list(iter_bits(stock))
        draws.shuffle(rng, order)
        return World(tuple(hands), tuple(order), stock)


class PlayLikelihoods:
    """How likely the other seats' chosen plays are in a sampled world under each opponent
    model of :mod:`capicua.bots.policy` (indexed by model: ``RANDOM``, ``GREEDY``): a
    product over their plays of each play's probability, given the hand the world gives
    the seat at that moment (its tiles now, plus the ones it played since). Seats marked in
    ``partners`` are always judged by the greedy model. Worlds (and models) that make the
    observed choices likelier count more: soft inference.

    One of these serves every world of a decision: a play's odds depend only on the hand
    the world gives the seat, so each play keeps the odds of every hand it has seen
    (sampled worlds repeat hands: about half the look-ups find them in ``block``, few
    where many tiles are hidden, as in ``iq-1v1``)."""

    def __init__(self, knowledge: Knowledge, epsilon: float, partners: Sequence[bool] = ()) -> None:
        self.game = knowledge.game
        self.epsilon = epsilon
        plays = [p for p in knowledge.plays if not p.forced_open]
        # per play: its seat, the tiles it held then besides its hidden ones, its ends, code
        self.plays = [(p.seat, p.later | (1 << p.tile), p.left, p.right, p.code) for p in plays]
        self.greedy_only = [bool(partners) and partners[p.seat] for p in plays]
        self.seen: list[dict[int, tuple[float, float]]] = [{} for _ in plays]

    def of(self, world: World) -> tuple[float, float]:
        """The likelihoods of ``world`` (the same products, in the same order, as play by
        play under each model; a model's product stays 0 once it is 0)."""
        hands = world.hands
        game = self.game
        epsilon = self.epsilon
        by_random = by_greedy = 1.0
        for i, (seat, then, left, right, code) in enumerate(self.plays):
            hand = hands[seat] | then
            seen = self.seen[i]
            odds = seen.get(hand)
            if odds is None:
                odds = seen[hand] = play_odds(game, hand, left, right, code, epsilon)
            random_odds, greedy_odds = odds
            by_random *= greedy_odds if self.greedy_only[i] else random_odds
            by_greedy *= greedy_odds
        return by_random, by_greedy


def play_likelihoods(
    knowledge: Knowledge,
    world: World,
    epsilon: float,
    partners: Sequence[bool] = (),
) -> tuple[float, ...]:
    """:class:`PlayLikelihoods` of one world."""
    return PlayLikelihoods(knowledge, epsilon, partners).of(world)


# (the compiled build cannot unpickle a frozen dataclass field by field)
by_constructor(SeatPlay, Knowledge)
