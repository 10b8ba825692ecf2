"""What the Python SDK's session does with each message and ending of its Play stream,
against a scripted server (tests/sdkfake.py): every message the session must write and
every one it is sent is in the script, and each test checks the whole script was used.

Here: the stream's endings by status code (those retrying cannot fix, and the drops it
reconnects after, answering a request sent again without asking the bot twice), refusals
in the stream (ILLEGAL_ACTION asked again, STREAM_REPLACED, STALE_TURN after a late
answer), withdrawn requests never decided, a ``choose`` cancelled when its match ends,
a slow ``choose`` that holds up no other match, and messages a server should not send
(a case of ``message`` newer than the SDK, a request after its match ended). What crosses
the wire is tested against real servers in the other tests/test_client_*.py files."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence

import grpc
import pytest

from capicua.client import Bot, ClientError, Decision, PlayError, Session, current_decision
from capicua.client.bot import WITHDRAWN, Answer
from capicua.client.session import FATAL
from capicua.engine.actions import Action
from capicua.engine.observation import Observation
from capicua.engine.records import HandResult, Outcome, Termination
from capicua.v1 import errors_pb2, play_pb2
from tests.clientkit import until
from tests.sdkfake import (
    TOKEN,
    ScriptedPlay,
    Table,
    hello,
    no_wait,
    refusal,
    scripted_session,
    unknown_message,
    welcome,
)

BOUND_S = 30  # a bound on a whole scripted session: a hang fails instead of hanging
#: Statuses that stop the session with an error (the lifecycle table in docs/protocol.md).
STOPS = [
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.UNAUTHENTICATED,
    grpc.StatusCode.PERMISSION_DENIED,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.UNIMPLEMENTED,
]
#: Statuses after which the session opens its stream again (the lifecycle table in
#: docs/protocol.md: anything but OK and the statuses retrying cannot fix).
DROPS = [
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.INTERNAL,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.UNKNOWN,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.CANCELLED,
]


class First(Bot):
    """Plays the first legal action; keeps what it was asked and told."""

    def __init__(self) -> None:
        self.asked: list[Decision] = []
        self.asking = asyncio.Event()  # inside choose
        self.errors: list[PlayError] = []
        self.ended: dict[str, Outcome] = {}
        self.ending = asyncio.Event()  # on_match_ended ran

    async def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Answer:
        decision = current_decision()
        assert decision is not None
        self.asked.append(decision)
        self.asking.set()
        return legal_actions[0]

    @property
    def turns(self) -> list[tuple[str, int]]:
        return [(d.match, d.turn_id) for d in self.asked]

    def on_error(self, error: PlayError) -> None:
        self.errors.append(error)

    def on_match_ended(self, match: str, outcome: Outcome) -> None:
        self.ended[match] = outcome
        self.ending.set()


def one_decision(play: ScriptedPlay, table: Table) -> None:
    """The script of a whole match of one decision (answered with id 0), then cancelled."""
    play.expect(hello(), [welcome(), table.started(), table.decision(1)])
    play.expect(table.answer(1, 0), [table.ended()])


# -- the script itself --------------------------------------------------------------------


async def test_a_session_that_strays_from_the_script_fails_and_says_where() -> None:
    table = Table()
    play = ScriptedPlay()
    play.expect(hello(incremental=False), [welcome()])
    session = scripted_session(First(), play, matches=1)
    with pytest.raises(AssertionError, match="expected PlayRequest") as raised:
        await asyncio.wait_for(session.run(), BOUND_S)
    assert "the session wrote PlayRequest(hello {" in str(raised.value)
    assert "CAPABILITY_INCREMENTAL_DECISIONS" in str(raised.value)
    with pytest.raises(AssertionError, match="the session wrote PlayRequest"):
        play.assert_done()

    unused = ScriptedPlay()
    one_decision(unused, table)
    unused.expect(table.answer(2, 0))  # the match ended first: the session never writes it
    await asyncio.wait_for(scripted_session(First(), unused, matches=1).run(), BOUND_S)
    with pytest.raises(AssertionError, match=r"never reached:\nexpect PlayRequest\(action"):
        unused.assert_done()


async def test_a_step_that_fails_fails_the_session_at_once() -> None:
    async def broken() -> None:
        raise RuntimeError("the test's event went wrong")

    play = ScriptedPlay()
    play.expect(hello(), [welcome()])
    play.send(when=broken)
    with pytest.raises(AssertionError, match="the script failed: RuntimeError"):
        await asyncio.wait_for(scripted_session(First(), play).run(), BOUND_S)


async def test_a_decision_is_answered_and_the_token_sent() -> None:
    table = Table()
    play = ScriptedPlay()
    one_decision(play, table)
    bot = First()
    summary = await asyncio.wait_for(scripted_session(bot, play, matches=1).run(), BOUND_S)
    play.assert_done()
    assert play.metadata == [(("authorization", f"Bearer {TOKEN}"),)]
    assert bot.turns == [(table.name, 1)]
    assert summary.outcomes[table.name].termination is Termination.CANCELLED
    assert summary.principal == "bots/scripted" and summary.connections == 1


# -- how the stream ends ------------------------------------------------------------------


@pytest.mark.parametrize("code", STOPS, ids=str)
async def test_a_status_retrying_cannot_fix_ends_the_session_without_retrying(
    code: grpc.StatusCode,
) -> None:
    play = ScriptedPlay()
    play.expect(hello())
    play.end(code, "refused by the script")
    backoff = no_wait()
    session = scripted_session(First(), play, backoff=backoff)
    with pytest.raises(ClientError) as raised:
        await asyncio.wait_for(session.run(), BOUND_S)
    play.assert_done()
    why = FATAL[code].format(source="--token")
    assert str(raised.value) == (
        f"scripted:0: {code.name}: refused by the script ({why}; not retrying)"
    )
    assert backoff.given == [] and play.streams == 1
    assert session.summary.connections == 0


@pytest.mark.parametrize("code", DROPS, ids=str)
async def test_a_dropped_stream_is_opened_again_and_the_request_answered_once(
    code: grpc.StatusCode, caplog: pytest.LogCaptureFixture
) -> None:
    """The stream drops while the bot decides; the new stream's server sends the pending
    request again: it is answered (once, whichever stream the first answer went to) with
    the bot's answer, the bot not asked again."""
    caplog.set_level(logging.WARNING, "capicua.client")
    table = Table()
    bot = First()
    play = ScriptedPlay()
    play.expect(hello(), [welcome(), table.started(), table.decision(1)])
    play.send(when=bot.asking.wait)
    play.end(code, "dropped by the script")
    play.expect(hello(), [welcome(), table.started(), table.decision(1)])
    play.expect(table.answer(1, 0), [table.ended()])
    backoff = no_wait()
    summary = await asyncio.wait_for(
        scripted_session(bot, play, matches=1, backoff=backoff).run(), BOUND_S
    )
    play.assert_done()
    assert bot.turns == [(table.name, 1)], "asked once"
    assert summary.connections == 2 and len(backoff.given) == 1
    assert summary.outcomes[table.name].termination is Termination.CANCELLED
    assert f"the stream failed: {code.name}: dropped by the script" in caplog.text or (
        code == grpc.StatusCode.UNAVAILABLE and "cannot reach a capicua server" in caplog.text
    )


async def test_an_unreachable_server_is_retried_until_it_answers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "capicua.client")
    refused = "failed to connect to all addresses; last error: UNAVAILABLE: Connection refused"
    table = Table()
    play = ScriptedPlay()
    for _ in range(3):
        play.end(grpc.StatusCode.UNAVAILABLE, refused)
    one_decision(play, table)
    backoff = no_wait()
    bot = First()
    summary = await asyncio.wait_for(
        scripted_session(bot, play, matches=1, backoff=backoff).run(), BOUND_S
    )
    play.assert_done()
    assert play.streams == 4 and len(backoff.given) == 3
    assert summary.connections == 1 and bot.turns == [(table.name, 1)]
    lines = [r.getMessage() for r in caplog.records if "cannot reach" in r.getMessage()]
    assert len(lines) == 3
    assert lines[0].startswith(f"cannot reach a capicua server at scripted:0 ({refused})")


async def test_the_stream_ending_ok_stops_the_session() -> None:
    """OK: the server has nothing more for the token; reconnecting would only be refused."""
    play = ScriptedPlay()
    play.expect(hello(), [welcome()])
    play.end()
    backoff = no_wait()
    summary = await asyncio.wait_for(
        scripted_session(First(), play, backoff=backoff).run(), BOUND_S
    )
    play.assert_done()
    assert play.streams == 1 and backoff.given == [] and summary.matches == 0


async def test_a_seat_token_session_ends_with_its_match() -> None:
    table = Table()
    play = ScriptedPlay()
    play.expect(hello(), [welcome(f"{table.name}/seats/0"), table.started(), table.decision(1)])
    play.expect(table.answer(1, 0), [table.ended()])
    summary = await asyncio.wait_for(scripted_session(First(), play).run(), BOUND_S)
    play.assert_done()
    assert list(summary.outcomes) == [table.name] and play.streams == 1


# -- refusals in the stream ---------------------------------------------------------------


class IllegalOnceBot(First):
    """Answers an id that does not exist the first time it is asked a turn."""

    async def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> int:
        await super().choose(observation, legal_actions)
        return len(legal_actions) + 5 if len(self.asked) == 1 else 0


async def test_an_illegal_action_id_is_explained_and_asked_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, "capicua.client")
    table = Table()
    wrong = len(table.state.legal()) + 5
    illegal = refusal(
        grpc.StatusCode.FAILED_PRECONDITION,
        errors_pb2.ILLEGAL_ACTION,
        f"action_id {wrong} is not one of the legal action ids",
        match=table.name,
        turn_id="1",
    )
    play = ScriptedPlay()
    play.expect(hello(), [welcome(), table.started(), table.decision(1)])
    play.expect(table.answer(1, wrong), [illegal, table.decision(1)])
    play.expect(table.answer(1, 0), [table.ended()])
    bot = IllegalOnceBot()
    summary = await asyncio.wait_for(scripted_session(bot, play, matches=1).run(), BOUND_S)
    play.assert_done()
    assert bot.turns == [(table.name, 1), (table.name, 1)], "asked again after the refusal"
    [error] = bot.errors
    assert (error.code, error.reason) == ("FAILED_PRECONDITION", "ILLEGAL_ACTION")
    assert (error.match, error.turn_id) == (table.name, 1)
    assert error.message == f"action_id {wrong} is not one of the legal action ids"
    assert summary.errors == [error]
    logged = [r.getMessage() for r in caplog.records if "illegal action" in r.getMessage()]
    assert logged == [
        f"{table.name} turn 1: illegal action: action_id {wrong} is not one of the legal "
        "action ids (the server asks again)"
    ]


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        (grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_TURN"),
        (grpc.StatusCode.FAILED_PRECONDITION, "STALE_TURN"),
        (grpc.StatusCode.PERMISSION_DENIED, "NOT_YOUR_SEAT"),
        (grpc.StatusCode.NOT_FOUND, "UNKNOWN_MATCH"),
        (grpc.StatusCode.FAILED_PRECONDITION, "A_REASON_NEWER_THAN_THIS_SDK"),
    ],
    ids=lambda value: getattr(value, "name", value),
)
async def test_a_refusal_in_the_stream_reaches_on_error_and_the_stream_stays_open(
    code: grpc.StatusCode, reason: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "capicua.client")
    table = Table()
    refused = refusal(code, reason, "refused by the script", match=table.name, turn_id="1")
    play = ScriptedPlay()
    play.expect(hello(), [welcome(), table.started(), table.decision(1)])
    play.expect(table.answer(1, 0), [refused, table.decision(2)])
    play.expect(table.answer(2, 0), [table.ended()])
    bot = First()
    backoff = no_wait()
    summary = await asyncio.wait_for(
        scripted_session(bot, play, matches=1, backoff=backoff).run(), BOUND_S
    )
    play.assert_done()
    expected = PlayError(
        code=code.name,
        reason=reason,
        message="refused by the script",
        match=table.name,
        turn_id=1,
        metadata={"match": table.name, "turn_id": "1"},
    )
    assert bot.errors == summary.errors == [expected]
    known = errors_pb2.ErrorReason.DESCRIPTOR.values_by_name.get(reason)
    newer = errors_pb2.ERROR_REASON_UNSPECIFIED  # what a reason newer than the SDK reads as
    assert bot.errors[0].error_reason == (newer if known is None else known.number)
    assert bot.turns == [(table.name, 1), (table.name, 2)]
    assert play.streams == 1 and backoff.given == []
    assert f"{table.name} turn 1: {code.name}/{reason}: refused by the script" in caplog.text


async def test_a_replaced_stream_in_the_stream_stops_the_session() -> None:
    play = ScriptedPlay()
    replaced = refusal(grpc.StatusCode.ABORTED, errors_pb2.STREAM_REPLACED, "a newer stream")
    play.expect(hello(), [welcome(), replaced])
    backoff = no_wait()
    with pytest.raises(ClientError, match=r"took over the stream \(a newer stream\)"):
        await asyncio.wait_for(scripted_session(First(), play, backoff=backoff).run(), BOUND_S)
    play.assert_done()
    assert backoff.given == [] and play.streams == 1


class LateOnceBot(First):
    """Sits on its first decision until the server has withdrawn it, then answers it
    anyway (the last legal action); answers later ones at once."""

    async def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        await super().choose(observation, legal_actions)
        decision = self.asked[-1]
        if len(self.asked) == 1:
            await until(lambda: decision.stale, BOUND_S, "the withdrawal")
            return legal_actions[-1]
        return legal_actions[0]


async def test_a_late_answer_is_sent_and_its_stale_refusal_expected(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The server played the turn itself (its timer ran out): the answer still goes, since
    it is what ends the auto-play, and its STALE_TURN refusal is no warning."""
    caplog.set_level(logging.INFO, "capicua.client")
    table = Table()
    last = len(table.state.legal()) - 1
    stale = refusal(
        grpc.StatusCode.FAILED_PRECONDITION,
        errors_pb2.STALE_TURN,
        "turn 1 is over",
        match=table.name,
        turn_id="1",
    )
    bot = LateOnceBot()
    play = ScriptedPlay()
    play.expect(hello(), [welcome(), table.started(), table.decision(1)])
    play.send(table.withdrawn(1, play_pb2.WITHDRAWAL_REASON_TIMED_OUT), when=bot.asking.wait)
    play.expect(table.answer(1, last), [stale, table.decision(2)])
    play.expect(table.answer(2, 0), [table.ended()])
    summary = await asyncio.wait_for(scripted_session(bot, play, matches=1).run(), BOUND_S)
    play.assert_done()
    first = bot.asked[0]
    assert first.withdrawal is not None
    assert first.withdrawal.reason == play_pb2.WITHDRAWAL_REASON_TIMED_OUT
    assert summary.withdrawn == {table.name: [1]}
    assert [e.reason for e in summary.errors] == ["STALE_TURN"]
    assert f"{table.name} turn 1: refused as stale, as expected" in caplog.text
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING and "stale" in r.message]
    assert not warned, warned


# -- withdrawn requests and ended matches -------------------------------------------------


class StuckSyncBot(First):
    """Its ``choose`` (in a worker thread) blocks on the decision ``stuck_on`` picks (by
    default its first) until the test opens ``gate``."""

    def __init__(self, stuck_on: Callable[[Decision], bool] | None = None) -> None:
        super().__init__()
        self.stuck_on = stuck_on or (lambda _: len(self.asked) == 1)
        self.gate = threading.Event()
        self.blocked = threading.Event()

    def choose(  # type: ignore[override]
        self, observation: Observation, legal_actions: Sequence[Action]
    ) -> Action:
        decision = current_decision()
        assert decision is not None
        self.asked.append(decision)
        if self.stuck_on(decision):
            self.blocked.set()
            assert self.gate.wait(BOUND_S), "never released"
        return legal_actions[0]

    async def inside(self) -> None:
        assert await asyncio.to_thread(self.blocked.wait, BOUND_S)


class StuckAsyncBot(First):
    """Its first ``async def choose`` waits until cancelled (or ``gate`` opens)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = asyncio.Event()
        self.cancelled: list[str] = []

    async def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        await super().choose(observation, legal_actions)
        if len(self.asked) == 1:
            try:
                await asyncio.wait_for(self.gate.wait(), BOUND_S)
            except asyncio.CancelledError as e:
                self.cancelled.append(str(e.args[0]) if e.args else "")
                raise
        return legal_actions[0]

    async def inside(self) -> None:
        await self.asking.wait()


@pytest.mark.parametrize("kind", ["sync", "async"])
async def test_a_stuck_bot_is_never_asked_a_withdrawn_turn(kind: str) -> None:
    """The bot is stuck on its first decision: its timer runs out and the server plays that
    turn and every later one of the seat, withdrawing each request, to the match's end.
    The SDK asks the bot nothing more, ends the match, and cancels the stuck ``choose``
    (an async one; a thread's result is dropped), answering nothing."""
    table = Table()
    timer = play_pb2.TurnTimer(limit_ms=200, on_timeout=play_pb2.ON_TIMEOUT_AUTO_PLAY)
    bot: StuckSyncBot | StuckAsyncBot = StuckSyncBot() if kind == "sync" else StuckAsyncBot()
    auto = play_pb2.WITHDRAWAL_REASON_AUTO_PLAYED
    play = ScriptedPlay()
    play.expect(hello(), [welcome(), table.started(timer), table.decision(1, time_left_ms=200)])
    play.send(
        table.withdrawn(1, play_pb2.WITHDRAWAL_REASON_TIMED_OUT),
        *[m for turn in (2, 3, 4) for m in (table.decision(turn), table.withdrawn(turn, auto))],
        table.ended("the host cancelled it"),
        when=bot.inside,
    )
    try:
        summary = await asyncio.wait_for(scripted_session(bot, play, matches=1).run(), BOUND_S)
        assert not bot.gate.is_set(), "the session ended while choose was stuck"
    finally:
        bot.gate.set()
    play.assert_done()
    [first] = bot.asked
    assert first.turn_id == 1, "asked once: never for a turn played without it"
    assert summary.withdrawn == {table.name: [1, 2, 3, 4]}
    assert first.stale and first.withdrawal is not None
    assert first.withdrawal.reason == play_pb2.WITHDRAWAL_REASON_TIMED_OUT
    assert first.time_left_ms == 200 and first.turn_timer == timer
    assert bot.ended[table.name].termination is Termination.CANCELLED
    if isinstance(bot, StuckAsyncBot):
        assert bot.cancelled == [WITHDRAWN], "cancelled when the match ended"


async def test_a_match_ending_cancels_the_choose_in_progress() -> None:
    table = Table()
    bot = StuckAsyncBot()
    play = ScriptedPlay()
    play.expect(hello(), [welcome(), table.started(), table.decision(1)])
    play.send(
        table.withdrawn(1, play_pb2.WITHDRAWAL_REASON_MATCH_ENDED), table.ended(), when=bot.inside
    )
    summary = await asyncio.wait_for(scripted_session(bot, play, matches=1).run(), BOUND_S)
    play.assert_done()
    assert bot.cancelled == [WITHDRAWN]
    assert bot.asked[0].withdrawal is not None
    assert bot.asked[0].withdrawal.reason == play_pb2.WITHDRAWAL_REASON_MATCH_ENDED
    assert summary.outcomes[table.name].termination is Termination.CANCELLED
    assert summary.withdrawn == {table.name: [1]} and not summary.errors


async def test_a_request_after_its_match_ended_is_never_decided() -> None:
    table = Table()
    bot = First()
    play = ScriptedPlay()
    play.expect(hello(), [welcome(), table.started(), table.decision(1)])
    play.expect(table.answer(1, 0), [table.ended(), table.decision(2)])
    play.send(when=bot.ending.wait)  # the match's end is the bot's before the stream ends
    play.end()
    summary = await asyncio.wait_for(scripted_session(bot, play).run(), BOUND_S)
    play.assert_done()
    assert bot.turns == [(table.name, 1)]
    assert list(summary.outcomes) == [table.name]


async def test_a_message_newer_than_the_sdk_is_passed_over() -> None:
    table = Table()
    play = ScriptedPlay()
    newer = unknown_message()
    assert newer.WhichOneof("message") is None
    play.expect(hello(), [welcome(), newer, table.started(), newer, table.decision(1)])
    play.expect(table.answer(1, 0), [table.ended()])
    bot = First()
    summary = await asyncio.wait_for(scripted_session(bot, play, matches=1).run(), BOUND_S)
    play.assert_done()
    assert bot.turns == [(table.name, 1)] and summary.connections == 1


# -- many matches on one stream -----------------------------------------------------------


class GatedBot(StuckSyncBot):
    """Holds its decision in match ``slow`` until another match has ended."""

    def __init__(self, slow: str) -> None:
        super().__init__(lambda decision: decision.match == slow)

    def on_match_ended(self, match: str, outcome: Outcome) -> None:
        super().on_match_ended(match, outcome)
        self.gate.set()  # a fast match is over while the slow one waited


async def test_a_slow_choose_in_one_match_holds_up_no_other() -> None:
    slow, fast = Table("matches/slow", seed=1), Table("matches/fast", seed=2)
    play = ScriptedPlay()
    play.expect(
        hello(),
        [welcome(), slow.started(), slow.decision(1), fast.started(), fast.decision(1)],
    )
    play.expect(fast.answer(1, 0), [fast.ended()])  # while the slow one is still deciding
    play.expect(slow.answer(1, 0), [slow.ended()])
    bot = GatedBot(slow.name)
    summary = await asyncio.wait_for(scripted_session(bot, play, matches=2).run(), BOUND_S)
    play.assert_done()
    assert list(bot.ended) == [fast.name, slow.name]
    assert Counter(d.match for d in bot.asked) == {slow.name: 1, fast.name: 1}
    assert summary.connections == 1


class SlowHandBot(First):
    """Its ``on_hand_ended`` is still running when the stream ends."""

    def __init__(self) -> None:
        super().__init__()
        self.session: Session | None = None

    async def on_hand_ended(self, match: str, result: HandResult) -> None:
        session = self.session
        assert session is not None
        await until(lambda: session.stopping, BOUND_S, "the stream's end")


async def test_a_match_that_ended_reaches_its_hooks_though_the_stream_ends_first() -> None:
    """A seat token's stream ends OK just after MatchEnded: the session stops, but what
    the match's run already holds (its last hand's result, its end) still reaches the bot."""
    table = Table()
    bot = SlowHandBot()
    play = ScriptedPlay()
    play.expect(hello(), [welcome(f"{table.name}/seats/0"), table.started(), table.decision(1)])
    play.expect(table.answer(1, 0), [table.hand_ended(), table.ended()])
    play.end()
    bot.session = session = scripted_session(bot, play)
    summary = await asyncio.wait_for(session.run(), BOUND_S)
    play.assert_done()
    assert list(bot.ended) == [table.name]
    assert list(summary.outcomes) == [table.name]
