"""The SDK keeps each seat's view (CAPABILITY_INCREMENTAL_DECISIONS): a bot sees the same
full views, observations and events whether the session asks for one message per decision
or not."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

import grpc
import pytest

from capicua.client import Bot, Session, current_decision
from capicua.engine.actions import Action
from capicua.engine.observation import Observation, observe
from capicua.engine.records import Event, HandResult
from capicua.v1 import view_pb2
from tests.clientkit import until
from tests.compliance.client import bot_seat
from tests.sdkfake import ScriptedPlay, Table, hello, no_wait, scripted_session, welcome
from tests.serverkit import running


class Recorder(Bot):
    """Plays the first legal action; records what it is shown."""

    def __init__(self) -> None:
        self.observations: list[Observation] = []
        self.views: list[view_pb2.View] = []
        self.incremental: list[bool] = []
        self.kept: list[bool] = []  # the session held the seat's view (Decision.known)
        self.events: dict[int, list[Event]] = {}  # seat -> every event of on_events
        self.results: list[HandResult] = []

    def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        decision = current_decision()
        assert decision is not None
        self.observations.append(observation)
        self.views.append(decision.request.view)
        self.incremental.append(decision.request.incremental)
        self.kept.append(decision.known is not None)
        return legal_actions[0]

    def on_events(self, match: str, seat: int, events: Sequence[Event]) -> None:
        self.events.setdefault(seat, []).extend(events)

    def on_hand_ended(self, match: str, result: HandResult) -> None:
        self.results.append(result)


async def _play(preset: str, seed: int, **options: Any) -> tuple[Recorder, Recorder]:
    """The same seeded match twice, one bot holding every seat: with the capability, and
    without it."""
    async with running(None) as (app, lobby):
        bot_id, token = await lobby.register("inc")
        seats = 2 if preset == "el-dominito-2p" else 4
        out = []
        for incremental in (True, False):
            match, host = await lobby.create(
                preset, [bot_seat(bot_id)] * seats, seed=seed, overrides=["target=40"]
            )
            bot = Recorder()
            session = Session(
                bot, server=app.address, token=token, matches=1, incremental=incremental
            )
            run = asyncio.create_task(session.run())

            def hello_read(incremental: bool = incremental) -> bool:
                stream = app.hub.streams.get(f"bots/{bot_id}")
                return (
                    stream is not None
                    and bool(stream.client)
                    and (stream.incremental == incremental)
                )

            await until(hello_read, 10, "the session's Hello")
            await lobby.start(match.name, host)
            await asyncio.wait_for(run, 60)
            out.append(bot)
        return out[0], out[1]


@pytest.mark.parametrize("preset", ["block", "el-dominito-2p"])
async def test_a_bot_sees_the_same_whether_the_session_asks_or_not(preset: str) -> None:
    asked, default = await _play(preset, seed=9)
    assert asked.observations and all(asked.incremental) and not any(default.incremental)
    assert all(asked.kept) and not any(default.kept), "views are kept only when asked for"
    assert asked.observations == default.observations
    assert asked.views == default.views  # completed in place: the full view
    assert asked.results == default.results
    # every event reaches on_events, in order (in batches, or with the decisions)
    assert asked.events == default.events


async def test_moves_made_while_the_stream_was_down_reach_on_events() -> None:
    """A new stream (after a drop, a server restart) begins with MatchStarted, whose view is
    the seat's whole hand so far (docs/protocol.md): the moves in it that the seat was not
    told of before reach ``on_events`` like any other, none missed and none twice."""
    table = Table(preset="block", seed=3)
    seat = table.seat
    play = ScriptedPlay()
    play.expect(hello(), [welcome(), table.started()])  # the first stream's
    play.end(grpc.StatusCode.UNAVAILABLE, "dropped by the script")
    told = len(observe(table.state, seat).events)
    rng = random.Random(5)
    hand = table.state.hand
    while len(observe(table.state, seat).events) < told + 5 and table.state.hand == hand:
        table.state.apply(rng.choice(table.state.legal_actions()))  # while the stream was down
    assert table.state.hand == hand, "the moves stay in the hand the seat knew"
    play.expect(hello(), [welcome(), table.started(), table.ended()])  # the new stream's
    bot = Recorder()
    backoff = no_wait()
    session = scripted_session(bot, play, matches=1, backoff=backoff)
    await asyncio.wait_for(session.run(), 30)
    play.assert_done()
    assert bot.events[seat] == list(observe(table.state, seat).events[told:])
    assert len(backoff.given) == 1
