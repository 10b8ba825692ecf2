"""How a running match gets each decision from the seat to act.

A built-in bot (a CPU seat, or the auto-play of a late seat) decides in the process pool
(:meth:`Asker.cpu_choice`). A remote seat is sent its DecisionRequest over its Play stream
and waited for until the deadline of the match's turn timer (:meth:`Asker.remote_choice`);
then the timeout policy applies: FORFEIT ends the match with the seat's side forfeiting,
AUTO_PLAY plays the seat with the Easy bot (and keeps doing so at once on its later turns
until the client answers again). Every wait races the match's :class:`StopSignal`.

A request that ends without the client's accepted answer is withdrawn, before anything
else about the match is sent (the match module's doc tells the whole turn). A late seat's
counters move as its turns run out, except on a hidden decision (a redeal offer): those
are held until the match is over, as anything else would tell that the seat was asked.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from capicua.engine.game import MatchState
from capicua.engine.observation import is_hidden_decision, observe
from capicua.engine.records import Termination
from capicua.engine.rules import Ruleset
from capicua.server.cpu import EASY, decision_seed
from capicua.server.fanout import Fanout
from capicua.server.record import Record
from capicua.server.seats import Seat
from capicua.server.turns import ILLEGAL_LIMIT, Pending, Turns
from capicua.v1 import play_pb2

if TYPE_CHECKING:  # what matches share; matches.py imports this module
    from capicua.server.matches import Services

REASON_CHARS = 300  # of an error's text in a match's outcome reason


class CpuFailed(Exception):
    """A built-in bot could not decide (logged where it failed); the match ends CANCELLED
    with this message in its reason."""


def described(error: BaseException) -> str:
    """An error in a match's outcome reason: its type and text, cut short."""
    return f"{type(error).__name__}: {error}"[:REASON_CHARS]


class StopSignal:
    """A match's request to stop: why (None: nobody asked), whether a graceful server stop
    leaves the match to its journal (``suspending``), and the future every wait of its
    runner races against."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.suspending = False
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def request(self, reason: str) -> None:
        """Stop the match soon; the first reason given is the one kept."""
        if self.reason is None:
            self.reason = reason
        if not self.future.done():
            self.future.set_result(None)


class Asker:
    """Asks the seat to act of one running match for its decision (see the module doc)."""

    def __init__(
        self,
        services: Services,
        *,
        name: str,
        seed: int,
        ruleset: Ruleset,
        timer: play_pb2.TurnTimer,
        parts: tuple[Fanout, Turns, Record],
        log: Any,
        stop: StopSignal,
    ) -> None:
        self.services = services
        self.name = name
        self.seed = seed
        self.ruleset = ruleset
        self.timer = timer  # as MatchStarted announces it
        self.fanout, self.turns, self.record = parts
        self.log = log  # the match's (bound to its id)
        self.stop = stop
        # seat -> [timeouts, auto_played] of hidden decisions, shown once the match is over
        self._held_counts: dict[int, list[int]] = {}

    async def cpu_choice(self, state: MatchState, level: str, turn: int, seat: int) -> int | None:
        """A built-in bot's choice, from the process pool; None if the match is stopped.
        Raises :class:`CpuFailed` (after logging why) when the bot fails: no other move is
        ever played in its place."""
        if len(state.legal_actions()) == 1:
            return 0
        legal = state.legal()
        faults = self.services.faults
        if faults is not None and faults.cpu_bot is not None:
            level = faults.cpu_bot(level, seat)
        obs = observe(state, seat)
        choice = asyncio.ensure_future(
            self.services.pool.choose(level, decision_seed(self.seed, turn), obs, legal)
        )
        either: set[asyncio.Future[Any]] = {choice, self.stop.future}
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not choice.done():
            choice.cancel()
            return None
        try:
            index = choice.result()
            if not 0 <= index < len(legal):  # pragma: no cover - cpu.choose checks it
                raise IndexError(f"action {index} of {len(legal)}")
        except Exception as e:
            self.log.error("cpu_failed", seat=seat, turn=turn, bot=level, exc_info=e)
            raise CpuFailed(
                f"built-in bot {level} failed on turn {turn} (seat {seat}): {described(e)}"
            ) from e
        return index

    async def remote_choice(
        self, state: MatchState, seat: Seat, turn: int, codes: Sequence[int]
    ) -> int | None:
        """Ask a remote seat (the server's decision ``turn``); on timeout apply the policy.
        None: stopped or forfeited."""
        assert seat.principal is not None
        hidden = is_hidden_decision(state)
        turn_id = self.turns.ask(seat, hidden=hidden)
        index = await self._asked(state, seat, turn, turn_id, codes, hidden)
        self.turns.settle(seat.principal, turn_id, index)
        return index

    def reveal_held_counts(self, seats: Sequence[Seat]) -> None:
        """The match is over: the counts held back for hidden decisions join the seats'."""
        for index, (timeouts, auto_played) in self._held_counts.items():
            seats[index].timeouts += timeouts
            seats[index].auto_played += auto_played
        self._held_counts.clear()

    def _request(
        self,
        state: MatchState,
        seat: Seat,
        turn_id: int,
        codes: Sequence[int],
        timing: tuple[int, int],
        incremental: bool,
    ) -> bytes:
        """The DecisionRequest of ``turn_id`` for ``seat``, serialised: its view, the legal
        actions and ``timing`` (deadline in ns, ms left). Incremental
        (CAPABILITY_INCREMENTAL_DECISIONS): the view's changing part, and the events the
        seat was not sent yet (:meth:`ViewBuilder.request`)."""
        views = self.fanout.views
        assert views is not None
        return views.request(self.name, state, seat.index, turn_id, codes, timing, incremental)

    async def _asked(
        self,
        state: MatchState,
        seat: Seat,
        turn: int,
        turn_id: int,
        codes: Sequence[int],
        hidden: bool,
    ) -> int | None:
        assert seat.principal is not None
        # the match's loop, without asking for the running one (in CPython 3.11 that is
        # a getpid system call, and a decision's round trip made five)
        loop = self.stop.future.get_loop()
        limit_ms = self.timer.limit_ms
        deadline = loop.time() + limit_ms / 1000
        deadline_ns = time.time_ns() + limit_ms * 1_000_000
        incremental = self.services.streams.incremental(seat.principal)
        pending = Pending(
            turn_id,
            seat.index,
            seat.principal,
            len(codes),
            b"",
            loop.create_future(),
            loop.create_future(),
            deadline=deadline,
            limit_ms=limit_ms,
            hidden=hidden,
        )
        timing = (deadline_ns, pending.time_left_ms())
        request = pending.request = self._request(state, seat, turn_id, codes, timing, incremental)
        if incremental:  # sent again (a reconnect, an illegal answer): the full request
            timing_again = (deadline_ns, limit_ms)  # (again() sets the time left then)
            pending.full = functools.partial(
                self._request, state, seat, turn_id, codes, timing_again, False
            )
        self.turns.pending = pending
        pending.sent_ns = time.perf_counter_ns()
        self.services.streams.send_data(seat.principal, request)
        auto: asyncio.Future[int | None] | None = None
        timer = loop.call_at(deadline, pending.wake_up)
        self.stop.future.add_done_callback(pending.wake_up)
        # Why the request ends without the client's answer (None: it was answered). Unless
        # said below, the match ends: stopped, or a failure (the auto-play's included).
        withdrawn: play_pb2.WithdrawalReason.ValueType | None = (
            play_pb2.WITHDRAWAL_REASON_MATCH_ENDED
        )
        try:
            if seat.autoplay:  # a late seat: play it at once unless the client answers first
                auto = asyncio.ensure_future(self.cpu_choice(state, EASY, turn, seat.index))
                auto.add_done_callback(pending.wake_up)
                # The turn is the stand-in's to play now: its thinking past the seat's
                # clock (a busy machine, a slow worker) is not another timeout of the seat,
                # nor a second stand-in's choice.
                timer.cancel()
            await pending.wake
            if pending.future.done() and pending.future.result() >= 0:
                withdrawn = None
                took = max(0, pending.answered_ns - pending.sent_ns) // 1000
                self.record.think(state, seat.index, took)
                return pending.future.result()
            if self.stop.future.done():
                if self.stop.suspending:  # resumed after the restart, under a new turn_id
                    withdrawn = play_pb2.WITHDRAWAL_REASON_SERVER_STOPPING
                return None
            if auto is not None and auto.done():
                index = auto.result()
                if index is not None:
                    withdrawn = play_pb2.WITHDRAWAL_REASON_AUTO_PLAYED
                    self._counted(seat, hidden, auto_played=1)
                return index
            illegal = pending.future.done()  # resolved with TIMED_OUT by illegal answers
            withdrawn = (
                play_pb2.WITHDRAWAL_REASON_ILLEGAL_ACTIONS
                if illegal
                else play_pb2.WITHDRAWAL_REASON_TIMED_OUT
            )
        finally:
            self.turns.pending = None
            timer.cancel()
            self.stop.future.remove_done_callback(pending.wake_up)
            if auto is not None and not auto.done():
                auto.cancel()
            elif auto is not None and not auto.cancelled():
                auto.exception()  # a failure the client's answer made moot (it is logged)
            if withdrawn is not None:  # before the move, the timeout policy or MatchEnded
                self.fanout.withdrawn(seat, turn_id, withdrawn)
        return await self._timed_out(state, seat, turn, turn_id, illegal=illegal, hidden=hidden)

    async def _timed_out(
        self, state: MatchState, seat: Seat, turn: int, turn_id: int, *, illegal: bool, hidden: bool
    ) -> int | None:
        """``seat`` let its turn ``turn_id`` (the server's ``turn``) run out."""
        assert seat.principal is not None
        self._counted(seat, hidden, timeouts=1)
        connected = self.services.streams.connected(seat.principal)
        if illegal:
            why, termination = f"sent {ILLEGAL_LIMIT} illegal actions", Termination.ILLEGAL_ACTIONS
        elif connected:
            why = f"let its {self.timer.limit_ms} ms clock run out"
            termination = Termination.TIMEOUT
        else:
            why, termination = "disconnected", Termination.DISCONNECT
        who = f"seat {seat.index} ({seat.player})"
        if self.timer.on_timeout == play_pb2.ON_TIMEOUT_FORFEIT:
            side = self.ruleset.side_of(seat.index)
            self.log.info("seat_forfeits", seat=seat.index, turn_id=turn_id, why=termination.value)
            state.forfeit(side, termination, f"{who} {why} on turn {turn_id}")
            return None
        if not hidden:
            # From now on the seat is played at once. Not after a hidden decision: whether a
            # seat is auto-played shows in every later turn's timing and counters, so its
            # next public turn waits the whole timer, as it would have without the question.
            seat.autoplay = True
        self.log.info("seat_autoplay", seat=seat.index, turn_id=turn_id, why=termination.value)
        index = await self.cpu_choice(state, EASY, turn, seat.index)
        if index is not None:
            self._counted(seat, hidden, auto_played=1)
        return index

    def _counted(
        self, seat: Seat, hidden: bool, *, timeouts: int = 0, auto_played: int = 0
    ) -> None:
        """Count a late seat's turn in its SeatStatus (GetMatch, ListMatches), or, for a
        ``hidden`` decision (one the others may not know about: a redeal offer), once the
        match is over: a counter that moved would say that the seat was asked. Nothing else
        about the seat changes for a hidden one (:meth:`_timed_out`), so its later, public
        turns are counted as they happen, exactly as they would be without the question."""
        if hidden:
            held = self._held_counts.setdefault(seat.index, [0, 0])
            held[0] += timeouts
            held[1] += auto_played
            return
        seat.timeouts += timeouts
        seat.auto_played += auto_played
