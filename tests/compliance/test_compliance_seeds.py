"""Chosen seeds take every other seat's consent (docs/security.md, "Seeds").

Every deal follows from the match seed, and the engine is open source: whoever chooses a
seed can compute every seat's tiles before the first move. So a seed is chosen only where
each other seat agreed beforehand: a seat reserved for a bot that accepts chosen seeds (or
the creator's own bot, or any bot for the admin), an open seat joined with
``accept_chosen_seed``, which ``Match.seed_chosen`` announces; CPU seats need nothing. A
match whose seed nobody chose is dealt from a seed nobody sees before the end.
"""

from __future__ import annotations

import asyncio

import grpc

from capicua.engine.game import Game
from capicua.engine.observation import observe
from capicua.engine.rules import load_preset
from capicua.v1 import match_pb2, play_pb2
from tests.compliance.client import (
    CALL_TIMEOUT,
    OPEN,
    Bot,
    Lobby,
    bot_seat,
    cpu_seat,
    error_info,
    expect_error,
)

SPY_SEED = 424242


async def test_an_open_seat_of_a_chosen_seed_is_joined_only_by_consent(lobby: Lobby) -> None:
    """A bot creates iq-1v1 as [itself, open] with a seed of its choosing: the match says so
    before anyone joins, a stranger who does not accept it cannot take the open seat, and
    one who does gets exactly the hand the creator can compute offline (which is why it
    must agree first)."""
    spy_id, spy = await lobby.register("spy", reservable_by=(), accept_chosen_seeds=False)
    match, host = await lobby.create("iq-1v1", [bot_seat(spy_id), OPEN], seed=SPY_SEED, token=spy)
    assert match.seed_chosen
    listed = [m async for m in lobby.list_matches(match_pb2.ListMatchesRequest(tag=""))]
    assert [m.seed_chosen for m in listed if m.name == match.name] == [True]
    join = lobby.matches.JoinMatch
    e = await expect_error(
        join(match_pb2.JoinMatchRequest(name=match.name, display_name="stranger")),
        grpc.StatusCode.FAILED_PRECONDITION,
        "SEED_CHOSEN",
    )
    assert e.details().startswith("accept_chosen_seed: ")
    info = error_info(e)
    assert info is not None and dict(info.metadata) == {"match": match.name}
    assert not (await lobby.get(match.name)).seats[1].occupied  # nothing was taken

    joined = await join(
        match_pb2.JoinMatchRequest(
            name=match.name, display_name="stranger", accept_chosen_seed=True
        ),
        timeout=CALL_TIMEOUT,
    )
    assert joined.seat == 1 and joined.seat_token
    stranger = Bot(lobby.address, joined.seat_token, chooser=lambda b, d: None)
    spy_bot = Bot(lobby.address, spy, chooser=lambda b, d: None)
    runs = [asyncio.create_task(b.run([match.name], timeout=60)) for b in (stranger, spy_bot)]
    try:
        while not (stranger.welcome and spy_bot.welcome):
            await asyncio.sleep(0.01)
        await lobby.start(match.name, host)
        while not any(m.HasField("match_started") for m in stranger.messages):
            await asyncio.sleep(0.01)
        [started] = [m.match_started for m in stranger.messages if m.HasField("match_started")]
        offline = Game(load_preset("iq-1v1")).new_match(SPY_SEED)
        assert list(started.view.tiles) == [str(t) for t in observe(offline, 1).tiles]
    finally:
        for run in runs:
            run.cancel()


async def test_a_reserved_bot_lets_its_reservers_choose_the_seed_only_if_it_accepts(
    lobby: Lobby,
) -> None:
    """Letting anyone reserve a bot ('*') is not letting anyone deal its hand: a seeded
    match reserving it is refused SEED_NOT_ALLOWED (nothing created) until the bot accepts
    chosen seeds; SetBotAccess without the field keeps what the bot said; an unseeded match
    needs no such consent, and shows no seed."""
    victim_id, victim = await lobby.register("victim", accept_chosen_seeds=False)
    spy_id, spy = await lobby.register("spy", reservable_by=())
    seats = [bot_seat(spy_id), bot_seat(victim_id)]
    request = match_pb2.CreateMatchRequest(preset="iq-1v1", seats=seats, seed=SPY_SEED)
    e = await expect_error(
        lobby.create_match(request, token=spy),
        grpc.StatusCode.PERMISSION_DENIED,
        "SEED_NOT_ALLOWED",
    )
    assert e.details().startswith(f"seed: bots/{victim_id} does not let bots/{spy_id} choose")
    info = error_info(e)
    assert info is not None
    assert dict(info.metadata) == {"field": "seats[1].bot_id", "bot": f"bots/{victim_id}"}
    anonymous = match_pb2.CreateMatchRequest(
        preset="iq-1v1", seats=[bot_seat(victim_id), cpu_seat()], seed=SPY_SEED
    )
    e = await expect_error(
        lobby.create_match(anonymous, token=""),  # nor anyone without a token
        grpc.StatusCode.PERMISSION_DENIED,
        "SEED_NOT_ALLOWED",
    )
    assert "does not let a caller without a token choose" in e.details()
    unseeded, _ = await lobby.create("iq-1v1", seats, token=spy)
    assert not unseeded.seed_chosen

    access = lobby.set_bot_access
    said = await access(
        play_pb2.SetBotAccessRequest(reservable_by=["*"], accept_chosen_seeds=True), token=victim
    )
    assert said.accept_chosen_seeds and list(said.reservable_by) == ["*"]
    kept = await access(play_pb2.SetBotAccessRequest(reservable_by=["*"]), token=victim)
    assert kept.accept_chosen_seeds  # unset: unchanged
    seeded, _ = await lobby.create("iq-1v1", seats, seed=SPY_SEED, token=spy)
    assert seeded.seed_chosen
    withdrawn = await access(
        play_pb2.SetBotAccessRequest(reservable_by=["*"], accept_chosen_seeds=False), token=victim
    )
    assert not withdrawn.accept_chosen_seeds
    await expect_error(
        lobby.create_match(request, token=spy),
        grpc.StatusCode.PERMISSION_DENIED,
        "SEED_NOT_ALLOWED",
    )


async def test_own_bots_and_cpus_need_no_consent(lobby: Lobby) -> None:
    """A bot may choose the seed of a match of its own seats and CPUs (nobody else's tiles
    to read but the server's bots), and its token reserves it with a seed even when it
    accepts chosen seeds from nobody."""
    own_id, own = await lobby.register("own", reservable_by=(), accept_chosen_seeds=False)
    match, _ = await lobby.create(
        "block", [bot_seat(own_id), cpu_seat(), bot_seat(own_id), cpu_seat()], seed=7, token=own
    )
    assert match.seed_chosen
    cpus, _ = await lobby.create("block", [cpu_seat()] * 4, seed=7)  # anyone, CPUs only
    assert cpus.seed_chosen
