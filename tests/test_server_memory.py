"""What a finished match keeps in the server's memory: its record, its final public view and
its turns' answers, not its engine state, its views' caches or its stored replay; and what
is asked of it afterwards is still answered."""

from __future__ import annotations

import asyncio
import contextlib

from capicua.v1 import match_pb2, play_pb2
from tests.compliance.client import Bot, bot_seat, cpu_seat, watch
from tests.serverkit import running, wait_finished


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
