"""Requests the server no longer wants answered: DecisionWithdrawn, and the timer a client
can budget with without trusting clocks (MatchStarted.turn_timer, DecisionRequest
.time_left_ms).

A request whose turn ends without the client's accepted answer is withdrawn, to that
client alone, before any later request or the MatchEnded of its match: after a timeout the
server auto-played, for every turn it then auto-played at once, after the third illegal
answer, when the match is cancelled, when the seat's side forfeits. A client that ignores
the message (the suite's Bot does) keeps working: an answer to a withdrawn turn is refused
as any late answer is. Timers are short (300 ms) where the test waits for them to run out.
"""

from __future__ import annotations

import asyncio

from capicua.v1 import game_pb2, match_pb2, play_pb2
from tests.compliance.client import (
    Bot,
    Lobby,
    auth,
    check_withdrawals,
    error_info,
    random_choice,
    reasons,
    until,
)
from tests.compliance.test_compliance_play import AUTO, FORFEIT, TIMER_MS, setup

TIMED_OUT = play_pb2.WITHDRAWAL_REASON_TIMED_OUT
AUTO_PLAYED = play_pb2.WITHDRAWAL_REASON_AUTO_PLAYED


def started_timers(bot: Bot, name: str) -> list[tuple[int, int]]:
    return [
        (m.match_started.turn_timer.limit_ms, m.match_started.turn_timer.on_timeout)
        for m in bot.by_match[name]
        if m.HasField("match_started")
    ]


async def test_an_auto_played_timeout_withdraws_each_request_it_plays(lobby: Lobby) -> None:
    name, host, ids = await setup(
        lobby, "iq-1v1", [0, 1], overrides=["target=30"], seed=4, timer_ms=TIMER_MS, on_timeout=AUTO
    )
    silent = Bot(lobby.address, ids[0][1], chooser=lambda b, d: None)
    player = Bot(lobby.address, ids[1][1])
    runs = [asyncio.create_task(b.run([name])) for b in (silent, player)]
    await until(lambda: silent.welcome is not None and player.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(asyncio.gather(*runs), 60)

    # MatchStarted says the timer and the policy as applied; every request how long the
    # server will wait for it, measured by the server: no clock has to agree.
    for bot in (silent, player):
        assert started_timers(bot, name) == [(TIMER_MS, play_pb2.ON_TIMEOUT_AUTO_PLAY)]
        assert bot.decisions and all(0 < d.time_left_ms <= TIMER_MS for d in bot.decisions)

    # Every request of the silent seat is withdrawn, each once, in order, before the next
    # request or MatchEnded: the first for its timeout, the rest as the server played them.
    withdrawn = check_withdrawals(silent.messages)
    asked = [d.turn_id for d in silent.decisions]
    assert [w.turn_id for w in withdrawn] == asked
    assert [w.reason for w in withdrawn] == [TIMED_OUT] + [AUTO_PLAYED] * (len(asked) - 1)
    seat = silent.decisions[0].seat
    assert all(w.match == name and w.seat == seat for w in withdrawn)
    # ... and only to it: the seat that answered in time has none.
    assert check_withdrawals(player.messages) == []
    final = await lobby.get(name)
    assert final.seats[seat].timeouts == 1
    assert final.seats[seat].auto_played == len(withdrawn)
    assert silent.ended[name].outcome.termination == game_pb2.TERMINATION_NORMAL
    await lobby.replay(name)


async def test_a_client_ignoring_withdrawals_answers_late_and_is_waited_for_again(
    lobby: Lobby,
) -> None:
    """A client written before DecisionWithdrawn answers a withdrawn turn: it is refused as
    any answer to a turn that is over (STALE_TURN, or ignored when it names the move the
    server played), and the answer ends the auto-play: from then on the seat is waited
    for, and none of its requests is withdrawn."""
    name, host, ids = await setup(
        lobby, "iq-1v1", [0, 1], overrides=["target=60"], seed=4, timer_ms=TIMER_MS, on_timeout=AUTO
    )
    late_turn: list[int] = []

    def chooser(bot: Bot, d: play_pb2.DecisionRequest) -> int | None:
        if not late_turn:  # the first request: silent until it is withdrawn
            late_turn.append(d.turn_id)
            return None
        return random_choice(bot, d)

    def on_message(bot: Bot, message: play_pb2.PlayResponse) -> None:
        if message.HasField("decision_withdrawn") and not bot.answers:
            first = bot.decisions[0]
            bot.answer(first, random_choice(bot, first))  # late: after its withdrawal

    late = Bot(lobby.address, ids[0][1], chooser=chooser)
    player = Bot(lobby.address, ids[1][1])
    runs = [
        asyncio.create_task(late.run([name], on_message=on_message)),
        asyncio.create_task(player.run([name])),
    ]
    await until(lambda: late.welcome is not None and player.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(asyncio.gather(*runs), 60)

    withdrawn = check_withdrawals(late.messages)
    assert withdrawn[0].turn_id == late_turn[0] and withdrawn[0].reason == TIMED_OUT
    # Requests sent before the late answer was read may still be auto-played (an answer to
    # them may come too late as well); after it, the seat answers each in time and nothing
    # more is withdrawn.
    refused = reasons(late)
    assert set(refused) <= {"STALE_TURN"} and len(refused) <= len(withdrawn), refused
    assert len(withdrawn) < len(late.decisions) - 3, (len(withdrawn), len(late.decisions))
    assert all(w.reason == AUTO_PLAYED for w in withdrawn[1:])
    last = withdrawn[-1].turn_id
    assert [d.turn_id for d in late.decisions if d.turn_id > last], "waited for again"
    assert late.ended[name].outcome.termination == game_pb2.TERMINATION_NORMAL
    final = await lobby.get(name)
    assert final.seats[late.decisions[0].seat].auto_played == len(withdrawn)
    await lobby.replay(name)


async def test_forfeit_withdraws_the_request_then_ends_the_match(lobby: Lobby) -> None:
    name, host, ids = await setup(
        lobby, "block", [0, 1, 0, 1], timer_ms=TIMER_MS, on_timeout=FORFEIT
    )
    silent = Bot(lobby.address, ids[0][1], chooser=lambda b, d: None)
    player = Bot(lobby.address, ids[1][1])
    runs = [asyncio.create_task(b.run([name])) for b in (silent, player)]
    await until(lambda: silent.welcome is not None and player.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(asyncio.gather(*runs), 30)
    assert started_timers(silent, name) == [(TIMER_MS, play_pb2.ON_TIMEOUT_FORFEIT)] * 2
    [withdrawn] = check_withdrawals(silent.messages)
    assert (withdrawn.turn_id, withdrawn.reason) == (silent.decisions[-1].turn_id, TIMED_OUT)
    kinds = [m.WhichOneof("message") for m in silent.by_match[name]]
    assert kinds.index("decision_withdrawn") < kinds.index("match_ended")
    assert silent.ended[name].outcome.termination == game_pb2.TERMINATION_TIMEOUT
    assert check_withdrawals(player.messages) == []


async def test_three_illegal_answers_withdraw_the_request(lobby: Lobby) -> None:
    # The deadline is an hour away: only the illegal answers can end the turn in time.
    name, host, ids = await setup(
        lobby, "block", [0, None, None, None], overrides=["target=20"], timer_ms=3_600_000
    )
    bad: list[int] = []

    def chooser(bot: Bot, d: play_pb2.DecisionRequest) -> int:
        if not bad or d.turn_id == bad[0]:
            bad[:] = [d.turn_id]
            return 99  # no such id
        return random_choice(bot, d)

    bot = Bot(lobby.address, ids[0][1], chooser=chooser)
    run = asyncio.create_task(bot.run([name]))
    await until(lambda: bot.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(run, 60)
    first = [d for d in bot.decisions if d.turn_id == bad[0]]
    assert len(first) == 3, "asked again after each of the first two illegal answers"
    # sent again: the time left then, never more than before
    lefts = [d.time_left_ms for d in first]
    assert lefts == sorted(lefts, reverse=True) and 0 < lefts[-1] <= 3_600_000
    withdrawn = check_withdrawals(bot.messages)
    assert (withdrawn[0].turn_id, withdrawn[0].reason) == (
        bad[0],
        play_pb2.WITHDRAWAL_REASON_ILLEGAL_ACTIONS,
    )
    # It counts as a timeout: the next requests may be auto-played before the bot's answer
    # is read (each answer, late or not, ends that).
    assert all(w.reason == AUTO_PLAYED for w in withdrawn[1:])
    assert bot.ended[name].outcome.termination == game_pb2.TERMINATION_NORMAL


async def test_cancelling_the_match_withdraws_the_open_request(lobby: Lobby) -> None:
    name, host, ids = await setup(lobby, "block", [0, None, None, None], timer_ms=3_600_000)
    silent = Bot(lobby.address, ids[0][1], chooser=lambda b, d: None)
    run = asyncio.create_task(silent.run([name]))
    await until(lambda: silent.welcome is not None)
    await lobby.start(name, host)
    await until(lambda: bool(silent.decisions))
    await lobby.matches.CancelMatch(
        match_pb2.CancelMatchRequest(name=name, reason="over"), metadata=auth(host)
    )
    await asyncio.wait_for(run, 30)
    [withdrawn] = check_withdrawals(silent.messages)
    assert withdrawn.turn_id == silent.decisions[0].turn_id
    assert withdrawn.reason == play_pb2.WITHDRAWAL_REASON_MATCH_ENDED
    assert silent.ended[name].outcome.termination == game_pb2.TERMINATION_CANCELLED
    # An answer now names a turn that is over (or a match no longer held).
    silent_again = Bot(lobby.address, ids[0][1], chooser=lambda b, d: None)
    again = asyncio.create_task(silent_again.run(timeout=30))
    await until(lambda: silent_again.welcome is not None)
    silent_again.answer(silent.decisions[0], 0)
    await until(lambda: bool(silent_again.errors))
    info = error_info(silent_again.errors[0])
    assert info is not None and info.reason in ("STALE_TURN", "UNKNOWN_MATCH")
    again.cancel()
