"""A match's turns: the one open decision request, and checking the answers to it.

Every decision gets a ``turn_id`` (1, 2, ... per match). While a remote seat is asked, its
:class:`Pending` is open; an answer from a Play stream is checked here (is it this seat's
token, this turn, a legal id?) and either resolves it or is refused in-stream. Answers to
turns already over are told apart: a duplicate of the accepted answer is ignored, anything
else is STALE_TURN, and a turn that never was is UNKNOWN_TURN.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from array import array
from dataclasses import dataclass

from capicua.server import errors
from capicua.server.seats import Seat
from capicua.v1 import play_pb2

ILLEGAL_LIMIT = 3  # illegal answers to one request that count as a timeout
TIMED_OUT = -1  # a pending future's result when the illegal answers ran out


@dataclass
class Pending:
    """The decision a remote seat is being asked for."""

    turn_id: int
    seat: int
    choices: int  # number of legal actions (ids 0 .. choices-1)
    request: play_pb2.PlayResponse
    future: asyncio.Future[int]  # the answer: an action id, or TIMED_OUT
    # What the runner awaits: set by an answer, the deadline, a stop or the auto-play.
    wake: asyncio.Future[None]
    illegal: int = 0
    sent_ns: int = 0  # perf_counter_ns when the request was first queued to the seat
    answered_ns: int = 0  # ... and when its accepted answer arrived

    def wake_up(self, _: object = None) -> None:
        if not self.wake.done():
            self.wake.set_result(None)

    def resolve(self, result: int) -> None:
        """Set the answer and wake the runner at once: through a done-callback (as
        asyncio.wait does) it would take one more turn of the event loop per decision."""
        self.future.set_result(result)
        self.wake_up()


class Turns:
    """The turns of match ``name``, whose seats are ``seats``."""

    def __init__(self, name: str, seats: list[Seat]) -> None:
        self.name = name
        self.seats = seats
        self.last = 0  # the latest turn_id given out
        self.pending: Pending | None = None
        # turn_id -> (seat, action id accepted or applied; -1 while open, or when the turn
        # ended without an action)
        self.resolved: dict[int, tuple[int, int]] = {}

    def begin(self, seat: int) -> int:
        """A new turn for ``seat``: its turn_id."""
        self.last += 1
        self.resolved[self.last] = (seat, -1)  # until an action is chosen
        return self.last

    def settle(self, turn_id: int, index: int | None) -> None:
        """Turn ``turn_id`` ended with action ``index`` (None: without one)."""
        seat, _ = self.resolved[turn_id]
        self.resolved[turn_id] = (seat, -1 if index is None else index)

    def settle_all(self) -> None:
        """The match is over: keep the turns' answers compactly (a late reply is still told
        apart), in about a tenth of the memory of the dict."""
        self.resolved = _Settled(self.resolved)  # type: ignore[assignment]

    def pending_for(self, principal: str) -> play_pb2.PlayResponse | None:
        """The open request, if ``principal`` holds its seat (to send again on reconnect)."""
        pending = self.pending
        if pending is not None and self.seats[pending.seat].principal == principal:
            return pending.request
        return None

    def answer(self, principal: str, reply: play_pb2.ActionReply) -> list[play_pb2.PlayResponse]:
        """Handle an ActionReply from ``principal``; returns what to send back to it."""
        pending = self.pending
        if pending is not None and pending.turn_id == reply.turn_id and not pending.future.done():
            return self._answer_open(principal, reply, pending)
        resolved = self.resolved.get(reply.turn_id)
        if resolved is None:
            raise errors.invalid(
                "turn_id", f"{self.name} has no turn {reply.turn_id}", errors.UNKNOWN_TURN
            )
        seat_no, applied = resolved
        self._holds(principal, reply.turn_id, seat_no)
        if applied == reply.action_id:
            return []  # a duplicate of the accepted answer
        raise errors.precondition(
            errors.STALE_TURN,
            f"turn_id: turn {reply.turn_id} of {self.name} is already resolved",
            **self._meta(reply.turn_id),
        )

    def _answer_open(
        self, principal: str, reply: play_pb2.ActionReply, pending: Pending
    ) -> list[play_pb2.PlayResponse]:
        turn_id = reply.turn_id
        self._holds(principal, turn_id, pending.seat)
        if reply.action_id < pending.choices:
            pending.answered_ns = time.perf_counter_ns()
            pending.resolve(reply.action_id)
            self.resolved[turn_id] = (pending.seat, reply.action_id)
            return []
        pending.illegal += 1
        left = ILLEGAL_LIMIT - pending.illegal
        message = (
            f"action_id: {reply.action_id} is not one of the legal action ids "
            f"0..{pending.choices - 1} of turn {turn_id}"
        )
        then = (
            f"; {left} more tries before the deadline"
            if left
            else "; that was the last try: it counts as a timeout"
        )
        error = errors.precondition(
            errors.ILLEGAL_ACTION, message + then, **self._meta(turn_id)
        ).status()
        if left <= 0:
            pending.resolve(TIMED_OUT)
            return [play_pb2.PlayResponse(error=error)]
        return [play_pb2.PlayResponse(error=error), pending.request]

    def _holds(self, principal: str, turn_id: int, seat_no: int) -> None:
        """Refuse an answer from a token that does not hold the turn's seat; any answer
        from the one that does ends the server's auto-play of that seat."""
        seat = self.seats[seat_no]
        if seat.principal != principal:
            raise errors.denied(
                errors.NOT_YOUR_SEAT,
                f"turn_id: turn {turn_id} of {self.name} belongs to seat {seat_no}, "
                "which this token does not hold",
                **self._meta(turn_id),
            )
        seat.autoplay = False

    def _meta(self, turn_id: int) -> dict[str, str]:
        return {"match": self.name, "turn_id": str(turn_id)}


class _Settled:
    """The ``resolved`` map of a finished match, read-only: turn ids, seats and actions in
    three arrays (a dict of tuples costs about 90 bytes a turn, this about 17)."""

    def __init__(self, resolved: dict[int, tuple[int, int]]) -> None:
        turns = sorted(resolved)
        self._turns = array("q", turns)
        self._seats = bytes(resolved[t][0] for t in turns)
        self._actions = array("q", (resolved[t][1] for t in turns))

    def get(self, turn_id: int) -> tuple[int, int] | None:
        i = bisect.bisect_left(self._turns, turn_id)
        if i == len(self._turns) or self._turns[i] != turn_id:
            return None
        return self._seats[i], self._actions[i]
