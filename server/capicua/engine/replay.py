"""Re-simulating a replay through the engine (``capicua replay verify``).

A match is its ruleset, its seed and its decisions. Verification starts a new match from
the replay's ruleset and seed, feeds it the recorded decisions (plays, deferrals, redeal
answers) and checks that everything the engine produces by itself — deals, draws, passes,
hand results, scores and the final outcome — is identical to the record. Matches that
ended early (timeout, disconnect, illegal actions, forfeit, cancelled) are checked up to
the point where they stopped, then ended the same way.
"""

from __future__ import annotations

import dataclasses

from capicua.common.errors import CapicuaError
from capicua.engine.actions import DEFER, KEEP, REDEAL, Action, IllegalActionError
from capicua.engine.game import Game, MatchState
from capicua.engine.line import Line
from capicua.engine.records import (
    Defer,
    Event,
    HandRecord,
    Play,
    RedealChoice,
    Replay,
    Termination,
)

RECENT_EVENTS = 3
"""How many events before a divergence a mismatch message shows."""


class ReplayMismatch(CapicuaError):
    """The replay differs from what the engine produces; the message names the first
    difference.

    A divergence inside a hand also carries where it happened — ``hand``, ``event`` (the
    index of the first differing event; the number of events for a differing result),
    the open ``ends`` at that point and the ``recent`` events before it, which the
    replay and the engine agree on — and the message ends with them, on the same line
    (one error, one line: ``capicua replay verify`` prints one line per file)."""

    def __init__(
        self,
        problem: str,
        *,
        hand: int | None = None,
        event: int | None = None,
        ends: tuple[int, int] | None = None,
        recent: tuple[tuple[int, Event], ...] = (),
        at_end: bool = False,
    ) -> None:
        self.problem = problem
        self.hand = hand
        self.event = event
        self.ends = ends
        self.recent = recent
        text = problem
        if hand is not None and event is not None:
            text += "; " + _context(event, ends, recent, at_end)
        super().__init__(text)


def _context(
    event: int, ends: tuple[int, int] | None, recent: tuple[tuple[int, Event], ...], at_end: bool
) -> str:
    """``open ends 3|6; last events: #4 ..., #5 ..., #6 ...`` (what a reader needs to find
    the spot without re-running the match)."""
    shown = "none yet" if ends is None else f"{ends[0]}|{ends[1]}"
    where = f"at the end of the hand (after {event} events), " if at_end else ""
    before = ", ".join(f"#{i + 1} {e}" for i, e in recent) or "none (the hand's first event)"
    return f"{where}open ends {shown}; last events: {before}"


def _mismatch(
    record: HandRecord, event: int, problem: str, *, at_end: bool = False
) -> ReplayMismatch:
    """A mismatch at ``event`` of ``record``'s hand, with the open ends and the last
    :data:`RECENT_EVENTS` recorded events before it."""
    agreed = record.events[:event]
    start = max(0, event - RECENT_EVENTS)
    return ReplayMismatch(
        f"hand {record.hand + 1}: {problem}"
        if at_end
        else f"hand {record.hand + 1}, event {event + 1}: {problem}",
        hand=record.hand,
        event=event,
        ends=Line.of(agreed).ends,  # the engine keeps no history of its ends
        recent=tuple((i, agreed[i]) for i in range(start, event)),
        at_end=at_end,
    )


def _diff(recorded: object, engine: object) -> str:
    """The first field where two records differ, e.g. ``points: replay 16, engine 15``."""
    if dataclasses.is_dataclass(recorded) and type(recorded) is type(engine):
        for f in dataclasses.fields(recorded):
            a, b = getattr(recorded, f.name), getattr(engine, f.name)
            if a != b:
                return f"{f.name}: replay {a}, engine {b}"
    return f"differs: replay {recorded}, engine {engine}"


def decision_code(state: MatchState, event: Event) -> int | None:
    """The action code of a recorded decision, None for an event the engine applies."""
    if isinstance(event, Play):
        return Action.play(event.tile, event.end).code(state.game.table)
    if isinstance(event, Defer):
        return DEFER
    if isinstance(event, RedealChoice):
        return REDEAL if event.redeal else KEEP
    return None


def _check_deals(state: MatchState, record: HandRecord, where: str, checked: int = 0) -> int:
    """The deals the engine made in this hand after the first ``checked`` equal the recorded
    ones; how many it has made. (Typing a deal costs the hand's whole record: it is done only
    when a deal came, at the hand's start or after a redeal, not after every decision.)"""
    dealt = len(state.log.hands[record.hand].deals)
    if dealt > checked:
        engine = state.log.record(record.hand).deals
        for ours, theirs in zip(engine[checked:], record.deals[checked:], strict=False):
            if ours != theirs:
                raise ReplayMismatch(
                    f"{where}: deal attempt {theirs.attempt} differs from the seed's"
                )
    return dealt


def _waiting(state: MatchState, hand: int) -> str:
    if state.is_terminal():
        return "the match is already over"
    if state.hand != hand:
        return f"hand {hand + 1} is already over"
    return f"the engine waits for a decision of seat {state.current_seat}"


def _check_hand(state: MatchState, record: HandRecord) -> None:
    where = f"hand {record.hand + 1}"
    if state.is_terminal():
        raise ReplayMismatch(f"{where}: the engine's match was already over")
    if state.hand != record.hand:
        raise ReplayMismatch(f"{where}: the engine is at hand {state.hand + 1}")
    dealt = _check_deals(state, record, where)
    log = state.log
    for i, event in enumerate(record.events):
        # each event typed once, as the engine produces it (the hand's whole record per
        # event made a match's check quadratic in its length)
        if len(log.raw_events(record.hand)) <= i:
            dealt = _apply_recorded(state, record, i, dealt)
        ours = log.event(log.raw_events(record.hand)[i])
        if ours != event:
            raise _mismatch(record, i, f"replay has {event}, engine has {ours}")
    _check_hand_end(state, record)


def _apply_recorded(state: MatchState, record: HandRecord, i: int, dealt: int) -> int:
    """Feed the recorded decision ``record.events[i]`` to the engine, which waits for one;
    the deals of the hand so far (``dealt`` before it), checked."""
    event = record.events[i]
    code = decision_code(state, event)
    if code is None or state.is_terminal() or state.hand != record.hand:
        raise _mismatch(record, i, f"replay has {event}, but {_waiting(state, record.hand)}")
    if event.seat != state.current_seat:
        raise _mismatch(record, i, f"replay has {event}, but seat {state.current_seat} is to act")
    try:
        state.apply(code)
    except IllegalActionError as e:
        raise _mismatch(record, i, f"{event} is illegal: {e}") from None
    if state.hand == record.hand:  # a REDEAL deals again
        return _check_deals(state, record, f"hand {record.hand + 1}", dealt)
    return dealt


def _check_hand_end(state: MatchState, record: HandRecord) -> None:
    """After every recorded event: the engine has no more events, deals or results."""
    where = f"hand {record.hand + 1}"
    n = len(record.events)
    engine = state.log.record(record.hand)
    if len(engine.events) != n:
        raise _mismatch(record, n, f"replay ends, engine has {engine.events[n]}")
    if len(engine.deals) != len(record.deals):
        raise ReplayMismatch(
            f"{where}: replay has {len(record.deals)} deals, engine {len(engine.deals)}"
        )
    if record.result is not None and engine.result is None:
        raise _mismatch(record, n, f"replay ends the hand, but {_waiting(state, record.hand)}")
    if engine.result != record.result:
        raise _mismatch(record, n, f"result {_diff(record.result, engine.result)}", at_end=True)


def verify(replay: Replay) -> MatchState:
    """Re-simulate ``replay``; raise :class:`ReplayMismatch` at the first difference.

    Returns the re-simulated state (over, with the same outcome) when identical.
    """
    state = Game(replay.ruleset).new_match(replay.seed, auto_forced=False)
    if len(replay.players) != replay.ruleset.seats:
        raise ReplayMismatch(
            f"players: {len(replay.players)} names for {replay.ruleset.seats} seats"
        )
    for record in replay.hands:
        _check_hand(state, record)
    outcome = replay.outcome
    if outcome is None:
        raise ReplayMismatch("outcome: missing (the match was not finished)")
    if outcome.termination.counted:
        if not state.is_terminal():
            raise ReplayMismatch(
                f"outcome: replay says {outcome.termination}, but the engine's match goes on "
                f"(hand {state.hand + 1}, seat {state.current_seat} to act)"
            )
    else:
        if not state.is_terminal() and state.log.hands_dealt > len(replay.hands):
            raise ReplayMismatch(
                f"hand {state.hand + 1}: the engine dealt it, but the replay has no record of it"
            )
        if state.is_terminal():
            raise ReplayMismatch(
                f"outcome: replay says {outcome.termination}, but the match ended normally"
            )
        if outcome.termination is Termination.CANCELLED:
            state.cancel(outcome.reason)
        else:
            if outcome.forfeited is None:
                raise ReplayMismatch(f"outcome: {outcome.termination} names no forfeited side")
            if not 0 <= outcome.forfeited < state.game.num_sides:
                raise ReplayMismatch(f"outcome: no side {outcome.forfeited}")
            state.forfeit(outcome.forfeited, outcome.termination, outcome.reason)
    if state.outcome != outcome:
        raise ReplayMismatch(f"outcome {_diff(outcome, state.outcome)}")
    return state
