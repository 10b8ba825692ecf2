"""A match's turns: the one open decision request, and checking the answers to it.

Turn ids are counted per principal (a bot, or a one-seat client): the n-th DecisionRequest a
principal is sent in a match has ``turn_id`` n. So an id says nothing but how often that
principal itself was asked: not that another seat was asked something it cannot see (a
redeal offer it kept), nor whether another seat's move was forced; and an answer can only
ever name a turn of the principal that sends it. The server's own count of decisions
(:attr:`Turns.last`: CPU seeds, logs) is never sent to anyone.

While a remote seat is asked, its :class:`Pending` is open; an answer from a Play stream is
checked here (is it this principal's turn, a legal id?) and either resolves it or is
refused in-stream. Answers to turns already over are told apart: a duplicate of the
accepted answer is ignored, anything else is STALE_TURN, and a turn the principal was never
given is UNKNOWN_TURN, whoever else was asked what.

Every sending of a request (the first, and again after an illegal answer or a reconnect)
carries ``time_left_ms``: how long the server will still wait for it, measured as it is
queued, so that a client needs no clock agreeing with the server's.
"""

from __future__ import annotations

import asyncio
import bisect
import time
from array import array
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from capicua.server import errors
from capicua.server.seats import Seat
from capicua.v1 import play_pb2

ILLEGAL_LIMIT = 3  # illegal answers to one request that count as a timeout
TIMED_OUT = -1  # a pending future's result when the illegal answers ran out
RESUME_TURN_GAP = 1_000  # turn ids a principal skips when its match resumes after a restart


@dataclass
class Pending:
    """The decision a remote seat is being asked for."""

    turn_id: int  # as its principal was sent it
    seat: int
    principal: str
    choices: int  # number of legal actions (ids 0 .. choices-1)
    request: bytes  # the DecisionRequest sent, a serialised PlayResponse
    future: asyncio.Future[int]  # the answer: an action id, or TIMED_OUT
    # What the runner awaits: set by an answer, the deadline, a stop or the auto-play.
    wake: asyncio.Future[None]
    illegal: int = 0
    deadline: float = 0.0  # on the event loop's clock: when the turn timer runs out
    limit_ms: int = 0  # the turn timer (time_left_ms is never more)
    # A decision the other seats may not know about (a redeal offer): answering it changes
    # nothing they can see (it does not end the seat's auto-play).
    hidden: bool = False
    sent_ns: int = 0  # perf_counter_ns when the request was first queued to the seat
    answered_ns: int = 0  # ... and when its accepted answer arrived
    # Builds the request in its full form when ``request`` is an incremental one: sent
    # again, it goes to a stream that may not hold the seat's view (a new stream, which
    # just got MatchStarted), and its events must not be applied twice.
    full: Callable[[], bytes] | None = None

    def time_left_ms(self) -> int:
        """Milliseconds until the deadline, now: at least 1 while the request is open (0
        would read as no timer), at most the timer."""
        left = int((self.deadline - self.future.get_loop().time()) * 1000)
        return min(self.limit_ms, max(1, left))

    def again(self) -> play_pb2.PlayResponse:
        """The request to send again: the same turn_id and deadline, in the full form, with
        the time left now (a copy: the one sent before may still be queued)."""
        if self.full is not None:
            self.request, self.full = self.full(), None
        again = play_pb2.PlayResponse.FromString(self.request)
        again.decision.time_left_ms = self.time_left_ms()
        return again

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
        self.last = 0  # the server's own count of decisions (every seat's, CPUs' too)
        self.pending: Pending | None = None
        self._asked: dict[str, int] = {}  # principal -> the latest turn_id it was given
        self._first = 0  # turn ids a principal not yet asked starts after
        # After a restart: principal -> the turn ids (1 .. n) that may have been sent to it
        # before the server stopped; their answers are lost with the old process, but
        # they were real turns, so an answer naming one is STALE_TURN, never UNKNOWN_TURN.
        self._before_restart: dict[str, int] = {}
        # (principal, turn_id) -> (seat, action id accepted or applied; -1 while open, or
        # when the turn ended without an action)
        self.resolved: dict[tuple[str, int], tuple[int, int]] | _Settled = {}
        self._hidden: set[tuple[str, int]] = set()  # the turns that were hidden decisions

    def begin(self) -> int:
        """A new decision (of any seat): the server's own number for it."""
        self.last += 1
        return self.last

    def ask(self, seat: Seat, *, hidden: bool = False) -> int:
        """A DecisionRequest for remote ``seat`` (``hidden``: a decision the other seats may
        not know about): the turn_id its principal is sent."""
        principal = seat.principal
        assert principal is not None and isinstance(self.resolved, dict)
        turn_id = self._asked[principal] = self._asked.get(principal, self._first) + 1
        self.resolved[(principal, turn_id)] = (seat.index, -1)  # until an action is chosen
        if hidden:
            self._hidden.add((principal, turn_id))
        return turn_id

    def resumed(self, asked: Mapping[str, int]) -> None:
        """After a restart: ``asked`` holds how many of the journaled decisions each
        principal was asked for. Its next turn_id comes :data:`RESUME_TURN_GAP` after that
        count, so that no id names two requests, even one sent but not yet journaled when
        the server stopped; a gap that depends on nobody else's decisions."""
        self._first = RESUME_TURN_GAP
        self._asked = {principal: n + RESUME_TURN_GAP for principal, n in asked.items()}
        self._before_restart = dict(self._asked)

    def _sent_before_restart(self, principal: str, turn_id: int) -> bool:
        """Whether ``turn_id`` is one of the ids ``principal`` may have been sent before the
        restart: every id up to its resumed count (its own count only, so the answer says
        nothing of anyone else's turns; a principal not asked before the restart may have
        been sent up to :data:`RESUME_TURN_GAP` ids that the journal never held)."""
        if not self._first:
            return False
        return 0 < turn_id <= self._before_restart.get(principal, self._first)

    def settle(self, principal: str, turn_id: int, index: int | None) -> None:
        """Turn ``turn_id`` of ``principal`` ended with action ``index`` (None: without)."""
        assert isinstance(self.resolved, dict)
        seat, _ = self.resolved[(principal, turn_id)]
        self.resolved[(principal, turn_id)] = (seat, -1 if index is None else index)

    def settle_all(self) -> None:
        """The match is over: keep the turns' answers compactly (a late reply is still told
        apart), in about a tenth of the memory of the dict."""
        if isinstance(self.resolved, dict):
            self.resolved = _Settled(self.resolved)

    def pending_for(self, principal: str) -> play_pb2.PlayResponse | None:
        """The open request, if ``principal`` holds its seat (to send again on reconnect)."""
        pending = self.pending
        if pending is not None and pending.principal == principal:
            return pending.again()
        return None

    def answer(self, principal: str, reply: play_pb2.ActionReply) -> list[play_pb2.PlayResponse]:
        """Handle an ActionReply from ``principal``; returns what to send back to it."""
        pending = self.pending
        if (
            pending is not None
            and pending.principal == principal
            and pending.turn_id == reply.turn_id
            and not pending.future.done()
        ):
            return self._answer_open(reply, pending)
        if not any(s.principal == principal for s in self.seats):
            raise errors.denied(
                errors.NOT_YOUR_SEAT,
                f"match: this token holds no seat of {self.name}",
                **self._meta(reply.turn_id),
            )
        resolved = self.resolved.get((principal, reply.turn_id))
        if resolved is None and self._sent_before_restart(principal, reply.turn_id):
            # Which seat an id from before the restart was asked as is not journaled: named
            # only when the principal holds one seat of the match.
            own = [s.index for s in self.seats if s.principal == principal]
            raise errors.precondition(
                errors.STALE_TURN,
                f"turn_id: turn {reply.turn_id} of {self.name} was withdrawn when the server "
                "stopped; answer the turns sent since it restarted",
                **self._meta(reply.turn_id, own[0] if len(own) == 1 else None),
            )
        if resolved is None:
            raise errors.invalid(
                "turn_id",
                f"{self.name} sent this token no turn {reply.turn_id}",
                errors.UNKNOWN_TURN,
                **self._meta(reply.turn_id),
            )
        seat_no, applied = resolved
        if (principal, reply.turn_id) not in self._hidden:
            self.seats[seat_no].autoplay = False  # any answer from it ends the auto-play
        if applied == reply.action_id:
            return []  # a duplicate of the accepted answer
        raise errors.precondition(
            errors.STALE_TURN,
            f"turn_id: turn {reply.turn_id} of {self.name} is already resolved",
            **self._meta(reply.turn_id, seat_no),
        )

    def _answer_open(
        self, reply: play_pb2.ActionReply, pending: Pending
    ) -> list[play_pb2.PlayResponse]:
        turn_id = reply.turn_id
        if not pending.hidden:  # the auto-play is public: a secret answer must not end it
            self.seats[pending.seat].autoplay = False  # any answer from it ends the auto-play
        if reply.action_id < pending.choices:
            pending.answered_ns = time.perf_counter_ns()
            pending.resolve(reply.action_id)
            assert isinstance(self.resolved, dict)
            self.resolved[(pending.principal, turn_id)] = (pending.seat, reply.action_id)
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
            errors.ILLEGAL_ACTION, message + then, **self._meta(turn_id, pending.seat)
        ).status()
        if left <= 0:
            pending.resolve(TIMED_OUT)
            return [play_pb2.PlayResponse(error=error)]
        return [play_pb2.PlayResponse(error=error), pending.again()]

    def _meta(self, turn_id: int, seat: int | None = None) -> dict[str, str]:
        """The metadata naming an answer: its match and turn_id, and the seat that turn was
        asked of when the principal was sent it (its own seat, in its DecisionRequest: a
        bot holding several seats of a match tells them apart). Never the seat of a turn
        the principal was not sent (UNKNOWN_TURN): that would say whose turn it is."""
        meta = {"match": self.name, "turn_id": str(turn_id)}
        if seat is not None:
            meta["seat"] = str(seat)
        return meta


class _Settled:
    """The ``resolved`` map of a finished match, read-only: per principal, its turn ids,
    seats and actions in three arrays (a dict of tuples costs about 90 bytes a turn, this
    about 17)."""

    def __init__(self, resolved: dict[tuple[str, int], tuple[int, int]]) -> None:
        by_principal: dict[str, list[tuple[int, int, int]]] = {}
        for (principal, turn_id), (seat, action) in resolved.items():
            by_principal.setdefault(principal, []).append((turn_id, seat, action))
        self._turns: dict[str, tuple[array[int], bytes, array[int]]] = {}
        for principal, rows in by_principal.items():
            rows.sort()
            self._turns[principal] = (
                array("q", (t for t, _, _ in rows)),
                bytes(s for _, s, _ in rows),
                array("q", (a for _, _, a in rows)),
            )

    def get(self, key: tuple[str, int]) -> tuple[int, int] | None:
        principal, turn_id = key
        found = self._turns.get(principal)
        if found is None:
            return None
        turns, seats, actions = found
        i = bisect.bisect_left(turns, turn_id)
        if i == len(turns) or turns[i] != turn_id:
            return None
        return seats[i], actions[i]
