"""Hidden decisions stay hidden in everything else a seat can observe: identifiers, refusals
and the seats' counters (docs/security.md, "Side channels").

The hidden decision here is Cuban's redeal offer: a seat dealt five or more doubles is
asked whether to redeal, and a KEEP is shown to nobody else. A seat that learned it was
asked would know that seat's doubles. Each test deals such a hand (a seed found offline)
to four remote bots, one per seat.
"""

from __future__ import annotations

import asyncio

from capicua.engine.game import Game, Phase
from capicua.engine.records import RedealChoice
from capicua.engine.rules import load_preset
from capicua.v1 import match_pb2, play_pb2, view_pb2
from tests.compliance.client import Bot, Lobby, auth, bot_seat, prefer
from tests.compliance.test_compliance_matches import MATCH_TIMEOUT, play_match

TURN_MS = 300  # the turn timer of the test that lets the offer run out


def _offer() -> tuple[int, int]:
    """A cuban seed whose first deal offers a redeal, and the seat asked."""
    game = Game(load_preset("cuban"))
    for seed in range(2000):
        state = game.new_match(seed)
        if state.phase is Phase.REDEAL:
            assert state.current_seat is not None
            return seed, state.current_seat
    raise AssertionError("no seed with a redeal offer in 2000")


def _is_offer(bot: Bot, decision: play_pb2.DecisionRequest) -> bool:
    return decision.view.phase == view_pb2.PHASE_REDEAL


async def test_turn_ids_count_only_the_receivers_own_decisions(lobby: Lobby) -> None:
    """The n-th request a bot is sent in a match has turn_id n: another seat's redeal offer
    (kept, so shown to nobody) leaves no gap in anyone's ids."""
    seed, asked = _offer()
    keep = prefer(view_pb2.ACTION_KIND_KEEP)
    name, bots, _, replay = await play_match(
        lobby, "cuban", [0, 1, 2, 3], seed=seed, chooser=keep, overrides=["target=40"]
    )
    kept = [e for e in replay.hands[0].events if isinstance(e, RedealChoice)]  # type: ignore[attr-defined]
    assert [(e.seat, e.redeal) for e in kept] == [(asked, False)]
    for seat, bot in enumerate(bots):
        ids = [d.turn_id for d in bot.decisions if d.match == name]
        assert ids == list(range(1, len(ids) + 1)), f"seat {seat}: {ids[:8]}"
    assert _is_offer(bots[asked], bots[asked].decisions[0])


async def test_a_refusal_about_another_seats_turn_says_no_more_than_not_yours(
    lobby: Lobby,
) -> None:
    """While one seat is asked the hidden question, every other seat answering any turn id
    (the asked seat's among them) gets the same refusal: the id is not one it was sent."""
    seed, asked = _offer()
    ids = [await lobby.register(f"sc{i}") for i in range(4)]
    match, host = await lobby.create(
        "cuban", [bot_seat(bot_id) for bot_id, _ in ids], seed=seed, timer_ms=3_600_000
    )
    bots = [Bot(lobby.address, token, chooser=lambda b, d: None) for _, token in ids]
    runs = [asyncio.create_task(b.run([match.name], timeout=MATCH_TIMEOUT)) for b in bots]
    try:
        while not all(b.welcome is not None for b in bots):
            await asyncio.sleep(0.01)
        await lobby.start(match.name, host)
        while not bots[asked].decisions:  # the offer is pending: nobody else was asked
            await asyncio.sleep(0.01)
        offer = bots[asked].decisions[0]
        assert _is_offer(bots[asked], offer)
        probes = sorted({1, 2, 3, offer.turn_id, offer.turn_id + 1})
        for seat, bot in enumerate(bots):
            if seat == asked:
                continue
            for turn_id in probes:
                bot.send(action=play_pb2.ActionReply(match=match.name, turn_id=turn_id))
            while len(bot.errors) < len(probes):
                await asyncio.sleep(0.01)
            seen = {
                (e.code, e.message.replace(f"turn {t}", "turn N"))
                for e, t in zip(bot.errors, probes, strict=True)
            }
            assert len(seen) == 1, f"seat {seat} can tell turn ids apart: {seen}"
            assert not bot.decisions
    finally:
        for run in runs:
            run.cancel()
        await lobby.cancel_created()


async def test_seat_counters_do_not_show_a_timed_out_hidden_decision(lobby: Lobby) -> None:
    """A seat that lets the redeal offer run out: its SeatStatus shows no timeout while the
    match runs (the offer is not public), and the final record counts it."""
    seed, asked = _offer()
    ids = [await lobby.register(f"to{i}") for i in range(4)]
    match, host = await lobby.create(
        "cuban",
        [bot_seat(bot_id) for bot_id, _ in ids],
        seed=seed,
        timer_ms=TURN_MS,
        on_timeout=match_pb2.TIMEOUT_POLICY_AUTO_PLAY,
    )
    # The asked seat never answers; the others play (their turns are public).
    silent = Bot(lobby.address, ids[asked][1], chooser=lambda b, d: None)
    players = [Bot(lobby.address, t) for s, (_, t) in enumerate(ids) if s != asked]
    runs = [
        asyncio.create_task(b.run([match.name], timeout=MATCH_TIMEOUT)) for b in (silent, *players)
    ]
    try:
        while not all(b.welcome is not None for b in (silent, *players)):
            await asyncio.sleep(0.01)
        await lobby.start(match.name, host)
        # Once anyone else has seen an event, the offer is settled (the server answered it).
        while not any(m.HasField("events") for b in players for m in b.messages):
            await asyncio.sleep(0.01)
        during = (await lobby.get(match.name)).seats[asked]
        assert during.timeouts == 0, "a timeout shown while the offer is still a secret"
        await lobby.matches.CancelMatch(
            match_pb2.CancelMatchRequest(name=match.name), metadata=auth(host)
        )
        after = (await lobby.get(match.name)).seats[asked]
        assert after.timeouts == 1
        assert after.auto_played >= 1
    finally:
        for run in runs:
            run.cancel()
        await lobby.cancel_created()
