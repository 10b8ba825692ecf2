"""The server's own failures say what happened, over real gRPC to an in-process server:
logged with their traceback, answered INTERNAL (never as the client's fault), and a match
whose built-in bot fails ends CANCELLED with a reason instead of a move the bot did not
choose.

The bugs are injected: the server has none of these to show, so each test sets one hook
of the :class:`~capicua.server.faults.Faults` it gave the in-process server
(``ServerConfig(faults=...)``) to one that raises (said at each test). The bot failures are
real: a bot name the workers do not know (``Faults.cpu_bot``) makes ``make_bot`` fail in a
real worker process.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import AsyncIterator, Iterator, Sequence
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from capicua.bots import BUILTIN, RandomBot, UnknownBotError
from capicua.engine.actions import Action
from capicua.engine.game import Game
from capicua.engine.observation import Observation, observe
from capicua.engine.rules import load_preset
from capicua.server import cpu
from capicua.server.faults import Faults
from capicua.v1 import game_pb2, match_pb2, play_pb2, play_pb2_grpc
from tests.compliance.client import (
    CALL_TIMEOUT,
    OPTIONS,
    Bot,
    Lobby,
    auth,
    bot_seat,
    cpu_seat,
    expect_error,
)
from tests.serverkit import Logs, captured_logs, running, wait_finished

INTERNAL = grpc.StatusCode.INTERNAL


@pytest.fixture
def logs() -> Iterator[Logs]:
    with captured_logs() as captured:
        yield captured


@pytest.fixture
def faults() -> Faults:
    """The server's fault hooks: none set until a test sets one."""
    return Faults()


@pytest.fixture
async def server(faults: Faults) -> AsyncIterator[Lobby]:
    async with running(None, faults=faults) as (_, client):
        yield client


def info_of(status: status_pb2.Status) -> error_details_pb2.ErrorInfo:
    [detail] = status.details
    info = error_details_pb2.ErrorInfo()
    assert detail.Unpack(info)
    return info


def rich_status(error: grpc.aio.AioRpcError) -> status_pb2.Status:
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            return status_pb2.Status.FromString(value)
    raise AssertionError("no rich status")


def _raise(error: Exception) -> Any:
    def fail(*args: object, **kwargs: object) -> Any:
        raise error

    return fail


def _raise_in(name: str, error: Exception) -> Any:
    """A hook that raises ``error`` when called with ``name`` (an RPC, a message kind)."""

    def fail(called: str) -> None:
        if called == name:
            raise error

    return fail


# -- a bug in a handler -------------------------------------------------------------------


async def test_a_bug_in_a_unary_handler_is_internal_and_logged(
    server: Lobby, logs: Logs, faults: Faults
) -> None:
    # injected: GetRuleset raises as a bug in it would
    faults.rpc = _raise_in("GetRuleset", RuntimeError("a detail for the log only"))
    request = match_pb2.GetRulesetRequest(preset="block")
    e = await expect_error(server.matches.GetRuleset(request), INTERNAL, "INTERNAL")
    assert e.details() == (
        "internal server error in GetRuleset (RuntimeError); the server log has the details"
    )
    line = logs.one("rpc_failed")
    assert line["level"] == "error" and line["rpc"] == "GetRuleset"
    assert "Traceback" in line["exception"] and "a detail for the log only" in line["exception"]


async def test_a_bug_in_a_streaming_handler_is_internal_and_logged(
    server: Lobby, logs: Logs, faults: Faults
) -> None:
    # injected: WatchMatch raises as a bug in it would
    faults.rpc = _raise_in("WatchMatch", KeyError("x"))

    async def watch() -> None:
        async for _ in server.matches.WatchMatch(match_pb2.WatchMatchRequest(name="matches/m")):
            raise AssertionError("no message expected")

    e = await expect_error(watch(), INTERNAL, "INTERNAL")
    assert e.details().startswith("internal server error in WatchMatch (KeyError)")
    assert "Traceback" in logs.one("rpc_failed")["exception"]


# -- the Play stream's read loop ----------------------------------------------------------


async def play_until_closed(
    address: str, token: str, requests: Sequence[play_pb2.PlayRequest]
) -> list[play_pb2.PlayResponse]:
    """Send ``requests`` after the Welcome; every message until the server ends the stream."""
    async with grpc.aio.insecure_channel(address, options=OPTIONS) as channel:
        call = play_pb2_grpc.PlayServiceStub(channel).Play(metadata=auth(token))
        got = [await call.read()]
        for request in requests:
            await call.write(request)
        while (message := await asyncio.wait_for(call.read(), CALL_TIMEOUT)) is not grpc.aio.EOF:
            got.append(message)
        return got


async def test_a_bug_reading_the_play_stream_ends_it_with_internal(
    server: Lobby, logs: Logs, faults: Faults
) -> None:
    _, token = await server.register("reader")
    # injected: handling an ActionReply raises as a bug would
    faults.play_message = _raise_in("action", ZeroDivisionError("division"))
    reply = play_pb2.PlayRequest(action=play_pb2.ActionReply(match="matches/m", turn_id=1))
    stream = play_until_closed(server.address, token, [reply])
    e = await expect_error(stream, INTERNAL, "INTERNAL")
    assert e.details() == (
        "internal server error while reading this stream (ZeroDivisionError); "
        "the server log has the details"
    )
    line = logs.one("stream_read_failed")
    assert line["level"] == "error" and line["principal"].startswith("bots/reader-")
    assert "Traceback" in line["exception"] and "ZeroDivisionError" in line["exception"]
    assert not [x for x in logs.lines() if x["event"] == "stream_read_ended"]

    # the stream's principal may play again at once (a client reconnects)
    faults.play_message = None
    hello = play_pb2.PlayRequest(hello=play_pb2.Hello(client="again"))
    async with grpc.aio.insecure_channel(server.address, options=OPTIONS) as channel:
        call = play_pb2_grpc.PlayServiceStub(channel).Play(iter([hello]), metadata=auth(token))
        first = await call.read()
        assert first.WhichOneof("message") == "welcome"
        call.cancel()


async def test_a_client_sending_garbage_or_leaving_only_ends_its_stream(
    server: Lobby, logs: Logs
) -> None:
    """Not the server's fault: logged at info without a traceback, as before."""
    _, token = await server.register("garbage")
    async with grpc.aio.insecure_channel(server.address, options=OPTIONS) as channel:
        raw = channel.stream_stream(
            "/capicua.v1.PlayService/Play",
            request_serializer=lambda b: b,
            response_deserializer=play_pb2.PlayResponse.FromString,
        )
        call = raw(metadata=auth(token))
        assert (await call.read()).WhichOneof("message") == "welcome"
        await call.write(b"\xff\xff\xff")  # no PlayRequest
        assert await asyncio.wait_for(call.read(), CALL_TIMEOUT) is grpc.aio.EOF
        assert await call.code() == grpc.StatusCode.OK
        left = play_pb2_grpc.PlayServiceStub(channel).Play(metadata=auth(token))
        assert (await left.read()).WhichOneof("message") == "welcome"
        left.cancel()
    for _ in range(500):  # until the server saw the second stream go
        if len([x for x in logs.lines() if x["event"] == "stream_closed"]) == 2:
            break
        await asyncio.sleep(0.01)
    ended = logs.one("stream_read_ended")
    assert ended["level"] == "info" and ended["error"] == "DecodeError"
    assert not [x for x in logs.lines() if x["level"] != "info" or "exception" in x]


# -- built-in bots ------------------------------------------------------------------------


class LiarBot(RandomBot):
    """Answers an action that is not among the legal ones."""

    def choose(self, obs: Observation, legal: Sequence[Action]) -> Action:
        return Action.parse("redeal") if Action.parse("redeal") not in legal else legal[0]


class CrashBot(RandomBot):
    def choose(self, obs: Observation, legal: Sequence[Action]) -> Action:
        raise ValueError("the bot's own bug")


def _decision() -> tuple[Observation, list[Action]]:
    state = Game(load_preset("block")).new_match(2)
    while len(state.legal()) < 2:
        state.apply(state.legal_actions()[0])
    seat = state.current_seat
    assert seat is not None
    return observe(state, seat), state.legal()


def test_a_worker_never_plays_a_move_the_bot_did_not_choose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """cpu.choose (the worker's side, run here in-process) raises for every failure."""
    monkeypatch.setitem(BUILTIN, "liar", LiarBot)
    monkeypatch.setitem(BUILTIN, "crash", CrashBot)
    obs, legal = _decision()
    assert 0 <= cpu.choose("easy", 1, obs, legal) < len(legal)
    with pytest.raises(cpu.BotFailure, match=r"liar chose Action\('redeal'\), which is not"):
        cpu.choose("liar", 1, obs, legal)
    with pytest.raises(ValueError, match="the bot's own bug"):
        cpu.choose("crash", 1, obs, legal)
    with pytest.raises(UnknownBotError):
        cpu.choose("nobody", 1, obs, legal)


async def test_a_dead_worker_fails_its_decision_and_the_pool_recovers(logs: Logs) -> None:
    pool = cpu.CpuPool(1)
    try:
        [worker] = await pool.warm_up()
        os.kill(worker, signal.SIGKILL)
        obs, legal = _decision()
        with pytest.raises(BrokenProcessPool):
            await pool.choose("easy", 1, obs, legal)
        assert 0 <= await pool.choose("easy", 1, obs, legal) < len(legal)
        assert logs.one("cpu_pool_broken")["level"] == "error"
    finally:
        pool.shutdown()


async def test_workers_outlive_a_sigterm_to_the_process_group(logs: Logs) -> None:
    """A stop sent to the server's whole process group (systemd, a supervisor) reaches the
    pool's workers and its forkserver too: they ignore it, as they ignore Ctrl+C, and leave
    stopping them to the server, after it has settled its matches."""
    pool = cpu.CpuPool(1)
    try:
        [worker] = await pool.warm_up()
        forkserver = parent_of(worker)
        os.kill(worker, signal.SIGTERM)
        os.kill(forkserver, signal.SIGTERM)
        obs, legal = _decision()
        assert 0 <= await pool.choose("easy", 1, obs, legal) < len(legal)
        assert await pool.warm_up() == [worker]  # the same worker: nothing was replaced
        assert not [line for line in logs.lines() if line["event"] == "cpu_pool_broken"]
    finally:
        pool.shutdown()


def parent_of(pid: int) -> int:
    """The parent pid of ``pid`` (from /proc: the worker's forkserver)."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def _check_cancelled(outcome: game_pb2.Outcome, bot: str) -> None:
    assert outcome.termination == game_pb2.TERMINATION_CANCELLED
    prefix = f"internal server error: built-in bot {bot} failed on turn "
    assert outcome.reason.startswith(prefix), outcome.reason
    assert f"UnknownBotError: unknown bot '{bot}'" in outcome.reason


async def test_a_cpu_seat_whose_bot_fails_cancels_the_match(
    server: Lobby, logs: Logs, faults: Faults
) -> None:
    # the level HARD asks for a bot the workers do not have: make_bot fails in the worker
    faults.cpu_bot = lambda bot, seat: "no-such-bot" if bot == "hard" else bot
    bot_id, token = await server.register("witness")
    seats = [bot_seat(bot_id), cpu_seat(match_pb2.CPU_LEVEL_HARD)] * 2
    match, host = await server.create("block", seats, seed=3, timer_ms=60_000)
    witness = Bot(server.address, token)
    run = asyncio.create_task(witness.run([match.name], timeout=60))
    await asyncio.wait_for(_welcomed(witness), CALL_TIMEOUT)
    await server.start(match.name, host)
    await run
    _check_cancelled(witness.ended[match.name].outcome, "no-such-bot")
    finished = await wait_finished(server, match.name)
    _check_cancelled(finished.outcome, "no-such-bot")
    await server.replay(match.name)  # recorded, and it verifies
    line = logs.one("cpu_failed")
    assert line["level"] == "error" and line["bot"] == "no-such-bot" and line["seat"] in (1, 3)
    assert line["match"] == match.name.removeprefix("matches/")
    assert "UnknownBotError" in line["exception"]
    assert "Traceback" in line["exception"].split("direct cause")[0], "the worker's traceback"


async def _welcomed(bot: Bot) -> None:
    while bot.welcome is None:
        await asyncio.sleep(0.01)


async def test_a_failing_auto_play_cancels_the_match(
    server: Lobby, logs: Logs, faults: Faults
) -> None:
    """A late seat under AUTO_PLAY is played by the Easy bot; when that fails too, the
    match ends instead of taking a move nobody chose."""
    # seat 0's stand-in is a bot the workers lack (the CPU seats' Easy bots play as ever)
    faults.cpu_bot = lambda bot, seat: "no-such-easy" if seat == 0 else bot
    bot_id, _ = await server.register("late")  # never connects: its turns time out
    seats = [bot_seat(bot_id)] + [cpu_seat()] * 3
    match, host = await server.create("block", seats, seed=3, timer_ms=50)
    await server.start(match.name, host)
    finished = await wait_finished(server, match.name)
    _check_cancelled(finished.outcome, "no-such-easy")
    assert finished.seats[0].timeouts == 1 and finished.seats[0].auto_played == 0
    assert logs.one("cpu_failed")["seat"] == 0


async def test_a_stand_in_slower_than_the_clock_is_not_another_timeout(
    server: Lobby, faults: Faults
) -> None:
    """A late seat's stand-in that thinks past the seat's clock (a busy machine: here
    `hard`, which searches for its time budget, against a 50 ms clock) plays the turn: the
    seat lost one deadline, not one a turn, and every later turn of it is auto-played once
    (it was counted as a timeout again, and a second stand-in asked, under load)."""
    faults.cpu_bot = lambda bot, seat: "hard" if seat == 0 else bot
    bot_id, _ = await server.register("late")  # never connects: its first turn times out
    seats = [bot_seat(bot_id)] + [cpu_seat()] * 3
    match, host = await server.create("block", seats, overrides=["target=10"], seed=3, timer_ms=50)
    await server.start(match.name, host)
    finished = await wait_finished(server, match.name)
    assert finished.outcome.termination == game_pb2.TERMINATION_NORMAL
    assert finished.seats[0].timeouts == 1 and finished.seats[0].auto_played > 1


async def test_an_unknown_cpu_level_is_refused_where_it_enters(server: Lobby) -> None:
    unknown = match_pb2.CpuLevel.ValueType(7)
    seats = [match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_CPU, cpu_level=unknown)] * 4
    request = match_pb2.CreateMatchRequest(preset="block", seats=seats)
    e = await expect_error(
        server.matches.CreateMatch(request), grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"
    )
    assert e.details() == "seats[0].cpu_level: unknown level 7"


# -- replays ------------------------------------------------------------------------------


async def test_a_replay_that_could_not_be_built_is_internal_not_never_started(
    server: Lobby, logs: Logs, faults: Faults
) -> None:
    # injected: building the replay raises as a bug would
    faults.replay = _raise(RuntimeError("think times"))
    match, host = await server.create("block", [cpu_seat()] * 4, seed=5)
    await server.start(match.name, host)
    finished = await wait_finished(server, match.name)
    assert finished.outcome.termination == game_pb2.TERMINATION_NORMAL  # the match still ends
    request = match_pb2.GetReplayRequest(name=match.name)
    e = await expect_error(server.matches.GetReplay(request), INTERNAL, "REPLAY_FAILED")
    assert e.details() == (
        f"name: the replay of {match.name} could not be built (RuntimeError); "
        "the server log has the details"
    )
    assert info_of(rich_status(e)).domain == "capicua.dev"
    built = logs.one("replay_failed")
    assert built["level"] == "error" and "think times" in built["exception"]
    answered = logs.one("rpc_failed")
    assert answered["rpc"] == "GetReplay" and answered["reason"] == "REPLAY_FAILED"


async def test_a_failed_replay_is_still_told_after_a_restart(tmp_path: Path) -> None:
    """The failure is stored with the match: once the match has left memory (here: a new
    server on the same data), GetReplay still answers REPLAY_FAILED, not "never started"."""
    failing = Faults(replay=_raise(RuntimeError("think times")))
    async with running(tmp_path, faults=failing) as (_, first):
        match, host = await first.create("block", [cpu_seat()] * 4, seed=5)
        await first.start(match.name, host)
        await wait_finished(first, match.name)
    async with running(tmp_path) as (_, second):
        request = match_pb2.GetReplayRequest(name=match.name)
        e = await expect_error(second.matches.GetReplay(request), INTERNAL, "REPLAY_FAILED")
        assert "could not be built (RuntimeError)" in str(e.details())
        # a match cancelled before it started is still "never started"
        waiting, host = await second.create("block", [cpu_seat()] * 4)
        await second.matches.CancelMatch(
            match_pb2.CancelMatchRequest(name=waiting.name), metadata=auth(host)
        )
    async with running(tmp_path) as (_, third):
        request = match_pb2.GetReplayRequest(name=waiting.name)
        e = await expect_error(
            third.matches.GetReplay(request), grpc.StatusCode.NOT_FOUND, "REPLAY_NOT_FOUND"
        )
        assert e.details() == f"name: {waiting.name} never started"
