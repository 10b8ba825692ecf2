"""Think times: the server measures each client decision (request sent to answer received),
keeps it in the replay, and the arena sums it per bot in the standings and the report."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from capicua.engine.display import replay_lines
from capicua.engine.game import Game
from capicua.engine.records import ThinkTime, with_think_times
from capicua.engine.rules import load_preset
from capicua.v1 import play_pb2
from capicua.wire import codec
from capicua.wire.codec import ReplayError
from tests.compliance.client import Bot, bot_seat, cpu_seat, random_choice
from tests.serverkit import running

SLOW_S = 0.03  # how long the slow client below sits on every decision


def slow_choice(bot: Bot, decision: play_pb2.DecisionRequest) -> int:
    # Blocking on purpose: the server shares this event loop, so it cannot see the answer
    # sooner than this (a lower bound on what it measures, not a timing of the machine).
    time.sleep(SLOW_S)
    return random_choice(bot, decision)


async def test_the_replay_holds_the_think_time_of_every_client_decision() -> None:
    async with running(None) as (_, lobby):
        bot_id, token = await lobby.register("slow")
        match, host = await lobby.create("el-dominito-2p", [bot_seat(bot_id), cpu_seat()], seed=3)
        bot = Bot(lobby.address, token, chooser=slow_choice)
        run = asyncio.create_task(bot.run([match.name]))
        for _ in range(500):
            if bot.welcome is not None:
                break
            await asyncio.sleep(0.02)
        await lobby.start(match.name, host)
        await asyncio.wait_for(run, 120)
        replay = await lobby.replay(match.name)  # converted and verified by the engine

    times = [(h, t) for h in replay.hands for t in h.think_times]
    assert bot.answers > 0
    assert len(times) == bot.answers  # one per answer the server asked for and accepted
    for record, think in times:
        assert record.think_seat(think) == 0  # the client's seat, never the CPU's
        assert think.micros >= SLOW_S * 1_000_000
    for record in replay.hands:
        events = [t.event for t in record.think_times]
        assert events == sorted(set(events))  # in event order, one per decision


def _played(preset: str = "block", seed: int = 5):  # type: ignore[no-untyped-def]
    state = Game(load_preset(preset)).new_match(seed)
    while not state.is_terminal():
        state.apply(state.legal_actions()[0])
    return state.replay()


def test_think_times_survive_the_codec_and_are_shown_by_replay_show(tmp_path: Path) -> None:
    plain = _played()
    first = plain.hands[0]
    timed = with_think_times(plain, {0: [ThinkTime(0, 1500), ThinkTime(2, 250_000)]})
    path = tmp_path / "timed.json.gz"
    codec.write_replay(path, timed)
    back = codec.read_replay(path)
    assert back == timed and back.hands[0].think_times[1] == ThinkTime(2, 250_000)
    assert back.hands[1:] == plain.hands[1:]
    lines = list(replay_lines(back, hand=1))
    events = [line for line in lines if line.startswith("  seat ")]
    assert events[0].endswith("  (1.5 ms)") and events[2].endswith("  (250 ms)")
    assert not any(e.endswith(" ms)") for i, e in enumerate(events) if i not in (0, 2))
    # a replay without think times prints as before
    assert not any(" ms)" in line for line in replay_lines(plain, hand=1))
    assert len(first.events) > 2


def test_a_think_time_of_an_event_the_hand_does_not_have_is_refused() -> None:
    plain = _played()
    n = len(plain.hands[0].events)
    bad = codec.replay_to_proto(with_think_times(plain, {0: [ThinkTime(0, 10)]}))
    bad.hands[0].think_times[0].event = n
    where = rf"hands\[0\]\.think_times\[0\]\.event: {n} is not an event of this hand"
    with pytest.raises(ReplayError, match=where):
        codec.replay_from_proto(bad)
