"""The Python SDK and withdrawn requests (DecisionWithdrawn), over a real server on loopback:
a bot is never asked for a turn the server withdrew before its turn came, so a slow bot
under auto-play does not work through a backlog of turns played without it; a ``choose``
in progress is cancelled when the match ends; a bot late once answers its withdrawn turn
and so takes its seat back. Also what the bot is told of its time: ``time_left_ms``
(measured by the server), ``time_left()`` on this machine's monotonic clock, and the match's
turn timer from MatchStarted."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence
from typing import Any

import pytest

from capicua.client import Bot, Decision, Session, Summary, current_decision
from capicua.client.bot import WITHDRAWN
from capicua.engine.actions import Action
from capicua.engine.observation import Observation
from capicua.engine.records import Outcome, Termination
from capicua.v1 import match_pb2, play_pb2
from tests.clientkit import sample_decision, until
from tests.compliance.client import bot_seat, cpu_seat
from tests.serverkit import running, wait_finished

AUTO = match_pb2.TIMEOUT_POLICY_AUTO_PLAY


def session(bot: Bot, address: str, token: str, **options: Any) -> asyncio.Task[Summary]:
    return asyncio.create_task(Session(bot, server=address, token=token, **options).run())


class Asked:
    """What a bot saw of each decision it was asked, as ``choose`` began."""

    def __init__(self) -> None:
        self.calls: list[Decision] = []
        self.stale_at_start: list[int] = []  # turns already stale when choose was called
        self.ended: list[Outcome] = []

    def asked(self) -> Decision:
        decision = current_decision()
        assert decision is not None
        self.calls.append(decision)
        if decision.stale:
            self.stale_at_start.append(decision.turn_id)
        return decision

    @property
    def turns(self) -> list[int]:
        return [d.turn_id for d in self.calls]


class StuckSyncBot(Bot, Asked):
    """Its first ``choose`` (in a thread) blocks until the test opens ``gate``."""

    def __init__(self) -> None:
        Asked.__init__(self)
        self.gate = threading.Event()
        self.blocked = threading.Event()

    def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        self.asked()
        if len(self.calls) == 1:
            self.blocked.set()
            assert self.gate.wait(60), "never released"
        return legal_actions[0]

    def on_match_ended(self, match: str, outcome: Outcome) -> None:
        self.ended.append(outcome)


class StuckAsyncBot(Bot, Asked):
    """Its first ``async def choose`` waits until cancelled (or ``gate`` opens)."""

    def __init__(self) -> None:
        Asked.__init__(self)
        self.gate = asyncio.Event()
        self.blocked = asyncio.Event()
        self.cancelled: list[str] = []

    async def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        self.asked()
        if len(self.calls) == 1:
            self.blocked.set()
            try:
                await asyncio.wait_for(self.gate.wait(), 60)
            except asyncio.CancelledError as e:
                self.cancelled.append(str(e.args[0]) if e.args else "")
                raise
        return legal_actions[0]

    async def on_match_ended(self, match: str, outcome: Outcome) -> None:
        self.ended.append(outcome)


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_slow_bot_under_auto_play_is_never_asked_a_withdrawn_turn(kind: str) -> None:
    """The bot is stuck on its first decision: its timer runs out, and the server plays that
    turn and every later one of the seat at once, withdrawing each request. The whole match
    is over while the bot still thinks: the SDK asks it nothing more, ends the match, and
    cancels the stuck ``choose`` (an async one; a thread's result is dropped)."""
    timer_ms = 200
    async with running(None) as (app, lobby):
        bot_id, token = await lobby.register("stuck")
        match, host = await lobby.create(
            "iq-1v1",
            [bot_seat(bot_id), cpu_seat()],
            overrides=["target=60"],
            seed=4,
            timer_ms=timer_ms,
            on_timeout=AUTO,
        )
        bot: StuckSyncBot | StuckAsyncBot = StuckSyncBot() if kind == "sync" else StuckAsyncBot()
        run = session(bot, app.address, token, matches=1)
        try:
            await until(lambda: bool(app.hub.streams), 10, "the stream")
            await lobby.start(match.name, host)
            summary = await asyncio.wait_for(run, 60)
            # The session is over while the first choose was still stuck in it.
            assert not bot.gate.is_set()
        finally:
            bot.gate.set()
            run.cancel()
        final = await wait_finished(lobby, match.name)

    assert summary.outcomes[match.name].termination is Termination.NORMAL
    assert bot.ended and bot.ended[0].termination is Termination.NORMAL
    [first] = bot.calls
    assert bot.turns == [first.turn_id], "asked once: never for a turn played without it"
    # Every request of the seat was withdrawn (the first as its timer ran out, the rest as
    # the server played them), and each one was a turn the server played for it.
    withdrawn = summary.withdrawn[match.name]
    assert withdrawn == list(range(first.turn_id, first.turn_id + len(withdrawn)))
    assert len(withdrawn) > 5
    seat = final.seats[0]
    assert (seat.timeouts, seat.auto_played) == (1, len(withdrawn))
    assert first.stale and first.withdrawal is not None
    assert first.withdrawal.reason == play_pb2.WITHDRAWAL_REASON_TIMED_OUT
    assert not summary.errors, "nothing answered: the match was over first"
    if isinstance(bot, StuckAsyncBot):
        assert bot.cancelled == [WITHDRAWN], "cancelled when the match ended"
    # What it was told of its time: the server's own measure, the match's timer.
    assert 0 < (first.time_left_ms or 0) <= timer_ms
    assert first.turn_timer is not None
    assert first.turn_timer.limit_ms == timer_ms
    assert first.turn_timer.on_timeout == play_pb2.ON_TIMEOUT_AUTO_PLAY


class LateOnceBot(Bot, Asked):
    """Sits on its first decision until the server has withdrawn it, then answers it
    anyway; answers every later one at once."""

    def __init__(self) -> None:
        Asked.__init__(self)
        self.first_withdrawal: play_pb2.DecisionWithdrawn | None = None

    async def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        decision = self.asked()
        if len(self.calls) == 1:
            for _ in range(3000):  # bounded: the server withdraws it after its 300 ms
                if decision.stale:
                    break
                await asyncio.sleep(0.01)
            self.first_withdrawal = decision.withdrawal
        return legal_actions[-1]

    async def on_match_ended(self, match: str, outcome: Outcome) -> None:
        self.ended.append(outcome)


async def test_a_bot_late_once_answers_the_withdrawn_turn_and_takes_its_seat_back() -> None:
    """The SDK lets a ``choose`` whose turn the server played (timed out, auto-played) run
    to its end and sends its answer: refused as stale, it ends the auto-play, and from the
    next turns on the seat is waited for and plays its own moves."""
    async with running(None) as (app, lobby):
        bot_id, token = await lobby.register("late")
        match, host = await lobby.create(
            "iq-1v1",
            [bot_seat(bot_id), cpu_seat()],
            overrides=["target=200"],
            seed=4,
            timer_ms=300,
            on_timeout=AUTO,
        )
        bot = LateOnceBot()
        run = session(bot, app.address, token, matches=1)
        await until(lambda: bool(app.hub.streams), 10, "the stream")
        await lobby.start(match.name, host)
        summary = await asyncio.wait_for(run, 60)
        final = await wait_finished(lobby, match.name)

    assert bot.first_withdrawal is not None
    assert bot.first_withdrawal.reason == play_pb2.WITHDRAWAL_REASON_TIMED_OUT
    assert not bot.stale_at_start, "asked for a turn already withdrawn"
    withdrawn = summary.withdrawn[match.name]
    assert withdrawn[0] == bot.turns[0]
    # Only requests sent before its late answer was read were played without it (as many
    # as the server played while the bot sat on its first one): every later one was asked
    # and answered in time.
    assert withdrawn == list(range(withdrawn[0], withdrawn[-1] + 1))
    later = [turn for turn in bot.turns if turn > withdrawn[-1]]
    assert len(later) >= 3 and later == list(range(withdrawn[-1] + 1, bot.turns[-1] + 1))
    reasons = {e.reason for e in summary.errors}
    assert reasons <= {"STALE_TURN"} and len(summary.errors) <= len(withdrawn)
    seat = final.seats[0]
    assert (seat.timeouts, seat.auto_played) == (1, len(withdrawn))
    assert summary.outcomes[match.name].termination is Termination.NORMAL


async def test_cancelling_the_match_cancels_the_choose_in_progress() -> None:
    async with running(None) as (app, lobby):
        bot_id, token = await lobby.register("cancelled")
        match, host = await lobby.create(
            "block", [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()], timer_ms=3_600_000
        )
        bot = StuckAsyncBot()
        run = session(bot, app.address, token, matches=1)
        try:
            await until(lambda: bool(app.hub.streams), 10, "the stream")
            await lobby.start(match.name, host)
            await asyncio.wait_for(bot.blocked.wait(), 30)
            await lobby.cancel_match(match.name, "test over", token=host)
            summary = await asyncio.wait_for(run, 30)
        finally:
            bot.gate.set()
            run.cancel()
    assert bot.cancelled == [WITHDRAWN]
    assert summary.withdrawn[match.name] == bot.turns
    assert bot.calls[0].withdrawal is not None
    assert bot.calls[0].withdrawal.reason == play_pb2.WITHDRAWAL_REASON_MATCH_ENDED
    assert summary.outcomes[match.name].termination is Termination.CANCELLED
    assert bot.ended and not summary.errors


def test_time_left_counts_from_arrival_on_the_local_clock() -> None:
    """``time_left()`` is the server's ``time_left_ms`` less the time since the request
    arrived, whatever the wall clocks say; without ``time_left_ms`` (an older server) it
    falls back on the deadline."""
    old = sample_decision()  # a deadline far ahead, no time_left_ms
    assert old.time_left_ms is None
    left = old.time_left()
    assert left is not None and left > 1_000_000
    request = play_pb2.DecisionRequest()
    request.CopyFrom(old.request)
    request.time_left_ms = 5_000
    request.deadline.FromSeconds(1)  # a client clock decades off: no matter
    arrived = time.monotonic() - 2.0
    decision = Decision(request, received=arrived)
    assert decision.time_left_ms == 5_000
    left = decision.time_left()
    assert left is not None and 2.5 < left <= 3.0
    assert Decision(request, received=arrived - 10).time_left() == 0.0
    assert not decision.stale and decision.withdrawal is None
