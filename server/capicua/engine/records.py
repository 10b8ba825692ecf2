"""The typed record of a match: events, deals, hand results and the match outcome.

These are the values a replay is made of (``capicua.wire.codec`` converts them to the
``capicua.v1`` protobuf messages). The engine keeps its hot-path state in plain ints and
builds these at the boundary.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from capicua.common.pickling import by_constructor
from capicua.engine.actions import End
from capicua.engine.rules import Ruleset
from capicua.engine.tiles import Tile


@dataclass(frozen=True, slots=True)
class Play:
    """``seat`` placed ``tile`` on ``end`` (the first tile of a hand is on LEFT)."""

    seat: int
    tile: Tile
    end: End

    def __str__(self) -> str:
        return f"seat {self.seat} plays {self.tile}:{self.end.letter}"


def ends_after(ends: tuple[int, int] | None, tile: Tile, end: End) -> tuple[int, int]:
    """The open ends after ``tile`` is laid on ``end`` of a line showing ``ends`` (None
    before the first tile, which is laid low-left): the bots' reading of a play (the
    observation, the display and the tools fold plays with :class:`~capicua.engine.line.Line`,
    by :func:`shown_halves`)."""
    if ends is None:
        return (tile.low, tile.high)
    left, right = ends
    if end is End.LEFT:
        return (tile.open_after(left), right)
    return (left, tile.open_after(right))


def shown_halves(ends: tuple[int, int] | None, tile: Tile, end: End) -> tuple[int, int]:
    """``tile`` laid on ``end`` of a line showing ``ends``, as the line shows it left to
    right: the half that touches its neighbour inside, the new open end outside."""
    if ends is None:
        return (tile.low, tile.high)
    left, right = ends
    if end is End.LEFT:
        return (tile.open_after(left), left)
    return (right, tile.open_after(right))


@dataclass(frozen=True, slots=True)
class Pass:
    """``seat`` could not play (and could not draw)."""

    seat: int

    def __str__(self) -> str:
        return f"seat {self.seat} passes"


@dataclass(frozen=True, slots=True)
class Draw:
    """``seat`` drew one tile from the stock; ``tile`` is None in views that may not see it."""

    seat: int
    tile: Tile | None

    def __str__(self) -> str:
        return f"seat {self.seat} draws {self.tile or 'a tile'}"


@dataclass(frozen=True, slots=True)
class Defer:
    """``seat`` was offered the opening and passed it to its partner."""

    seat: int

    def __str__(self) -> str:
        return f"seat {self.seat} defers the opening to its partner"


@dataclass(frozen=True, slots=True)
class RedealChoice:
    """``seat`` answered a redeal offer; only a REDEAL is public, a KEEP is private."""

    seat: int
    redeal: bool

    def __str__(self) -> str:
        return f"seat {self.seat} {'asks for a redeal' if self.redeal else 'keeps its tiles'}"


Event = Play | Pass | Draw | Defer | RedealChoice


class HandEnd(StrEnum):
    DOMINO = "domino"
    BLOCK = "block"


class Reset(StrEnum):
    """Why every score went back to 0 after a hand."""

    REPLY = "reply"
    ALL_SCORED = "all_scored"


@dataclass(frozen=True, slots=True)
class Deal:
    """One deal of a hand: ``hands[s]`` in dealing order, then the stock in drawing order."""

    attempt: int
    hands: tuple[tuple[Tile, ...], ...]
    stock: tuple[Tile, ...]


@dataclass(frozen=True, slots=True)
class HandResult:
    """How a hand ended and what it scored (RULES: order of scoring after a hand)."""

    hand: int
    end: HandEnd
    winner: int | None  # winning side, None for a tied block
    seat: int  # the seat that went out, or the last seat that played (the locker)
    opener: int  # the seat that played the hand's first tile
    remaining: tuple[tuple[Tile, ...], ...]  # every seat's tiles, turned face up
    pips: tuple[int, ...]  # pips left per seat
    base: int  # base points for the winner (0 with no winner)
    bonuses: tuple[str, ...]  # names of finish bonuses that applied
    points: int  # base with bonuses applied
    awarded: int  # what was added to the winner's score (0 after a reply reset)
    reset: Reset | None  # a reset that happened after this hand
    scores: tuple[int, ...]  # every side's match score after the hand


class Termination(StrEnum):
    """Why a match ended. One per match; the reason gives the detail in words."""

    NORMAL = "normal"  # a side reached the target
    HAND_LIMIT = "hand_limit"  # max_hands reached first
    TIMEOUT = "timeout"  # a seat let its clock run out under the forfeit policy
    DISCONNECT = "disconnect"  # a seat's client went away
    ILLEGAL_ACTIONS = "illegal_actions"  # a seat kept sending illegal actions
    FORFEIT = "forfeit"  # a side resigned or was forfeited for another reason
    CANCELLED = "cancelled"  # stopped by its host or the server; no winner

    @property
    def forfeits(self) -> bool:
        """Whether this termination makes one side lose."""
        return self in _FORFEITS

    @property
    def counted(self) -> bool:
        """Whether the match ended by the rules (a side reached the target, or max_hands
        was reached): not forfeited, not cancelled. Its scores are a result."""
        return self in _COUNTED


_FORFEITS = {
    Termination.TIMEOUT,
    Termination.DISCONNECT,
    Termination.ILLEGAL_ACTIONS,
    Termination.FORFEIT,
}
_COUNTED = {Termination.NORMAL, Termination.HAND_LIMIT}


@dataclass(frozen=True, slots=True, init=False)
class Outcome:
    """The final result: termination kind, winning side (None if none) and scores.

    Its own ``__init__`` (the dataclass's fields, order and defaults): every simulated
    hand of a search ends a match, and the compiled build runs a dataclass's generated
    ``__init__`` interpreted (about 19,500 instructions an outcome with :meth:`ended`)."""

    termination: Termination
    winner: int | None
    scores: tuple[int, ...]  # final match score per side (shutout multiplier applied)
    ranking: tuple[int, ...]  # sides from first to last
    shutout: str | None = None  # name of the shutout flag (pollona, chiva) if it applied
    forfeited: int | None = None  # the side that lost by forfeit, if any
    reason: str = ""

    def __init__(
        self,
        termination: Termination,
        winner: int | None,
        scores: tuple[int, ...],
        ranking: tuple[int, ...],
        shutout: str | None = None,
        forfeited: int | None = None,
        reason: str = "",
    ) -> None:
        # frozen: the fields are set past the dataclass's refusing __setattr__, as its
        # generated __init__ sets them
        _set = object.__setattr__
        _set(self, "termination", termination)
        _set(self, "winner", winner)
        _set(self, "scores", scores)
        _set(self, "ranking", ranking)
        _set(self, "shutout", shutout)
        _set(self, "forfeited", forfeited)
        _set(self, "reason", reason)

    @classmethod
    def ended(
        cls,
        termination: Termination,
        winner: int | None,
        scores: Sequence[int],
        reason: str,
        *,
        shutout: str | None = None,
        forfeited: int | None = None,
    ) -> Outcome:
        """A match's outcome, its sides ranked by :func:`rank_key`: how the engine ends
        every match, and the one way to build an outcome outside it."""
        # (key, side) pairs sorted: the sides in a stable sort by key, without a Python
        # callback per side
        keyed = sorted([(rank_key(s, winner, forfeited, scores), s) for s in range(len(scores))])
        ranking = tuple([s for _, s in keyed])
        # Outcome itself, positionally: compiled, that is a direct call of its __init__ (a
        # call of ``cls``, or by keywords, is a generic one)
        return Outcome(termination, winner, tuple(scores), ranking, shutout, forfeited, reason)

    @classmethod
    def cancelled(cls, scores: Sequence[int], reason: str) -> Outcome:
        """A match stopped by its host or the server: no winner, sides ranked by score
        (``scores`` all 0 for a match cancelled before its first hand)."""
        return cls.ended(Termination.CANCELLED, None, scores, reason)

    def returns(self, side_of: Sequence[int]) -> tuple[float, ...]:
        """Each seat's result (``side_of``: each seat's side), zero-sum: 1 for every seat of
        the winning side, ``-1 / (sides - 1)`` for every other seat; all 0 when the match
        ended without a winner (a tie at the hand limit, a cancellation)."""
        if self.winner is None:
            return (0.0,) * len(side_of)
        lose = -1.0 / (len(self.scores) - 1)
        return tuple(1.0 if side == self.winner else lose for side in side_of)

    @classmethod
    def forfeit(
        cls, scores: Sequence[int], side: int, termination: Termination, reason: str = ""
    ) -> Outcome:
        """A match that ``side`` loses by ``termination`` (ranked last): the winner is the
        best other side by score, or none if that is tied."""
        if not termination.forfeits:
            raise ValueError(f"{termination} is not a forfeit")
        if not 0 <= side < len(scores):
            raise ValueError(f"no side {side}")
        winner = sole_leader(scores, [sd for sd in range(len(scores)) if sd != side])
        reason = reason or f"side {side} forfeits ({termination})"
        return cls.ended(termination, winner, scores, reason, forfeited=side)


def sole_leader(scores: Sequence[int], sides: Sequence[int]) -> int | None:
    """The one side of ``sides`` with the highest score, None if another has it too: who
    wins a match ended by the hand limit, or by a forfeit (the other sides)."""
    top = max(scores[sd] for sd in sides)
    leaders = [sd for sd in sides if scores[sd] == top]
    return leaders[0] if len(leaders) == 1 else None


@dataclass(frozen=True, slots=True)
class HandSummary:
    """A finished hand in numbers: its result without the tiles, and how many events of
    each kind it had (what experiments measure;
    :meth:`~capicua.engine.handlog.MatchLog.summary`)."""

    hand: int
    end: HandEnd
    winner: int | None  # winning side, None for a tied block
    opener: int  # the seat that played the hand's first tile
    points: int  # base with bonuses applied, before any reset
    bonuses: tuple[str, ...]  # names of the finish bonuses that applied
    reset: Reset | None
    plays: int
    passes: int
    draws: int  # tiles drawn from the stock
    defers: int  # openings passed to the partner
    redeals: int  # REDEAL answers (0 or 1: a redeal is granted once)
    choices: int = 0  # turns with more than one legal action (a real choice)
    options: int = 0  # legal actions offered at those turns, in all


@dataclass(frozen=True, slots=True)
class ThinkTime:
    """The time one decision took: from the server sending the decision request to it
    receiving the accepted answer. ``event`` indexes the hand's events (from 0); ``seat`` is
    the seat that decided, the seat of that event (kept here so that a reader of the time
    need not look the event up; a replay file written without it gets it from the event)."""

    event: int
    micros: int
    seat: int


@dataclass(frozen=True, slots=True)
class HandRecord:
    """Everything that happened in one hand, in order."""

    hand: int
    deals: tuple[Deal, ...]
    events: tuple[Event, ...]
    result: HandResult | None  # None for a hand cut short by the match's end
    # How long the clients took over their decisions (the server measures them; the
    # engine has no clock, so its own records have none). Not part of the rules: a replay
    # check ignores them.
    think_times: tuple[ThinkTime, ...] = ()

    def think_seat(self, think: ThinkTime) -> int:
        """The seat that took ``think`` (the seat of the event its decision made): its
        ``seat`` now; kept for the readers written before it had one."""
        return think.seat


@dataclass(frozen=True, slots=True)
class Replay:
    """A complete match: enough to re-simulate it event by event (``capicua replay verify``).

    The seed is in it, so a replay must only be shown to anyone after the match is over.
    """

    ruleset: Ruleset
    seed: int
    players: tuple[str, ...]  # a display name per seat
    hands: tuple[HandRecord, ...]
    outcome: Outcome | None  # None only for a replay of a match still in progress
    match_id: str = ""
    tags: tuple[str, ...] = ()


def with_think_times(replay: Replay, times: Mapping[int, Sequence[ThinkTime]]) -> Replay:
    """``replay`` with the think times of each hand (``times[hand]``, in event order)."""
    hands = tuple(
        replace(h, think_times=tuple(times.get(h.hand, ()))) if times.get(h.hand) else h
        for h in replay.hands
    )
    return replace(replay, hands=hands)


def rank_key(
    side: int, winner: int | None, forfeited: int | None, scores: Sequence[int]
) -> tuple[bool, bool, int]:
    """How a side of a finished match is placed (smaller first): a forfeited side last,
    then the winner first, then by score. The engine orders ``Outcome.ranking`` by it and
    the arena places sides by it (equal keys share a place)."""
    return (side == forfeited, side != winner, -scores[side])


# (the compiled build cannot unpickle a frozen dataclass field by field)
by_constructor(
    Play,
    Pass,
    Draw,
    Defer,
    RedealChoice,
    Deal,
    HandResult,
    Outcome,
    HandSummary,
    ThinkTime,
    HandRecord,
    Replay,
)
