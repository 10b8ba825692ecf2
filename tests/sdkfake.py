"""A scripted Play server for the SDK's own logic, after python-chess's ``MockTransport``.

A test writes the whole conversation first: what the session must write and what the
"server" answers, each a real ``capicua.v1`` message, then runs a
:class:`~capicua.client.Session` with the script as its transport (``transport=``) and
calls :meth:`ScriptedPlay.assert_done`::

    play = ScriptedPlay()
    play.expect(hello(), [welcome(), table.started(), table.decision(1)])
    play.expect(table.answer(1, 0), [table.ended()])
    session = scripted_session(bot, play, matches=1)
    await session.run()
    play.assert_done()

Steps run in order, over as many streams as the session opens: :meth:`ScriptedPlay.expect`
waits for the session's next message, which must equal the one given, then sends the
answers; :meth:`ScriptedPlay.send` sends without waiting for the session (once ``when``,
if given, has returned: an event of the test, such as a bot being inside ``choose``);
:meth:`ScriptedPlay.end` ends the stream with a status (OK: the stream's end, as a
server's return; anything else: the ``AioRpcError`` grpc raises), and the next stream the
session opens takes up the steps after it. A message that differs from the script, or
one written once the script is used up, fails the session with an AssertionError (raised
by its ``run``) and :meth:`ScriptedPlay.assert_done`.

Nothing is sent over a socket: what crosses the wire is tested against real servers
(tests/test_client_*.py); this is for what the SDK does with the messages.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import text_format
from google.protobuf.message import Message

from capicua.client import Bot, Session
from capicua.client.transport import Metadata, PlayCall
from capicua.engine.game import Game, MatchState
from capicua.engine.observation import observe
from capicua.engine.records import Outcome, Termination
from capicua.engine.rules import load_preset
from capicua.server.errors import make_status
from capicua.v1 import errors_pb2, play_pb2
from capicua.wire import codec
from capicua.wire.views import ViewBuilder, legal_actions
from tests.clientkit import CountingBackoff

#: What a scripted session names itself in its Hello (``Session(client=...)``).
CLIENT = "scripted"
#: The token a scripted session sends (a bot token, by its prefix).
TOKEN = "bot_scripted"


@dataclass(frozen=True)
class _Expect:
    request: play_pb2.PlayRequest
    replies: tuple[play_pb2.PlayResponse, ...]


@dataclass(frozen=True)
class _Send:
    replies: tuple[play_pb2.PlayResponse, ...]
    when: Callable[[], Awaitable[object]] | None


@dataclass(frozen=True)
class _End:
    code: grpc.StatusCode
    details: str

    def error(self) -> grpc.aio.AioRpcError:
        return grpc.aio.AioRpcError(
            self.code, grpc.aio.Metadata(), grpc.aio.Metadata(), self.details
        )


_Step = _Expect | _Send | _End
_Delivery = play_pb2.PlayResponse | _End | AssertionError


def shown(message: Message) -> str:
    """A message on one line, for a failure's text."""
    return f"{type(message).__name__}({text_format.MessageToString(message, as_one_line=True)})"


class _Call:
    """One scripted stream as the session reads it (:class:`PlayCall`): what the script
    delivers, in order; an end or a failure is delivered again to every later read."""

    def __init__(self) -> None:
        self.inbox: asyncio.Queue[_Delivery] = asyncio.Queue()
        self.cancelled = False

    async def read(self) -> Any:
        item = await self.inbox.get()
        if isinstance(item, play_pb2.PlayResponse):
            return item
        self.inbox.put_nowait(item)  # the stream stays ended
        if isinstance(item, AssertionError):
            raise item
        if item.code == grpc.StatusCode.OK:
            return grpc.aio.EOF
        raise item.error()

    def cancel(self) -> bool:
        self.cancelled = True
        return True


@dataclass
class ScriptedPlay:
    """The script of every Play stream of one session (the module doc says how to write
    one). ``metadata`` holds each stream's call metadata, in the order they opened."""

    _steps: deque[_Step] = field(default_factory=deque)
    failures: list[str] = field(default_factory=list)
    metadata: list[tuple[tuple[str, str], ...]] = field(default_factory=list)

    def expect(
        self, request: play_pb2.PlayRequest, replies: Sequence[play_pb2.PlayResponse] = ()
    ) -> None:
        """The session writes ``request`` next; the server answers ``replies``."""
        self._steps.append(_Expect(request, tuple(replies)))

    def send(
        self,
        *replies: play_pb2.PlayResponse,
        when: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        """The server sends ``replies`` without waiting for the session (once ``when()``
        has returned, if given)."""
        self._steps.append(_Send(tuple(replies), when))

    def end(self, code: grpc.StatusCode = grpc.StatusCode.OK, details: str = "") -> None:
        """The stream ends with ``code``; the session's next stream takes the next steps."""
        self._steps.append(_End(code, details))

    def assert_done(self) -> None:
        """Every step was used, and every message the session wrote was expected."""
        assert not self.failures, "\n".join(self.failures)
        left = [_step_text(step) for step in self._steps]
        assert not left, "steps the session never reached:\n" + "\n".join(left)

    @property
    def streams(self) -> int:
        """How many streams the session opened."""
        return len(self.metadata)

    # -- the transport the session is given ---------------------------------------------

    @contextlib.asynccontextmanager
    async def play(
        self, requests: AsyncIterator[play_pb2.PlayRequest], metadata: Metadata
    ) -> AsyncIterator[PlayCall]:
        self.metadata.append(tuple(metadata))
        call = _Call()
        server = asyncio.create_task(self._serve_or_fail(aiter(requests), call))
        try:
            yield call
        finally:
            server.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await server

    async def _serve_or_fail(
        self, requests: AsyncIterator[play_pb2.PlayRequest], call: _Call
    ) -> None:
        """:meth:`_serve`; a step that fails (a ``when`` that raised) fails the session at
        once, rather than leaving it waiting for a message that never comes."""
        try:
            await self._serve(requests, call)
        except Exception as e:
            self._fail(call, f"the script failed: {e!r}")

    async def _serve(self, requests: AsyncIterator[play_pb2.PlayRequest], call: _Call) -> None:
        """Play the script on one stream until a step ends it. Once the script is used
        up, any message the session writes on a stream still open is one too many. A step
        leaves the script only once done: a stream the session hangs up mid-step leaves
        that step unused."""
        while self._steps:
            step = self._steps[0]
            if isinstance(step, _End):  # what the session writes now, nobody reads
                self._steps.popleft()
                call.inbox.put_nowait(step)
                return
            if isinstance(step, _Send):
                if step.when is not None:
                    await step.when()
            else:
                request = await anext(requests, None)
                if request != step.request:
                    wrote = "the end of its messages" if request is None else shown(request)
                    self._fail(call, f"expected {shown(step.request)}, the session wrote {wrote}")
                    return
            self._steps.popleft()
            for reply in step.replies:
                call.inbox.put_nowait(reply)
        async for request in requests:
            self._fail(call, f"the session wrote {shown(request)} after the script's end")

    def _fail(self, call: _Call, failure: str) -> None:
        self.failures.append(failure)
        call.inbox.put_nowait(AssertionError(failure))


def _step_text(step: _Step) -> str:
    if isinstance(step, _Expect):
        return f"expect {shown(step.request)}"
    if isinstance(step, _Send):
        return "send " + ", ".join(shown(r) for r in step.replies)
    return f"end {step.code.name} {step.details!r}"


def no_wait() -> CountingBackoff:
    """A backoff that counts the retries and waits none: a scripted server is back at once."""
    return CountingBackoff(initial=0.0, maximum=0.0)


def scripted_session(bot: Bot, play: ScriptedPlay, **options: Any) -> Session:
    """A session of ``bot`` whose streams are ``play``'s (``options``: the Session's)."""
    return Session(bot, server="scripted:0", token=TOKEN, client=CLIENT, transport=play, **options)


# -- the messages of a script ---------------------------------------------------------------


def hello(*, incremental: bool = True, ask_forced: bool = False) -> play_pb2.PlayRequest:
    """The Hello a scripted session writes first on every stream."""
    message = play_pb2.Hello(ask_forced=ask_forced, client=CLIENT)
    if incremental:
        message.capabilities.append(play_pb2.CAPABILITY_INCREMENTAL_DECISIONS)
    return play_pb2.PlayRequest(hello=message)


def welcome(principal: str = "bots/scripted") -> play_pb2.PlayResponse:
    return play_pb2.PlayResponse(
        welcome=play_pb2.Welcome(principal=principal, server_version="scripted")
    )


def refusal(
    code: grpc.StatusCode,
    reason: errors_pb2.ErrorReason.ValueType | str,
    message: str,
    **meta: str,
) -> play_pb2.PlayResponse:
    """An error in the stream, as the server writes one: a ``google.rpc.Status`` with its
    ErrorInfo (``reason``: an ErrorReason, or a name as is: one newer than the SDK)."""
    name = reason if isinstance(reason, str) else errors_pb2.ErrorReason.Name(reason)
    return play_pb2.PlayResponse(error=make_status(code, name, message, meta))


def unknown_message() -> play_pb2.PlayResponse:
    """A response whose ``message`` is a case this SDK does not know (a newer server's):
    field 99, holding an empty message."""
    # field 99, length-delimited: tag 99 << 3 | 2 = 794, the varint 0x9a 0x06; length 0
    return play_pb2.PlayResponse.FromString(b"\x9a\x06\x00")


class Table:
    """One engine match as the server shows it to ``seat`` (the seat to play first): the
    messages of a script, built from a real game and converted by the wire's own code."""

    def __init__(self, name: str = "matches/m1", *, preset: str = "block", seed: int = 3) -> None:
        self.name = name
        rules = load_preset(preset)
        self._seed = seed
        self.state: MatchState = Game(rules).new_match(seed)
        seat = self.state.current_seat
        assert seat is not None
        self.seat = seat
        players = [f"p{s}" for s in range(rules.seats)]
        self._builder = ViewBuilder(codec.ruleset_to_proto(rules), players)

    def started(self, timer: play_pb2.TurnTimer | None = None) -> play_pb2.PlayResponse:
        started = play_pb2.MatchStarted(
            match=self.name, seat=self.seat, view=self._builder.view(observe(self.state, self.seat))
        )
        if timer is not None:
            started.turn_timer.CopyFrom(timer)
        return play_pb2.PlayResponse(match_started=started)

    def decision(self, turn_id: int, *, time_left_ms: int = 0) -> play_pb2.PlayResponse:
        """The request of the seat's turn now, its view in full (as after a reconnect, or
        to a session that did not ask for incremental decisions)."""
        assert self.state.current_seat == self.seat, "not the seat's turn"
        request = play_pb2.DecisionRequest(
            match=self.name,
            seat=self.seat,
            turn_id=turn_id,
            view=self._builder.view(observe(self.state, self.seat)),
            legal_actions=legal_actions(self.state.legal()),
            time_left_ms=time_left_ms,
        )
        request.deadline.FromSeconds(2_000_000_000)
        return play_pb2.PlayResponse(decision=request)

    def answer(self, turn_id: int, action_id: int) -> play_pb2.PlayRequest:
        """What the session writes to answer ``turn_id`` with ``action_id``."""
        reply = play_pb2.ActionReply(match=self.name, turn_id=turn_id, action_id=action_id)
        return play_pb2.PlayRequest(action=reply)

    def withdrawn(
        self, turn_id: int, reason: play_pb2.WithdrawalReason.ValueType
    ) -> play_pb2.PlayResponse:
        withdrawn = play_pb2.DecisionWithdrawn(
            match=self.name, seat=self.seat, turn_id=turn_id, reason=reason
        )
        return play_pb2.PlayResponse(decision_withdrawn=withdrawn)

    def hand_ended(self) -> play_pb2.PlayResponse:
        """HandEnded of the match's first hand, played out by the engine (each seat playing
        its first legal action) on a game of its own."""
        played = Game(self.state.rules).new_match(self._seed)
        while not played.log.results():
            played.apply_action(played.legal()[0])
        result = codec.hand_result_to_proto(played.log.results()[0])
        return play_pb2.PlayResponse(hand_ended=play_pb2.HandEnded(match=self.name, result=result))

    def ended(self, reason: str = "cancelled by its host") -> play_pb2.PlayResponse:
        """MatchEnded: the match cancelled (no winner, every score 0)."""
        sides = self.state.rules.num_sides
        outcome = Outcome.ended(Termination.CANCELLED, None, [0] * sides, reason)
        ended = play_pb2.MatchEnded(match=self.name, outcome=codec.outcome_to_proto(outcome))
        return play_pb2.PlayResponse(match_ended=ended)
