"""The raw log of one hand, and the typed records built from it.

While a hand is played the engine appends raw event tuples ``(kind, seat, tile index,
end)`` (kinds ``EV_*``), keeps each deal as the shuffled tile bits and, when the hand
ends, the arguments and the result of :func:`~capicua.engine.scoring.score_hand`. The
typed values of :mod:`capicua.engine.records` (events, hand records and results, hand
summaries) are built from them on demand, off the hot path.
"""

from __future__ import annotations

from capicua.engine.actions import End
from capicua.engine.records import (
    Deal,
    Defer,
    Draw,
    Event,
    HandRecord,
    HandResult,
    HandSummary,
    Pass,
    Play,
    RedealChoice,
)
from capicua.engine.scoring import EndingArgs, HandScore
from capicua.engine.tiles import TileTable

# Raw event tuples: (kind, seat, tile_index, end).
EV_PLAY, EV_PASS, EV_DRAW, EV_DEFER, EV_REDEAL, EV_KEEP = range(6)
RawEvent = tuple[int, int, int, int]


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
        "choices", "options",
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

    def copy(self) -> HandLog:
        """An independent copy of a hand in progress (its lists copied, the rest shared)."""
        other = HandLog(self.hand, self.table)
        other.deals = list(self.deals)
        other.offered = list(self.offered)
        other.events = list(self.events)
        other.masks, other.ending, other.score = self.masks, self.ending, self.score
        other._result, other.choices, other.options = self._result, self.choices, self.options
        return other

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
