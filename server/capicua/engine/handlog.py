"""The raw log of a match and of each of its hands, and the typed records built from them.

While a hand is played the engine appends raw event tuples ``(kind, seat, tile index,
end)`` (kinds ``EV_*``) to its :class:`HandLog`, keeps each deal as the shuffled tile bits
and, when the hand ends, the arguments and the result of
:func:`~capicua.engine.scoring.score_hand`. A :class:`MatchLog` (``state.log``) holds every
hand's log and the match's outcome, and is the read API of the record: the typed values of
:mod:`capicua.engine.records` (events, hand records and results, hand summaries, the
replay) are built from the raw logs on demand, off the hot path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from capicua.engine.actions import End
from capicua.engine.line import EMPTY as EMPTY_LINE
from capicua.engine.line import Line
from capicua.engine.records import (
    Deal,
    Defer,
    Draw,
    Event,
    HandRecord,
    HandResult,
    HandSummary,
    Outcome,
    Pass,
    Play,
    RedealChoice,
    Replay,
)
from capicua.engine.rules import Ruleset
from capicua.engine.scoring import EndingArgs, HandEnding, HandScore
from capicua.engine.tiles import TileTable

# Raw event tuples: (kind, seat, tile_index, end). Final: the compiled build (mypyc) puts
# Final ints into the code as constants; other module globals are a dict lookup each read.
EV_PLAY: Final = 0
EV_PASS: Final = 1
EV_DRAW: Final = 2
EV_DEFER: Final = 3
EV_REDEAL: Final = 4
EV_KEEP: Final = 5
RawEvent = tuple[int, int, int, int]
_ENDS: Final = (End.LEFT, End.RIGHT)  # a raw event's end (End(end) is a slow enum call)


def typed_event(raw: RawEvent, table: TileTable) -> Event:
    """The typed event of a raw event tuple; a draw whose tile index is -1 (another seat's,
    as :func:`~capicua.engine.observation.raw_event_for_seat` masks it) shows no tile."""
    kind, seat, t, end = raw
    if kind == EV_PLAY:
        return Play(seat, table.tiles[t], End(end))
    if kind == EV_PASS:
        return Pass(seat)
    if kind == EV_DRAW:
        return Draw(seat, table.tiles[t] if t >= 0 else None)
    if kind == EV_DEFER:
        return Defer(seat)
    return RedealChoice(seat, kind == EV_REDEAL)


class HandLog:
    """Raw record of one hand, turned into typed records on demand (off the hot path)."""

    __slots__ = (
        "hand", "table", "deals", "offered", "events", "masks", "ending", "score", "_result",
        "choices", "options", "_line", "_folded",
    )  # fmt: skip

    def __init__(self, hand: int, table: TileTable) -> None:
        self.hand = hand
        self.table = table
        self.deals: list[tuple[int, list[int]]] = []  # (attempt, shuffled tile bits)
        # The seat offered the opening of each deal (public: every seat sees it, a redealt
        # deal's too, which no record keeps).
        self.offered: list[int] = []
        self.events: list[RawEvent] = []
        # Set by the engine when the hand ends: every seat's tiles left (masks), how it
        # ended (score_hand's arguments) and its score.
        self.masks: tuple[int, ...] = ()
        self.ending: EndingArgs | None = None
        self.score: HandScore | None = None
        self._result: HandResult | None = None
        # Turns at which the seat to play had more than one legal action, and how many
        # actions those turns offered in all (counted by the engine as it offers them).
        self.choices = 0
        self.options = 0
        # The current deal's line as last folded, and how many events it folded.
        self._line: Line = EMPTY_LINE
        self._folded = 0

    def copy(self) -> HandLog:
        """An independent copy of a hand in progress (its lists copied, the rest shared)."""
        other = HandLog(self.hand, self.table)
        other.deals = list(self.deals)
        other.offered = list(self.offered)
        other.events = list(self.events)
        other.masks, other.ending, other.score = self.masks, self.ending, self.score
        other._result, other.choices, other.options = self._result, self.choices, self.options
        other._line, other._folded = self._line, self._folded
        return other

    def line(self) -> Line:
        """The line of play of the hand's current deal. The engine's hot path keeps only
        its ends; the line is folded from the events when asked, from where the last call
        left off (every view asks for it, once per decision: the events are append-only)."""
        events = self.events
        line, tiles = self._line, self.table.tiles
        # Line.apply on the raw events, without a typed event each (this is on every
        # decision's round trip): a play is laid, a granted redeal starts an empty line,
        # nothing else changes it. tests/test_observation.py holds it to Line.of.
        for kind, _seat, t, end in events[self._folded :]:
            if kind == EV_PLAY:
                line = line.play(tiles[t], _ENDS[end])
            elif kind == EV_REDEAL:
                line = EMPTY_LINE
        self._line, self._folded = line, len(events)
        return line

    @property
    def result(self) -> HandResult | None:
        if self._result is None and self.ending is not None and self.score is not None:
            end, seat, opener, pips, *_ = self.ending
            sc = self.score
            self._result = HandResult(
                self.hand, end, sc.winner, seat, opener,
                tuple(self.table.tiles_of(m) for m in self.masks), pips, sc.base, sc.bonuses,
                sc.points, sc.awarded, sc.reset, sc.scores,
            )  # fmt: skip
        return self._result

    def record(self, seats: int, hand_size: int) -> HandRecord:
        """The hand's typed record, its deals cut into ``seats`` hands of ``hand_size``."""
        return HandRecord(
            hand=self.hand,
            deals=tuple(
                self._deal(attempt, order, seats, hand_size) for attempt, order in self.deals
            ),
            events=tuple(typed_event(e, self.table) for e in self.events),
            result=self.result,
        )

    def _deal(self, attempt: int, order: list[int], seats: int, n: int) -> Deal:
        tiles = self.table.tiles
        return Deal(
            attempt=attempt,
            hands=tuple(
                tuple(tiles[b.bit_length() - 1] for b in order[s * n : (s + 1) * n])
                for s in range(seats)
            ),
            stock=tuple(tiles[b.bit_length() - 1] for b in order[seats * n :]),
        )

    def summary(self) -> HandSummary | None:
        """The hand in numbers, None while it is played or if it was cut short."""
        ending, score = self.ending, self.score
        if ending is None or score is None:
            return None
        end, _seat, opener, *_ = ending
        counts = [0] * 6
        for event in self.events:
            counts[event[0]] += 1
        return HandSummary(
            hand=self.hand,
            end=end,
            winner=score.winner,
            opener=opener,
            points=score.points,
            bonuses=score.bonuses,
            reset=score.reset,
            plays=counts[EV_PLAY],
            passes=counts[EV_PASS],
            draws=counts[EV_DRAW],
            defers=counts[EV_DEFER],
            redeals=counts[EV_REDEAL],
            choices=self.choices,
            options=self.options,
        )


class MatchLog:
    """The record of one match as the engine plays it (``state.log``): its ruleset and
    seed, every hand's :class:`HandLog` in the order dealt (``hands``; the last is the
    current hand) and, once the match is over, its outcome.

    The read API of the record: raw events for hot paths, typed events, hand records,
    results and summaries, and the whole :class:`~capicua.engine.records.Replay`, each
    built from the raw logs when asked. ``hand`` arguments index ``hands``: the match's
    hand number (a position set up mid-match starts its log at 0)."""

    __slots__ = ("ruleset", "seed", "table", "hands", "outcome")

    def __init__(self, ruleset: Ruleset, seed: int, table: TileTable) -> None:
        self.ruleset = ruleset
        self.seed = seed
        self.table = table
        self.hands: list[HandLog] = []  # the engine appends each hand's as it deals it
        self.outcome: Outcome | None = None  # set by the engine when the match ends

    def copy(self) -> MatchLog:
        """An independent copy for a cloned state: the current hand's log is copied,
        finished hands' logs (never changed again) are shared."""
        other = MatchLog(self.ruleset, self.seed, self.table)
        other.hands = [*self.hands[:-1], self.hands[-1].copy()] if self.hands else []
        other.outcome = self.outcome
        return other

    def _hand(self, hand: int | None) -> HandLog:
        return self.hands[-1 if hand is None else hand]

    def event(self, raw: RawEvent) -> Event:
        """The typed event of a raw event tuple (full information)."""
        return typed_event(raw, self.table)

    def events(self, hand: int | None = None) -> list[Event]:
        """Every event of ``hand`` (default: the current one), full information."""
        table = self.table
        return [typed_event(e, table) for e in self._hand(hand).events]

    def raw_events(self, hand: int | None = None) -> list[RawEvent]:
        """The raw event tuples ``(kind, seat, tile index, end)`` of ``hand`` (default: the
        current one), kinds ``EV_*``: append-only while the hand is played, and read-only
        to callers. The events API for hot paths (the server's event batches, a search
        bot's tree keys); :meth:`events` gives typed events."""
        return self._hand(hand).events

    @property
    def hands_dealt(self) -> int:
        """The hands dealt so far (the current one included)."""
        return len(self.hands)

    def hand_over(self, hand: int) -> bool:
        """Whether ``hand`` has its result (it ended with a domino or a block)."""
        return self.hands[hand].result is not None

    def ending(self, hand: int | None = None) -> HandEnding | None:
        """How ``hand`` (default: the current one) ended, in the plain values
        :func:`~capicua.engine.scoring.score_hand` scores; None until it has ended."""
        ending = self._hand(hand).ending
        return None if ending is None else HandEnding(*ending)

    def record(self, hand: int) -> HandRecord:
        """Everything that happened in ``hand``, as typed values (with every tile)."""
        return self.hands[hand].record(self.ruleset.seats, self.ruleset.hand_size)

    def summary(self, hand: int) -> HandSummary | None:
        """Hand ``hand`` in numbers (None while it is being played or if it was cut short);
        cheaper than :meth:`record`, which builds every tile of the record."""
        return self.hands[hand].summary()

    def results(self) -> list[HandResult]:
        """Results of every finished hand, in order."""
        return [log.result for log in self.hands if log.result is not None]

    def replay(
        self,
        players: Sequence[str] | None = None,
        *,
        match_id: str = "",
        tags: Sequence[str] = (),
    ) -> Replay:
        """The complete record of the match so far (holds hidden information and the seed)."""
        seats = self.ruleset.seats
        return Replay(
            ruleset=self.ruleset,
            seed=self.seed,
            players=tuple(players or (f"seat{s}" for s in range(seats))),
            hands=tuple(self.record(i) for i in range(len(self.hands))),
            outcome=self.outcome,
            match_id=match_id,
            tags=tuple(tags),
        )
