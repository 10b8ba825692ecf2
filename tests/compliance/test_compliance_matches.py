"""Full matches between remote bots over real sockets, checked message by message.

Every message a bot or a spectator receives is checked against the replay fetched after
the match: a view holds only the seat's own tiles, other seats' draws carry no tile, no
stock tile ever appears, and hand results equal the replay's. Every replay verifies.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from capicua.engine.game import Game, Phase
from capicua.engine.records import Defer, Draw, Event, RedealChoice, Replay, Termination
from capicua.engine.rules import load_preset
from capicua.v1 import game_pb2, match_pb2, play_pb2, view_pb2
from tests.compliance.client import (
    Bot,
    Chooser,
    Lobby,
    bot_seat,
    check_secrecy,
    check_withdrawals,
    cpu_seat,
    prefer,
    random_choice,
    watch,
)

MATCH_TIMEOUT = 60.0


async def play_match(
    lobby: Lobby,
    preset: str,
    owners: Sequence[int | None],
    *,
    overrides: Sequence[str] = (),
    seed: int | None = None,
    chooser: Chooser = random_choice,
    ask_forced: bool = False,
) -> tuple[str, list[Bot], list[match_pb2.WatchMatchResponse], Replay]:
    """Play one match; ``owners[seat]`` is the index of the bot holding it (None: a CPU).
    Returns the match name, the bots, the spectator's messages and the verified replay."""
    n_bots = max(o for o in owners if o is not None) + 1
    ids = [await lobby.register(f"m{i}") for i in range(n_bots)]
    seats = [cpu_seat() if o is None else bot_seat(ids[o][0]) for o in owners]
    match, host = await lobby.create(preset, seats, overrides=overrides, seed=seed)
    name = match.name
    bots = [
        Bot(lobby.address, token, seed=i, chooser=chooser, ask_forced=ask_forced)
        for i, (_, token) in enumerate(ids)
    ]
    runs = [asyncio.create_task(b.run([name], timeout=MATCH_TIMEOUT)) for b in bots]
    spectator = asyncio.create_task(watch(lobby, name, MATCH_TIMEOUT))
    # Every bot is connected, and its Hello read, before the start fixes forced moves.
    await asyncio.wait_for(_hello_barrier(bots), 10)
    await lobby.start(name, host)
    await asyncio.wait_for(asyncio.gather(*runs), MATCH_TIMEOUT)
    watched = await asyncio.wait_for(spectator, MATCH_TIMEOUT)
    replay = await lobby.replay(name)
    timer = (await lobby.get(name)).settings  # as the server applies it: defaults filled in
    for i, b in enumerate(bots):
        held = [s for s, o in enumerate(owners) if o == i]
        assert check_secrecy(b.by_match[name], held, replay) > 0
        assert not b.errors, [e.message for e in b.errors]
        started = [m.match_started for m in b.by_match[name] if m.HasField("match_started")]
        assert sorted(m.seat for m in started) == held
        for m in started:  # OnTimeout has TimeoutPolicy's numbers
            given = (m.turn_timer.limit_ms, int(m.turn_timer.on_timeout))
            assert given == (timer.turn_timer_ms, int(timer.on_timeout))
        for d in b.decisions:
            assert 0 < d.time_left_ms <= timer.turn_timer_ms, d.time_left_ms
        assert check_withdrawals(b.messages) == [], "a request answered in time was withdrawn"
    assert check_secrecy(watched, None, replay) > 0
    return name, bots, watched, replay


async def _hello_barrier(bots: list[Bot]) -> None:
    """Requests are read in order: once a probe's error comes back, the Hello was read."""
    for b in bots:
        while b.welcome is None:
            await asyncio.sleep(0.01)
        b.send(action=play_pb2.ActionReply(match="matches/probe", turn_id=1, action_id=0))
        while not b.errors:
            await asyncio.sleep(0.01)
        b.errors.clear()


def _events(replay: Replay) -> list[Event]:
    return [e for h in replay.hands for e in h.events]


async def test_iq_2v2_two_bots_hold_two_seats_each(lobby: Lobby) -> None:
    name, bots, watched, replay = await play_match(lobby, "iq-2v2", [0, 1, 0, 1], seed=7)
    outcome = replay.outcome
    assert outcome is not None
    assert outcome.termination in (Termination.NORMAL, Termination.HAND_LIMIT)
    for b in bots:
        ended = b.ended[name]
        assert ended.outcome.termination == game_pb2.TERMINATION_NORMAL
    assert isinstance(watched[0], match_pb2.WatchMatchResponse) and watched[0].HasField("view")
    assert watched[-1].HasField("match_ended")
    final = await lobby.get(name)
    assert final.state == match_pb2.MATCH_STATE_FINISHED
    assert final.outcome == bots[0].ended[name].outcome


async def test_cutthroat_three_bots(lobby: Lobby) -> None:
    _, _, _, replay = await play_match(lobby, "cutthroat", [0, 1, 2], seed=11)
    assert replay.outcome is not None
    assert replay.outcome.termination is Termination.NORMAL


async def test_el_dominito_2p_draws_from_the_stock(lobby: Lobby) -> None:
    name, bots, _, replay = await play_match(lobby, "el-dominito-2p", [0, 1], seed=3)
    draws = [e for e in _events(replay) if isinstance(e, Draw)]
    assert draws, "expected draws from the stock"
    # Each bot saw the other seat's draws, without the tile.
    for seat, b in enumerate(bots):
        seen = [
            e.draw
            for m in b.by_match[name]
            if m.HasField("events")
            for e in m.events.events
            if e.HasField("draw") and e.draw.seat != seat
        ]
        assert seen and not any(d.tile for d in seen)


def _redeal_seed() -> int:
    """A cuban seed whose first deal offers a redeal (5+ doubles), found offline."""
    game = Game(load_preset("cuban"))
    for seed in range(2000):
        if game.new_match(seed).phase is Phase.REDEAL:
            return seed
    raise AssertionError("no seed with a redeal offer in 2000")


async def test_cuban_redeal_and_defer_over_the_wire(lobby: Lobby) -> None:
    seed = _redeal_seed()
    chooser = prefer(view_pb2.ACTION_KIND_REDEAL, view_pb2.ACTION_KIND_DEFER)
    name, bots, watched, replay = await play_match(
        lobby, "cuban", [0, 1, 2, 3], seed=seed, chooser=chooser, overrides=["target=60"]
    )
    events = _events(replay)
    assert RedealChoice in {type(e) for e in events} and any(
        isinstance(e, RedealChoice) and e.redeal for e in events
    )
    assert any(isinstance(e, Defer) for e in events)
    asked = [d for b in bots for d in b.decisions if d.view.phase == view_pb2.PHASE_REDEAL]
    assert asked and all(d.view.to_act == d.seat for d in asked)
    kinds = {a.kind for d in asked for a in d.legal_actions}
    assert kinds == {view_pb2.ACTION_KIND_REDEAL, view_pb2.ACTION_KIND_KEEP}


async def test_cpu_seats_fill_a_match_with_one_remote_bot(lobby: Lobby) -> None:
    _, bots, _, replay = await play_match(
        lobby, "block", [0, None, None, None], seed=5, overrides=["target=30"]
    )
    assert bots[0].decisions
    assert replay.players[1].startswith("cpu:")


async def test_open_seats_are_filled_by_cpus_at_start(lobby: Lobby) -> None:
    match, host = await lobby.create(
        "block",
        [match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_OPEN)] * 4,
        overrides=["target=20"],
        seed=1,
    )
    started = await lobby.start(match.name, host)
    assert [s.kind for s in started.seats] == [match_pb2.SEAT_KIND_CPU] * 4
    assert all(s.cpu_level == match_pb2.CPU_LEVEL_EASY for s in started.seats)
    for _ in range(600):
        if (await lobby.get(match.name)).state == match_pb2.MATCH_STATE_FINISHED:
            break
        await asyncio.sleep(0.05)
    replay = await lobby.replay(match.name)
    assert replay.outcome is not None and replay.outcome.termination is Termination.NORMAL


@pytest.mark.parametrize("ask_forced", [False, True])
async def test_forced_moves_are_asked_only_on_request(lobby: Lobby, ask_forced: bool) -> None:
    _, bots, _, _ = await play_match(
        lobby, "iq-1v1", [0, 1], seed=2, overrides=["target=30"], ask_forced=ask_forced
    )
    singles = [d for b in bots for d in b.decisions if len(d.legal_actions) == 1]
    assert bool(singles) == ask_forced


async def test_one_bot_plays_several_matches_over_one_stream(lobby: Lobby) -> None:
    bot_id, token = await lobby.register("multi")
    created = [
        await lobby.create(preset, [bot_seat(bot_id)] + [cpu_seat()] * (n - 1), seed=i, overrides=o)
        for i, (preset, n, o) in enumerate(
            [("iq-1v1", 2, ["target=40"]), ("cutthroat", 3, []), ("block", 4, ["target=30"])]
        )
    ]
    names = [m.name for m, _ in created]
    bot = Bot(lobby.address, token)
    run = asyncio.create_task(bot.run(names, timeout=MATCH_TIMEOUT))
    await asyncio.wait_for(_hello_barrier([bot]), 10)
    for m, host in created:
        await lobby.start(m.name, host)
    await asyncio.wait_for(run, MATCH_TIMEOUT)
    assert set(bot.ended) == set(names)
    assert {d.match for d in bot.decisions} == set(names)
    for name in names:
        replay = await lobby.replay(name)
        assert check_secrecy(bot.by_match[name], [0], replay) > 0
