"""CAPABILITY_INCREMENTAL_DECISIONS: one message per decision, and nothing else changes.

A client that asks for it in its Hello gets no EventBatch while a hand is played: a seat's
events ride in its next DecisionRequest, whose view leaves out what the client holds; the
events still held when a hand or the match ends come in one batch just before HandEnded or
MatchEnded. These tests play the same seeded matches with clients that ask and clients
that do not, and check that

* a view kept by the client (MatchStarted's, plus every batch, request and HandEnded) is,
  at every decision, exactly the full view a client that did not ask was sent;
* a client that does not ask gets exactly the messages it got before, whoever else in
  the match asks;
* what rides in a request is what the seat may see (no other seat's tiles, no other seat's
  hidden decision), and a seat waiting on another seat's secret decision is sent nothing;
* a request sent again (an illegal answer, a new stream) is in the full form.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from capicua.engine.observation import event_for_seat
from capicua.engine.records import Replay
from capicua.v1 import game_pb2, match_pb2, play_pb2, view_pb2
from capicua.wire import codec
from tests.compliance.client import OPEN, Bot, Chooser, Lobby, check_secrecy, oneof_body, prefer
from tests.compliance.test_compliance_matches import MATCH_TIMEOUT, _hello_barrier
from tests.compliance.test_compliance_side_channels import _offer

INCREMENTAL = play_pb2.CAPABILITY_INCREMENTAL_DECISIONS
KEEP_FIRST = prefer(view_pb2.ACTION_KIND_KEEP)  # a redeal offer is kept: a hidden decision


async def seated(lobby: Lobby, preset: str, seats: int, seed: int) -> tuple[str, str, list[str]]:
    """A waiting match whose every seat is joined by a one-seat client: (name, host token,
    seat tokens). Seat tokens, not bots: a server counts the bots registered without a
    token per address and hour, and the suite shares one server."""
    match, host = await lobby.create(preset, [OPEN] * seats, seed=seed, timer_ms=3_600_000)
    tokens = []
    for seat in range(seats):
        request = match_pb2.JoinMatchRequest(
            name=match.name, seat=seat, display_name=f"p{seat}", accept_chosen_seed=True
        )
        tokens.append((await lobby.join_match(request)).seat_token)
    return match.name, host, tokens


def first(bot: Bot, decision: play_pb2.DecisionRequest) -> int:
    return 0


def silent(bot: Bot, decision: play_pb2.DecisionRequest) -> None:
    return None


@dataclass
class Played:
    name: str
    bots: list[Bot]
    seed: int
    replay: Replay


async def play(
    lobby: Lobby,
    preset: str,
    incremental: Sequence[bool],
    *,
    seed: int,
    chooser: Chooser = first,
    cancel: bool = False,
) -> Played:
    """One match of one client per seat (``incremental[seat]``: that one asks); with
    ``cancel``, the host cancels it once a request is left unanswered."""
    name, host, tokens = await seated(lobby, preset, len(incremental), seed)
    bots = [
        Bot(lobby.address, token, chooser=chooser, capabilities=[INCREMENTAL] if asking else [])
        for token, asking in zip(tokens, incremental, strict=True)
    ]
    runs = [asyncio.create_task(b.run([name], timeout=MATCH_TIMEOUT)) for b in bots]
    await asyncio.wait_for(_hello_barrier(bots), 10)
    await lobby.start(name, host)
    if cancel:
        while not any(len(b.decisions) > b.answers for b in bots):
            await asyncio.sleep(0.01)
        await lobby.cancel_match(name, "test", token=host)
    await asyncio.wait_for(asyncio.gather(*runs), MATCH_TIMEOUT)
    for b in bots:
        assert not b.errors, [e.message for e in b.errors]
    return Played(name, bots, seed, await lobby.replay(name))


@contextlib.asynccontextmanager
async def silent_match(
    lobby: Lobby, preset: str, seats: int, seed: int
) -> AsyncIterator[tuple[str, list[Bot], list[asyncio.Task[None]]]]:
    """A started match of incremental clients that never answer: (name, clients, their
    runs: a test may add its own); cancelled at the end."""
    name, host, tokens = await seated(lobby, preset, seats, seed)
    bots = [
        Bot(lobby.address, token, chooser=silent, capabilities=[INCREMENTAL]) for token in tokens
    ]
    runs = [asyncio.create_task(b.run([name], timeout=MATCH_TIMEOUT)) for b in bots]
    try:
        await asyncio.wait_for(_hello_barrier(bots), 10)
        await lobby.start(name, host)
        yield name, bots, runs
    finally:
        for run in runs:
            run.cancel()
        await lobby.cancel_match(name, "test", token=host)


@dataclass
class Kept:
    """A seat's view as an incremental client keeps it, from a copy of a full ``view`` on."""

    view: view_pb2.View
    hands: dict[int, list[game_pb2.Event]] = field(init=False)  # every event seen, per hand

    def __post_init__(self) -> None:
        self.view = _copy(self.view)
        self.hands = {self.view.hand: list(self.view.events)}

    def add(self, hand: int, events: Iterable[game_pb2.Event]) -> None:
        if hand != self.view.hand:
            self.view.hand = hand
            del self.view.events[:]
        self.view.events.extend(events)
        self.hands.setdefault(hand, []).extend(events)


def kept_views(messages: Iterable[play_pb2.PlayResponse]) -> list[play_pb2.PlayResponse]:
    """The messages with every incremental request completed into the full form, as a
    client keeping each seat's view would (requests without the events they carried, which
    come out as an EventBatch before each); checks that only requests sent again (same
    turn_id) are in the full form."""
    kept: dict[int, Kept] = {}
    turns: set[tuple[int, int]] = set()
    out = []
    for message in messages:
        kind, body = oneof_body(message)
        if kind == "match_started":
            kept[body.seat] = Kept(body.view)
        elif kind == "events":
            kept[body.seat].add(body.hand, body.events)
        elif kind == "hand_ended":
            kept[body.seat].view.results.append(body.result)
        elif kind == "decision" and body.incremental:
            seat = kept[body.seat]
            batch = play_pb2.EventBatch(match=body.match, seat=body.seat, hand=body.view.hand)
            batch.events.extend(body.events)
            out.append(play_pb2.PlayResponse(events=batch))
            seat.add(body.view.hand, body.events)
            full = _copy(message)
            full.decision.incremental = False
            del full.decision.events[:]
            full.decision.view.MergeFrom(
                view_pb2.View(
                    ruleset=seat.view.ruleset,
                    players=seat.view.players,
                    results=seat.view.results,
                    events=seat.view.events,
                )
            )
            message = full
        elif kind == "decision":
            assert (body.seat, body.turn_id) in turns, "a first request in the full form"
            kept[body.seat].view.CopyFrom(body.view)
        if kind == "decision":
            turns.add((body.seat, body.turn_id))
        out.append(message)
    return out


M = TypeVar("M", view_pb2.View, play_pb2.PlayResponse)


def _copy(message: M) -> M:
    copy = type(message)()
    copy.CopyFrom(message)
    return copy


def _comparable(messages: Iterable[play_pb2.PlayResponse]) -> list[play_pb2.PlayResponse]:
    """Match messages with what differs between two runs of one seed cleared (the match's
    name, the players' names, the deadline's instant and the time left on it)."""
    out = []
    for message in messages:
        kind = message.WhichOneof("message")
        if kind in ("welcome", "error"):
            continue
        message = _copy(message)
        _, body = oneof_body(message)
        body.match = ""
        if kind in ("match_started", "decision"):
            del body.view.players[:]  # the bots' names
        if kind == "decision":
            body.ClearField("deadline")
            body.ClearField("time_left_ms")
        out.append(message)
    return out


def _decisions(messages: Iterable[play_pb2.PlayResponse]) -> list[play_pb2.DecisionRequest]:
    return [m.decision for m in messages if m.HasField("decision")]


async def test_kept_views_equal_the_full_views_and_one_message_per_decision(
    lobby: Lobby,
) -> None:
    """Per seat, the same seeded match played by clients that ask and clients that do not:
    each completed request equals the full request; HandEnded and MatchEnded are the same;
    between two decisions of a hand an incremental seat is sent nothing but its request."""
    for preset, seed, chooser in [
        ("block", 3, first),
        ("el-dominito-2p", 5, first),  # draws: another seat's drawn tile stays hidden
        ("cuban", _offer()[0], KEEP_FIRST),  # a kept redeal offer is shown to nobody else
    ]:
        seats = 2 if preset == "el-dominito-2p" else 4
        full = await play(lobby, preset, [False] * seats, seed=seed, chooser=chooser)
        inc = await play(lobby, preset, [True] * seats, seed=seed, chooser=chooser)
        for seat in range(seats):
            got = inc.bots[seat].by_match[inc.name]
            completed = [m for m in kept_views(got) if not m.HasField("events")]
            expected = [m for m in full.bots[seat].by_match[full.name] if not m.HasField("events")]
            assert _comparable(completed) == _comparable(expected), (preset, seat)
            assert all(d.incremental for d in _decisions(got)), (preset, seat)
            for before, after in zip(got, got[1:], strict=False):
                if before.HasField("events"):  # only the held events of an ending hand
                    assert after.WhichOneof("message") in ("hand_ended", "match_ended")
            assert check_secrecy(kept_views(got), [seat], inc.replay) > 0


async def test_a_client_that_does_not_ask_gets_the_same_messages_beside_one_that_does(
    lobby: Lobby,
) -> None:
    """Seats 0 and 2 ask, seats 1 and 3 do not: 1 and 3 get exactly the messages they get
    when nobody asks."""
    nobody = await play(lobby, "block", [False] * 4, seed=11)
    mixed = await play(lobby, "block", [True, False, True, False], seed=11)
    for seat in (1, 3):
        assert _comparable(mixed.bots[seat].by_match[mixed.name]) == _comparable(
            nobody.bots[seat].by_match[nobody.name]
        )


async def test_held_events_come_before_match_ended_when_a_match_is_cancelled(
    lobby: Lobby,
) -> None:
    """Cancelled in the middle of a hand: every seat was sent, in the end, each event of
    that hand it may see, in order (the replay's, masked for it); the seat not asked got
    the ones it was still held (its own last move at least) just before MatchEnded."""

    def three(bot: Bot, decision: play_pb2.DecisionRequest) -> int | None:
        return 0 if len(bot.decisions) <= 3 else None  # then silent: the match waits

    played = await play(lobby, "el-dominito-2p", [True, True], seed=2, chooser=three, cancel=True)
    replay = played.replay
    last = replay.hands[-1]
    assert sorted(len(b.decisions) > b.answers for b in played.bots) == [False, True]
    for seat, bot in enumerate(played.bots):
        messages = bot.by_match[played.name]
        assert messages[-1].HasField("match_ended")
        assert messages[-1].match_ended.outcome.termination == game_pb2.TERMINATION_CANCELLED
        kept: dict[int, Kept] = {}
        for m in messages:
            if m.HasField("match_started"):
                kept[seat] = Kept(m.match_started.view)
            elif m.HasField("events"):
                kept[seat].add(m.events.hand, m.events.events)
            elif m.HasField("decision"):
                kept[seat].add(m.decision.view.hand, m.decision.events)
        shown = (event_for_seat(e, seat) for e in last.events)
        expected = [codec.event_to_proto(e) for e in shown if e is not None]
        assert kept[seat].hands.get(last.hand, []) == expected
        if len(bot.decisions) == bot.answers:  # not the seat asked when it was cancelled
            assert messages[-2].HasField("events") and messages[-2].events.events


async def test_a_request_sent_again_is_in_the_full_form(lobby: Lobby) -> None:
    """After an illegal answer, and on a new stream of the same bot, the pending request
    comes again with the same turn_id, the full view and no events."""
    async with silent_match(lobby, "el-dominito-2p", 2, 4) as (name, bots, runs):
        while not any(b.decisions for b in bots):
            await asyncio.sleep(0.01)
        asked = next(b for b in bots if b.decisions)
        first_request = asked.decisions[0]
        assert first_request.incremental and not first_request.view.HasField("ruleset")
        asked.answer(first_request, 999)  # no such id: ILLEGAL_ACTION, then the request again
        while len(asked.decisions) < 2:
            await asyncio.sleep(0.01)
        again = asked.decisions[1]
        assert again.turn_id == first_request.turn_id and not again.incremental
        assert not again.events and again.view.HasField("ruleset")
        completed = _decisions(kept_views(asked.by_match[name]))
        assert completed[0].view == again.view and completed[0].legal_actions == again.legal_actions
        # a new stream of the same bot: MatchStarted, then the request in the full form
        runs[bots.index(asked)].cancel()
        fresh = Bot(lobby.address, asked.token, chooser=silent, capabilities=[INCREMENTAL])
        runs.append(asyncio.create_task(fresh.run([name], timeout=MATCH_TIMEOUT)))
        while not fresh.decisions:
            await asyncio.sleep(0.01)
        kinds = [m.WhichOneof("message") for m in fresh.messages]
        assert kinds == ["welcome", "match_started", "decision"]
        resent = fresh.decisions[0]
        assert resent.turn_id == first_request.turn_id and not resent.incremental
        assert not resent.events and resent.view == again.view


async def test_nobody_is_sent_anything_while_a_seat_decides_in_secret(lobby: Lobby) -> None:
    """A pending redeal offer (a hidden decision): the other seats, incremental, are sent
    nothing after MatchStarted, and the asked seat's request holds only its own view."""
    seed, asked = _offer()
    async with silent_match(lobby, "cuban", 4, seed) as (name, bots, _):
        while not bots[asked].decisions:
            await asyncio.sleep(0.01)
        offer = bots[asked].decisions[0]
        assert offer.view.phase == view_pb2.PHASE_REDEAL and offer.view.seat == asked
        assert all(not e.HasField("draw") or e.draw.seat == asked for e in offer.events)
        for seat, bot in enumerate(bots):
            if seat != asked:
                assert [m.WhichOneof("message") for m in bot.by_match[name]] == ["match_started"]
