"""The authoritative engine: an immutable :class:`Game` and a mutable :class:`MatchState`.

``Game(ruleset)`` precomputes the tables a ruleset needs; ``game.new_match(seed)`` starts a
match. As in OpenSpiel, the state exposes the seat to act, its legal actions, ``apply``,
``is_terminal()`` and per-seat ``returns()``; draws, passes, block detection, scoring and
the next deal happen inside ``apply`` (they are not choices). Inside, one decision is
applied by ``_play`` (or ``_special``: DEFER, a redeal answer) and ``_forced_steps`` runs
what nobody decides up to the next decision. With ``auto_forced`` a decision with a
single legal action is applied without asking too.
The rules the state only drives live beside it: how a finished hand is scored
(:mod:`capicua.engine.scoring`), who opens a hand (:mod:`capicua.engine.opening`) and the
hand's log with the records built from it (:mod:`capicua.engine.handlog`).

The hot path works on ints: a hand is a bitmask over tile indices, an action is
``tile_index * 2 + end`` (negative for DEFER/REDEAL/KEEP), an event is a small tuple.
Typed values (:class:`~capicua.engine.actions.Action`, the records in
:mod:`capicua.engine.records`) are built on demand at the boundary, so ``capicua bench
engine`` measures this very code, not a copy of the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from enum import IntEnum
from random import Random

from capicua.engine.actions import (
    DEFER,
    KEEP,
    REDEAL,
    Action,
    IllegalActionError,
    InvalidActionError,
)
from capicua.engine.dealing import shuffled

# The raw event kinds and RawEvent are re-exported (``X as X``): importers read them here.
from capicua.engine.handlog import EV_DEFER as EV_DEFER
from capicua.engine.handlog import EV_DRAW as EV_DRAW
from capicua.engine.handlog import EV_KEEP as EV_KEEP
from capicua.engine.handlog import EV_PASS as EV_PASS
from capicua.engine.handlog import EV_PLAY as EV_PLAY
from capicua.engine.handlog import EV_REDEAL as EV_REDEAL
from capicua.engine.handlog import HandLog, typed_event
from capicua.engine.handlog import RawEvent as RawEvent
from capicua.engine.line import EMPTY as EMPTY_LINE
from capicua.engine.line import Line
from capicua.engine.opening import PreviousHand, open_hand, opening_method
from capicua.engine.records import (
    Event,
    HandEnd,
    HandRecord,
    HandResult,
    HandSummary,
    Outcome,
    Replay,
    Termination,
)
from capicua.engine.rules import (
    Ruleset,
    Sides,
    Stock,
    TurnOrder,
    load_preset,
)
from capicua.engine.scoring import EndingArgs, HandEnding, HandScore, score_hand
from capicua.engine.tiles import Tile, highest_tile_key, iter_bits, tile_table


class Phase(IntEnum):
    """What the seat to act is deciding."""

    REDEAL = 0  # answer a redeal offer: REDEAL or KEEP
    PLAY = 1  # play a tile (or open, or DEFER an offered opening)
    OVER = 2  # the match is over


_REDEAL_PHASE = Phase.REDEAL
_PLAY_PHASE = Phase.PLAY
_OVER_PHASE = Phase.OVER
_NO_ACTION = -100  # "no decision to apply" for _run
_REDEAL_LEGAL = (REDEAL, KEEP)

# A replacement for the seeded deal: (hand, attempt) -> every tile in dealing order.
Dealer = Callable[[int, int], Sequence[Tile]]
#: ``hand -> seat``: who opens ``hand`` when the rules draw a random seat (``random_side``).
OpenerDraw = Callable[[int], int]


# How a hand ended, as module globals: the loop every playout runs compares with them once
# per hand (an enum member looked up on its class costs more than the comparison).
_DOMINO, _BLOCK = HandEnd.DOMINO, HandEnd.BLOCK


class Game:
    """A ruleset plus the tables derived from it. Immutable; share it between matches."""

    __slots__ = (
        "ruleset", "table", "deck", "width", "low", "high", "pips", "suit", "other",
        "doubles", "by_height", "side", "side_seats", "num_sides", "next_seat",
        "partner", "opening_index", "deck_bits", "first_opening", "opening_after",
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
        self.partner = tuple((s + 2) % 4 if r.sides is Sides.TEAMS else -1 for s in range(r.seats))
        self.opening_index = table.index[r.opening_tile] if r.opening_tile else -1
        self.deck_bits: tuple[int, ...] = tuple(1 << i for i in self.deck)
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
        return MatchState(self, seed, self._auto(auto_forced), dealer, opener, start=begin)

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
        r = self.ruleset
        if len(hands) != r.seats or len(scores) != self.num_sides:
            raise ValueError(f"new_position: needs {r.seats} hands and {self.num_sides} scores")
        index = self.table.index
        tile_lists = [list(h) for h in hands]
        if any(len(set(h)) != len(h) for h in tile_lists):
            raise ValueError("new_position: a tile is in two places")
        masks = [sum(1 << index[t] for t in h) for h in tile_lists]
        stock_bits = [1 << index[t] for t in stock]
        placed = 0
        for bit in [*masks, *stock_bits]:
            if placed & bit:
                raise ValueError("new_position: a tile is in two places")
            placed |= bit
        return MatchState.at_position(
            self,
            seed,
            self._auto(auto_forced),
            hand=hand,
            scores=scores,
            hands=masks,
            stock=stock_bits,
            ends=ends,
            turn=turn,
            opener=-1 if opener is None else opener,
            last=-1 if last is None else last,
            can_defer=can_defer,
            dealer=dealer,
            chance_opener=chance_opener,
            as_dealt=as_dealt,
            begin=begin,
        )

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
    suit = game.suit
    if left < 0:
        return [t << 1 for t in iter_bits(hand)]
    if left == right:
        return [t << 1 for t in iter_bits(hand & suit[left])]
    return [t << 1 for t in iter_bits(hand & suit[left])] + [
        (t << 1) | 1 for t in iter_bits(hand & suit[right])
    ]


def ends_after_code(game: Game, left: int, right: int, code: int) -> tuple[int, int]:
    """The open ends after play ``code`` on ends ``left``/``right`` (-1: an opening)."""
    t = code >> 1
    if left < 0:
        return game.low[t], game.high[t]
    if code & 1:
        return left, game.other[t * game.width + right]
    return game.other[t * game.width + left], right


class MatchState:
    """One match in progress. Create with :meth:`Game.new_match`."""

    # Slots: every playout reads and writes these a few times per move.
    __slots__ = (
        "_dealer", "_opener_draw", "game", "rules", "seed", "auto_forced", "scores", "hand",
        "attempt", "logs", "outcome", "_hands", "_held", "_stock", "_stock_pos", "_left", "_right",
        "_turn", "_phase", "_opener", "_offered", "_can_defer", "_forced_open",
        "_redeal_queue", "_last", "_legal", "_line", "_draw_stock", "_prev", "_log",
        "_events",
    )  # fmt: skip

    def __init__(
        self,
        game: Game,
        seed: int,
        auto_forced: tuple[bool, ...],
        dealer: Dealer | None = None,
        opener: OpenerDraw | None = None,
        *,
        start: bool = True,
    ) -> None:
        if seed < 0:
            raise ValueError("seed must be a non-negative integer")
        self._dealer = dealer
        self._opener_draw = opener
        self.game = game
        self.rules = game.ruleset
        self.seed = seed
        self.auto_forced = auto_forced
        self.scores = [0] * game.num_sides
        self.hand = 0  # index of the current hand
        self.attempt = 0
        self.logs: list[HandLog] = []
        self.outcome: Outcome | None = None
        self._hands = [0] * self.rules.seats
        self._held = 0  # union of every seat's tiles
        self._stock: list[int] = []
        self._stock_pos = 0
        self._left = -1  # open ends; -1 before the first tile
        self._right = -1
        self._turn = 0
        self._phase = Phase.PLAY
        self._opener = -1  # seat that played the first tile of this hand
        self._offered = -1  # seat offered the opening (opener-to-be)
        self._can_defer = False
        self._forced_open = -1  # tile index the opener must play, -1 for any tile
        self._redeal_queue: list[int] = []
        self._last = -1  # last seat that played (the locker of a block)
        self._legal: tuple[int, ...] = ()
        # The current deal's line as last folded: (the hand's log, events folded, line).
        self._line: tuple[HandLog | None, int, Line] = (None, 0, EMPTY_LINE)
        self._draw_stock = self.rules.stock is Stock.DRAW
        # About the previous hand, for the next opening.
        self._prev: PreviousHand | None = None
        if start:
            self._start_hand()
            self._advance()

    @classmethod
    def at_position(
        cls,
        game: Game,
        seed: int,
        auto_forced: tuple[bool, ...],
        *,
        hand: int,
        scores: Sequence[int],
        hands: list[int],
        stock: list[int],
        ends: tuple[int, int] | None,
        turn: int,
        opener: int,
        last: int,
        can_defer: bool,
        dealer: Dealer | None = None,
        chance_opener: OpenerDraw | None = None,
        as_dealt: bool = False,
        begin: bool = True,
    ) -> MatchState:
        """The state :meth:`Game.new_position` describes, from checked values: every seat's
        tile mask, the stock's tile bits in drawing order, -1 for no opener or last seat."""
        state = cls(game, seed, auto_forced, dealer, chance_opener, start=False)
        state.hand = hand
        state.scores = list(scores)
        state._log = HandLog(hand, game.table)
        state._events = state._log.events
        state.logs = [state._log]
        if as_dealt:
            order = [1 << i for h in hands for i in range(h.bit_length()) if h >> i & 1]
            state._log.deals.append((0, order + list(stock)))
        state._hands = hands
        state._held = sum(hands)
        state._stock = stock
        state._left, state._right = ends if ends is not None else (-1, -1)
        state._opener = opener
        state._last = last
        state._open(turn, -1, can_defer)
        if begin:
            state._advance()
        return state

    def begin(self) -> None:
        """Deal the first hand (a match made with ``begin=False``; a position: run its
        forced steps) and run to the first decision."""
        if not self.logs:
            self._start_hand()
        self._advance()

    def clone(
        self, *, dealer: Dealer | None = None, opener: OpenerDraw | None = None
    ) -> MatchState:
        """An independent copy of this match, as a search or an OpenSpiel state clones it:
        every mutable field and the current hand's log are copied, finished hands' logs
        (never changed again) are shared. ``dealer`` and ``opener`` replace the match's
        own chance hooks (None: keep them)."""
        other = MatchState.__new__(MatchState)
        for name in MatchState.__slots__:
            if hasattr(self, name):
                setattr(other, name, getattr(self, name))
        other.scores = list(self.scores)
        other._hands = list(self._hands)
        other._stock = list(self._stock)
        other._redeal_queue = list(self._redeal_queue)
        if self.logs:
            log = self._log.copy()
            other.logs = [*self.logs[:-1], log]
            other._log, other._events = log, log.events
            folded, seen, line = self._line
            other._line = (log, seen, line) if folded is self._log else (None, 0, EMPTY_LINE)
        if dealer is not None:
            other._dealer = dealer
        if opener is not None:
            other._opener_draw = opener
        return other

    # -- public queries -------------------------------------------------------------------

    def is_terminal(self) -> bool:
        """Whether the match is over (won, drawn at the hand limit, forfeited or cancelled)."""
        return self._phase is _OVER_PHASE

    def returns(self) -> tuple[float, ...]:
        """Each seat's result of the match, zero-sum: 1 for every seat of the winning side,
        ``-1 / (sides - 1)`` for every other seat; all 0 while the match is being played and
        when it ended without a winner (a tie at the hand limit, a cancellation)."""
        outcome = self.outcome
        g = self.game
        if outcome is None or outcome.winner is None:
            return (0.0,) * self.rules.seats
        lose = -1.0 / (g.num_sides - 1)
        return tuple(1.0 if g.side[s] == outcome.winner else lose for s in range(self.rules.seats))

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

    def is_legal(self, action: Action) -> bool:
        try:
            return action.code(self.game.table) in self._legal
        except IllegalActionError:
            return False

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
        """The line of play of the current deal. The hot path keeps only its ends; the
        line is folded from the hand's events when asked, from where the last call left
        off (every view asks for it, once per decision: the events are append-only)."""
        log, seen, line = self._line
        events = self._log.events
        if log is not self._log:
            seen, line = 0, EMPTY_LINE
        table = self.game.table
        for raw in events[seen:]:
            line = line.apply(typed_event(raw, table))
        self._line = (self._log, len(events), line)
        return line

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

    # -- applying actions -----------------------------------------------------------------

    def apply(self, code: int) -> None:
        """Apply a legal action code; raises :class:`IllegalActionError` otherwise."""
        if code not in self._legal:
            raise IllegalActionError(self._illegal_reason(code))
        self._run(code)

    def apply_action(self, action: Action) -> None:
        """Apply a typed action (validated)."""
        self.apply(action.code(self.game.table))

    def parse(self, text: str) -> Action:
        """Parse ``text`` as an action legal now. Malformed text raises
        :class:`InvalidActionError`, a well-formed but illegal one :class:`IllegalActionError`."""
        action = Action.parse(text)
        if not self.is_legal(action):
            try:
                code = action.code(self.game.table)
            except IllegalActionError as e:
                raise IllegalActionError(str(e)) from None
            raise IllegalActionError(self._illegal_reason(code))
        return action

    def apply_text(self, text: str) -> Action:
        action = self.parse(text)
        self.apply_action(action)
        return action

    def _illegal_reason(self, code: int) -> str:
        if self._phase is _OVER_PHASE:
            return "the match is over"
        try:
            what = str(Action.from_code(code, self.game.table))
        except (KeyError, IndexError):
            raise InvalidActionError(f"no such action code {code}") from None
        legal = ", ".join(str(a) for a in self.legal())
        return f"{what} is not legal for seat {self._turn} now (legal: {legal})"

    def _special(self, code: int) -> None:
        if self._phase is _REDEAL_PHASE:
            self._answer_redeal(code == REDEAL)
        else:  # DEFER: the partner must open with any tile
            seat = self._turn
            self._events.append((EV_DEFER, seat, 0, 0))
            self._turn = self.game.partner[seat]
            self._can_defer = False

    def _run(self, code: int, rand: Callable[[], float] | None = None, stop_hand: int = -1) -> None:
        """Apply decision ``code`` (trusted; ``_NO_ACTION`` for none), then the engine's own
        decisions (single options with ``auto_forced``) until a seat must decide or the
        match is over.

        With ``rand``, decisions are taken uniformly at random instead of returning (a
        rollout), until the match ends or hand ``stop_hand`` has begun. This is the
        engine's hot path: every decision of every match and every bot rollout runs it.
        """
        auto = self.auto_forced
        play, forced_steps = self._play, self._forced_steps  # bound once: a playout's loop
        while True:
            if code >= 0:
                play(code)
            elif code != _NO_ACTION:
                self._special(code)
            legal = forced_steps()
            if not legal:  # the match is over
                return
            if len(legal) == 1:
                if auto[self._turn]:
                    code = legal[0]
                    continue
            elif self._phase is _PLAY_PHASE:  # a turn with a real choice: what experiments
                log = self._log  # measure of how much a ruleset leaves to the player
                log.choices += 1
                log.options += len(legal)
            if rand is not None and self.hand != stop_hand:
                code = legal[int(rand() * len(legal))]
            else:
                self._legal = legal
                return

    def _play(self, code: int) -> None:
        """Lay tile ``code >> 1`` on end ``code & 1`` for the seat to act; end the hand if
        that was its last tile or nobody can play any more, else pass the turn on."""
        g = self.game
        turn = self._turn
        t = code >> 1
        bit = 1 << t
        hand = self._hands[turn] ^ bit
        self._hands[turn] = hand
        held = self._held ^ bit
        self._held = held
        self._events.append((EV_PLAY, turn, t, code & 1))
        self._last = turn
        left = old_left = self._left
        right = old_right = self._right
        if left < 0:
            self._opener = turn
            left = g.low[t]
            right = g.high[t]
        elif code & 1:
            right = g.other[t * g.width + right]
        else:
            left = g.other[t * g.width + left]
        self._left = left
        self._right = right
        suit = g.suit
        if hand and (
            held & (suit[left] | suit[right])
            or self._draw_stock
            and self._stock_pos < len(self._stock)
        ):
            self._turn = g.next_seat[turn]
        else:  # domino out, or nobody can play and nothing can be drawn: blocked
            self._end_hand(_BLOCK if hand else _DOMINO, turn, t, old_left, old_right)

    def _forced_steps(self) -> tuple[int, ...]:
        """Run what nobody decides (draws, passes, a block found after the stock ran out)
        until a seat has a decision; its legal actions, () when the match is over."""
        g = self.game
        suit = g.suit
        hands = self._hands
        while True:
            phase = self._phase
            if phase is not _PLAY_PHASE:
                if phase is _OVER_PHASE:
                    return ()
                return _REDEAL_LEGAL
            turn = self._turn
            left = self._left
            if left < 0:
                return self._opening_legal(hands[turn])
            right = self._right
            ends = suit[left] | suit[right]
            playable = hands[turn] & ends
            if not playable and self._draw_stock and self._stock_pos < len(self._stock):
                playable = self._draw_until_playable(turn)
            if playable:
                # Plays on the left end first, then on the right, each in tile order; with
                # equal ends both placements are the same move: offered once, on the left.
                table = g.table
                pl = playable & suit[left]
                legal = table.left_codes.get(pl)
                if legal is None:
                    legal = table.play_codes(pl, 0)
                if left != right:
                    pr = playable & suit[right]
                    if pr:
                        more = table.right_codes.get(pr)
                        legal += table.play_codes(pr, 1) if more is None else more
                return legal
            if self._held & ends:
                self._events.append((EV_PASS, turn, 0, 0))
                self._turn = g.next_seat[turn]
            else:  # the draws emptied the stock and nobody can play: blocked
                self._end_hand(_BLOCK, self._last, -1, left, right)

    def _opening_legal(self, hand: int) -> tuple[int, ...]:
        """The opener's choices: the forced tile, or any tile (and DEFER if offered)."""
        if self._forced_open >= 0:
            return (self._forced_open * 2,)
        legal = tuple(t << 1 for t in iter_bits(hand))
        return legal + (DEFER,) if self._can_defer else legal

    def _advance(self) -> None:
        """Run the forced steps from the current position (used after a new deal)."""
        self._run(_NO_ACTION)

    def random_playout(self, rng: Random, *, hand_only: bool = False) -> None:
        """Play uniformly random legal actions until the match (or, with ``hand_only``, the
        current hand) is over. The same code path as :meth:`apply`, without re-validating
        the engine's own choices: the fast path for rollouts and ``capicua bench engine``."""
        legal = self._legal
        if legal and not self.is_terminal():
            stop = self.hand + 1 if hand_only else -1
            self._run(legal[int(rng.random() * len(legal))], rng.random, stop)

    def _draw_until_playable(self, seat: int) -> int:
        g = self.game
        ends = g.suit[self._left] | g.suit[self._right]
        events = self._events
        stock = self._stock
        while self._stock_pos < len(stock):
            bit = stock[self._stock_pos]
            self._stock_pos += 1
            self._hands[seat] |= bit
            self._held |= bit
            events.append((EV_DRAW, seat, bit.bit_length() - 1, 0))
            if bit & ends:
                break
        return self._hands[seat] & ends

    # -- hands: deal, redeal, opening -----------------------------------------------------

    def _start_hand(self) -> None:
        self._log = HandLog(self.hand, self.game.table)
        self._events = self._log.events
        self.logs.append(self._log)
        self._deal(0)
        self._resolve_opening()
        n = self.rules.redeal_min_doubles
        if n:
            doubles = self.game.doubles
            order = self._seats_from(self._offered)
            self._redeal_queue = [s for s in order if (self._hands[s] & doubles).bit_count() >= n]
            if self._redeal_queue:
                self._phase = Phase.REDEAL
                self._turn = self._redeal_queue[0]

    def _seats_from(self, seat: int) -> list[int]:
        order = [seat]
        nxt = self.game.next_seat
        while len(order) < self.rules.seats:
            order.append(nxt[order[-1]])
        return order

    def _deal(self, attempt: int) -> None:
        r = self.rules
        # Shuffling the tiles' bits (1 << index) is the same permutation as shuffling their
        # indices, and makes each hand's mask a plain sum of its slice.
        if self._dealer is None:
            order = shuffled(self.game.deck_bits, self.seed, self.hand, attempt)
        else:
            order = self._dealt_by_dealer(attempt)
        self.attempt = attempt
        self._log.deals.append((attempt, order))
        n = r.hand_size
        held = 0
        for s in range(r.seats):
            m = sum(order[s * n : (s + 1) * n])
            self._hands[s] = m
            held |= m
        self._held = held
        self._stock = order[r.seats * n :]
        self._stock_pos = 0
        self._left = self._right = -1
        self._opener = -1
        self._last = -1

    def _dealt_by_dealer(self, attempt: int) -> list[int]:
        assert self._dealer is not None
        index = self.game.table.index
        order = [1 << index[Tile.of(*t)] for t in self._dealer(self.hand, attempt)]
        if sorted(order) != sorted(self.game.deck_bits):
            raise ValueError("dealer: must return every tile of the set exactly once")
        return order

    def _answer_redeal(self, redeal: bool) -> None:
        seat = self._redeal_queue.pop(0)
        self._events.append((EV_REDEAL if redeal else EV_KEEP, seat, 0, 0))
        if redeal:
            self._redeal_queue = []
            self._deal(1)
            self._resolve_opening()
        if self._redeal_queue:
            self._turn = self._redeal_queue[0]
        else:
            self._phase = Phase.PLAY
            self._turn = self._offered

    def _resolve_opening(self) -> None:
        self._open(
            *open_hand(
                self.game, self._hands, self._held, self.seed, self.hand, self._prev,
                self._opener_draw,
            )
        )  # fmt: skip

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
        pips_of = g.table.pips_of
        hands = self._hands
        # A finish bonus needs the tile that went out and the ends it was laid on.
        domino = kind is _DOMINO
        ending: EndingArgs = (
            kind,
            seat,
            self._opener,
            tuple([pips_of(h) for h in hands]),
            tuple(self.scores),
            g.table.tiles[last_tile] if domino else None,
            (left, right) if domino and left >= 0 else None,
        )
        score = score_hand(self.rules, *ending)
        log = self._log  # what the hand's records are built from (set here: a call costs more)
        log.masks, log.ending, log.score = tuple(hands), ending, score
        self.scores[:] = score.scores
        credited = -1 if score.winner_seat is None else score.winner_seat
        self._prev = (kind, score.winner, seat, self._opener, credited)
        if score.wins_match:
            self._finish_normal(score)
        elif self.hand + 1 >= self.rules.max_hands:  # a redeal is not a hand
            self._finish_hand_limit()
        else:
            self.hand += 1
            self._start_hand()

    def _finish_normal(self, score: HandScore) -> None:
        winner = score.winner
        assert winner is not None
        self.scores[:] = score.final
        reason = f"side {winner} reached {self.scores[winner]} of {self.rules.target}"
        if score.shutout:
            reason += f" ({score.shutout})"
        self._finish(Termination.NORMAL, winner, reason, shutout=score.shutout)

    def _finish_hand_limit(self) -> None:
        top = max(self.scores)
        leaders = [sd for sd, sc in enumerate(self.scores) if sc == top]
        winner = leaders[0] if len(leaders) == 1 else None
        self._finish(
            Termination.HAND_LIMIT,
            winner,
            f"max_hands={self.rules.max_hands} reached; "
            + (f"side {winner} leads" if winner is not None else "scores tied, no winner"),
        )

    def _finish(
        self,
        termination: Termination,
        winner: int | None,
        reason: str,
        *,
        shutout: str | None = None,
        forfeited: int | None = None,
    ) -> None:
        self.outcome = Outcome.ended(
            termination, winner, self.scores, reason, shutout=shutout, forfeited=forfeited
        )
        self._phase = Phase.OVER
        self._legal = ()

    # -- ending a match from outside: forfeits and cancellation ----------------------------

    def forfeit(
        self, side: int, termination: Termination = Termination.FORFEIT, reason: str = ""
    ) -> Outcome:
        """End the match now with ``side`` losing (ranked last). The winner is the best
        other side by score, or none if that is tied."""
        if self.is_terminal():
            raise IllegalActionError("the match is over")
        if not termination.forfeits:
            raise ValueError(f"{termination} is not a forfeit")
        if not 0 <= side < self.game.num_sides:
            raise ValueError(f"no side {side}")
        others = [sd for sd in range(self.game.num_sides) if sd != side]
        top = max(self.scores[sd] for sd in others)
        leaders = [sd for sd in others if self.scores[sd] == top]
        winner = leaders[0] if len(leaders) == 1 else None
        self._finish(
            termination, winner, reason or f"side {side} forfeits ({termination})", forfeited=side
        )
        assert self.outcome is not None
        return self.outcome

    def cancel(self, reason: str = "cancelled") -> Outcome:
        """End the match now with no winner."""
        if self.is_terminal():
            raise IllegalActionError("the match is over")
        self._finish(Termination.CANCELLED, None, reason)
        assert self.outcome is not None
        return self.outcome

    # -- typed records --------------------------------------------------------------------

    def event(self, raw: RawEvent) -> Event:
        """The typed event of a raw event tuple (full information)."""
        return typed_event(raw, self.game.table)

    def hand_events(self, hand: int | None = None) -> list[Event]:
        """Every event of ``hand`` (default: the current one), full information."""
        table = self.game.table
        return [
            typed_event(e, table) for e in self.logs[self.hand if hand is None else hand].events
        ]

    def raw_events(self, hand: int | None = None) -> list[RawEvent]:
        """The raw event tuples ``(kind, seat, tile index, end)`` of ``hand`` (default: the
        current one), kinds ``EV_*``: append-only while the hand is played, and read-only
        to callers. The public events API for hot paths (the server's event batches, a
        search bot's tree keys); :meth:`hand_events` gives typed events."""
        return self._log.events if hand is None else self.logs[hand].events

    @property
    def hands_dealt(self) -> int:
        """The hands dealt so far (the current one included)."""
        return len(self.logs)

    def hand_over(self, hand: int) -> bool:
        """Whether ``hand`` has its result (it ended with a domino or a block)."""
        return self.logs[hand].result is not None

    def hand_ending(self, hand: int | None = None) -> HandEnding | None:
        """How ``hand`` (default: the current one) ended, in the plain values
        :func:`~capicua.engine.scoring.score_hand` scores; None until it has ended."""
        ending = self.logs[self.hand if hand is None else hand].ending
        return None if ending is None else HandEnding(*ending)

    def hand_record(self, hand: int) -> HandRecord:
        return self.logs[hand].record(self.rules.seats, self.rules.hand_size)

    def hand_summary(self, hand: int) -> HandSummary | None:
        """Hand ``hand`` in numbers (None while it is being played or if it was cut short);
        cheaper than :meth:`hand_record`, which builds every tile of the record."""
        return self.logs[hand].summary()

    def hand_results(self) -> list[HandResult]:
        """Results of every finished hand, in order."""
        return [log.result for log in self.logs if log.result is not None]

    def replay(
        self,
        players: Sequence[str] | None = None,
        *,
        match_id: str = "",
        tags: Sequence[str] = (),
    ) -> Replay:
        """The complete record of the match so far (holds hidden information and the seed)."""
        return Replay(
            ruleset=self.rules,
            seed=self.seed,
            players=tuple(players or (f"seat{s}" for s in range(self.rules.seats))),
            hands=tuple(self.hand_record(i) for i in range(len(self.logs))),
            outcome=self.outcome,
            match_id=match_id,
            tags=tuple(tags),
        )
