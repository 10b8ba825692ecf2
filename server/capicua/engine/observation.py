"""What a seat (or a spectator) may know: the only view a player ever gets.

During a hand a seat sees its own tiles, the chain with both ends, every seat's tile
count, the stock count, the public event log (plays, passes, how many tiles were drawn,
REDEALs, deferrals), the scores, the ruleset and the results of finished hands (with every
hand turned face up). It never sees another seat's tiles, the stock or the seed. It sees
the tiles it drew itself and its own KEEP answers; a spectator sees only public events.
While a redeal offer is pending, only the asked seat sees that it is asked.
"""

from __future__ import annotations

from dataclasses import dataclass

from capicua.engine.game import EV_DRAW, EV_KEEP, MatchState, Phase, RawEvent

# PlacedTile is re-exported (``X as X``): a view's chain is read here.
from capicua.engine.line import PlacedTile as PlacedTile
from capicua.engine.records import (
    Draw,
    Event,
    HandResult,
    Outcome,
    RedealChoice,
)
from capicua.engine.rules import Ruleset
from capicua.engine.tiles import Tile


@dataclass(frozen=True, slots=True)
class Observation:
    """One seat's view of the match (``seat`` None: a spectator's public view)."""

    seat: int | None
    ruleset: Ruleset
    hand: int  # index of the current hand, from 0
    attempt: int  # 1 after a redeal in this hand
    phase: Phase
    to_act: int | None  # the seat that must decide now, as this seat may know it (None: over)
    offered: int  # the seat offered (or due) this hand's opening
    opener: int | None  # the seat that played the first tile, None before it
    tiles: tuple[Tile, ...]  # this seat's tiles (empty for a spectator)
    chain: tuple[PlacedTile, ...]
    ends: tuple[int, int] | None  # (left, right), None before the first tile
    tile_counts: tuple[int, ...]  # tiles in each seat's hand
    stock_count: int
    events: tuple[Event, ...]  # this hand's events as this seat may see them
    scores: tuple[int, ...]  # match score per side
    results: tuple[HandResult, ...]  # finished hands, every hand revealed
    outcome: Outcome | None

    @property
    def is_spectator(self) -> bool:
        return self.seat is None


def observe(state: MatchState, seat: int | None = None, *, events: bool = True) -> Observation:
    """``seat``'s view of ``state`` (``None``: the public view for spectators).

    ``events=False`` leaves ``events`` empty: for a caller that keeps the hand's events
    itself, masked with :func:`raw_event_for_seat` (the server's views, which would
    otherwise convert the whole hand's events again for every decision)."""
    if seat is not None and not 0 <= seat < state.rules.seats:
        raise ValueError(f"no seat {seat}")
    phase, to_act = visible_turn(state, seat)
    return Observation(
        seat=seat,
        ruleset=state.rules,
        hand=state.hand,
        attempt=state.attempt,
        phase=phase,
        to_act=to_act,
        offered=state.offered,
        opener=state.opener,
        tiles=state.hand_of(seat) if seat is not None else (),
        chain=chain_of(state),
        ends=state.ends,
        tile_counts=state.tile_counts(),
        stock_count=state.stock_count,
        events=visible_events(state, seat) if events else (),
        scores=tuple(state.scores),
        results=tuple(state.log.results()),
        outcome=state.outcome,
    )


def visible_turn(state: MatchState, seat: int | None) -> tuple[Phase, int | None]:
    """The phase and the seat to act as ``seat`` (None: a spectator) may see them.

    While a redeal offer is pending, everyone but the asked seat sees exactly what it would
    see with no offer at all: the opening due, by the seat offered it. Anything else (a
    seat named, or nobody) would say that somebody holds enough doubles to be asked."""
    if is_hidden_decision(state) and state.current_seat != seat:
        return Phase.PLAY, state.offered
    return state.phase, state.current_seat


def is_hidden_decision(state: MatchState) -> bool:
    """Whether the decision pending now is one the other seats may not know about: a redeal
    offer (being asked reveals the seat's doubles, and its KEEP is not shown). Nothing a
    seat or spectator observes may depend on such a decision until the match is over: not
    who is asked, not a count of decisions, not a timeout."""
    return state.phase is Phase.REDEAL


def event_for_seat(event: Event, seat: int | None) -> Event | None:
    """``event`` as ``seat`` (None: a spectator) may see it, None if not at all: another
    seat's draw shows no tile, and another seat's KEEP is not shown (it would reveal the
    doubles). The one masking rule, shared by observations and the server's streams."""
    if isinstance(event, Draw) and event.seat != seat and event.tile is not None:
        return Draw(event.seat, None)
    if isinstance(event, RedealChoice) and not event.redeal and event.seat != seat:
        return None
    return event


def raw_event_for_seat(raw: RawEvent, seat: int | None) -> RawEvent | None:
    """:func:`event_for_seat` on the engine's raw event tuples, for a search bot's inner
    loop and the server's views (a hidden drawn tile becomes index -1);
    tests/test_rule_facts.py proves the two agree."""
    kind, who, _t, _end = raw
    if who == seat:
        return raw
    if kind == EV_DRAW:
        return (EV_DRAW, who, -1, 0)
    if kind == EV_KEEP:
        return None
    return raw


def visible_events(
    state: MatchState, seat: int | None, hand: int | None = None
) -> tuple[Event, ...]:
    """The events of ``hand`` (default: the current one) as ``seat`` may see them."""
    shown = (event_for_seat(e, seat) for e in state.log.events(hand))
    return tuple(e for e in shown if e is not None)


def chain_of(state: MatchState) -> tuple[PlacedTile, ...]:
    """The chain of the current deal, left to right, with the spinner marked: the
    engine's :attr:`~capicua.engine.game.MatchState.line`."""
    return state.line.chain
