"""Hidden decisions stay hidden in everything else a seat can observe: identifiers, refusals
and the seats' counters (docs/security.md, "Side channels").

The hidden decision here is Cuban's redeal offer: a seat dealt five or more doubles is
asked whether to redeal, and a KEEP is shown to nobody else. A seat that learned it was
asked would know that seat's doubles. Each test deals such a hand (a seed found offline)
to four remote bots, one per seat.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from capicua.engine.actions import KEEP
from capicua.engine.game import Game, Phase
from capicua.engine.observation import observe
from capicua.engine.records import RedealChoice
from capicua.engine.rules import load_preset
from capicua.v1 import match_pb2, play_pb2, view_pb2
from tests.compliance.client import Bot, Lobby, bot_seat, check_withdrawals, oneof_body, prefer
from tests.compliance.test_compliance_matches import MATCH_TIMEOUT, play_match

# The turn timer of the twins with a late seat: every other seat answers well within it (a
# GetMatch and an answer), even on a loaded machine.
TWIN_TURN_MS = 2_000


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
    kept = [e for e in replay.hands[0].events if isinstance(e, RedealChoice)]
    assert [(e.seat, e.redeal) for e in kept] == [(asked, False)]
    for seat, bot in enumerate(bots):
        ids = [d.turn_id for d in bot.decisions if d.match == name]
        assert ids == list(range(1, len(ids) + 1)), f"seat {seat}: {ids[:8]}"
    assert _is_offer(bots[asked], bots[asked].decisions[0])


@contextlib.asynccontextmanager
async def _offer_pending(lobby: Lobby, prefix: str) -> AsyncIterator[tuple[str, list[Bot], int]]:
    """A cuban match of four silent remote bots whose first deal offers a redeal, held
    while the offer is pending (the asked seat never answers): (name, bots, asked)."""
    seed, asked = _offer()
    ids = [await lobby.register(f"{prefix}{i}") for i in range(4)]
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
        assert _is_offer(bots[asked], bots[asked].decisions[0])
        yield match.name, bots, asked
    finally:
        for run in runs:
            run.cancel()
        await lobby.cancel_created()


async def test_a_refusal_about_another_seats_turn_says_no_more_than_not_yours(
    lobby: Lobby,
) -> None:
    """While one seat is asked the hidden question, every other seat answering any turn id
    (the asked seat's among them) gets the same refusal: the id is not one it was sent."""
    async with _offer_pending(lobby, "sc") as (name, bots, asked):
        offer = bots[asked].decisions[0]
        probes = sorted({1, 2, 3, offer.turn_id, offer.turn_id + 1})
        for seat, bot in enumerate(bots):
            if seat == asked:
                continue
            for turn_id in probes:
                bot.send(action=play_pb2.ActionReply(match=name, turn_id=turn_id))
            while len(bot.errors) < len(probes):
                await asyncio.sleep(0.01)
            seen = {
                (e.code, e.message.replace(f"turn {t}", "turn N"))
                for e, t in zip(bot.errors, probes, strict=True)
            }
            assert len(seen) == 1, f"seat {seat} can tell turn ids apart: {seen}"
            assert not bot.decisions


def _no_offer_view(seed: int, seat: int | None) -> tuple[int, int | None]:
    """(phase, to_act) of ``seat``'s view once every offer of the first deal is kept: what
    a hand with no offer shows (the opening due, by the seat offered it)."""
    state = Game(load_preset("cuban")).new_match(seed)
    while state.phase is Phase.REDEAL:
        state.apply(KEEP)
    view = observe(state, seat)
    assert view.to_act is not None
    return view_pb2.PHASE_PLAY, view.to_act


async def test_views_during_an_offer_look_like_no_offer(lobby: Lobby) -> None:
    """While a seat is asked, the others' MatchStarted views and a spectator's view show
    what they show with no offer at all: PHASE_PLAY, to_act the seat offered the opening
    (they used to leave to_act unset, which only an offer did)."""
    async with _offer_pending(lobby, "vw") as (name, bots, asked):
        seed = _offer()[0]
        for seat, bot in enumerate(bots):
            if seat == asked:
                continue
            started = [m for m in bot.by_match[name] if m.HasField("match_started")]
            view = started[0].match_started.view
            assert (view.phase, view.to_act) == _no_offer_view(seed, seat), seat
        async for message in lobby.matches.WatchMatch(match_pb2.WatchMatchRequest(name=name)):
            assert message.HasField("view")
            assert (message.view.phase, message.view.to_act) == _no_offer_view(seed, None)
            break
        assert not bots[asked].answers  # still pending all along


def _turns_of(seat: int, message: play_pb2.PlayResponse) -> int:
    """How many plays and passes of ``seat`` an event batch shows."""
    if not message.HasField("events"):
        return 0
    return sum(
        oneof_body(e, "kind")[1].seat == seat
        for e in message.events.events
        if e.WhichOneof("kind") in ("play", "pass_turn")
    )


Snapshot = tuple[int, tuple[tuple[int, int, bool, bool], ...], int, tuple[int, ...]]


def _public(match: match_pb2.Match, public_turns: int) -> Snapshot:
    """What anyone may read of a running match, beside how many public turns of the seat
    under test the others had seen: the seats' counters and presence, the hand, the
    scores."""
    seats = tuple((s.timeouts, s.auto_played, s.connected, s.occupied) for s in match.seats)
    return public_turns, seats, match.hand, tuple(match.scores)


async def _late_seat_twin(
    lobby: Lobby, overrides: list[str], *, connected: bool
) -> tuple[list[Snapshot], match_pb2.Match]:
    """A cuban match whose first deal offers a redeal to one seat (unless ``overrides``
    turns the rule off) that never answers anything (its bot ``connected`` but silent, or
    not connected at all), under auto-play. The other three seats are remote bots that read
    GetMatch at each of their turns before answering it (action 0): the match waits for
    them, so what they read is a function of the public history, comparable between twins.
    Returns those readings and the final record."""
    seed, asked = _offer()
    ids = [await lobby.register(f"tw{i}") for i in range(4)]
    match, host = await lobby.create(
        "cuban",
        [bot_seat(bot_id) for bot_id, _ in ids],
        overrides=[*overrides, "max_hands=1"],
        seed=seed,
        timer_ms=TWIN_TURN_MS,
        on_timeout=match_pb2.TIMEOUT_POLICY_AUTO_PLAY,
    )
    players = {s: Bot(lobby.address, t, chooser=lambda b, d: None) for s, (_, t) in enumerate(ids)}
    silent = players.pop(asked)
    readings: list[Snapshot] = []

    async def reader(bot: Bot) -> None:
        answered = 0
        while not bot.ended:
            if len(bot.decisions) == answered:
                await asyncio.sleep(0.005)
                continue
            decision = bot.decisions[answered]
            answered += 1
            seen = sum(_turns_of(asked, m) for m in bot.messages)
            readings.append(_public(await lobby.get(match.name), seen))
            bot.answer(decision, 0)

    bots = [*players.values(), *([silent] if connected else [])]
    runs = [asyncio.create_task(b.run([match.name], timeout=MATCH_TIMEOUT)) for b in bots]
    readers = [asyncio.create_task(reader(b)) for b in players.values()]
    try:
        while not all(b.welcome is not None for b in bots):
            await asyncio.sleep(0.01)
        await lobby.start(match.name, host)
        await asyncio.wait_for(asyncio.gather(*runs), MATCH_TIMEOUT)
        for task in readers:
            task.cancel()
        final = await lobby.get(match.name)
    finally:
        for task in (*runs, *readers):
            task.cancel()
        await lobby.cancel_created()
    # the late seat's own turns were played in the open, so the readings see them
    assert any(seen > 1 for seen, *_ in readings)
    offered = [d for d in silent.decisions if _is_offer(silent, d)]
    assert bool(offered) == (connected and not overrides)
    if offered:  # its withdrawal went to the asked seat alone, as its request did
        withdrawn = check_withdrawals(silent.messages)
        assert (withdrawn[0].turn_id, withdrawn[0].reason) == (
            offered[0].turn_id,
            play_pb2.WITHDRAWAL_REASON_TIMED_OUT,
        )
    for player in players.values():
        assert not check_withdrawals(player.messages)
    return readings, final


@pytest.mark.parametrize("connected", [False, True], ids=["disconnected", "silent"])
async def test_a_late_seat_looks_the_same_with_or_without_a_hidden_question(
    lobby: Lobby, connected: bool
) -> None:
    """A seat that never answers, offered a redeal it lets run out, and its twin with no
    redeal rule: everything public (every seat's timeouts, auto-played turns, presence, the
    hand and scores), read at each public turn of the others, is the same in both while the
    match runs (they used to freeze at 0/0 all match long after the offer, which told that
    the seat held five doubles and kept them). The hidden question's own timeout and
    auto-played KEEP are added once the match is over, when the replay shows them anyway."""
    offered, with_offer = await _late_seat_twin(lobby, [], connected=connected)
    plain, without = await _late_seat_twin(lobby, ["redeal_min_doubles=0"], connected=connected)
    assert offered == plain
    asked = _offer()[1]
    late, twin = with_offer.seats[asked], without.seats[asked]
    assert twin.timeouts == 1 and twin.auto_played > 1  # its first public turn ran out
    assert (late.timeouts, late.auto_played) == (twin.timeouts + 1, twin.auto_played + 1)
