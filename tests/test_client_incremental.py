"""The SDK keeps each seat's view (CAPABILITY_INCREMENTAL_DECISIONS): a bot sees the same
full views, observations and events whether the session asks for one message per decision
or not."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

import pytest

from capicua.client import Bot, Session, current_decision
from capicua.engine.actions import Action
from capicua.engine.game import Game, MatchState
from capicua.engine.observation import Observation, observe
from capicua.engine.records import Event, HandResult
from capicua.engine.rules import load_preset
from capicua.v1 import play_pb2, view_pb2
from capicua.wire import codec
from capicua.wire.views import ViewBuilder
from tests.clientkit import until
from tests.compliance.client import bot_seat
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
    rules = load_preset("block")
    state = Game(rules).new_match(3)
    builder = ViewBuilder(codec.ruleset_to_proto(rules), ["a", "b", "c", "d"])

    def match_started(state: MatchState) -> play_pb2.PlayResponse:
        view = builder.view(observe(state, 0))
        started = play_pb2.MatchStarted(match="matches/m1", seat=0, view=view)
        return play_pb2.PlayResponse(match_started=started)

    bot = Recorder()
    session = Session(bot, server="127.0.0.1:1", token="bot_never-connects", incremental=True)
    session._dispatch(match_started(state))  # the first stream's
    told = len(observe(state, 0).events)
    rng = random.Random(5)
    hand = state.hand
    while len(observe(state, 0).events) < told + 5 and state.hand == hand:
        state.apply(rng.choice(state.legal_actions()))  # played while the stream was down
    assert state.hand == hand, "the moves stay in the hand the seat knew"
    session._dispatch(match_started(state))  # the new stream's
    missed = list(observe(state, 0).events[told:])
    await until(lambda: len(bot.events.get(0, [])) >= len(missed), 10, "the moves")
    assert bot.events[0] == missed
    session.stop()
    for run in session._runs.values():
        assert run.task is not None
        run.task.cancel()
