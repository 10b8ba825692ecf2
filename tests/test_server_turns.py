"""A match's turns (capicua.server.turns): what an answer changes about its seat.

A seat the server auto-plays (it was late) is played at once until it answers again: any
answer ends the auto-play, which everyone then sees in the seat's timing and counters. An
answer to a hidden decision (a redeal offer) must not: the others would learn that the seat
was asked (docs/security.md, "Side channels"). The whole scenario over a real server is in
tests/compliance/test_compliance_side_channels.py; here, each kind of answer on its own.
"""

from __future__ import annotations

import asyncio

import pytest

from capicua.server.seats import Seat
from capicua.server.turns import Pending, Turns
from capicua.v1 import match_pb2, play_pb2

BOT = "bots/late"


def _turns() -> tuple[Turns, Seat]:
    seat = Seat(0, match_pb2.SEAT_KIND_BOT, bot_id="late", principal=BOT, autoplay=True)
    return Turns("matches/m", [seat]), seat


def _open(turns: Turns, seat: Seat, *, hidden: bool) -> Pending:
    """Ask ``seat`` a decision with two legal actions and hold it open."""
    loop = asyncio.get_running_loop()
    turn_id = turns.ask(seat, hidden=hidden)
    pending = Pending(
        turn_id,
        seat.index,
        BOT,
        2,
        b"",
        loop.create_future(),
        loop.create_future(),
        hidden=hidden,
    )
    turns.pending = pending
    return pending


def _reply(turn_id: int, action_id: int) -> play_pb2.ActionReply:
    return play_pb2.ActionReply(match="matches/m", turn_id=turn_id, action_id=action_id)


@pytest.mark.parametrize("hidden", [False, True], ids=["public", "hidden"])
async def test_only_an_answer_to_a_public_decision_ends_the_auto_play(hidden: bool) -> None:
    turns, seat = _turns()
    pending = _open(turns, seat, hidden=hidden)
    assert turns.answer(BOT, _reply(pending.turn_id, 1)) == []
    assert pending.future.result() == 1
    assert seat.autoplay is hidden


@pytest.mark.parametrize("hidden", [False, True], ids=["public", "hidden"])
async def test_only_an_illegal_answer_to_a_public_decision_ends_the_auto_play(
    hidden: bool,
) -> None:
    turns, seat = _turns()
    pending = _open(turns, seat, hidden=hidden)
    [error, again] = turns.answer(BOT, _reply(pending.turn_id, 7))
    assert error.HasField("error") and again is not None
    assert seat.autoplay is hidden


@pytest.mark.parametrize("hidden", [False, True], ids=["public", "hidden"])
async def test_only_a_late_answer_to_a_public_decision_ends_the_auto_play(hidden: bool) -> None:
    """The turn was played for the seat (auto-played), then its answer arrives."""
    turns, seat = _turns()
    pending = _open(turns, seat, hidden=hidden)
    turns.pending = None
    turns.settle(BOT, pending.turn_id, 0)
    assert turns.answer(BOT, _reply(pending.turn_id, 0)) == []  # what was played: ignored
    assert seat.autoplay is hidden
