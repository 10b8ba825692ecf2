"""The Python SDK and withdrawn requests (DecisionWithdrawn), over a real server on loopback:
a bot late once answers its withdrawn turn and so takes its seat back, and is told of its
time: ``time_left_ms`` (measured by the server) and the match's turn timer from
MatchStarted; ``time_left()`` counts on this machine's monotonic clock. The rest of what the
SDK does with withdrawals (a bot never asked for a turn withdrawn before its turn came, a
``choose`` cancelled when its match ends, the turn timer and ``time_left_ms`` a bot is
shown) is tested against a scripted stream in tests/test_client_stream.py; the server's
side in tests/compliance/test_compliance_withdrawals.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

from capicua.client import Bot, Decision, Session, Summary, current_decision
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
    # What it was told of its time: the server's own measure, the match's timer.
    first = bot.calls[0]
    assert 0 < (first.time_left_ms or 0) <= 300
    assert first.turn_timer is not None
    assert (first.turn_timer.limit_ms, first.turn_timer.on_timeout) == (
        300,
        play_pb2.ON_TIMEOUT_AUTO_PLAY,
    )


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
