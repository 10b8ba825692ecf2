"""Black-box helpers for the compliance suite: the SDK's lobby, the generated stubs and grpc
over a real socket.

Nothing here imports the server. The engine is used only offline: to check replays
(``capicua.engine.replay.verify``) and to look for seeds with rare deals.
"""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from google.rpc import error_details_pb2, status_pb2

import capicua.client
from capicua.client import LobbyError
from capicua.common.channel import CLIENT_OPTIONS, ClientTLS, aio_channel, bearer
from capicua.engine.records import Replay
from capicua.engine.replay import verify
from capicua.v1 import match_pb2, play_pb2, play_pb2_grpc, view_pb2
from capicua.wire import codec

#: The suite's name for the bearer-token metadata of a call (tests import it from here).
auth = bearer

DOMAIN = "capicua.dev"
CALL_TIMEOUT = 10.0  # seconds for any unary call
OPTIONS = CLIENT_OPTIONS  # for raw channels: the SDK's own options

#: Seconds :func:`until` waits at most: a bound on a wait for an event, never a pause (a
#: loaded machine takes its time; a hung server fails the test instead of hanging it).
UNTIL_BOUND_S = 30.0

OPEN = match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_OPEN)


def bot_seat(bot_id: str) -> match_pb2.SeatSpec:
    return match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_BOT, bot_id=bot_id)


def cpu_seat(level: match_pb2.CpuLevel.ValueType = match_pb2.CPU_LEVEL_EASY) -> match_pb2.SeatSpec:
    return match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_CPU, cpu_level=level)


def call_error(error: BaseException) -> BaseException | None:
    """The failed call behind an SDK :class:`LobbyError` (None: there was none), else
    ``error`` itself."""
    return error.rpc_error if isinstance(error, LobbyError) else error


def error_info(error: Any) -> error_details_pb2.ErrorInfo | None:
    """The ErrorInfo of a status: an in-stream google.rpc.Status or an RpcError's trailer."""
    if isinstance(error, status_pb2.Status):
        status = error
    else:
        status = None
        for key, value in error.trailing_metadata() or ():
            if key == "grpc-status-details-bin":
                status = status_pb2.Status.FromString(value)
        if status is None:
            return None
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return info
    return None


def reasons(bot: Bot) -> list[str]:
    """The reasons of the in-stream errors ``bot`` was sent, in order."""
    out = []
    for status in bot.errors:
        info = error_info(status)
        assert info is not None and info.domain == "capicua.dev"
        out.append(info.reason)
    return out


async def expect_error(
    call: Awaitable[Any], code: grpc.StatusCode, reason: str | None = None
) -> grpc.aio.AioRpcError:
    """Await ``call`` (a raw stub call or a :class:`Lobby` one); it must fail with ``code``
    (and ErrorInfo ``reason`` if given). Returns the failed call's RpcError."""
    try:
        await asyncio.wait_for(call, CALL_TIMEOUT)
    except (grpc.aio.AioRpcError, LobbyError) as raised:
        e = call_error(raised)
        assert isinstance(e, grpc.aio.AioRpcError), f"no call failed: {raised}"
        assert e.code() == code, f"expected {code}, got {e.code()}: {e.details()}"
        assert e.details(), "an error needs a message"
        if reason is not None:
            info = error_info(e)
            assert info is not None, f"no ErrorInfo in {code} error: {e.details()}"
            assert (info.reason, info.domain) == (reason, DOMAIN), (info, e.details())
        return e
    raise AssertionError(f"expected {code}, the call succeeded")


class Lobby(capicua.client.Lobby):
    """The SDK's lobby, plus what the suite needs: short helpers, and a memory of every
    match it created (with its host token), so that :meth:`cancel_created` can leave the
    server it checks as it found it: the suite may run against anyone's server. Bots cannot
    be removed (the protocol has no call for it). Raw calls go through ``.matches`` and
    ``.play``, the generated stubs, with :func:`auth` metadata."""

    def __init__(self, address: str, tls: ClientTLS | None = None) -> None:
        super().__init__(address, tls=tls, timeout=CALL_TIMEOUT)
        self.created: dict[str, str] = {}  # match name -> host token

    def track(self, response: match_pb2.CreateMatchResponse) -> match_pb2.CreateMatchResponse:
        """Remember a match created with a raw CreateMatch call, for :meth:`cancel_created`."""
        self.created[response.match.name] = response.host_token
        return response

    async def cancel_created(self) -> list[str]:
        """Cancel every match this client created that is not over (waiting, or running
        because a test left it so); returns their names."""
        cancelled = []
        for name, host_token in self.created.items():
            if (await self.get(name)).state == match_pb2.MATCH_STATE_FINISHED:
                continue
            try:
                await self.cancel_match(name, "compliance suite cleanup", token=host_token)
            except LobbyError as e:
                # it ended between the two calls; anything else is the server's fault
                if e.code != grpc.StatusCode.FAILED_PRECONDITION:
                    raise
                continue
            cancelled.append(name)
        self.created.clear()
        return cancelled

    async def register(
        self,
        prefix: str = "bot",
        admin: str | None = None,
        reservable_by: Sequence[str] = ("*",),
        accept_chosen_seeds: bool = True,
    ) -> tuple[str, str]:
        """A new bot with a unique id; returns (bot_id, token). By default it lets anyone
        reserve its seats (``*``) and choose their seeds, so that :meth:`create` may reserve
        it without a token and deal a chosen hand; the consent rules themselves are tested
        with ``reservable_by=()`` and ``accept_chosen_seeds=False``."""
        bot_id = f"{prefix}-{uuid.uuid4().hex[:10]}"
        request = play_pb2.RegisterBotRequest(
            bot_id=bot_id,
            description="compliance test bot",
            reservable_by=reservable_by,
            accept_chosen_seeds=accept_chosen_seeds,
        )
        response = await self.register_bot(request, token=admin or "")
        assert response.name == f"bots/{bot_id}" and response.token
        assert list(response.reservable_by) == sorted(set(reservable_by))
        return bot_id, response.token

    async def create(
        self,
        preset: str,
        seats: Sequence[match_pb2.SeatSpec],
        *,
        overrides: Iterable[str] = (),
        seed: int | None = None,
        timer_ms: int = 0,
        on_timeout: match_pb2.TimeoutPolicy.ValueType = match_pb2.TIMEOUT_POLICY_UNSPECIFIED,
        private: bool = False,
        tags: Iterable[str] = (),
        token: str | None = None,
    ) -> tuple[match_pb2.Match, str]:
        """A new waiting match; ``token``: create it as that bot (or the admin)."""
        settings = match_pb2.MatchSettings(
            turn_timer_ms=timer_ms,
            on_timeout=on_timeout,
            visibility=match_pb2.VISIBILITY_PRIVATE if private else match_pb2.VISIBILITY_PUBLIC,
            tags=list(tags),
        )
        request = match_pb2.CreateMatchRequest(
            preset=preset, overrides=list(overrides), seats=list(seats), settings=settings
        )
        if seed is not None:
            request.seed = seed
        response = self.track(await self.create_match(request, token=token or ""))
        assert response.match.state == match_pb2.MATCH_STATE_WAITING
        return response.match, response.host_token

    async def start(self, name: str, host_token: str) -> match_pb2.Match:
        return await self.start_match(name, token=host_token)

    async def get(self, name: str) -> match_pb2.Match:
        return await self.get_match(name)

    async def replay(self, name: str) -> Replay:
        """The finished match's replay, converted by the codec and verified by the engine."""
        response = await self.get_replay(name)
        replay = codec.replay_from_proto(response.replay)
        verify(replay)
        assert replay.match_id == name.removeprefix("matches/")
        return replay


Chooser = Callable[["Bot", play_pb2.DecisionRequest], int | None]


def random_choice(bot: Bot, decision: play_pb2.DecisionRequest) -> int:
    return bot.rng.randrange(len(decision.legal_actions))


def prefer(*kinds: int) -> Chooser:
    """Choose the first legal action of these kinds when there is one, else at random."""

    def choose(bot: Bot, decision: play_pb2.DecisionRequest) -> int:
        for kind in kinds:
            for action in decision.legal_actions:
                if action.kind == kind:
                    return action.id
        return random_choice(bot, decision)

    return choose


@dataclass
class Bot:
    """A remote test bot: one Play stream, any number of seats and matches.

    It records every message it receives (per match) and answers decisions with
    ``chooser`` (None: stay silent); it reads DecisionWithdrawn (``withdrawals``) but, as a
    client written before that message, does nothing about it. ``run`` returns when every
    match in ``until`` ended, or when the stream ends: its final status is kept (``status``,
    ``status_info``), and raised only when the server refused the stream before its
    Welcome (a refusal at open, for :func:`expect_error`).
    """

    address: str
    token: str
    seed: int = 0
    chooser: Chooser = random_choice
    ask_forced: bool = False
    capabilities: Sequence[
        play_pb2.Capability.ValueType
    ] = ()  # Hello.capabilities: what the client asks for
    disconnect_after: int | None = None  # close the stream after this many answers
    quit_on_decision: int | None = None  # close the stream on receiving the Nth decision
    # Send Hello only once welcomed: a stream the server refuses at its opening then sees
    # the server's status, never grpc's "Internal error from Core" for a write that lost
    # the race with the refusal (grpc/grpc#36066).
    hello_after_welcome: bool = False
    messages: list[play_pb2.PlayResponse] = field(default_factory=list)
    by_match: dict[str, list[play_pb2.PlayResponse]] = field(
        default_factory=lambda: defaultdict(list)
    )
    errors: list[status_pb2.Status] = field(default_factory=list)
    ended: dict[str, play_pb2.MatchEnded] = field(default_factory=dict)
    decisions: list[play_pb2.DecisionRequest] = field(default_factory=list)
    withdrawals: list[play_pb2.DecisionWithdrawn] = field(default_factory=list)
    answers: int = 0
    welcome: play_pb2.Welcome | None = None
    received_at: list[float] = field(default_factory=list)  # per decision (loop time)
    answered_at: dict[int, float] = field(default_factory=dict)  # turn_id -> first answer
    status: grpc.StatusCode | None = None  # how the call ended (None: it did not, or we left)
    status_info: error_details_pb2.ErrorInfo | None = None  # its ErrorInfo, if any

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self._outbox: asyncio.Queue[play_pb2.PlayRequest | None] = asyncio.Queue()
        self._welcomed = asyncio.Event()
        self.call: Any = None

    def send(self, **kwargs: Any) -> None:
        self._outbox.put_nowait(play_pb2.PlayRequest(**kwargs))

    def answer(self, decision: play_pb2.DecisionRequest, action_id: int) -> None:
        self.answers += 1
        self.answered_at.setdefault(decision.turn_id, asyncio.get_running_loop().time())
        self.send(
            action=play_pb2.ActionReply(
                match=decision.match, turn_id=decision.turn_id, action_id=action_id
            )
        )

    async def _requests(self) -> Any:
        hello = play_pb2.Hello(
            ask_forced=self.ask_forced, client="t", capabilities=list(self.capabilities)
        )
        if self.hello_after_welcome:
            await self._welcomed.wait()
        yield play_pb2.PlayRequest(hello=hello)
        while True:
            request = await self._outbox.get()
            if request is None:
                return
            yield request

    async def run(
        self,
        until: Iterable[str] = (),
        *,
        timeout: float = 60.0,
        on_message: Callable[[Bot, play_pb2.PlayResponse], None] | None = None,
    ) -> None:
        """Play until every match named in ``until`` ended (none named: until the stream
        ends or ``timeout``)."""
        waiting = set(until)
        async with aio_channel(self.address) as channel:
            stub = play_pb2_grpc.PlayServiceStub(channel)
            self.call = stub.Play(self._requests(), metadata=auth(self.token))
            try:
                await asyncio.wait_for(self._loop(waiting, on_message), timeout)
            except grpc.aio.AioRpcError as e:
                self.status, self.status_info = e.code(), error_info(e)
                if self.welcome is None:
                    raise
            finally:
                self._outbox.put_nowait(None)
                self.call.cancel()

    async def _loop(
        self,
        waiting: set[str],
        on_message: Callable[[Bot, play_pb2.PlayResponse], None] | None,
    ) -> None:
        async for message in self.call:
            self.messages.append(message)
            kind = message.WhichOneof("message")
            body = getattr(message, kind)
            if kind == "welcome":
                self.welcome = body
                self._welcomed.set()
            elif kind == "error":
                self.errors.append(body)
            elif kind != "stopping":
                self.by_match[body.match].append(message)
            if on_message is not None:
                on_message(self, message)
            if kind == "decision_withdrawn":
                self.withdrawals.append(body)
            elif kind == "decision":
                self.decisions.append(body)
                self.received_at.append(asyncio.get_running_loop().time())
                quit_at = self.quit_on_decision
                if quit_at is not None and len(self.decisions) >= quit_at:
                    return
                choice = self.chooser(self, body)
                if choice is not None:
                    self.answer(body, choice)
                if self.disconnect_after is not None and self.answers >= self.disconnect_after:
                    return
            elif kind == "match_ended":
                self.ended[body.match] = body
                if body.match in waiting:
                    waiting.discard(body.match)
                    if not waiting:
                        return
        self.status = grpc.StatusCode.OK  # the server ended the call with OK


async def watch(lobby: Lobby, name: str, timeout: float = 60.0) -> list[Any]:
    """Every WatchMatch message of a match until it ends."""
    out: list[Any] = []

    async def _run() -> None:
        async for message in lobby.watch_match(name):
            out.append(message)

    await asyncio.wait_for(_run(), timeout)
    return out


# -- what a seat may see ------------------------------------------------------------------


@dataclass
class HandSecrets:
    """Per hand, from the replay: what each seat may know during the hand."""

    own: dict[int, set[str]]  # seat -> tiles it was dealt (any deal) or drew
    played: set[str]  # tiles played face up in the hand
    results: dict[int, Any]  # hand -> HandResult proto from the replay


def secrets_of(replay: Replay) -> tuple[dict[int, HandSecrets], dict[int, Any]]:
    pb = codec.replay_to_proto(replay)
    hands: dict[int, HandSecrets] = {}
    results = {}
    for record in pb.hands:
        own: dict[int, set[str]] = defaultdict(set)
        for deal in record.deals:
            for seat, tiles in enumerate(deal.hands):
                own[seat].update(tiles.tiles)
        played: set[str] = set()
        for event in record.events:
            if event.HasField("draw"):
                own[event.draw.seat].add(event.draw.tile)
            elif event.HasField("play"):
                played.add(event.play.tile)
        hands[record.hand] = HandSecrets(dict(own), played, {})
        if record.HasField("result"):
            results[record.hand] = record.result
    return hands, results


def _event_tiles(events: Iterable[Any], seat: int | None, where: str) -> Iterable[str]:
    for e in events:
        if e.HasField("play"):
            yield e.play.tile
        elif e.HasField("draw"):
            if e.draw.seat != seat:
                assert not e.draw.tile, f"{where}: seat {seat} sees seat {e.draw.seat}'s draw"
            elif seat is not None:
                assert e.draw.tile, f"{where}: seat {seat} does not see its own draw"
            if e.draw.tile:
                yield e.draw.tile
        elif e.HasField("redeal_choice") and not e.redeal_choice.redeal:
            assert e.redeal_choice.seat == seat, f"{where}: a KEEP of another seat is shown"


def check_view(
    view: view_pb2.View, seat: int | None, hands: dict[int, HandSecrets], results: dict[int, Any]
) -> None:
    where = f"view of seat {seat}, hand {view.hand}"
    secrets = hands[view.hand]
    allowed = secrets.played | (secrets.own.get(seat, set()) if seat is not None else set())
    if seat is None:
        assert not view.HasField("seat") and not view.tiles, f"{where}: a spectator has tiles"
    else:
        assert view.seat == seat, where
        assert set(view.tiles) <= secrets.own[seat], f"{where}: tiles not its own: {view.tiles}"
    seen = set(view.tiles) | {p.tile for p in view.chain}
    seen |= set(_event_tiles(view.events, seat, where))
    assert seen <= allowed, f"{where}: hidden tiles {sorted(seen - allowed)}"
    for r in view.results:
        assert r == results[r.hand], f"{where}: result of hand {r.hand} differs from the replay"
    if view.phase == view_pb2.PHASE_REDEAL:
        assert view.to_act == seat, f"{where}: sees who is offered a redeal"


def check_secrecy(messages: Iterable[Any], seats: Iterable[int] | None, replay: Replay) -> int:
    """Check every message a client received against the replay; returns how many.

    ``seats`` None: a spectator's WatchMatch messages."""
    hands, results = secrets_of(replay)
    mine = set(seats) if seats is not None else None
    count = 0
    for message in messages:
        count += 1
        kind = message.WhichOneof("message")
        body = getattr(message, kind)
        seat: int | None = None
        if mine is not None and kind in ("match_started", "decision"):
            seat = body.seat
        elif mine is not None and kind in ("events", "hand_ended", "match_ended"):
            assert body.HasField("seat"), f"{kind} for a seat must name it"
            seat = body.seat
        if mine is not None and kind in ("match_started", "decision", "events", "hand_ended"):
            assert seat in mine, f"{kind} for seat {seat}, which this client does not hold"
        if mine is not None and kind == "decision_withdrawn":
            assert body.seat in mine, f"a withdrawal for seat {body.seat}, not this client's"
        if kind == "view":
            check_view(body, None, hands, results)
        elif kind in ("match_started", "decision"):
            check_view(body.view, seat, hands, results)
            if kind == "decision":
                assert seat is not None, "a decision for no seat"
                allowed = hands[body.view.hand].own[seat]
                for action in body.legal_actions:
                    assert not action.tile or action.tile in allowed
        elif kind == "events":
            where = f"event batch of seat {seat}, hand {body.hand}"
            secrets = hands[body.hand]
            allowed = secrets.played | (secrets.own.get(seat, set()) if seat is not None else set())
            seen = set(_event_tiles(body.events, seat, where))
            assert seen <= allowed, f"{where}: hidden tiles {sorted(seen - allowed)}"
        elif kind == "hand_ended":
            assert body.result == results[body.result.hand], "hand result differs from replay"
        elif kind == "match_ended":
            assert body.outcome.termination, "an outcome needs a termination"
    return count


def check_withdrawals(messages: Iterable[play_pb2.PlayResponse]) -> list[Any]:
    """The rule of DecisionWithdrawn, on the messages one Play stream received in order: a
    match has one open request at a time, so a withdrawal names the last request of its match
    (same turn_id and seat), once, before any later request or the MatchEnded of that match;
    a withdrawn request is never sent again. Returns the withdrawals."""
    last: dict[str, play_pb2.DecisionRequest] = {}  # match -> its latest request, not over
    withdrawn: set[tuple[str, int]] = set()
    out = []
    for message in messages:
        kind = message.WhichOneof("message")
        if kind == "decision":
            d = message.decision
            assert (d.match, d.turn_id) not in withdrawn, f"turn {d.turn_id} sent after withdrawn"
            last[d.match] = d
        elif kind == "decision_withdrawn":
            w = message.decision_withdrawn
            open_request = last.pop(w.match, None)
            assert open_request is not None, f"{w.match}: turn {w.turn_id} withdrawn, none open"
            assert (w.turn_id, w.seat) == (open_request.turn_id, open_request.seat), (
                f"{w.match}: withdrew turn {w.turn_id} (seat {w.seat}); the last request was "
                f"turn {open_request.turn_id} (seat {open_request.seat})"
            )
            assert w.reason != play_pb2.WITHDRAWAL_REASON_UNSPECIFIED
            withdrawn.add((w.match, w.turn_id))
            out.append(w)
        elif kind == "match_ended":
            last.pop(message.match_ended.match, None)
    return out


def replay_json(replay: Replay) -> str:
    return json_format.MessageToJson(codec.replay_to_proto(replay))


def oneof_body(message: Message, oneof: str = "message") -> tuple[str, Any]:
    """The name of the field set in ``message``'s oneof, and that field's message."""
    kind = message.WhichOneof(oneof)
    assert kind is not None, f"a {type(message).__name__} with no {oneof} set"
    return kind, getattr(message, kind)


async def until(
    predicate: Callable[[], object], timeout: float = UNTIL_BOUND_S, what: str = ""
) -> None:
    """Wait until ``predicate()`` holds: polled, bounded by ``timeout`` seconds (the one
    polling helper of the tests; the suite waits for events, this is how it waits for the
    ones it can only observe)."""
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {timeout}s waiting for {what or predicate}")
        await asyncio.sleep(0.01)
