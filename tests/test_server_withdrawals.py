"""The server withdraws the open request when it stops: ``--on-stop suspend`` keeps the
match to resume it (WITHDRAWAL_REASON_SERVER_STOPPING, no MatchEnded; the decision is asked
again after the restart under a new turn_id), the default stop cancels it
(WITHDRAWAL_REASON_MATCH_ENDED, then MatchEnded). A one-seat client (a seat token) gets
the same messages as a bot."""

from __future__ import annotations

import asyncio
from pathlib import Path

from capicua.server.app import App, ServerConfig
from capicua.v1 import match_pb2, play_pb2
from tests.clientkit import until
from tests.compliance.client import (
    Bot,
    Lobby,
    bot_seat,
    check_withdrawals,
    cpu_seat,
    error_info,
    reasons,
)
from tests.serverkit import running

SILENT = "silent"


def kinds(bot: Bot, name: str) -> list[str]:
    return [str(m.WhichOneof("message")) for m in bot.by_match[name]]


async def _asked(bot: Bot) -> None:
    await until(lambda: bool(bot.decisions), 15, "a request")


async def test_a_suspending_stop_withdraws_the_request_and_asks_again_after(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    config = ServerConfig(port=0, data=data, cpu_workers=1, on_stop="suspend")
    app = await App.start(config)
    lobby = Lobby(app.address)
    try:
        bot_id, token = await lobby.register(SILENT)
        seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
        match, host = await lobby.create("block", seats, timer_ms=3_600_000)
        bot = Bot(app.address, token, chooser=lambda b, d: None)
        run = asyncio.create_task(bot.run(timeout=60))
        await until(lambda: bot.welcome is not None, 10, "the stream")
        await lobby.start(match.name, host)
        await _asked(bot)
        port = app.port
    finally:
        await lobby.close()
        await app.shutdown(grace=2)
    await asyncio.wait_for(run, 30)  # the server closed the stream
    [withdrawn] = check_withdrawals(bot.messages)
    assert withdrawn.turn_id == bot.decisions[-1].turn_id
    assert withdrawn.reason == play_pb2.WITHDRAWAL_REASON_SERVER_STOPPING
    assert [str(m.WhichOneof("message")) for m in bot.messages][-2:] == [
        "stopping",
        "decision_withdrawn",
    ]
    assert "match_ended" not in kinds(bot, match.name)

    # After the restart the decision is asked again, under a new turn_id.
    app = await App.start(ServerConfig(port=port, data=data, cpu_workers=1))
    lobby = Lobby(app.address)
    again = Bot(app.address, token, chooser=lambda b, d: None)
    try:
        rerun = asyncio.create_task(again.run([match.name], timeout=60))
        await _asked(again)
        assert again.decisions[0].turn_id > withdrawn.turn_id
        assert 0 < again.decisions[0].time_left_ms <= 3_600_000
        # An answer to the withdrawn turn is STALE_TURN, as before the restart: the server
        # did send that turn (docs/protocol.md), it is just over.
        again.answer(bot.decisions[-1], 0)
        await until(lambda: bool(again.errors), 15, "the refusal")
        assert reasons(again) == ["STALE_TURN"]
        info = error_info(again.errors[0])
        assert info is not None
        assert dict(info.metadata) == {
            "match": match.name,
            "turn_id": str(withdrawn.turn_id),
            "seat": "0",
        }
        await lobby.cancel_match(match.name, "test over", token=host)
        await asyncio.wait_for(rerun, 30)
    finally:
        await lobby.close()
        await app.shutdown(grace=2)
    withdrawals = [w.reason for w in check_withdrawals(again.messages)]
    assert withdrawals == [play_pb2.WITHDRAWAL_REASON_MATCH_ENDED]


async def test_a_cancelling_stop_withdraws_the_request_of_a_seat_token() -> None:
    async with running(None) as (app, lobby):
        match, host = await lobby.create(
            "block", [match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_OPEN)] + [cpu_seat()] * 3
        )
        request = match_pb2.JoinMatchRequest(name=match.name, display_name="guest")
        joined = await lobby.join_match(request, token="")
        seat = Bot(app.address, joined.seat_token, chooser=lambda b, d: None)
        run = asyncio.create_task(seat.run([match.name], timeout=60))
        await until(lambda: seat.welcome is not None, 10, "the stream")
        await lobby.start(match.name, host)
        await _asked(seat)
    await asyncio.wait_for(run, 30)
    [withdrawn] = check_withdrawals(seat.messages)
    assert (withdrawn.seat, withdrawn.turn_id) == (joined.seat, seat.decisions[-1].turn_id)
    assert withdrawn.reason == play_pb2.WITHDRAWAL_REASON_MATCH_ENDED
    order = kinds(seat, match.name)
    assert order.index("decision_withdrawn") < order.index("match_ended")
