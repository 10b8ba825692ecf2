"""How a Play stream ends: one test per row of the lifecycle table in docs/protocol.md ("How
a Play stream ends"). Each ending is the call's final status, sometimes after a message
that says more. Rows this file does not cover are checked elsewhere in the suite: a refused
token at open (row 9) in test_compliance_play.py; a stream that falls behind (row 6) and a
server bug reading a stream (row 7) cannot be caused from outside a server, and are checked
against the project's own server (tests/test_error_reasons.py, tests/test_server_failures.py);
a dropped network (row 8) is the transport's."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import grpc
import pytest

from capicua.client import launch_server
from capicua.v1 import game_pb2, match_pb2
from tests.compliance.client import OPEN, Bot, Lobby, bot_seat, cpu_seat, expect_error, until
from tests.compliance.test_compliance_play import setup

SHORT = ["target=20"]


async def test_row_1_a_half_closed_stream_ends_ok(lobby: Lobby) -> None:
    _, token = await lobby.register("leaves")
    bot = Bot(lobby.address, token)
    run = asyncio.create_task(bot.run(timeout=30))
    await until(lambda: bot.welcome is not None)
    bot._outbox.put_nowait(None)  # the client ends its side of the call
    await asyncio.wait_for(run, 20)
    assert bot.status == grpc.StatusCode.OK


async def _joined(lobby: Lobby, seed: int) -> tuple[str, str, str]:
    """A block match with one open seat taken by a seat token: (name, host, seat token)."""
    match, host = await lobby.create("block", [OPEN] + [cpu_seat()] * 3, overrides=SHORT, seed=seed)
    joined = await lobby.matches.JoinMatch(
        match_pb2.JoinMatchRequest(name=match.name, seat=0, accept_chosen_seed=True), timeout=10
    )
    return match.name, host, joined.seat_token


async def test_row_2_a_seat_tokens_stream_ends_ok_after_match_ended(lobby: Lobby) -> None:
    name, host, seat_token = await _joined(lobby, seed=21)
    bot = Bot(lobby.address, seat_token)
    run = asyncio.create_task(bot.run(timeout=60))  # no match named: until the stream ends
    await until(lambda: bot.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(run, 60)
    assert bot.status == grpc.StatusCode.OK
    assert bot.messages[-1].WhichOneof("message") == "match_ended"


async def test_row_3_a_bot_tokens_stream_stays_open_for_its_next_match(lobby: Lobby) -> None:
    first, host, ids = await setup(lobby, "block", [0, None, None, None], overrides=SHORT)
    bot = Bot(lobby.address, ids[0][1])
    run = asyncio.create_task(bot.run(timeout=90))
    await until(lambda: bot.welcome is not None)
    await lobby.start(first, host)
    await until(lambda: first in bot.ended, 60)
    seats = [bot_seat(ids[0][0])] + [cpu_seat()] * 3
    second, second_host = await lobby.create("block", seats, overrides=SHORT, seed=3)
    await lobby.start(second.name, second_host)
    await until(lambda: second.name in bot.ended, 60)  # on the same stream
    assert not run.done() and bot.status is None
    run.cancel()


async def test_row_4_a_replaced_stream_ends_aborted(lobby: Lobby) -> None:
    _, token = await lobby.register("replaced")
    old = Bot(lobby.address, token)
    old_run = asyncio.create_task(old.run(timeout=30))
    await until(lambda: old.welcome is not None)
    new = Bot(lobby.address, token)
    new_run = asyncio.create_task(new.run(timeout=30))
    await asyncio.wait_for(old_run, 20)
    assert old.status == grpc.StatusCode.ABORTED and old.errors == []
    assert old.status_info is not None and old.status_info.reason == "STREAM_REPLACED"
    assert new.status is None
    new_run.cancel()


@pytest.mark.skipif(
    bool(os.environ.get("CAPICUA_COMPLIANCE_SERVER")),
    reason="stops a server: runs only against a `capicua serve` the suite starts itself",
)
async def test_row_5_a_stopping_server_ends_streams_unavailable() -> None:
    with tempfile.TemporaryDirectory(prefix="capicua-compliance-stop-") as data:
        args = ["--host", "127.0.0.1", "--cpu-workers", "1", "--grace", "3"]
        log = Path(data) / "server.log"
        with launch_server(args, data=Path(data), log=log, timeout=30) as server:
            lobby = Lobby(server.address)
            try:
                first, host, ids = await setup(lobby, "block", [0, None, None, None])
                bot = Bot(server.address, ids[0][1], chooser=lambda b, d: None)  # stays silent
                run = asyncio.create_task(bot.run(timeout=60))
                await until(lambda: bot.welcome is not None)
                await lobby.start(first, host)
                await until(lambda: bool(bot.decisions), 30)
                await asyncio.to_thread(server.stop)  # SIGTERM
                await asyncio.wait_for(run, 30)
            finally:
                await lobby.close()
    kinds = [m.WhichOneof("message") for m in bot.messages]
    assert kinds.index("stopping") < kinds.index("decision_withdrawn") < kinds.index("match_ended")
    assert bot.ended[first].outcome.termination == game_pb2.TERMINATION_CANCELLED
    assert bot.status == grpc.StatusCode.UNAVAILABLE
    assert bot.status_info is not None and bot.status_info.reason == "SHUTTING_DOWN"


async def test_row_10_a_spent_seat_token_is_refused_match_finished(lobby: Lobby) -> None:
    name, host, seat_token = await _joined(lobby, seed=22)
    bot = Bot(lobby.address, seat_token)
    run = asyncio.create_task(bot.run(timeout=60))
    await until(lambda: bot.welcome is not None)
    await lobby.start(name, host)
    await asyncio.wait_for(run, 60)
    again = Bot(lobby.address, seat_token, hello_after_welcome=True)
    await expect_error(again.run(timeout=10), grpc.StatusCode.FAILED_PRECONDITION, "MATCH_FINISHED")
