"""What the server keeps in memory. A finished match: its record, its final public view and
its turns' answers, not its engine state, its views' caches or its stored replay; and what
is asked of it afterwards is still answered. A Play stream nobody reads: at most its
``--max-unread-bytes``, measured from /proc on a real server process."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc

from capicua.bench.hold import process_sample
from capicua.common.channel import bearer
from capicua.v1 import match_pb2, play_pb2, play_pb2_grpc
from tests.clientkit import until
from tests.compliance.client import OPTIONS, Bot, Lobby, bot_seat, cpu_seat, error_info, watch
from tests.serverkit import running, server_process, wait_finished


async def test_a_finished_match_keeps_only_what_is_asked_of_it() -> None:
    async with running(None) as (app, lobby):
        bot_id, token = await lobby.register()
        seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
        match, host = await lobby.create("block", seats, seed=4)
        bot = Bot(lobby.address, token, seed=3)
        run = asyncio.create_task(bot.run([match.name]))
        while bot.welcome is None:
            await asyncio.sleep(0.01)
        await lobby.start(match.name, host)
        await asyncio.wait_for(run, 60)
        await wait_finished(lobby, match.name)

        held = app.registry.get(match.name.removeprefix("matches/"))
        assert held is not None
        assert held.state is None and held.fanout.views is None
        assert held.record.replay is None and held.record.think_times == {}
        # ... and everything is still answered
        replay = await lobby.replay(match.name)  # from the store, verified by the engine
        assert len(replay.hands) >= 1
        watched = await watch(lobby, match.name, 10)
        assert watched[0].HasField("view") and watched[-1].HasField("match_ended")
        assert (await lobby.get(match.name)).state == match_pb2.MATCH_STATE_FINISHED

        # a late reply to a turn it answered: the same answer is ignored, another is stale
        last = bot.decisions[-1]
        choices = len(last.legal_actions)
        assert choices >= 2  # forced plays are applied without asking
        late = Bot(lobby.address, token)

        def reply(b: Bot, message: play_pb2.PlayResponse) -> None:
            if message.HasField("welcome"):
                for action_id in range(choices):
                    b.answer(last, action_id)

        stream = asyncio.create_task(late.run(timeout=30, on_message=reply))
        for _ in range(500):
            if len(late.errors) >= choices - 1:
                break
            await asyncio.sleep(0.01)
        stream.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stream
        # every other id than the accepted one is told STALE_TURN, the accepted one nothing
        assert len(late.errors) == choices - 1
        assert all("is already resolved" in e.message for e in late.errors)


BOUND = 32 << 10  # --max-unread-bytes here: small, so that a few matches overflow it
STREAMS = 10  # bots whose Play stream nobody reads
MATCHES_PER_STREAM = 3  # block, the bot against three CPU seats: about 700 messages to it
#: The test clients' own transport: no BDP probing, a 16 KiB stream window, so that what it
#: reads ahead of the application (the rest of what a late reader gets beyond the server's
#: bound) is small and known: 33 KB measured with one stream on the connection; with grpc's
#: default (BDP probing) it grows to a few MB.
CLIENT = [*OPTIONS, ("grpc.http2.bdp_probe", 0), ("grpc.http2.lookahead_bytes", 16 << 10)]
READ_AHEAD = 64 << 10
#: What the never-read round may add to the server's memory beyond the streams' bounds,
#: over the rounds before it (the same matches, read): allocator noise and each call's own
#: state (0.7 to 3.7 MB in all, measured; once 6.4 MB after a single round read, beside
#: stress-ng and another test). The message-counted queue of before added 17.6 to 19.8 MB.
WARM_UP_ROUNDS = 2
ALLOWANCE_MB = 6.0
MIB = 1 << 20


async def _forever() -> AsyncIterator[play_pb2.PlayRequest]:
    """A request stream that stays open and sends nothing."""
    await asyncio.Event().wait()
    yield play_pb2.PlayRequest()  # pragma: no cover - never reached


async def _open(channel: Any, token: str) -> Any:
    """A Play stream of ``token``, once the server has sent its Welcome."""
    call = play_pb2_grpc.PlayServiceStub(channel).Play(_forever(), metadata=bearer(token))
    welcome = await call.read()
    assert welcome.HasField("welcome")
    return call


async def _read_to_end(call: Any) -> tuple[int, grpc.aio.AioRpcError | None]:
    """The bytes of every message left on ``call``, and how it ended (None: OK)."""
    received = 0
    try:
        while (message := await call.read()) is not grpc.aio.EOF:
            received += message.ByteSize()
    except grpc.aio.AioRpcError as e:
        return received, e
    return received, None


async def _play(lobby: Lobby, bots: list[tuple[str, str]]) -> None:
    """MATCHES_PER_STREAM block matches per bot against three CPU seats, all at once, to
    their end: the bot's 50 ms turn runs out and the server plays its seat from then on."""
    names = []
    for bot_id, token in bots:
        for _ in range(MATCHES_PER_STREAM):
            seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
            match, host = await lobby.create(
                "block",
                seats,
                token=token,
                timer_ms=50,
                on_timeout=match_pb2.TIMEOUT_POLICY_AUTO_PLAY,
            )
            await lobby.start(match.name, host)
            names.append(match.name)
    for name in names:
        await wait_finished(lobby, name, timeout=300)


async def _play_read(address: str, lobby: Lobby, bots: list[tuple[str, str]]) -> None:
    """:func:`_play` with every bot's stream read to the end."""
    async with grpc.aio.insecure_channel(address, options=CLIENT) as channel:
        calls = [await _open(channel, token) for _, token in bots]
        readers = [asyncio.create_task(_read_to_end(call)) for call in calls]
        await _play(lobby, bots)
        for reader in readers:
            reader.cancel()


async def test_streams_nobody_reads_hold_at_most_their_bound(tmp_path: Path) -> None:
    """Bots open their Play stream and never read it while CPU matches send them
    messages: the server's memory grows by at most the documented bound per stream (its
    ``--max-unread-bytes``; their openings are a Welcome each) plus an allowance, each
    stream ends SLOW_CONSUMER, and a reader that starts late receives at most the bound
    plus what its own transport read ahead."""
    args = ["--max-unread-bytes", str(BOUND)]
    with server_process(args, tmp_path / "logs") as server:
        lobby = Lobby(server.address)
        async with contextlib.AsyncExitStack() as stack:
            stack.push_async_callback(lobby.close)
            bots = [await lobby.register("unread") for _ in range(STREAMS)]
            # The matches' own memory first, every stream read, twice: what the server keeps
            # of finished matches, its allocator's pools and their high-water mark. The next
            # round plays the same matches again.
            for _ in range(WARM_UP_ROUNDS):
                await _play_read(server.address, lobby, bots)
            warm_mb = process_sample(server.proc.pid, 0, 0).rss_mb

            channel = await stack.enter_async_context(
                grpc.aio.insecure_channel(server.address, options=CLIENT)
            )
            logged = len(server.logs())  # (a reader may have fallen behind in the warm-up)
            calls = [await _open(channel, token) for _, token in bots]
            await _play(lobby, bots)

            def too_slow() -> int:
                return server.logs()[logged:].count('"event": "stream_too_slow"')

            await until(lambda: too_slow() == STREAMS, 60, "every stream ending too slow")
            grown_mb = process_sample(server.proc.pid, 0, 0).rss_mb - warm_mb
            assert grown_mb <= STREAMS * BOUND / MIB + ALLOWANCE_MB, (grown_mb, warm_mb)

            received, ending = await asyncio.wait_for(_read_to_end(calls[0]), 60)
            assert ending is not None and ending.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            info = error_info(ending)
            assert info is not None and info.reason == "SLOW_CONSUMER", ending
            assert dict(info.metadata) == {"limit": str(BOUND)}
            assert BOUND // 2 < received <= BOUND + READ_AHEAD, received
