"""One match as a :class:`~capicua.client.session.Session` plays it.

The session's stream hands each message of a match to its :class:`MatchRun` in stream
order (:meth:`MatchRun.message`): the seat's kept view (a session that asked for
incremental decisions keeps one) is brought up to date at once, so a decision queued now
has its complete view, and everything else goes to the match's queue. The run's worker
task (:meth:`MatchRun.work`) takes the queue in order: the bot's hooks, and its decisions,
each taken at most once and never for a request that is over before its turn comes (the
session's module doc tells the rules).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from capicua.engine.records import Event, Outcome
from capicua.v1 import play_pb2, view_pb2
from capicua.wire import codec
from capicua.wire.codec import WireError
from capicua.wire.views import SeatView, observation_from_view

from .bot import (
    SUPERSEDED,
    WITHDRAWN,
    Bot,
    BotAnswerError,
    ClientError,
    Decision,
    PlayError,
    overrides,
)

log = logging.getLogger("capicua.client")

_REASONS = set(play_pb2.WithdrawalReason.values())
#: Withdrawals after which nobody takes an answer: a decision in progress is cancelled.
_NOBODY_WAITS = {
    play_pb2.WITHDRAWAL_REASON_MATCH_ENDED,
    play_pb2.WITHDRAWAL_REASON_SERVER_STOPPING,
}


@dataclass(frozen=True)
class Events:
    """Events for the ``on_events`` hook (of an EventBatch or a request), converted."""

    seat: int
    events: tuple[Event, ...]


@dataclass(frozen=True)
class SessionLinks:
    """What a match's run needs of its session: the bot, whether the session keeps the
    seats' views, and the session's ways to send an answer, run a hook, give up (a
    :class:`ClientError` from the bot), count a withdrawn turn and end the match."""

    bot: Bot
    incremental: bool
    send: Callable[[play_pb2.ActionReply], None]
    hook: Callable[..., Awaitable[None]]
    give_up: Callable[[ClientError], None]
    withdrawn: Callable[[str, int], None]  # (match, turn_id)
    ended: Callable[[MatchRun, Outcome], None]


class MatchRun:
    """One match as the session sees it: a queue of its messages and the worker task."""

    def __init__(self, name: str, links: SessionLinks) -> None:
        self.name = name
        self.links = links
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        self.task: asyncio.Task[None] | None = None
        self.latest_turn = 0  # the newest DecisionRequest seen
        self.withdrawn_through = 0  # the newest turn_id the server withdrew
        self.over = False  # its MatchEnded arrived: no decision of it is taken any more
        self.timer: play_pb2.TurnTimer | None = None  # from MatchStarted
        self.choosing: tuple[Decision, asyncio.Task[int | None]] | None = None
        self.answers: dict[int, int] = {}  # turn_id -> the id we sent
        self.late: set[int] = set()  # turns answered after the server withdrew them
        self.started: set[int] = set()  # seats announced to the bot
        self.hands_ended: set[int] = set()
        self.views: dict[int, SeatView] = {}  # seat -> its view as the session keeps it

    # -- messages, in stream order ------------------------------------------------------

    def message(self, kind: str, body: Any) -> None:
        """A match's message, in stream order: the seat's kept view (only a session that
        asked for incremental decisions keeps one) is brought up to date here (so a decision
        queued now has its complete view), the rest is the worker's."""
        if kind == "decision":
            self._decision(body)
            return
        if kind == "decision_withdrawn":
            self._withdrawn(body)
            return
        if kind == "match_started":
            self.timer = body.turn_timer if body.HasField("turn_timer") else None
            if self.links.incremental:
                self._renew(body.seat, body.view)
        elif kind == "match_ended":
            self._over()
        elif kind == "events" and body.HasField("seat"):
            seen = self.views.get(body.seat)
            if seen is not None:
                body = Events(body.seat, seen.add_events(body.hand, body.events))
        elif kind == "hand_ended" and body.seat in self.views:
            self.views[body.seat].add_result(body.result)
        self.queue.put_nowait(body)

    def _renew(self, seat: int, view: view_pb2.View) -> SeatView:
        """The seat's kept view starts over from a full ``view`` (MatchStarted; a request in
        the full form, as a new stream gets after a reconnect). Events it shows that the
        kept one did not (played while the stream was down) go to ``on_events`` like any
        other, so a bot misses no move across a reconnect."""
        old = self.views.get(seat)
        seen = self.views[seat] = SeatView(view)
        if old is not None:
            new = seen.events[len(old.events) :] if old.hand == seen.hand else seen.events
            if new:
                self.queue.put_nowait(Events(seat, tuple(new)))
        return seen

    def _decision(self, request: play_pb2.DecisionRequest) -> None:
        known = None  # no kept view: the decision converts the whole view when it is read
        if request.incremental:
            seen = self.views.get(request.seat)
            if seen is None:  # a server bug: every seat gets MatchStarted first
                raise WireError("view", "an incremental request for a seat with no view")
            known, new = seen.complete(request)
            if new:
                self.queue.put_nowait(Events(request.seat, new))
        elif self.links.incremental:  # the full view: the seat's view starts over from it
            known = self._renew(request.seat, request.view).known()
        turn = request.turn_id
        if self.over or turn <= self.withdrawn_through:
            return  # withdrawn already, or the match is over: nothing to decide
        if turn > self.latest_turn:
            self.latest_turn = turn
        choosing = self.choosing
        if choosing is not None:
            decision, task = choosing
            if decision.turn_id == turn:
                return  # asked again while still choosing: the answer is on its way
            if decision.turn_id < turn:
                decision._fate.stale = True
                if decision.withdrawal is None:  # the server moved on without saying
                    log.warning(
                        "%s turn %d: the server moved on to turn %d; dropping that decision",
                        self.name,
                        decision.turn_id,
                        turn,
                    )
                    task.cancel(SUPERSEDED)
        self.queue.put_nowait(Decision(request, known=known, turn_timer=self.timer))

    def _withdrawn(self, withdrawn: play_pb2.DecisionWithdrawn) -> None:
        """The server no longer wants an answer to turn ``withdrawn.turn_id``: a queued
        request of it is never decided (:meth:`_decide`); a decision of it in progress is
        cancelled when nobody will take the answer, and otherwise (the server played the
        turn itself) goes on, its answer ending the auto-play."""
        turn = withdrawn.turn_id
        self.links.withdrawn(self.name, turn)
        self.withdrawn_through = max(self.withdrawn_through, turn)
        reason = withdrawn.reason
        where = f"{self.name} turn {turn} (seat {withdrawn.seat})"
        if reason == play_pb2.WITHDRAWAL_REASON_AUTO_PLAYED:  # one a turn: not worth more
            log.debug("%s: withdrawn: the server played it (the seat is auto-played)", where)
        elif reason == play_pb2.WITHDRAWAL_REASON_TIMED_OUT:
            log.warning("%s: withdrawn: the turn timer ran out (timeout policy)", where)
        elif reason == play_pb2.WITHDRAWAL_REASON_ILLEGAL_ACTIONS:
            log.warning("%s: withdrawn: three illegal answers (timeout policy)", where)
        else:
            name = play_pb2.WithdrawalReason.Name(reason) if reason in _REASONS else str(reason)
            log.info("%s: withdrawn (%s)", where, name)
        choosing = self.choosing
        if choosing is None or choosing[0].turn_id > turn:
            return
        decision, task = choosing
        decision._fate.stale = True
        if decision.turn_id == turn:
            decision._fate.withdrawal = withdrawn
        if reason in _NOBODY_WAITS:  # also a decision that went on after its own withdrawal
            task.cancel(WITHDRAWN)

    def _over(self) -> None:
        """MatchEnded arrived (the worker handles it after what is queued before it): no
        decision of the match is taken from now on, and one in progress is cancelled."""
        self.over = True
        if self.choosing is not None:
            decision, task = self.choosing
            decision._fate.stale = True
            task.cancel(WITHDRAWN)

    # -- the worker: hooks and decisions, in order --------------------------------------

    async def work(self) -> None:
        """Handle the match's messages in order (the hooks and the decisions)."""
        bot, hook = self.links.bot, self.links.hook
        while True:
            item = await self.queue.get()
            try:
                if isinstance(item, Decision):
                    await self._decide(item)
                elif isinstance(item, PlayError):
                    await hook("on_error", item)
                elif isinstance(item, play_pb2.MatchStarted):
                    if item.seat not in self.started:
                        self.started.add(item.seat)
                        log.info("%s: playing seat %d", self.name, item.seat)
                        if overrides(bot, "on_match_started"):
                            view = observation_from_view(item.view)
                            await hook("on_match_started", self.name, item.seat, view)
                elif isinstance(item, Events):
                    await hook("on_events", self.name, item.seat, list(item.events))
                elif isinstance(item, play_pb2.EventBatch):  # a seat with no kept view
                    if overrides(bot, "on_events"):
                        events = [codec.event_from_proto(e) for e in item.events]
                        await hook("on_events", self.name, item.seat, events)
                elif isinstance(item, play_pb2.HandEnded):
                    if item.result.hand not in self.hands_ended:
                        self.hands_ended.add(item.result.hand)
                        result = codec.hand_result_from_proto(item.result)
                        await hook("on_hand_ended", self.name, result)
                elif isinstance(item, play_pb2.MatchEnded):
                    outcome = codec.outcome_from_proto(item.outcome)
                    log.info(
                        "%s ended: %s (%s)", self.name, outcome.termination.value, outcome.reason
                    )
                    await hook("on_match_ended", self.name, outcome)
                    self.links.ended(self, outcome)
                    return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s: cannot handle %s", self.name, type(item).__name__)

    async def _decide(self, decision: Decision) -> None:
        turn = decision.turn_id
        if self.over or turn < self.latest_turn or turn <= self.withdrawn_through:
            return  # over before its turn came: withdrawn, a later request, the match ended
        known = self.answers.get(turn)
        if known is not None:
            self._answer(decision, known)  # the same request again: the same answer
            return
        task = asyncio.ensure_future(self.links.bot.decide(decision))
        self.choosing = (decision, task)
        try:
            await asyncio.wait({task})
        finally:
            if self.choosing is not None and self.choosing[1] is task:
                self.choosing = None
            if not task.done():  # the worker itself was cancelled
                task.cancel()
        if task.cancelled():
            return
        error = task.exception()
        where = f"{self.name} turn {turn} (seat {decision.seat})"
        if isinstance(error, ClientError):  # the bot gives up: run() raises it
            self.links.give_up(error)
            return
        if isinstance(error, BotAnswerError):
            log.error("%s: %s; not answering (the match's timeout policy applies)", where, error)
            return
        if error is not None:
            log.error(
                "%s: the bot failed; not answering (the match's timeout policy applies)",
                where,
                exc_info=error,
            )
            return
        action_id = task.result()
        if action_id is None or self.over:
            return
        if decision.withdrawal is not None:
            # The server played the turn itself; answering anyway ends its auto-play.
            log.info("%s: answered after the server withdrew it, to take the seat back", where)
            self.late.add(turn)
        elif turn < self.latest_turn:
            log.warning("%s: answered too late (the server moved on)", where)
        self.answers[turn] = action_id
        self._answer(decision, action_id)

    def _answer(self, decision: Decision, action_id: int) -> None:
        log.debug("%s turn %d: action %d", decision.match, decision.turn_id, action_id)
        self.links.send(
            play_pb2.ActionReply(
                match=decision.match, turn_id=decision.turn_id, action_id=action_id
            )
        )
