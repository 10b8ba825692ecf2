"""Think times: the server measures each client decision (request sent to answer received),
keeps it in the replay with the seat that decided, and the arena sums it per bot in the
standings and the report."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from capicua.engine.display import replay_lines
from capicua.engine.game import Game
from capicua.engine.records import Replay, ThinkTime, with_think_times
from capicua.engine.rules import load_preset
from capicua.v1 import match_pb2, play_pb2
from capicua.wire import codec
from capicua.wire.codec import ReplayError
from tests.compliance.client import CALL_TIMEOUT, Bot, bot_seat, cpu_seat, random_choice
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
        assert record.think_seat(think) == think.seat == 0  # the client's seat, not the CPU's
        assert think.micros >= SLOW_S * 1_000_000
    for record in replay.hands:
        events = [t.event for t in record.think_times]
        assert events == sorted(set(events))  # in event order, one per decision


async def test_each_think_time_names_the_seat_of_its_event_on_the_wire() -> None:
    """Two remote bots, one a seat each: every ThinkTime of the replay as GetReplay sends it
    has its seat set (not left for readers to fill in) and it is its event's seat."""
    async with running(None) as (_, lobby):
        ids = [await lobby.register(f"seated{n}") for n in range(2)]
        match, host = await lobby.create(
            "el-dominito-2p", [bot_seat(bot_id) for bot_id, _ in ids], seed=3
        )
        bots = [Bot(lobby.address, token, seed=n) for n, (_, token) in enumerate(ids)]
        runs = [asyncio.create_task(b.run([match.name])) for b in bots]
        for _ in range(500):
            if all(b.welcome is not None for b in bots):
                break
            await asyncio.sleep(0.02)
        await lobby.start(match.name, host)
        await asyncio.wait_for(asyncio.gather(*runs), 120)
        replay = await lobby.replay(match.name)  # converted and verified by the engine
        request = match_pb2.GetReplayRequest(name=match.name)
        sent = (await lobby.matches.GetReplay(request, timeout=CALL_TIMEOUT)).replay

    wire = [t for h in sent.hands for t in h.think_times]
    assert len(wire) == sum(b.answers for b in bots) > 0
    assert all(t.HasField("seat") for t in wire)
    seats = [
        (t.seat, record.events[t.event].seat) for record in replay.hands for t in record.think_times
    ]
    assert [s for s, _ in seats] == [t.seat for t in wire]
    assert all(seat == of_event for seat, of_event in seats)
    assert {seat for seat, _ in seats} == {0, 1}  # both seats decided, each its own


def _played(preset: str = "block", seed: int = 5) -> Replay:
    state = Game(load_preset(preset)).new_match(seed)
    while not state.is_terminal():
        state.apply(state.legal_actions()[0])
    return state.log.replay()


def _timed(plain: Replay, *events: int) -> Replay:
    """``plain`` with think times (1 ms each) for these events of its first hand, each
    with its event's seat, as a server records them."""
    hand = plain.hands[0]
    times = [ThinkTime(e, 1000 * (n + 1), hand.events[e].seat) for n, e in enumerate(events)]
    return with_think_times(plain, {0: times})


def test_think_times_survive_the_codec_and_are_shown_by_replay_show(tmp_path: Path) -> None:
    plain = _played()
    first = plain.hands[0]
    seat = first.events[2].seat
    timed = with_think_times(
        plain, {0: [ThinkTime(0, 1500, first.events[0].seat), ThinkTime(2, 250_000, seat)]}
    )
    path = tmp_path / "timed.json.gz"
    codec.write_replay(path, timed)
    back = codec.read_replay(path)
    assert back == timed and back.hands[0].think_times[1] == ThinkTime(2, 250_000, seat)
    assert back.hands[1:] == plain.hands[1:]
    lines = list(replay_lines(back, hand=1))
    events = [line for line in lines if line.startswith("  seat ")]
    assert events[0].endswith("  (1.5 ms)") and events[2].endswith("  (250 ms)")
    assert not any(e.endswith(" ms)") for i, e in enumerate(events) if i not in (0, 2))
    # a replay without think times prints as before
    assert not any(" ms)" in line for line in replay_lines(plain, hand=1))
    assert len(first.events) > 2


def test_a_replay_written_before_think_times_had_a_seat_still_reads(tmp_path: Path) -> None:
    """ThinkTime.seat was added to format 1: an older replay, protobuf or JSON file, has
    none, and each think time gets the seat of its event."""
    timed = _timed(_played(), 0, 1, 2, 3)
    assert len({t.seat for t in timed.hands[0].think_times}) > 1
    old = codec.replay_to_proto(timed)
    for think in old.hands[0].think_times:
        think.ClearField("seat")
    assert not any(t.HasField("seat") for t in old.hands[0].think_times)
    assert codec.replay_from_proto(old) == timed
    data = json.loads(codec.replay_to_json(timed))
    for think in data["hands"][0]["think_times"]:
        del think["seat"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert codec.read_replay(path) == timed


def test_a_think_time_of_another_seat_than_its_event_is_refused() -> None:
    plain = _played()
    bad = codec.replay_to_proto(_timed(plain, 1))
    seat = plain.hands[0].events[1].seat
    other = (seat + 1) % plain.ruleset.seats
    bad.hands[0].think_times[0].seat = other
    where = (
        rf"hands\[0\]\.think_times\[0\]\.seat: {other} is not the seat of event 1 \(seat {seat}\)"
    )
    with pytest.raises(ReplayError, match=where):
        codec.replay_from_proto(bad)


def test_a_think_time_of_an_event_the_hand_does_not_have_is_refused() -> None:
    plain = _played()
    n = len(plain.hands[0].events)
    bad = codec.replay_to_proto(_timed(plain, 0))
    bad.hands[0].think_times[0].event = n
    where = rf"hands\[0\]\.think_times\[0\]\.event: {n} is not an event of this hand"
    with pytest.raises(ReplayError, match=where):
        codec.replay_from_proto(bad)
