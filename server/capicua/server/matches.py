"""Matches: the registry, and the one task that drives each running match.

A :class:`Match` owns one :class:`~capicua.engine.game.MatchState`, the single authority on
its rules. Only the match's runner task (:meth:`Match.run`) changes that state: it asks the
seat to act (a remote client over its Play stream, or a built-in bot in the process pool),
applies the answer, and fans the consequences out as per-seat messages. Everything else
(lobby calls, Play streams) only reads the state or hands the runner an answer.

Turns: every decision gets a ``turn_id`` (1, 2, ... per match). A remote seat gets a
DecisionRequest with its full view, the legal actions (ids = positions) and a deadline. An
unknown action id is answered in-stream with FAILED_PRECONDITION / ILLEGAL_ACTION and the
request is sent again (same turn_id, same deadline); the third illegal answer to one request
counts as a timeout. When the deadline passes, the match's policy applies: AUTO_PLAY plays
the seat with the Easy bot and keeps doing so at once on its later turns until the client
answers again (any answer, or a new stream, clears it); FORFEIT ends the match with the
seat's side forfeiting (TERMINATION_TIMEOUT, or TERMINATION_DISCONNECT when the seat had no
stream, or TERMINATION_ILLEGAL_ACTIONS after three illegal answers).

The server's own failures are never hidden behind a move: a built-in bot that fails (a CPU
seat, or the auto-play of a late seat) is logged with its traceback and ends the match
TERMINATION_CANCELLED, its reason naming the bot, the turn and the error; a replay that
cannot be built is logged, and GetReplay answers INTERNAL / REPLAY_FAILED for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import structlog
from google.protobuf import timestamp_pb2

from capicua.engine.actions import Action
from capicua.engine.game import Game, MatchState
from capicua.engine.observation import event_for_seat, observe
from capicua.engine.records import Event, Termination, ThinkTime, with_think_times
from capicua.engine.rules import Ruleset
from capicua.server import errors
from capicua.server.cpu import EASY, CpuPool, decision_seed
from capicua.server.store import Store
from capicua.v1 import game_pb2, match_pb2, play_pb2, rules_pb2, view_pb2
from capicua.wire import codec
from capicua.wire import views as wire

log = structlog.get_logger("capicua.server.match")

WAITING = match_pb2.MATCH_STATE_WAITING
RUNNING = match_pb2.MATCH_STATE_RUNNING
FINISHED = match_pb2.MATCH_STATE_FINISHED

LEVEL_NAMES = {
    match_pb2.CPU_LEVEL_UNSPECIFIED: "easy",
    match_pb2.CPU_LEVEL_EASY: "easy",
    match_pb2.CPU_LEVEL_MEDIUM: "medium",
    match_pb2.CPU_LEVEL_HARD: "hard",
}

REASON_CHARS = 300  # of an error's text in a match's outcome reason
ILLEGAL_LIMIT = 3  # illegal answers to one request that count as a timeout
_TIMED_OUT = -1  # a pending future's result when the illegal answers ran out
WATCH_QUEUE = 10_000  # messages a spectator may fall behind before it is dropped


class CpuFailed(Exception):
    """A built-in bot could not decide (logged where it failed); the match ends CANCELLED
    with this message in its reason."""


def _described(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:REASON_CHARS]


class Streams(Protocol):
    """The Play streams, as a match sees them (implemented by the Play service's hub)."""

    def send(self, principal: str, message: play_pb2.PlayResponse) -> None: ...

    def connected(self, principal: str) -> bool: ...

    def ask_forced(self, principal: str) -> bool: ...


@dataclass
class Services:
    """What matches share: the streams, the CPU pool and the store."""

    streams: Streams
    pool: CpuPool
    store: Store
    default_timer_ms: int = 30_000


@dataclass
class Seat:
    """One seat of a match. ``principal`` is who plays it over a Play stream (None: a CPU)."""

    index: int
    kind: match_pb2.SeatKind.ValueType
    bot_id: str = ""
    cpu_level: match_pb2.CpuLevel.ValueType = match_pb2.CPU_LEVEL_UNSPECIFIED
    player: str = ""
    principal: str | None = None
    autoplay: bool = False  # the server plays it until the client answers again
    timeouts: int = 0  # times its turn timer ran out (three illegal answers count as one)
    auto_played: int = 0  # turns the server played for it because it was late

    @property
    def owner(self) -> str | None:
        """Who plays it: the principal, or for a seat reserved for a bot that bot."""
        if self.principal is None and self.kind == match_pb2.SEAT_KIND_BOT:
            return f"bots/{self.bot_id}"
        return self.principal

    @property
    def is_cpu(self) -> bool:
        return self.kind == match_pb2.SEAT_KIND_CPU

    @property
    def is_open(self) -> bool:
        return self.kind == match_pb2.SEAT_KIND_OPEN and self.principal is None


@dataclass
class Pending:
    """The decision a remote seat is being asked for."""

    turn_id: int
    seat: int
    choices: int  # number of legal actions (ids 0 .. choices-1)
    request: play_pb2.PlayResponse
    future: asyncio.Future[int]  # the answer: an action id, or _TIMED_OUT
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


class Watcher:
    """A spectator's queue of WatchMatch messages (None ends the stream)."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[match_pb2.WatchMatchResponse | None] = asyncio.Queue()
        self.dropped = False

    def put(self, message: match_pb2.WatchMatchResponse | None) -> None:
        if self.dropped:
            return
        if message is not None and self.queue.qsize() >= WATCH_QUEUE:
            self.dropped = True
            message = None
        self.queue.put_nowait(message)


def _timestamp(ns: int) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromNanoseconds(ns)
    return ts


class Match:
    """One match: its seats and settings, and once started its engine state and runner."""

    def __init__(
        self,
        services: Services,
        *,
        match_id: str,
        ruleset: Ruleset,
        game: Game,
        seats: list[Seat],
        settings: match_pb2.MatchSettings,
        seed: int,
    ) -> None:
        self.services = services
        self.id = match_id
        self.name = f"matches/{match_id}"
        self.ruleset = ruleset
        self.ruleset_pb: rules_pb2.Ruleset = codec.ruleset_to_proto(ruleset)
        self.game = game
        self.seats = seats
        self.settings = settings
        self.seed = seed
        self.create_ns = time.time_ns()
        self.status: match_pb2.MatchState.ValueType = WAITING
        self.state: MatchState | None = None
        self.outcome_pb: game_pb2.Outcome | None = None
        self.final_pb: match_pb2.Match | None = None  # the record, once finished
        self.replay_json: str | None = None
        self.replay_error: str | None = None  # why the replay could not be built
        self.turn_id = 0
        self.pending: Pending | None = None
        # turn_id -> (seat, action id accepted or applied; -1 while open, or when the turn
        # ended without an action)
        self.resolved: dict[int, tuple[int, int]] = {}
        self.watchers: set[Watcher] = set()
        self.finished = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.on_finished: Callable[[Match], None] | None = None
        self.on_joined: Callable[[Match, str], None] | None = None  # (match, new owner)
        self._closing = False
        self._stop_reason: str | None = None
        self._stop: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._views: wire.ViewBuilder | None = None
        self._cursor = (0, 0)  # (hand, events) already sent
        # hand -> the think times of its client decisions, for the replay
        self.think_times: dict[int, list[ThinkTime]] = {}
        self._results_sent = 0
        self.log = log.bind(match=match_id)

    # -- what everyone may see ------------------------------------------------------------

    @property
    def public(self) -> bool:
        return self.settings.visibility != match_pb2.VISIBILITY_PRIVATE

    @property
    def timer_ms(self) -> int:
        return self.settings.turn_timer_ms or self.services.default_timer_ms

    @property
    def players(self) -> list[str]:
        return [s.player or f"seat{s.index}" for s in self.seats]

    def seats_of(self, principal: str) -> list[Seat]:
        return [s for s in self.seats if s.principal == principal]

    def to_proto(self) -> match_pb2.Match:
        if self.final_pb is not None:
            final = match_pb2.Match()
            final.CopyFrom(self.final_pb)
            return final
        streams = self.services.streams
        m = match_pb2.Match(
            name=self.name,
            state=self.status,
            settings=self.settings,
            create_time=_timestamp(self.create_ns),
        )
        m.ruleset.CopyFrom(self.ruleset_pb)
        for s in self.seats:
            m.seats.append(
                match_pb2.SeatStatus(
                    seat=s.index,
                    kind=s.kind,
                    player=s.player,
                    bot_id=s.bot_id,
                    cpu_level=s.cpu_level,
                    occupied=s.is_cpu or s.owner is not None,
                    connected=s.is_cpu or (s.owner is not None and streams.connected(s.owner)),
                    timeouts=s.timeouts,
                    auto_played=s.auto_played,
                )
            )
        if self.state is not None:
            m.hand = self.state.hand
            m.scores.extend(self.state.scores)
        else:
            m.scores.extend([0] * self.ruleset.num_sides)
        if self.outcome_pb is not None:
            m.outcome.CopyFrom(self.outcome_pb)
        return m

    def public_view(self) -> view_pb2.View | None:
        if self.state is None or self._views is None:
            return None
        return self._views.view_of(self.state, None)

    # -- joining and starting -------------------------------------------------------------

    def join(self, principal: str | None, *, bot_id: str, player: str, seat: int | None) -> Seat:
        """Give a seat to bot ``bot_id`` (its principal ``bots/{bot_id}``) or, with
        ``principal`` None, to a one-seat client (``matches/{id}/seats/{n}``): ``seat``, else
        one reserved for the bot, else the first open one."""
        if self.status != WAITING or self._closing:
            raise errors.precondition(
                errors.MATCH_STARTED, f"name: {self.name} has already started"
            )
        if seat is not None:
            if not 0 <= seat < len(self.seats):
                raise errors.invalid("seat", f"{self.name} has seats 0..{len(self.seats) - 1}")
            chosen = self.seats[seat]
            reserved = chosen.kind == match_pb2.SEAT_KIND_BOT and chosen.bot_id == bot_id
            if not (chosen.is_open or (bot_id and reserved and chosen.principal is None)):
                raise errors.precondition(
                    errors.SEAT_TAKEN, f"seat: seat {seat} of {self.name} is not open"
                )
        else:
            candidates = [
                s
                for s in self.seats
                if bot_id and s.kind == match_pb2.SEAT_KIND_BOT and s.bot_id == bot_id
                if s.principal is None
            ] or [s for s in self.seats if s.is_open]
            if not candidates:
                raise errors.precondition(
                    errors.NO_OPEN_SEAT, f"name: {self.name} has no open seat"
                )
            chosen = candidates[0]
        chosen.principal = principal or f"{self.name}/seats/{chosen.index}"
        chosen.player = player or bot_id or f"guest{chosen.index}"
        if bot_id:
            chosen.kind = match_pb2.SEAT_KIND_BOT
            chosen.bot_id = bot_id
        self.log.info("seat_joined", seat=chosen.index, player=player)
        if self.on_joined is not None:
            self.on_joined(self, chosen.principal)
        return chosen

    def start(self) -> None:
        """Fill open seats with CPUs, deal, and start the runner task."""
        if self._closing or self.status == FINISHED:
            raise errors.precondition(errors.MATCH_FINISHED, f"name: {self.name} is over")
        if self.status != WAITING:
            raise errors.precondition(
                errors.MATCH_STARTED, f"name: {self.name} has already started"
            )
        for s in self.seats:
            if s.is_open:
                s.kind = match_pb2.SEAT_KIND_CPU
                s.cpu_level = s.cpu_level or match_pb2.CPU_LEVEL_EASY
            if s.is_cpu:
                s.principal = None
                s.player = s.player or f"cpu:{LEVEL_NAMES.get(s.cpu_level, EASY)}"
            elif s.kind == match_pb2.SEAT_KIND_BOT and s.principal is None:
                s.principal = f"bots/{s.bot_id}"
                s.player = s.player or s.bot_id
        streams = self.services.streams
        auto = [s.principal is None or not streams.ask_forced(s.principal) for s in self.seats]
        self.state = self.game.new_match(self.seed, auto_forced=auto)
        self._views = wire.ViewBuilder(self.ruleset_pb, self.players)
        self.status = RUNNING
        self.task = asyncio.create_task(self.run(), name=f"match-{self.id}")
        self.log.info("match_started", players=self.players, rules=self.ruleset.name)

    # -- the runner -----------------------------------------------------------------------

    async def run(self) -> None:
        """Drive the match to its end (the only code that changes ``self.state``)."""
        state = self.state
        assert state is not None
        try:
            self._announce_start()
            while not state.is_over:
                if self._stop_reason is not None:
                    state.cancel(self._stop_reason)
                    break
                seat_no = state.current_seat
                assert seat_no is not None
                seat = self.seats[seat_no]
                codes = state.legal_actions()
                legal = state.legal()
                self.turn_id += 1
                turn_id = self.turn_id
                self.resolved[turn_id] = (seat_no, -1)  # until an action is chosen
                if seat.principal is None:
                    level = LEVEL_NAMES[seat.cpu_level]  # CreateMatch refuses other levels
                    index = await self._cpu_choice(level, turn_id, seat_no, legal)
                else:
                    index = await self._remote_choice(seat, turn_id, legal)
                self.resolved[turn_id] = (seat_no, -1 if index is None else index)
                if index is None:
                    continue  # stopped, or the seat's side forfeited
                state.apply(codes[index])
                self._flush()
                # Let the Play streams start writing the event batches now: the next
                # request is built while they are on their way.
                await asyncio.sleep(0)
        except CpuFailed as e:
            if not state.is_over:
                state.cancel(f"internal server error: {e}")
        except Exception:
            self.log.exception("match_failed")
            if not state.is_over:
                state.cancel("internal server error")
        finally:
            if not state.is_over:  # the task itself was cancelled
                state.cancel(self._stop_reason or "server stopped")
            await self._finish()

    def _announce_start(self) -> None:
        state = self.state
        assert state is not None and self._views is not None
        for s in self.seats:
            if s.principal is not None:
                view = self._views.view_of(state, s.index)
                started = play_pb2.MatchStarted(match=self.name, seat=s.index, view=view)
                self.services.streams.send(
                    s.principal, play_pb2.PlayResponse(match_started=started)
                )
        public = self.public_view()
        for w in self.watchers:
            w.put(match_pb2.WatchMatchResponse(view=public))
        self._cursor = (state.hand, len(state.raw_events()))
        self._results_sent = len(state.hand_results())

    async def _cpu_choice(
        self, level: str, turn_id: int, seat: int, legal: Sequence[Action]
    ) -> int | None:
        """A built-in bot's choice, from the process pool; None if the match is stopped.
        Raises :class:`CpuFailed` (after logging why) when the bot fails: no other move is
        ever played in its place."""
        state = self.state
        assert state is not None
        if len(legal) == 1:
            return 0
        obs = observe(state, seat)
        choice = asyncio.ensure_future(
            self.services.pool.choose(level, decision_seed(self.seed, turn_id), obs, legal)
        )
        either: set[asyncio.Future[Any]] = {choice, self._stop}
        await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
        if not choice.done():
            choice.cancel()
            return None
        try:
            index = choice.result()
            if not 0 <= index < len(legal):  # pragma: no cover - cpu.choose checks it
                raise IndexError(f"action {index} of {len(legal)}")
        except Exception as e:
            self.log.error("cpu_failed", seat=seat, turn_id=turn_id, bot=level, exc_info=e)
            raise CpuFailed(
                f"built-in bot {level} failed on turn {turn_id} (seat {seat}): {_described(e)}"
            ) from e
        return index

    async def _remote_choice(self, seat: Seat, turn_id: int, legal: Sequence[Action]) -> int | None:
        """Ask a remote seat; on timeout apply the policy. None: stopped or forfeited."""
        state = self.state
        assert state is not None and self._views is not None and seat.principal is not None
        loop = asyncio.get_running_loop()
        timer_ms = self.timer_ms
        deadline = loop.time() + timer_ms / 1000
        # Filled in place: building the view apart and passing it in would copy it.
        request = play_pb2.PlayResponse()
        decision = request.decision
        decision.match = self.name
        decision.seat = seat.index
        decision.turn_id = turn_id
        self._views.view_of(state, seat.index, into=decision.view)
        decision.legal_actions.extend(wire.legal_actions(legal))
        decision.deadline.FromNanoseconds(time.time_ns() + timer_ms * 1_000_000)
        pending = Pending(
            turn_id, seat.index, len(legal), request, loop.create_future(), loop.create_future()
        )
        self.pending = pending
        pending.sent_ns = time.perf_counter_ns()
        self.services.streams.send(seat.principal, request)
        auto: asyncio.Future[int | None] | None = None
        timer = loop.call_at(deadline, pending.wake_up)
        self._stop.add_done_callback(pending.wake_up)
        try:
            if seat.autoplay:  # a late seat: play it at once unless the client answers first
                auto = asyncio.ensure_future(self._cpu_choice(EASY, turn_id, seat.index, legal))
                auto.add_done_callback(pending.wake_up)
            await pending.wake
            if pending.future.done() and pending.future.result() >= 0:
                self._record_think(pending)
                return pending.future.result()
            if self._stop.done():
                return None
            if auto is not None and auto.done():
                index = auto.result()
                if index is not None:
                    seat.auto_played += 1
                return index
            illegal = pending.future.done()  # resolved with _TIMED_OUT by illegal answers
        finally:
            self.pending = None
            timer.cancel()
            self._stop.remove_done_callback(pending.wake_up)
            if auto is not None and not auto.done():
                auto.cancel()
            elif auto is not None and not auto.cancelled():
                auto.exception()  # a failure the client's answer made moot (it is logged)
        return await self._timed_out(seat, turn_id, legal, illegal=illegal)

    def _record_think(self, pending: Pending) -> None:
        """Keep how long the client took; the decision's event is the next one of the
        current hand (the engine appends it first when the answer is applied)."""
        state = self.state
        assert state is not None
        micros = max(0, pending.answered_ns - pending.sent_ns) // 1000
        event = ThinkTime(len(state.raw_events()), micros)
        self.think_times.setdefault(state.hand, []).append(event)

    async def _timed_out(
        self, seat: Seat, turn_id: int, legal: Sequence[Action], *, illegal: bool
    ) -> int | None:
        state = self.state
        assert state is not None and seat.principal is not None
        seat.timeouts += 1
        connected = self.services.streams.connected(seat.principal)
        if illegal:
            why, termination = f"sent {ILLEGAL_LIMIT} illegal actions", Termination.ILLEGAL_ACTIONS
        elif connected:
            why, termination = f"let its {self.timer_ms} ms clock run out", Termination.TIMEOUT
        else:
            why, termination = "disconnected", Termination.DISCONNECT
        who = f"seat {seat.index} ({seat.player})"
        if self.settings.on_timeout == match_pb2.TIMEOUT_POLICY_FORFEIT:
            side = self.ruleset.side_of(seat.index)
            self.log.info("seat_forfeits", seat=seat.index, turn_id=turn_id, why=termination.value)
            state.forfeit(side, termination, f"{who} {why} on turn {turn_id}")
            return None
        seat.autoplay = True
        self.log.info("seat_autoplay", seat=seat.index, turn_id=turn_id, why=termination.value)
        index = await self._cpu_choice(EASY, turn_id, seat.index, legal)
        if index is not None:
            seat.auto_played += 1
        return index

    def _flush(self) -> None:
        """Send the events since the last flush to every seat and spectator: one batch per
        hand touched, then HandEnded for each hand that ended."""
        state = self.state
        assert state is not None and self._views is not None
        streams = self.services.streams
        remote = [s for s in self.seats if s.principal is not None]
        # The stream of the seat to act next first: its batch goes out before the others',
        # and its DecisionRequest right after it, which shortens the decision round trip.
        # The sort is stable, so the order within each stream is unchanged.
        if state.current_seat is not None:
            to_act = self.seats[state.current_seat].principal
            remote.sort(key=lambda s: s.principal != to_act)
        while True:
            hand, sent = self._cursor
            n_events = len(state.raw_events(hand))
            if sent < n_events:
                every, converted = self._views.events(state, hand)  # converted once each
                events, full = every[sent:], converted[sent:]
                for s in remote:
                    batch = play_pb2.EventBatch(match=self.name, seat=s.index, hand=hand)
                    batch.events.extend(self._masked(events, full, s.index))
                    if batch.events:
                        assert s.principal is not None
                        streams.send(s.principal, play_pb2.PlayResponse(events=batch))
                if self.watchers:
                    public = play_pb2.EventBatch(match=self.name, hand=hand)
                    public.events.extend(self._masked(events, full, None))
                    if public.events:
                        for w in self.watchers:
                            w.put(match_pb2.WatchMatchResponse(events=public))
            last = hand == state.hands_dealt - 1
            self._cursor = (hand, n_events) if last else (hand + 1, 0)
            if state.hand_over(hand) and self._results_sent <= hand:
                self._results_sent = hand + 1
                result = self._views.results(state.hand_results())[hand]
                for s in remote:
                    assert s.principal is not None
                    ended = play_pb2.HandEnded(match=self.name, seat=s.index, result=result)
                    streams.send(s.principal, play_pb2.PlayResponse(hand_ended=ended))
                if self.watchers:
                    ended = play_pb2.HandEnded(match=self.name, result=result)
                    for w in self.watchers:
                        w.put(match_pb2.WatchMatchResponse(hand_ended=ended))
                    if not state.is_over and last:
                        view = self.public_view()
                        for w in self.watchers:
                            w.put(match_pb2.WatchMatchResponse(view=view))
            if last:
                return

    @staticmethod
    def _masked(
        events: Sequence[Event], full: Sequence[game_pb2.Event], seat: int | None
    ) -> Iterable[game_pb2.Event]:
        for e, pb in zip(events, full, strict=True):
            shown = event_for_seat(e, seat)
            if shown is e:
                yield pb
            elif shown is not None:
                yield codec.event_to_proto(shown)

    async def _finish(self) -> None:
        """Record the finished match (with its replay) and tell everyone."""
        state = self.state
        assert state is not None and state.outcome is not None
        self.outcome_pb = codec.outcome_to_proto(state.outcome)
        # A bug in either must still end the match for everyone.
        try:
            self._flush()
        except Exception:
            self.log.exception("flush_failed")
        try:
            self.replay_json = self._replay_json()
        except Exception as e:
            self.replay_error = type(e).__name__  # GetReplay answers with it, not its text
            self.log.exception("replay_failed")
        await self._persist()
        self.status = FINISHED
        self.finished.set()
        if self.on_finished is not None:
            self.on_finished(self)
        for s in self.seats:
            if s.principal is not None:
                ended = play_pb2.MatchEnded(match=self.name, seat=s.index, outcome=self.outcome_pb)
                self.services.streams.send(s.principal, play_pb2.PlayResponse(match_ended=ended))
        self._close_watchers()
        self.log.info(
            "match_finished",
            termination=state.outcome.termination.value,
            winner=state.outcome.winner,
            reason=state.outcome.reason,
            hands=state.hands_dealt,
            turns=self.turn_id,
        )

    def _replay_json(self) -> str:
        state = self.state
        assert state is not None
        replay = with_think_times(
            state.replay(self.players, match_id=self.id, tags=list(self.settings.tags)),
            self.think_times,
        )
        return codec.replay_to_json(replay)

    async def _persist(self) -> None:
        """Store the final record (and the replay) before anyone is told the match ended."""
        assert self.outcome_pb is not None
        snapshot = self.to_proto()
        snapshot.state = FINISHED
        for seat in snapshot.seats:
            seat.connected = seat.kind == match_pb2.SEAT_KIND_CPU
        try:
            await self.services.store.save_match(
                snapshot,
                create_ns=self.create_ns,
                finish_ns=time.time_ns(),
                public=self.public,
                replay_json=self.replay_json,
            )
        except Exception:  # a full disk must not take the server down; say so loudly
            self.log.exception("persist_failed")
        self.final_pb = snapshot

    def _close_watchers(self) -> None:
        ended = match_pb2.WatchMatchResponse(
            match_ended=play_pb2.MatchEnded(match=self.name, outcome=self.outcome_pb)
        )
        for w in self.watchers:
            w.put(ended)
            w.put(None)
        self.watchers.clear()

    # -- stopping -------------------------------------------------------------------------

    async def cancel(self, reason: str) -> None:
        """End the match with TERMINATION_CANCELLED (recorded with its replay if it ran)."""
        if self.status == FINISHED or self._closing and self.status == WAITING:
            raise errors.precondition(errors.MATCH_FINISHED, f"name: {self.name} is over")
        self._closing = True
        if self.status == WAITING:
            sides = self.ruleset.num_sides
            self.outcome_pb = game_pb2.Outcome(
                termination=game_pb2.TERMINATION_CANCELLED,
                scores=[0] * sides,
                ranking=list(range(sides)),
                reason=reason,
            )
            await self._persist()
            self.status = FINISHED
            self.finished.set()
            if self.on_finished is not None:
                self.on_finished(self)
            self._close_watchers()
            self.log.info("match_finished", termination="cancelled", reason=reason, hands=0)
            return
        self.request_stop(reason)
        await self.finished.wait()

    def request_stop(self, reason: str) -> None:
        if self._stop_reason is None:
            self._stop_reason = reason
        if not self._stop.done():
            self._stop.set_result(None)

    # -- answers from Play streams --------------------------------------------------------

    def resume(self, principal: str) -> list[play_pb2.PlayResponse]:
        """What a (re)connecting stream of ``principal`` needs: MatchStarted for each of its
        seats (with the view now) and the pending request, if it is one of them."""
        if self.status != RUNNING or self.state is None or self._views is None:
            return []
        out = []
        for s in self.seats_of(principal):
            s.autoplay = False
            view = self._views.view_of(self.state, s.index)
            started = play_pb2.MatchStarted(match=self.name, seat=s.index, view=view)
            out.append(play_pb2.PlayResponse(match_started=started))
        pending = self.pending
        if pending is not None and self.seats[pending.seat].principal == principal:
            out.append(pending.request)
        return out

    def answer(self, principal: str, reply: play_pb2.ActionReply) -> list[play_pb2.PlayResponse]:
        """Handle an ActionReply from ``principal``; returns what to send back to it."""
        turn_id = reply.turn_id
        meta = {"match": self.name, "turn_id": str(turn_id)}
        pending = self.pending
        if pending is not None and pending.turn_id == turn_id and not pending.future.done():
            seat = self.seats[pending.seat]
            if seat.principal != principal:
                raise errors.denied(
                    errors.NOT_YOUR_SEAT,
                    f"turn_id: turn {turn_id} of {self.name} belongs to seat {seat.index}, "
                    "which this token does not hold",
                    **meta,
                )
            seat.autoplay = False
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
            error = errors.precondition(
                errors.ILLEGAL_ACTION,
                message
                + (
                    f"; {left} more tries before the deadline"
                    if left
                    else "; that was the last try: it counts as a timeout"
                ),
                **meta,
            )
            if left <= 0:
                pending.resolve(_TIMED_OUT)
                return [play_pb2.PlayResponse(error=error.status())]
            return [play_pb2.PlayResponse(error=error.status()), pending.request]
        resolved = self.resolved.get(turn_id)
        if resolved is None:
            raise errors.invalid(
                "turn_id", f"{self.name} has no turn {turn_id}", errors.UNKNOWN_TURN
            )
        seat_no, applied = resolved
        seat = self.seats[seat_no]
        if seat.principal != principal:
            raise errors.denied(
                errors.NOT_YOUR_SEAT,
                f"turn_id: turn {turn_id} of {self.name} belongs to seat {seat_no}, "
                "which this token does not hold",
                **meta,
            )
        seat.autoplay = False
        if applied == reply.action_id:
            return []  # a duplicate of the accepted answer
        raise errors.precondition(
            errors.STALE_TURN, f"turn_id: turn {turn_id} of {self.name} is already resolved", **meta
        )


class Registry:
    """Every match the server holds in memory: waiting, running, and recently finished."""

    def __init__(self, services: Services, *, keep_finished: int = 1000) -> None:
        self.services = services
        self.matches: dict[str, Match] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        # Indexes, so that CreateMatch's limits do not scan every match held in memory
        # (with 512 matches running, plus the last 1,000 finished): the unfinished matches
        # in creation order, and for each principal the unfinished matches with a seat it
        # owns. A seat's owner is set when the match is created (a seat reserved for a bot)
        # or when it is joined, and never changes afterwards; finishing drops the match.
        self._unfinished: dict[str, Match] = {}
        self._owned: dict[str, dict[str, Match]] = {}
        self._keep_finished = keep_finished
        self._games: dict[Ruleset, Game] = {}

    def game(self, ruleset: Ruleset) -> Game:
        game = self._games.get(ruleset)
        if game is None:
            if len(self._games) > 256:
                self._games.clear()
            game = self._games[ruleset] = Game(ruleset)
        return game

    def create(
        self,
        ruleset: Ruleset,
        seats: list[Seat],
        settings: match_pb2.MatchSettings,
        seed: int | None,
    ) -> Match:
        match_id = secrets.token_hex(8)
        while match_id in self.matches:  # pragma: no cover - 64 random bits
            match_id = secrets.token_hex(8)
        match = Match(
            self.services,
            match_id=match_id,
            ruleset=ruleset,
            game=self.game(ruleset),
            seats=seats,
            settings=settings,
            seed=secrets.randbits(63) if seed is None else seed,
        )
        self.matches[match_id] = match
        self._unfinished[match_id] = match
        for seat in seats:
            if seat.owner is not None:
                self._on_joined(match, seat.owner)
        match.on_finished = self._on_finished
        match.on_joined = self._on_joined
        return match

    def _on_joined(self, match: Match, owner: str) -> None:
        self._owned.setdefault(owner, {})[match.id] = match

    def _on_finished(self, match: Match) -> None:
        self._unfinished.pop(match.id, None)
        for owner in {s.owner for s in match.seats if s.owner is not None}:
            owned = self._owned.get(owner)
            if owned is not None:
                owned.pop(match.id, None)
                if not owned:
                    del self._owned[owner]
        self._finished[match.id] = None
        while len(self._finished) > self._keep_finished:
            old, _ = self._finished.popitem(last=False)
            self.matches.pop(old, None)

    def get(self, match_id: str) -> Match | None:
        return self.matches.get(match_id)

    def active(self) -> list[Match]:
        """The unfinished matches (waiting or running), oldest first."""
        return list(self._unfinished.values())

    def active_count(self) -> int:
        return len(self._unfinished)

    def count_of(self, principal: str) -> int:
        """How many unfinished matches have a seat for ``principal``."""
        return len(self._owned.get(principal, ()))

    def of_principal(self, principal: str) -> list[Match]:
        """Unfinished matches with a seat for ``principal`` (joined, or reserved for it),
        oldest first."""
        owned = self._owned.get(principal)
        if not owned:
            return []
        return [m for m in self._unfinished.values() if m.id in owned]

    async def stop_all(self, reason: str, timeout: float) -> None:
        """Cancel every waiting and running match (recorded CANCELLED, with replays)."""
        active = self.active()
        jobs = [asyncio.ensure_future(m.cancel(reason)) for m in active]
        if not jobs:
            return
        done, pending = await asyncio.wait(jobs, timeout=timeout)
        for job in pending:
            job.cancel()
        for job in done:
            with contextlib.suppress(Exception):
                job.result()
