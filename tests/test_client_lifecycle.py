"""The Python SDK follows the Play stream's lifecycle table (docs/protocol.md, "How a Play
stream ends") against a real server over loopback: the server ends a seat token's stream
OK after its match, and after a graceful stop that keeps the match (``--on-stop suspend``)
the SDK reconnects with backoff and finishes the match on the restarted server. Each row's
status code as the SDK takes it is tested against a scripted stream
(tests/test_client_stream.py); `capicua bot check` runs every row against the SDK over a
real server (tests/test_bot_check.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import grpc

from capicua.client import Bot
from capicua.engine.actions import Action
from capicua.engine.observation import Observation
from capicua.engine.records import Termination
from capicua.server.app import App, ServerConfig
from capicua.v1 import match_pb2
from tests.clientkit import CountingBackoff, until
from tests.compliance.client import OPEN, Lobby, bot_seat, cpu_seat
from tests.compliance.client import Bot as RawBot
from tests.serverkit import running
from tests.test_client_sdk import SHORT, session


class HeldBot(Bot):
    """Plays the first legal action, except that its ``hold_at``-th decision waits until
    the test releases it (or the session cancels it)."""

    def __init__(self, hold_at: int) -> None:
        self.hold_at = hold_at
        self.decisions = 0
        self.held = asyncio.Event()
        self.release = asyncio.Event()

    async def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        self.decisions += 1
        if self.decisions == self.hold_at:
            self.held.set()
            await self.release.wait()
        return legal_actions[0]


async def test_the_server_stream_ends_ok_after_a_seat_tokens_match_ended() -> None:
    """The raw view of the same row: MatchEnded, then the call's status is OK; a bot
    token's stream stays open for its next match."""
    async with running(None) as (app, lobby):
        bot_id, bot_token = await lobby.register("stays")
        seats = [OPEN, bot_seat(bot_id), cpu_seat(), cpu_seat()]
        match, host = await lobby.create("block", seats, overrides=SHORT, seed=5)
        joined = await lobby.matches.JoinMatch(
            match_pb2.JoinMatchRequest(name=match.name, seat=0, accept_chosen_seed=True), timeout=10
        )
        seat, bot = RawBot(app.address, joined.seat_token), RawBot(app.address, bot_token)
        seat_run = asyncio.create_task(seat.run(timeout=60))
        bot_run = asyncio.create_task(bot.run([match.name], timeout=60))
        await until(lambda: seat.welcome is not None and bot.welcome is not None, 20)
        await lobby.start(match.name, host)
        await asyncio.wait_for(seat_run, 60)  # ends on its own: nothing more for the token
        await asyncio.wait_for(bot_run, 60)
        assert seat.status == grpc.StatusCode.OK and match.name in seat.ended
        assert bot.status is None  # the bot left after its MatchEnded; the server had not


async def test_a_suspending_stop_is_reconnected_to_and_the_match_finished(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    app = await App.start(ServerConfig(port=0, data=data, cpu_workers=1, on_stop="suspend"))
    lobby = Lobby(app.address)
    port = app.port
    bot = HeldBot(hold_at=3)
    backoff = CountingBackoff(initial=0.05, maximum=0.3)
    try:
        bot_id, token = await lobby.register("comes-back")
        seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
        match, host = await lobby.create("block", seats, overrides=["target=60"], seed=8)
        run = session(bot, app.address, token, matches=1, backoff=backoff)
        await until(lambda: bool(app.hub.streams), 20, "the session's stream")
        await lobby.start(match.name, host)
        await asyncio.wait_for(bot.held.wait(), 30)
        await lobby.close()
        await app.shutdown(grace=2)  # ServerStopping, then UNAVAILABLE / SHUTTING_DOWN
        await until(lambda: len(backoff.given) >= 2, 20, "reconnect attempts")
        assert not run.done()
        bot.release.set()
        app = await App.start(ServerConfig(port=port, data=data, cpu_workers=1, on_stop="suspend"))
        lobby = Lobby(app.address)
        summary = await asyncio.wait_for(run, 60)
    finally:
        bot.release.set()
        await lobby.close()
        await app.shutdown(grace=2)
    assert summary.outcomes[match.name].termination is Termination.NORMAL
    assert summary.connections >= 2
