"""The authoritative engine: an immutable :class:`Game` and a mutable :class:`MatchState`.

``Game(ruleset)`` precomputes the tables a ruleset needs; ``game.new_match(seed)`` starts a
match. As in OpenSpiel, the state exposes the seat to act, its legal actions, ``apply``,
``is_terminal()`` and per-seat ``returns()``; draws, passes, block detection, scoring and
the next deal happen inside ``apply`` (they are not choices). Inside, ``_run`` applies one
decision (a play itself, ``_special`` a DEFER or a redeal answer) and runs what nobody
decides up to the next decision. With ``auto_forced`` a decision with a single legal
action is applied without asking too.
The rules the state only drives live beside it: how a finished hand is scored and whether
it ends the match (:mod:`capicua.engine.scoring`), who opens a hand
(:mod:`capicua.engine.opening`), where each deal comes from (:mod:`capicua.engine.chance`)
and the match's log, ``state.log``, the read API of its record: every hand's events,
records, results and summaries, and the replay (:mod:`capicua.engine.handlog`).

The hot path works on ints: a hand is a bitmask over tile indices, an action is
``tile_index * 2 + end`` (negative for DEFER/REDEAL/KEEP), an event is a small tuple.
Typed values (:class:`~capicua.engine.actions.Action`, the records in
:mod:`capicua.engine.records`) are built on demand at the boundary, so ``capicua bench
engine`` measures this very code, not a copy of the rules.
"""

from __future__ import annotations

import copyreg
import warnings
from collections.abc import Callable, Iterable, Sequence
from enum import IntEnum
from random import Random
from typing import Final, cast

from capicua.engine.actions import (
    DEFER,
    KEEP,
    REDEAL,
    Action,
    IllegalActionError,
    illegal_reason,
)
from capicua.engine.chance import Chance, Dealer, OpenerDraw
from capicua.engine.dealing import deck_number

# The raw event kinds and RawEvent are re-exported (``X as X``): importers read them here.
from capicua.engine.handlog import EV_DEFER as EV_DEFER
from capicua.engine.handlog import EV_DRAW as EV_DRAW
from capicua.engine.handlog import EV_KEEP as EV_KEEP
from capicua.engine.handlog import EV_PASS as EV_PASS
from capicua.engine.handlog import EV_PLAY as EV_PLAY
from capicua.engine.handlog import EV_REDEAL as EV_REDEAL
from capicua.engine.handlog import HandLog, MatchLog
from capicua.engine.handlog import RawEvent as RawEvent
from capicua.engine.line import Line
from capicua.engine.opening import PreviousHand, opening_method, redeal_askers
from capicua.engine.records import (
    HandEnd,
    HandResult,
    Outcome,
    Termination,
)
from capicua.engine.rules import (
    Ruleset,
    Sides,
    Stock,
    TurnOrder,
    load_preset,
)
from capicua.engine.scoring import EndingArgs, match_outcome, score_hand
from capicua.engine.tiles import (
    Tile,
    TileTable,
    gathered,
    highest_tile_key,
    iter_bits,
    tile_table,
)


class Phase(IntEnum):
    """What the seat to act is deciding."""

    REDEAL = 0  # answer a redeal offer: REDEAL or KEEP
    PLAY = 1  # play a tile (or open, or DEFER an offered opening)
    OVER = 2  # the match is over


# Final: the compiled build (mypyc) reads a Final global from a C static (an int is
# inlined); any other module global is a dict lookup on every read in the loop.
_REDEAL_PHASE: Final = Phase.REDEAL
_PLAY_PHASE: Final = Phase.PLAY
_OVER_PHASE: Final = Phase.OVER
_NO_ACTION: Final = -100  # "no decision to apply" for _run
_REDEAL_LEGAL: Final = (REDEAL, KEEP)


class _Position:
    """A hand in the middle of play, as :meth:`Game.new_position_of_masks` checked it: tile
    masks, the stock's tile bits in drawing order, -1 for no opener or last seat.

    A plain class with final attributes, not a frozen dataclass: ``hard`` makes one per
    sampled world, and the compiled build runs a dataclass's generated ``__init__``
    interpreted (about 16,000 instructions a position with its keyword call). The state
    reads it once (:meth:`MatchState._place`) and keeps none."""

    __slots__ = (
        "hand",
        "scores",
        "hands",
        "stock",
        "ends",
        "turn",
        "opener",
        "last",
        "can_defer",
        "deal",
    )

    def __init__(
        self,
        hand: int,
        scores: tuple[int, ...],
        hands: tuple[int, ...],
        stock: tuple[int, ...],
        ends: tuple[int, int] | None,
        turn: int,
        opener: int,
        last: int,
        can_defer: bool,
        deal: tuple[int, ...] | None,  # the tiles' bits recorded as the hand's deal (as_dealt)
    ) -> None:
        self.hand: Final = hand
        self.scores: Final = scores
        self.hands: Final = hands
        self.stock: Final = stock
        self.ends: Final = ends
        self.turn: Final = turn
        self.opener: Final = opener
        self.last: Final = last
        self.can_defer: Final = can_defer
        self.deal: Final = deal


_HAND_RESULTS_MOVED = (
    "MatchState.hand_results() is deprecated and will be removed: use state.log.results() "
    "(a match's record, with every hand's events, records and results, is state.log)"
)


# How a hand ended, as module globals: the loop every playout runs compares with them once
# per hand (an enum member looked up on its class costs more than the comparison).
_DOMINO: Final = HandEnd.DOMINO
_BLOCK: Final = HandEnd.BLOCK


class Game:
    """A ruleset plus the tables derived from it. Immutable; share it between matches."""

    __slots__ = (
        "ruleset", "table", "deck", "width", "low", "high", "pips", "suit", "other",
        "doubles", "by_height", "side", "side_seats", "num_sides", "next_seat",
        "partner", "opening_index", "deck_bits", "first_opening", "opening_after",
        "seats_from", "draw_stock", "hand_size", "dealt", "seats", "play_events", "pass_events",
        "draw_events", "deck_number",
    )  # fmt: skip

    def __init__(self, ruleset: Ruleset) -> None:
        r = ruleset
        self.ruleset = r
        self.table = table = tile_table(r.max_pip)
        excluded = {table.index[t] for t in r.exclude}
        self.deck: tuple[int, ...] = tuple(i for i in range(len(table.tiles)) if i not in excluded)
        self.width = r.max_pip + 1
        self.low = tuple(t.low for t in table.tiles)
        self.high = tuple(t.high for t in table.tiles)
        self.pips = table.pips
        self.suit = table.suit
        self.other = table.other
        self.doubles = table.doubles
        # Tile indices from the highest tile down (pips, then larger half: decision 10).
        self.by_height: tuple[int, ...] = tuple(
            sorted(self.deck, key=lambda i: highest_tile_key(table.tiles[i]), reverse=True)
        )
        self.side = tuple(r.side_of(s) for s in range(r.seats))
        self.num_sides = r.num_sides
        self.side_seats = tuple(r.side_seats(side) for side in range(self.num_sides))
        step = 1 if r.turn_order is TurnOrder.CLOCKWISE else -1
        self.next_seat = tuple((s + step) % r.seats for s in range(r.seats))
        # Every seat in turn order from each seat (who is asked about a redeal first).
        self.seats_from = tuple(
            tuple((s + step * k) % r.seats for k in range(r.seats)) for s in range(r.seats)
        )
        self.partner = tuple((s + 2) % 4 if r.sides is Sides.TEAMS else -1 for s in range(r.seats))
        self.opening_index = table.index[r.opening_tile] if r.opening_tile else -1
        self.deck_bits: tuple[int, ...] = tuple(1 << i for i in self.deck)
        self.deck_number = deck_number(self.deck_bits)  # what the deal cache knows it by
        self.draw_stock = r.stock is Stock.DRAW
        # Each seat's block of a deal's tiles is hand_size long; dealt is how many are dealt
        # (the stock is the rest).
        self.hand_size = n = r.hand_size
        self.dealt = r.seats * n
        # Every play, pass and draw event a match can log, made once: the loop appends the
        # same tuple again instead of building one per move (events are never changed).
        # play_events[code * seats + seat], draw_events[tile index * seats + seat]. Typed as
        # objects, as the loop's event list (_event_list): the compiled build would unpack
        # a RawEvent read from a table into a native struct, and pack it into a new tuple
        # to append it.
        self.seats = seats = r.seats
        codes = range(2 * len(table.tiles))
        self.play_events: tuple[object, ...] = tuple(
            (EV_PLAY, s, c >> 1, c & 1) for c in codes for s in range(seats)
        )
        self.pass_events: tuple[object, ...] = tuple((EV_PASS, s, 0, 0) for s in range(seats))
        self.draw_events: tuple[object, ...] = tuple(
            (EV_DRAW, s, t, 0) for t in range(len(table.tiles)) for s in range(seats)
        )
        # opening_method, read once per ruleset: it depends on the previous hand only
        # through how it ended and whether a side won it (a hand is dealt 30,000 times a
        # second in playouts; the knobs need not be read again each time).
        self.first_opening = opening_method(r, None)
        self.opening_after = {
            (end, won): opening_method(r, (end, 0 if won else None))
            for end in HandEnd
            for won in (False, True)
        }

    @classmethod
    def from_preset(cls, name: str, overrides: Iterable[str] = ()) -> Game:
        return cls(load_preset(name, overrides))

    def new_match(
        self,
        seed: int,
        *,
        auto_forced: bool | Sequence[bool] = True,
        dealer: Dealer | None = None,
        opener: OpenerDraw | None = None,
        begin: bool = True,
    ) -> MatchState:
        """Start a match; ``auto_forced`` (per seat or for all) applies single options.

        ``dealer`` replaces the seeded deal (tests that need a rare deal; chance made
        explicit, as OpenSpiel's chance nodes): it gets ``(hand, attempt)`` and returns every
        tile of the set in dealing order (seat 0's block first, the stock last). ``opener``
        replaces the seeded draw of the opening seat under ``first_opener = random_side``:
        it gets the hand and returns a seat. Such a match is not reproducible from its
        seed. A ``dealer`` or ``opener`` may raise to stop the match where it asks (an
        outcome not drawn yet): the hands before are then over, with their results and
        scores, and the match is only to be read (or cloned), never played on.
        ``begin=False`` returns the match before its first deal: :meth:`MatchState.begin`
        deals it (so a hook that raises at once still leaves the match to read)."""
        auto = self._auto(auto_forced)
        return MatchState(Chance(self, seed, dealer, opener), auto, start=begin)

    def new_position(
        self,
        *,
        seed: int,
        hand: int,
        scores: Sequence[int],
        hands: Sequence[Iterable[Tile]],
        stock: Sequence[Tile],
        ends: tuple[int, int] | None,
        turn: int,
        opener: int | None = None,
        last: int | None = None,
        can_defer: bool = False,
        auto_forced: bool | Sequence[bool] = True,
        dealer: Dealer | None = None,
        chance_opener: OpenerDraw | None = None,
        as_dealt: bool = False,
        begin: bool = True,
    ) -> MatchState:
        """A match state in the middle of hand ``hand``, in the play phase: every seat's
        tiles, the stock in drawing order, the open ends (None before the first tile) and
        the seat to act. This is how a bot turns a sampled world into something to roll out
        (hidden tiles are its guesses); later hands are dealt from ``seed`` as usual, or by
        ``dealer`` and ``chance_opener`` (as :meth:`new_match` takes them).

        ``opener`` is the seat that played the hand's first tile (block ties and
        ``no_winner_opener`` need it), ``last`` the last seat that played (the locker).
        ``as_dealt``: the position is the hand's start, recorded as its deal (every seat's
        tiles in tile order, then the stock), so its events can be replayed from it.
        ``begin=False``: the forced steps from the position wait for
        :meth:`MatchState.begin` (see :meth:`new_match`)."""
        index = self.table.index
        tile_lists = [list(h) for h in hands]
        if any(len(set(h)) != len(h) for h in tile_lists):
            raise ValueError("new_position: a tile is in two places")
        return self.new_position_of_masks(
            seed=seed,
            hand=hand,
            scores=scores,
            hands=[sum(1 << index[t] for t in h) for h in tile_lists],
            stock=[index[t] for t in stock],
            ends=ends,
            turn=turn,
            opener=opener,
            last=last,
            can_defer=can_defer,
            auto_forced=auto_forced,
            dealer=dealer,
            chance_opener=chance_opener,
            as_dealt=as_dealt,
            begin=begin,
        )

    def new_position_of_masks(
        self,
        *,
        seed: int,
        hand: int,
        scores: Sequence[int],
        hands: Sequence[int],
        stock: Sequence[int],
        ends: tuple[int, int] | None,
        turn: int,
        opener: int | None = None,
        last: int | None = None,
        can_defer: bool = False,
        auto_forced: bool | Sequence[bool] = True,
        dealer: Dealer | None = None,
        chance_opener: OpenerDraw | None = None,
        as_dealt: bool = False,
        begin: bool = True,
    ) -> MatchState:
        """:meth:`new_position` with every seat's tiles as a tile mask (bit ``i``: the
        set's tile ``i``, :attr:`table`'s order) and the stock as tile indices in drawing
        order: how a search bot, which samples its worlds as masks, makes one without
        turning them into :class:`Tile` objects and back (about 40,000 instructions a
        world compiled)."""
        r = self.ruleset
        if len(hands) != r.seats or len(scores) != self.num_sides:
            raise ValueError(f"new_position: needs {r.seats} hands and {self.num_sides} scores")
        n_tiles = len(self.table.tiles)
        masks = tuple(hands)
        if (stock and min(stock) < 0) or any(m < 0 for m in masks):
            raise ValueError(f"new_position: a tile index is not in the set's 0..{n_tiles - 1}")
        stock_bits = tuple([1 << i for i in stock])
        placed = 0
        for bit in masks + stock_bits:
            if placed & bit:
                raise ValueError("new_position: a tile is in two places")
            placed |= bit
        if placed >> n_tiles:
            raise ValueError(f"new_position: a tile index is not in the set's 0..{n_tiles - 1}")
        # the deal in tile order, seat by seat, then the stock (only for a caller that asks:
        # hard makes a position per sampled world and never does)
        deal = (
            tuple([1 << i for h in masks for i in iter_bits(h)] + list(stock_bits))
            if as_dealt
            else None
        )
        position = _Position(
            hand,
            tuple(scores),
            masks,
            stock_bits,
            ends,
            turn,
            -1 if opener is None else opener,
            -1 if last is None else last,
            can_defer,
            deal,
        )
        auto = self._auto(auto_forced)
        chance = Chance(self, seed, dealer, chance_opener)
        return MatchState(chance, auto, start=begin, position=position)

    def _auto(self, auto_forced: bool | Sequence[bool]) -> tuple[bool, ...]:
        if isinstance(auto_forced, bool):
            return (auto_forced,) * self.ruleset.seats
        auto = tuple(auto_forced)
        if len(auto) != self.ruleset.seats:
            raise ValueError(f"auto_forced needs {self.ruleset.seats} values")
        return auto

    def tile(self, index: int) -> Tile:
        return self.table.tiles[index]


# -- the rules on raw codes, for bots' inner loops ----------------------------------------
# A play code is ``tile index << 1 | end`` (end 0: left, 1: right), as in the engine's own
# loop. These are the table-driven twins of records.ends_after and of the plays in
# MatchState.legal_actions, for search bots that simulate thousands of positions;
# tests/test_rule_facts.py proves they agree with the engine on every preset.


def plays_on(game: Game, hand: int, left: int, right: int) -> list[int]:
    """The play codes of a seat holding tile mask ``hand`` on ends ``left``/``right``
    (-1: an opening, any tile), in the engine's order: the left end first, then the right,
    each in tile order; with equal ends a tile is offered once, on the left. The opening
    rules (a forced first tile, a deferral) are the engine's alone."""
    on_left, on_right = playable_by_end(game, hand, left, right)
    return [t << 1 for t in iter_bits(on_left)] + [(t << 1) | 1 for t in iter_bits(on_right)]


def playable_by_end(game: Game, hand: int, left: int, right: int) -> tuple[int, int]:
    """The tiles of mask ``hand`` playable on the left end and on the right end (masks):
    before the first tile (``left`` -1) any tile, offered on the left; with equal ends a
    tile is offered once, on the left."""
    suit = game.suit
    if left < 0:
        return hand, 0
    if left == right:
        return hand & suit[left], 0
    return hand & suit[left], hand & suit[right]


def ends_after_code(game: Game, left: int, right: int, code: int) -> tuple[int, int]:
    """The open ends after play ``code`` on ends ``left``/``right`` (-1: an opening)."""
    t = code >> 1
    if left < 0:
        return game.low[t], game.high[t]
    if code & 1:
        return left, game.other[t * game.width + right]
    return game.other[t * game.width + left], right


def opening_codes(
    table: TileTable, hand: int, forced_tile: int, may_defer: bool
) -> tuple[int, ...]:
    """The opener's action codes, holding tile mask ``hand``: the tile index ``forced_tile``
    it must open with (-1: any of its tiles), and DEFER when it may pass the opening to its
    partner."""
    if forced_tile >= 0:
        return (forced_tile * 2,)
    legal = gathered(table.opening_chunks, hand)
    return legal + (DEFER,) if may_defer else legal


class MatchState:
    """One match in progress. Create with :meth:`Game.new_match` (or
    :meth:`Game.new_position`); its record, the read API of every hand played, is
    :attr:`log`."""

    # Slots: every playout reads and writes these a few times per move.
    __slots__ = (
        "_chance", "game", "rules", "seed", "auto_forced", "scores", "hand",
        "attempt", "log", "_hands", "_held", "_stock", "_stock_pos", "_left", "_right",
        "_turn", "_phase", "_opener", "_offered", "_can_defer", "_forced_open",
        "_redeal_queue", "_last", "_legal", "_prev", "_log", "_events",
    )  # fmt: skip

    def __init__(
        self,
        chance: Chance | None = None,
        auto_forced: tuple[bool, ...] = (),
        *,
        start: bool = True,
        position: _Position | None = None,
    ) -> None:
        if chance is None:
            # A blank that clone() fills in: the compiled build's classes have no bare
            # __new__ (MatchState.__new__ runs __init__ there).
            return
        self._chance = chance
        self.game = game = chance.game
        self.rules = game.ruleset
        self.seed = chance.seed
        self.auto_forced = auto_forced
        self.scores = [0] * game.num_sides
        self.hand = 0  # index of the current hand
        self.attempt = 0
        # The match's record; _log is its current hand's log and _events that log's
        # events (the hot path appends to them).
        self.log = MatchLog(game.ruleset, chance.seed, game.table)
        self._hands = [0] * self.rules.seats  # each seat's tile mask
        self._held = 0  # union of every seat's tiles
        self._stock: list[int] = []  # the stock's tile bits, in drawing order
        self._stock_pos = 0  # how many of them were drawn
        self._left = self._right = -1  # open ends; -1 before the first tile
        self._opener = -1  # seat that played the first tile of this hand
        self._last = -1  # last seat that played (the locker of a block)
        self._turn = 0
        self._phase = Phase.PLAY
        self._offered = -1  # seat offered the opening (opener-to-be)
        self._can_defer = False
        self._forced_open = -1  # tile index the opener must play, -1 for any tile
        self._redeal_queue: list[int] = []
        self._legal: tuple[int, ...] = ()
        # About the previous hand, for the next opening.
        self._prev: PreviousHand | None = None
        if position is not None:
            self._place(position)
        if start:
            self.begin()

    def _place(self, position: _Position) -> None:
        """Set up the mid-hand position :meth:`Game.new_position` checked; its forced
        steps wait for :meth:`begin`."""
        p = position
        self.hand = p.hand
        self.scores = list(p.scores)
        self._log = log = HandLog(p.hand, self.game.table)
        self.log.hands.append(log)
        self._events = _event_list(log)
        if p.deal is not None:
            log.deals.append((0, list(p.deal)))
        self._hands[:] = p.hands
        self._held = sum(p.hands)  # (the masks share no tile: their sum is their union)
        self._stock = list(p.stock)
        self._left, self._right = p.ends if p.ends is not None else (-1, -1)
        self._opener = p.opener
        self._last = p.last
        self._open(p.turn, -1, p.can_defer)

    def begin(self) -> None:
        """Deal the first hand (a match made with ``begin=False``; a position: run its
        forced steps) and run to the first decision."""
        if not self.log.hands:
            self._start_hand()
        self._run(_NO_ACTION)

    def clone(
        self, *, dealer: Dealer | None = None, opener: OpenerDraw | None = None
    ) -> MatchState:
        """An independent copy of this match, as a search or an OpenSpiel state clones it:
        every mutable field and the current hand's log are copied, finished hands' logs
        (never changed again) are shared. ``dealer`` and ``opener`` replace the match's
        own chance hooks (None: keep them)."""
        other = MatchState(None)
        _copy_fields(self, other)
        other._chance = self._chance.replaced(dealer, opener)
        if other.log.hands:
            other._log = other.log.hands[-1]
            other._events = _event_list(other._log)
        return other

    # -- public queries -------------------------------------------------------------------

    @property
    def outcome(self) -> Outcome | None:
        """How the match ended, None while it is played (kept in :attr:`log`)."""
        return self.log.outcome

    def is_terminal(self) -> bool:
        """Whether the match is over (won, drawn at the hand limit, forfeited or cancelled)."""
        return self._phase is _OVER_PHASE

    def returns(self) -> tuple[float, ...]:
        """Each seat's result of the match (:meth:`Outcome.returns
        <capicua.engine.records.Outcome.returns>`), all 0 while the match is being played."""
        outcome = self.outcome
        return (0.0,) * self.rules.seats if outcome is None else outcome.returns(self.game.side)

    @property
    def phase(self) -> Phase:
        return self._phase

    @property
    def current_seat(self) -> int | None:
        """The seat that must decide now, None when the match is over."""
        return None if self._phase is Phase.OVER else self._turn

    def legal_actions(self) -> tuple[int, ...]:
        """Integer codes of the current seat's legal actions."""
        return self._legal

    def legal(self) -> list[Action]:
        """The current seat's legal actions as typed values."""
        table = self.game.table
        return [Action.from_code(c, table) for c in self._legal]

    @property
    def ends(self) -> tuple[int, int] | None:
        """(left, right) open ends, None before the first tile of the hand."""
        return None if self._left < 0 else (self._left, self._right)

    def hand_of(self, seat: int) -> tuple[Tile, ...]:
        """``seat``'s tiles in canonical order (hidden information: see observation)."""
        return self.game.table.tiles_of(self._hands[seat])

    def tile_counts(self) -> tuple[int, ...]:
        return tuple(h.bit_count() for h in self._hands)

    @property
    def stock_count(self) -> int:
        return len(self._stock) - self._stock_pos

    def stock(self) -> tuple[Tile, ...]:
        """The undrawn stock in drawing order (hidden information)."""
        tiles = self.game.table.tiles
        return tuple(tiles[b.bit_length() - 1] for b in self._stock[self._stock_pos :])

    @property
    def line(self) -> Line:
        """The line of play of the current deal (folded from the hand's events)."""
        return self._log.line()

    @property
    def opener(self) -> int | None:
        """The seat that played this hand's first tile, None before it."""
        return None if self._opener < 0 else self._opener

    @property
    def offered(self) -> int:
        """The seat offered (or due) the opening of this hand."""
        return self._offered

    @property
    def can_defer(self) -> bool:
        return self._can_defer and self._left < 0

    def hand_results(self) -> list[HandResult]:
        """Deprecated: the results of every finished hand are ``state.log.results()``."""
        warnings.warn(_HAND_RESULTS_MOVED, DeprecationWarning, stacklevel=2)
        return self.log.results()

    # -- applying actions -----------------------------------------------------------------

    def apply(self, code: int) -> None:
        """Apply a legal action code; raises :class:`IllegalActionError` otherwise."""
        self._run(self._legal_code(code))

    def apply_action(self, action: Action) -> None:
        """Apply a typed action (validated)."""
        self.apply(action.code(self.game.table))

    def parse(self, text: str) -> Action:
        """Parse ``text`` as an action legal now. Malformed text raises
        :class:`InvalidActionError`, a well-formed but illegal one :class:`IllegalActionError`."""
        action = Action.parse(text)
        self._legal_code(action.code(self.game.table))  # (a tile not in the set: illegal)
        return action

    def _legal_code(self, code: int) -> int:
        """``code`` if it is legal now; else :class:`IllegalActionError` saying why."""
        if code in self._legal:
            return code
        if self._phase is _OVER_PHASE:
            raise IllegalActionError("the match is over")
        raise IllegalActionError(illegal_reason(code, self._legal, self.game.table, self._turn))

    def _special(self, code: int) -> None:
        if self._phase is _REDEAL_PHASE:
            self._answer_redeal(code == REDEAL)
        else:  # DEFER: the partner must open with any tile
            seat = self._turn
            self._events.append((EV_DEFER, seat, 0, 0))
            self._turn = self.game.partner[seat]
            self._can_defer = False

    def _run(self, code: int, rand: Callable[[], float] | None = None, stop_hand: int = -1) -> None:
        """Apply decision ``code`` (trusted; ``_NO_ACTION`` for none): a play (``code >= 0``)
        lays tile ``code >> 1`` on end ``code & 1``, and ends the hand on a domino or a block.
        Then run what nobody decides (draws, passes, a block once the stock is out, single
        options with ``auto_forced``) until a seat must decide (its legal actions kept) or
        the match is over. With ``rand``, decisions are taken uniformly at random instead
        (a rollout), until the match ends or hand ``stop_hand`` has begun.

        The engine's hot path (every decision of every match and of every bot rollout),
        written out as one loop: in the source, a call per step costs more than the step.
        """
        auto = self.auto_forced
        g = self.game
        # The game's tables a move reads, in locals (a playout runs here for a whole match)
        suit, other, width, next_seat = g.suit, g.other, g.width, g.next_seat
        play_events, seats, table = g.play_events, g.seats, g.table
        left_codes, right_codes = table.left_codes, table.right_codes
        hands = self._hands  # (changed in place only: the same list for the whole match)
        legal: tuple[int, ...]
        left = right = ends = 0
        while True:
            # The seat to act if this loop knows it (after a play that passes the turn on,
            # with ``left``, ``right`` and their mask ``ends``); -1: read the state.
            turn = -1
            if code >= 0:
                turn = self._turn
                t = code >> 1
                bit = 1 << t
                hand = hands[turn] ^ bit
                hands[turn] = hand
                held = self._held ^ bit
                self._held = held
                self._events.append(play_events[code * seats + turn])
                self._last = turn
                left = old_left = self._left
                right = old_right = self._right
                if left < 0:
                    self._opener = turn
                    left = g.low[t]
                    right = g.high[t]
                elif code & 1:
                    right = other[t * width + right]
                else:
                    left = other[t * width + left]
                self._left = left
                self._right = right
                ends = suit[left] | suit[right]
                if hand and (held & ends or g.draw_stock and self._stock_pos < len(self._stock)):
                    turn = next_seat[turn]
                    self._turn = turn
                else:  # domino out, or nobody can play and nothing can be drawn: blocked
                    self._end_hand(_BLOCK if hand else _DOMINO, turn, t, old_left, old_right)
                    turn = -1
            elif code != _NO_ACTION:
                self._special(code)
            while True:  # the forced steps, up to the next decision's legal actions
                if turn < 0:  # a new hand, a redeal answer or a deferral, or a first call
                    phase = self._phase
                    if phase is not _PLAY_PHASE:
                        if phase is _OVER_PHASE:
                            return
                        legal = _REDEAL_LEGAL
                        break
                    turn = self._turn
                    left = self._left
                    if left < 0:
                        legal = opening_codes(
                            table, hands[turn], self._forced_open, self._can_defer
                        )
                        break
                    right = self._right
                    ends = suit[left] | suit[right]
                playable = hands[turn] & ends
                if not playable and g.draw_stock and self._stock_pos < len(self._stock):
                    playable = self._draw_until_playable(turn, ends)
                if playable:
                    # Plays on the left end first, then the right, each in tile order; with
                    # equal ends both placements are one move, offered once, on the left.
                    pl = playable & suit[left]
                    cached = left_codes.get(pl)
                    legal = table.play_codes(pl, 0) if cached is None else cached
                    if left != right:
                        pr = playable & suit[right]
                        if pr:
                            more = right_codes.get(pr)
                            # (+, not +=: compiled, + of two tuples is a direct concatenation,
                            # += goes through the number protocol first)
                            legal = legal + (table.play_codes(pr, 1) if more is None else more)
                    break
                if self._held & ends:
                    self._events.append(g.pass_events[turn])
                    turn = next_seat[turn]
                    self._turn = turn
                else:  # the draws emptied the stock and nobody can play: blocked
                    self._end_hand(_BLOCK, self._last, -1, left, right)
                    turn = -1
            n = len(legal)
            if n == 1:
                if auto[self._turn]:
                    code = legal[0]
                    continue
            elif self._phase is _PLAY_PHASE:  # a turn with a real choice: what experiments
                log = self._log  # measure of how much a ruleset leaves to the player
                log.choices += 1
                log.options += n
            if rand is not None and self.hand != stop_hand:
                code = legal[int(rand() * n)]
            else:
                self._legal = legal
                return

    def random_playout(self, rng: Random, *, hand_only: bool = False) -> None:
        """Play uniformly random legal actions until the match (or, with ``hand_only``, the
        current hand) is over. The same code path as :meth:`apply`, without re-validating
        the engine's own choices: the fast path for rollouts and ``capicua bench engine``."""
        legal = self._legal
        if legal and not self.is_terminal():
            stop = self.hand + 1 if hand_only else -1
            self._run(legal[int(rng.random() * len(legal))], rng.random, stop)

    def _draw_until_playable(self, seat: int, ends: int) -> int:
        """``seat`` draws until it holds a tile of ``ends`` (a mask) or the stock is out."""
        g, events, stock = self.game, self._events, self._stock
        while self._stock_pos < len(stock):
            bit = stock[self._stock_pos]
            self._stock_pos += 1
            self._hands[seat] |= bit
            self._held |= bit
            events.append(g.draw_events[(bit.bit_length() - 1) * g.seats + seat])
            if bit & ends:
                break
        return self._hands[seat] & ends

    # -- hands: deal, redeal, opening -----------------------------------------------------

    def _start_hand(self) -> None:
        self._log = log = HandLog(self.hand, self.game.table)
        self.log.hands.append(log)
        self._events = _event_list(log)
        self._deal(0)
        if self.rules.redeal_min_doubles:
            self._redeal_queue = redeal_askers(self.game, self._hands, self._offered)
            if self._redeal_queue:
                self._phase = Phase.REDEAL
                self._turn = self._redeal_queue[0]

    def _deal(self, attempt: int) -> None:
        """Deal ``attempt`` of the current hand (1 after a redeal) and offer its opening."""
        order = self._chance.order(self.hand, attempt)
        self.attempt = attempt
        self._log.deals.append((attempt, order))
        g = self.game
        hands = self._hands
        self._held = held = _deal_blocks(order, hands, g.hand_size)
        self._stock = order[g.dealt :]
        self._stock_pos = 0
        self._left = self._right = -1
        self._opener = self._last = -1
        # (unpacked, not *args: the compiled build calls _open directly)
        seat, forced_tile, may_defer = self._chance.opening(self.hand, hands, held, self._prev)
        self._open(seat, forced_tile, may_defer)

    def _answer_redeal(self, redeal: bool) -> None:
        seat = self._redeal_queue.pop(0)
        self._events.append((EV_REDEAL if redeal else EV_KEEP, seat, 0, 0))
        if redeal:
            self._redeal_queue = []
            self._deal(1)
        if self._redeal_queue:
            self._turn = self._redeal_queue[0]
        else:
            self._phase = Phase.PLAY
            self._turn = self._offered

    def _open(self, seat: int, forced_tile: int, may_defer: bool) -> None:
        """Offer ``seat`` the opening: with tile index ``forced_tile`` (-1: any tile), and the
        choice to defer it if ``may_defer`` and it has a partner."""
        self._offered = self._turn = seat
        self._log.offered.append(seat)
        self._forced_open = forced_tile
        self._can_defer = may_defer and self.game.partner[seat] >= 0

    # -- the end of a hand: scoring and match progression ---------------------------------

    def _end_hand(self, kind: HandEnd, seat: int, last_tile: int, left: int, right: int) -> None:
        g = self.game
        table = g.table
        hands = self._hands
        # A finish bonus needs the tile that went out and the ends it was laid on.
        domino = kind is _DOMINO
        opener = self._opener
        # (table.pips_of called on the table: compiled, a direct call; map calls a bound
        # method through Python's call protocol)
        pips = tuple([table.pips_of(h) for h in hands])
        scores = tuple(self.scores)
        tile = table.tiles[last_tile] if domino else None
        ends = (left, right) if domino and left >= 0 else None
        ending: EndingArgs = (kind, seat, opener, pips, scores, tile, ends)
        # (the arguments one by one: the compiled build calls score_hand directly, where
        # *ending goes through Python's call protocol)
        score = score_hand(self.rules, kind, seat, opener, pips, scores, tile, ends)
        log = self._log  # what the hand's records are built from (set here: a call costs more)
        log.masks, log.ending, log.score = tuple(hands), ending, score
        credited = -1 if score.winner_seat is None else score.winner_seat
        self._prev = (kind, score.winner, seat, opener, credited)
        outcome = match_outcome(self.rules, score, self.hand)
        self.scores[:] = score.scores if outcome is None else outcome.scores
        if outcome is not None:
            self._finish(outcome)
        else:
            self.hand += 1
            self._start_hand()

    def _finish(self, outcome: Outcome) -> Outcome:
        self.log.outcome = outcome
        self._phase = Phase.OVER
        self._legal = ()
        return outcome

    # -- ending a match from outside: forfeits and cancellation ----------------------------

    def forfeit(
        self, side: int, termination: Termination = Termination.FORFEIT, reason: str = ""
    ) -> Outcome:
        """End the match now with ``side`` losing (ranked last). The winner is the best
        other side by score, or none if that is tied."""
        if self.is_terminal():
            raise IllegalActionError("the match is over")
        return self._finish(Outcome.forfeit(self.scores, side, termination, reason))

    def cancel(self, reason: str = "cancelled") -> Outcome:
        """End the match now with no winner."""
        if self.is_terminal():
            raise IllegalActionError("the match is over")
        return self._finish(Outcome.cancelled(self.scores, reason))


def _deal_blocks(order: list[int], hands: list[int], hand_size: int) -> int:
    """Set every seat's tile mask in ``hands`` from its block of ``order`` (a deal's tile
    bits in dealing order); the union of the blocks."""
    held = 0
    for s in range(len(hands)):
        # The bits or'ed one by one: compiled, native work on the list's ints, where sum()
        # is a generic call per seat (and a slice object, a generic read).
        m = 0
        for bit in order[s * hand_size : (s + 1) * hand_size]:
            m |= bit
        hands[s] = m
        held |= m
    return held


def _copy_fields(state: MatchState, other: MatchState) -> None:
    """Copy ``state``'s fields to the blank ``other`` (:meth:`MatchState.clone`): the
    mutable ones as copies, the match log as a copy sharing its finished hands. Field by
    field, not through ``__slots__`` by name: the compiled build (mypyc) has no class-level
    ``__slots__`` to walk, and explicit stores are faster in both builds."""
    other.game = state.game
    other.rules = state.rules
    other.seed = state.seed
    other.auto_forced = state.auto_forced
    other.scores = list(state.scores)
    other.hand = state.hand
    other.attempt = state.attempt
    other.log = state.log.copy()
    other._hands = list(state._hands)
    other._held = state._held
    other._stock = state._stock  # never changed in place: shared
    other._stock_pos = state._stock_pos
    other._left = state._left
    other._right = state._right
    other._turn = state._turn
    other._phase = state._phase
    other._opener = state._opener
    other._offered = state._offered
    other._can_defer = state._can_defer
    other._forced_open = state._forced_open
    other._redeal_queue = list(state._redeal_queue)
    other._last = state._last
    other._legal = state._legal
    other._prev = state._prev


def _event_list(log: HandLog) -> list[object]:
    """``log``'s events as the loop appends to them (RawEvent tuples, typed as objects: see
    Game.play_events)."""
    return cast("list[object]", log.events)


def _game_of(ruleset: Ruleset) -> Game:
    return Game(ruleset)


# (the compiled build cannot make a Game without its ruleset: a Game pickles as its
# ruleset, from which it derives everything)
copyreg.pickle(Game, lambda game: (_game_of, (game.ruleset,)))
