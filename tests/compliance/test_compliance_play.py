"""The Play stream's rules: illegal, stale and duplicate answers, tokens, timeouts,
disconnects and reconnects. Timers are short (300 ms) so the suite stays fast."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import grpc

from capicua.engine.records import Termination
from capicua.v1 import game_pb2, match_pb2, play_pb2, play_pb2_grpc
from tests.compliance.client import (
    CALL_TIMEOUT,
    OPTIONS,
    Bot,
    Chooser,
    Lobby,
    auth,
    bot_seat,
    cpu_seat,
    expect_error,
    random_choice,
    reasons,
    until,
)

TIMER_MS = 300
AUTO = match_pb2.TIMEOUT_POLICY_AUTO_PLAY
FORFEIT = match_pb2.TIMEOUT_POLICY_FORFEIT


async def setup(
    lobby: Lobby,
    preset: str,
    owners: Sequence[int | None],
    *,
    overrides: Sequence[str] = (),
    seed: int = 1,
    timer_ms: int = 0,
    on_timeout: match_pb2.TimeoutPolicy.ValueType = match_pb2.TIMEOUT_POLICY_UNSPECIFIED,
) -> tuple[str, str, list[tuple[str, str]]]:
    """Register bots and create (not start) a match; returns (name, host token, bots)."""
    n = max(o for o in owners if o is not None) + 1
    ids = [await lobby.register(f"p{i}") for i in range(n)]
    seats = [cpu_seat() if o is None else bot_seat(ids[o][0]) for o in owners]
    match, host = await lobby.create(
        preset, seats, overrides=overrides, seed=seed, timer_ms=timer_ms, on_timeout=on_timeout
    )
    return match.name, host, ids


async def test_illegal_action_gets_failed_precondition_and_a_new_chance(lobby: Lobby) -> None:
    name, host, ids = await setup(lobby, "block", [0, None, None, None], overrides=["target=20"])
    tried: set[int] = set()

    def chooser(bot: Bot, d: play_pb2.DecisionRequest) -> int:
        if not tried:
            tried.add(d.turn_id)
            return len(d.legal_actions) + 7  # no such id
        return random_choice(bot, d)

    bot = Bot(lobby.address, ids[0][1], chooser=chooser)
    run = asyncio.create_task(bot.run([name]))
    await until(lambda: bot.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(run, 60)
    assert len(bot.errors) == 1
    assert bot.errors[0].code == grpc.StatusCode.FAILED_PRECONDITION.value[0]
    assert reasons(bot) == ["ILLEGAL_ACTION"]
    first = bot.decisions[0].turn_id
    assert bot.decisions[1].turn_id == first, "the seat is asked again, same turn"
    assert bot.decisions[1].deadline == bot.decisions[0].deadline
    assert bot.ended[name].outcome.termination == game_pb2.TERMINATION_NORMAL
    await lobby.replay(name)


async def test_three_illegal_answers_forfeit_under_the_forfeit_policy(lobby: Lobby) -> None:
    # The turn's deadline is an hour away: the match can end within the test's bound only
    # by the illegal answers, never by waiting for the deadline.
    name, host, ids = await setup(
        lobby, "block", [0, None, None, None], timer_ms=3_600_000, on_timeout=FORFEIT
    )
    bot = Bot(lobby.address, ids[0][1], chooser=lambda b, d: 99)
    run = asyncio.create_task(bot.run([name]))
    await until(lambda: bot.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(run, 60)
    assert reasons(bot) == ["ILLEGAL_ACTION"] * 3
    assert len({d.turn_id for d in bot.decisions}) == 1
    outcome = bot.ended[name].outcome
    assert outcome.termination == game_pb2.TERMINATION_ILLEGAL_ACTIONS
    assert outcome.forfeited == 0 and list(outcome.ranking)[-1] == 0
    replay = await lobby.replay(name)
    assert replay.outcome is not None
    assert replay.outcome.termination is Termination.ILLEGAL_ACTIONS
    seat = (await lobby.get(name)).seats[0]  # the three answers count as its one timeout
    assert (seat.timeouts, seat.auto_played) == (1, 0)


async def test_three_illegal_answers_auto_play_the_turn(lobby: Lobby) -> None:
    name, host, ids = await setup(
        lobby, "block", [0, None, None, None], overrides=["target=20"], timer_ms=10_000
    )
    first: list[int] = []

    def chooser(bot: Bot, d: play_pb2.DecisionRequest) -> int:
        if not first:
            first.append(d.turn_id)
        if d.turn_id == first[0]:
            return 99
        return random_choice(bot, d)

    bot = Bot(lobby.address, ids[0][1], chooser=chooser)
    run = asyncio.create_task(bot.run([name]))
    await until(lambda: bot.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(run, 30)
    assert reasons(bot)[:3] == ["ILLEGAL_ACTION"] * 3
    assert bot.ended[name].outcome.termination == game_pb2.TERMINATION_NORMAL
    await lobby.replay(name)
    seat = (await lobby.get(name)).seats[0]  # three illegal answers count as one timeout
    assert seat.timeouts == 1 and seat.auto_played >= 1


async def test_duplicate_answer_is_ignored_and_another_answer_is_stale(lobby: Lobby) -> None:
    name, host, ids = await setup(lobby, "block", [0, None, None, None], overrides=["target=20"])
    done: list[int] = []

    def chooser(bot: Bot, d: play_pb2.DecisionRequest) -> int:
        choice = random_choice(bot, d)
        if not done and len(d.legal_actions) > 1:
            done.append(d.turn_id)
            bot.answer(d, choice)  # the accepted answer
            bot.answer(d, choice)  # a duplicate: ignored
            bot.send(  # a different answer to the resolved turn: STALE_TURN
                action=play_pb2.ActionReply(
                    match=d.match, turn_id=d.turn_id, action_id=(choice + 1) % len(d.legal_actions)
                )
            )
            bot.send(  # a turn that never existed
                action=play_pb2.ActionReply(match=d.match, turn_id=10**9, action_id=0)
            )
            return choice  # and once more: still a duplicate
        return choice

    bot = Bot(lobby.address, ids[0][1], chooser=chooser, ask_forced=True)
    run = asyncio.create_task(bot.run([name]))
    await until(lambda: bot.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(run, 60)
    assert done
    assert reasons(bot) == ["STALE_TURN", "UNKNOWN_TURN"]
    codes = [s.code for s in bot.errors]
    assert codes == [
        grpc.StatusCode.FAILED_PRECONDITION.value[0],
        grpc.StatusCode.INVALID_ARGUMENT.value[0],
    ]
    assert "turn_id" in bot.errors[0].message and "turn_id" in bot.errors[1].message
    assert bot.ended[name].outcome.termination == game_pb2.TERMINATION_NORMAL
    await lobby.replay(name)


async def test_tokens_missing_unknown_or_wrong(lobby: Lobby) -> None:
    name, host, ids = await setup(
        lobby, "block", [0, 1, None, None], timer_ms=20_000, on_timeout=FORFEIT
    )
    other, other_host = await lobby.create("block", [cpu_seat()] * 4)
    (bot_x, token_x), (_, token_y) = ids

    async def play_with(token: str | None) -> None:
        async with grpc.aio.insecure_channel(lobby.address, options=OPTIONS) as channel:
            call = play_pb2_grpc.PlayServiceStub(channel).Play(iter(()), metadata=auth(token))
            async for _ in call:
                pass

    await expect_error(play_with(None), grpc.StatusCode.UNAUTHENTICATED, "MISSING_TOKEN")
    await expect_error(play_with("not-a-token"), grpc.StatusCode.UNAUTHENTICATED, "BAD_TOKEN")
    await expect_error(play_with(host), grpc.StatusCode.PERMISSION_DENIED)

    start = lobby.matches.StartMatch
    request = match_pb2.StartMatchRequest(name=name)
    await expect_error(start(request), grpc.StatusCode.UNAUTHENTICATED, "MISSING_TOKEN")
    await expect_error(start(request, metadata=auth("nope")), grpc.StatusCode.UNAUTHENTICATED)
    await expect_error(
        start(request, metadata=auth(token_x)), grpc.StatusCode.PERMISSION_DENIED, "NOT_HOST"
    )
    await expect_error(
        start(request, metadata=auth(other_host)), grpc.StatusCode.PERMISSION_DENIED, "NOT_HOST"
    )
    cancel = lobby.matches.CancelMatch(
        match_pb2.CancelMatchRequest(name=other.name), metadata=auth(host)
    )
    await expect_error(cancel, grpc.StatusCode.PERMISSION_DENIED, "NOT_HOST")

    # A bot cannot answer a turn it was not sent, and its refusal says no more than that:
    # naming the other seat's pending turn is answered as naming a turn that never was (an
    # answer that told them apart would say who is being asked). A seat token of another
    # match cannot act in this one.
    x = Bot(lobby.address, token_x, chooser=lambda b, d: None)
    y = Bot(lobby.address, token_y, chooser=lambda b, d: None)
    runs = [asyncio.create_task(b.run([name], timeout=30)) for b in (x, y)]
    await until(lambda: x.welcome is not None and y.welcome is not None)
    await lobby.start(name, host)
    await until(lambda: bool(x.decisions) or bool(y.decisions))
    asked, thief = (x, y) if x.decisions else (y, x)
    turn = asked.decisions[0]
    never = turn.turn_id + 777
    for turn_id in (turn.turn_id, never):
        thief.send(action=play_pb2.ActionReply(match=name, turn_id=turn_id, action_id=0))
    await until(lambda: len(thief.errors) == 2)
    assert [e.code for e in thief.errors] == [grpc.StatusCode.INVALID_ARGUMENT.value[0]] * 2
    assert reasons(thief) == ["UNKNOWN_TURN", "UNKNOWN_TURN"]
    assert thief.errors[1].message == thief.errors[0].message.replace(
        f"turn {turn.turn_id}", f"turn {never}"
    )
    asked.answer(turn, 0)  # the turn is still the asked seat's own
    await until(lambda: len(asked.decisions) > 1 or len(thief.decisions) > 0)
    assert not asked.errors

    joined = await lobby.matches.JoinMatch(
        match_pb2.JoinMatchRequest(name=(await lobby.create("block", []))[0].name),
        timeout=CALL_TIMEOUT,
    )
    seat_client = Bot(lobby.address, joined.seat_token, chooser=lambda b, d: None)
    seat_run = asyncio.create_task(seat_client.run(timeout=30))
    await until(lambda: seat_client.welcome is not None)
    assert seat_client.welcome is not None
    assert seat_client.welcome.principal == f"{joined.match.name}/seats/{joined.seat}"
    seat_client.send(action=play_pb2.ActionReply(match=name, turn_id=turn.turn_id, action_id=0))
    await until(lambda: bool(seat_client.errors))
    assert seat_client.errors[0].code == grpc.StatusCode.PERMISSION_DENIED.value[0]
    seat_run.cancel()

    await lobby.matches.CancelMatch(
        match_pb2.CancelMatchRequest(name=name, reason="test over"),
        metadata=auth(host),
        timeout=CALL_TIMEOUT,
    )
    await asyncio.wait_for(asyncio.gather(*runs), 30)
    assert x.ended[name].outcome.termination == game_pb2.TERMINATION_CANCELLED
    assert x.ended[name].outcome.reason == "test over"
    await lobby.replay(name)


async def test_auto_play_costs_one_deadline_then_plays_at_once(lobby: Lobby) -> None:
    name, host, ids = await setup(
        lobby, "iq-1v1", [0, 1], overrides=["target=30"], seed=4, timer_ms=TIMER_MS, on_timeout=AUTO
    )
    silent = Bot(lobby.address, ids[0][1], chooser=lambda b, d: None)
    player = Bot(lobby.address, ids[1][1])
    runs = [asyncio.create_task(b.run([name])) for b in (silent, player)]
    await until(lambda: silent.welcome is not None and player.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(asyncio.gather(*runs), 60)
    assert len(silent.decisions) >= 5, "the late seat is still sent its decisions"
    # Read from the server's own deadlines (issue time + timer): were the seat waited for
    # on every turn, each request would come a full timer after the previous one. After
    # the first lost deadline its turns are auto-played at once, so most gaps are shorter.
    deadlines = [d.deadline.ToNanoseconds() / 1e9 for d in silent.decisions]
    gaps = [b - a for a, b in zip(deadlines[1:], deadlines[2:], strict=False)]
    waited = sum(g >= TIMER_MS / 1000 for g in gaps)
    assert waited < len(gaps) / 2, f"{waited} of {len(gaps)} later turns waited a full timer"
    assert silent.ended[name].outcome.termination == game_pb2.TERMINATION_NORMAL
    replay = await lobby.replay(name)
    assert replay.outcome is not None and replay.outcome.termination is Termination.NORMAL
    # The match record counts it: one timer ran out, every turn of the seat was played
    # for it; the other seat was never late.
    final = await lobby.get(name)
    late, other = final.seats[silent.decisions[0].seat], final.seats[player.decisions[0].seat]
    assert late.timeouts == 1
    assert late.auto_played == len({d.turn_id for d in silent.decisions})
    assert other.timeouts == other.auto_played == 0


def answer_after(seconds: float, first: int = 0) -> Chooser:
    """Stay silent for the first ``first`` decisions, then answer each after ``seconds``."""

    def chooser(bot: Bot, d: play_pb2.DecisionRequest) -> None:
        if len(bot.decisions) > first:
            choice = random_choice(bot, d)
            asyncio.get_running_loop().call_later(seconds, bot.answer, d, choice)

    return chooser


async def test_auto_play_stops_when_the_client_answers_again(lobby: Lobby) -> None:
    # The timer is long beside the late answer, and the server's own delay in taking the
    # first answer in (settle_s) is generous: a loaded machine is slow (a 600 ms timer and
    # a 50 ms margin failed beside stress-ng), and neither bound changes what is asserted.
    timer_ms, late_s, settle_s = 2_000, 0.08, 0.3
    name, host, ids = await setup(
        lobby, "iq-1v1", [0, 1], overrides=["target=300"], seed=4, timer_ms=timer_ms
    )
    # Silent for two decisions, then answers each one 80 ms late (well inside the timer).
    late = Bot(lobby.address, ids[0][1], chooser=answer_after(late_s, first=2))
    player = Bot(lobby.address, ids[1][1], chooser=answer_after(0.01))
    runs = [asyncio.create_task(b.run([name])) for b in (late, player)]
    await until(lambda: late.welcome is not None and player.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(asyncio.gather(*runs), 60)
    woke = late.decisions[2:]
    assert len(woke) > 5
    # Only answers to requests that arrived before the first answer after waking up can
    # meet an auto-played turn (STALE_TURN, or ignored when they match): that first answer
    # ends the auto-play, so later turns wait for the answer again: once it is in, each
    # next request of the seat comes only after the seat answered the previous one (were
    # it still auto-played, the requests would come at once, before the answers 80 ms
    # later). How many requests come before it depends on the machine's load.
    first_answer = late.answered_at[woke[0].turn_id]
    times = late.received_at[2:]
    early = sum(1 for t in times if t <= first_answer + settle_s)
    assert set(reasons(late)) <= {"STALE_TURN"} and len(late.errors) <= max(1, early)
    waited = [
        late.answered_at[prev.turn_id] <= t
        for prev, t in zip(woke, times[1:], strict=False)
        if t > first_answer + settle_s
    ]
    assert len(waited) > 3 and all(waited), waited
    assert late.ended[name].outcome.termination == game_pb2.TERMINATION_NORMAL
    await lobby.replay(name)


async def test_forfeit_on_timeout(lobby: Lobby) -> None:
    name, host, ids = await setup(
        lobby, "iq-2v2", [0, 1, 0, 1], timer_ms=TIMER_MS, on_timeout=FORFEIT
    )
    silent = Bot(lobby.address, ids[0][1], chooser=lambda b, d: None)
    player = Bot(lobby.address, ids[1][1])
    runs = [asyncio.create_task(b.run([name])) for b in (silent, player)]
    await until(lambda: silent.welcome is not None and player.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(asyncio.gather(*runs), 30)
    outcome = player.ended[name].outcome
    assert outcome.termination == game_pb2.TERMINATION_TIMEOUT
    seat = silent.decisions[0].seat
    assert outcome.forfeited == seat % 2 and list(outcome.ranking)[-1] == seat % 2
    assert outcome.reason
    await lobby.replay(name)
    final = await lobby.get(name)
    assert [(s.timeouts, s.auto_played) for s in final.seats] == [
        (1 if s.seat == seat else 0, 0) for s in final.seats
    ]


async def test_disconnect_with_auto_play_finishes_the_match(lobby: Lobby) -> None:
    name, host, ids = await setup(
        lobby, "cutthroat", [0, 1, 2], seed=9, timer_ms=TIMER_MS, on_timeout=AUTO
    )
    leaver = Bot(lobby.address, ids[0][1], disconnect_after=2)
    others = [Bot(lobby.address, t, seed=i) for i, (_, t) in enumerate(ids[1:], 1)]
    runs = [asyncio.create_task(b.run([name])) for b in (leaver, *others)]
    await until(lambda: all(b.welcome is not None for b in (leaver, *others)))
    await lobby.start(name, host)
    await asyncio.wait_for(runs[0], 30)
    assert name not in leaver.ended, "the leaver left before the end"
    seat = leaver.decisions[0].seat
    await asyncio.wait_for(asyncio.gather(*runs[1:]), 60)
    outcome = others[0].ended[name].outcome
    assert outcome.termination == game_pb2.TERMINATION_NORMAL
    replay = await lobby.replay(name)  # complete: it verifies to the end
    assert replay.outcome is not None and replay.outcome.termination is Termination.NORMAL
    final = await lobby.get(name)
    assert final.state == match_pb2.MATCH_STATE_FINISHED
    assert not final.seats[seat].connected
    assert final.seats[seat].timeouts >= 1 and final.seats[seat].auto_played >= 1


async def test_disconnect_with_forfeit_ends_with_disconnect(lobby: Lobby) -> None:
    name, host, ids = await setup(
        lobby, "block", [0, 1, 0, 1], timer_ms=TIMER_MS, on_timeout=FORFEIT
    )
    leaver = Bot(lobby.address, ids[0][1], quit_on_decision=2)
    player = Bot(lobby.address, ids[1][1])
    runs = [asyncio.create_task(b.run([name])) for b in (leaver, player)]
    await until(lambda: leaver.welcome is not None and player.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(asyncio.gather(*runs), 30)
    outcome = player.ended[name].outcome
    assert outcome.termination == game_pb2.TERMINATION_DISCONNECT
    assert outcome.forfeited == leaver.decisions[0].seat % 2
    replay = await lobby.replay(name)
    assert replay.outcome is not None and replay.outcome.termination is Termination.DISCONNECT


async def test_reconnect_gets_the_match_and_the_pending_request_again(lobby: Lobby) -> None:
    name, host, ids = await setup(
        lobby, "block", [0, None, 0, None], overrides=["target=20"], timer_ms=20_000
    )
    first = Bot(lobby.address, ids[0][1], quit_on_decision=3)
    run = asyncio.create_task(first.run([name]))
    await until(lambda: first.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(run, 30)
    unanswered = first.decisions[-1]
    assert len(first.decisions) == 3
    second = Bot(lobby.address, ids[0][1], seed=5)
    await asyncio.wait_for(second.run([name]), 60)
    kinds = [m.WhichOneof("message") for m in second.messages[:4]]
    assert kinds[0] == "welcome"
    assert kinds[1:3] == ["match_started", "match_started"]
    again = second.decisions[0]
    assert again.turn_id == unanswered.turn_id and again.view == unanswered.view
    assert list(again.legal_actions) == list(unanswered.legal_actions)
    assert second.ended[name].outcome.termination == game_pb2.TERMINATION_NORMAL
    await lobby.replay(name)


async def test_malformed_stream_requests_get_errors_and_the_stream_stays(lobby: Lobby) -> None:
    _, token = await lobby.register("sloppy")
    bot = Bot(lobby.address, token)
    run = asyncio.create_task(bot.run(timeout=30))
    await until(lambda: bot.welcome is not None)
    bot.send()  # an empty PlayRequest
    bot.send(action=play_pb2.ActionReply(match="garbage", turn_id=1))
    bot.send(action=play_pb2.ActionReply(match="matches/nonexistent", turn_id=1))
    await until(lambda: len(bot.errors) == 3)
    assert reasons(bot) == ["INVALID_ARGUMENT", "INVALID_ARGUMENT", "UNKNOWN_MATCH"]
    assert [s.message.split(":")[0] for s in bot.errors] == ["message", "match", "match"]
    assert bot.errors[2].code == grpc.StatusCode.NOT_FOUND.value[0]
    assert not run.done(), "the stream stays open"
    run.cancel()
