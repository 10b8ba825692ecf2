"""Every refusal of the server, pinned over real gRPC: for each RPC and each way a request
can be wrong, the status code, the ErrorInfo (reason, domain, metadata) and the message.

The table was taken from the server before authentication and the error-to-status mapping
moved out of the handlers (``errors.rpc``, the ``auth.Authenticate`` interceptor); it keeps
them answering the same. Requests with two faults at once pin the order of the checks: the
token comes first of all (the interceptor runs before the handler, so a caller without a
valid token learns nothing about names or fields), then shutting down, then the request.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2

from capicua.server import errors
from capicua.server.app import App
from capicua.v1 import match_pb2, play_pb2, play_pb2_grpc, rules_pb2
from tests.compliance.client import CALL_TIMEOUT, OPEN, OPTIONS, Lobby, auth, bot_seat, cpu_seat
from tests.serverkit import running

HOUR_MS = 3_600_000
ADMIN = "an-admin-token"

#: (code, reason, ErrorInfo metadata, message); names of the world's matches and bot are
#: written {waiting}, {running}, {full}, {over}, {missing} and {bot}, in the message and the
#: metadata alike.
Refusal = tuple[str, str, dict[str, str], str]


@dataclass
class World:
    """An in-process server with a bot and matches in every state."""

    app: App
    lobby: Lobby
    bot_id: str
    bot: str  # its token
    waiting: str  # 4 open seats, one joined by a guest
    host: str  # its host token
    seat: str  # the guest's seat token
    running: str  # started, its one bot seat silent for an hour
    running_host: str
    full: str  # iq-1v1, both seats joined
    over: str  # cancelled while waiting: finished, never started
    other_host: str  # the host token of another match

    def names(self) -> dict[str, str]:
        return {
            "waiting": self.waiting,
            "running": self.running,
            "full": self.full,
            "over": self.over,
            "missing": "matches/nosuchmatch",
            "bot": self.bot_id,
        }


@pytest.fixture
async def world() -> AsyncIterator[World]:
    async with built_world() as built:
        yield built


@asynccontextmanager
async def built_world(**config: object) -> AsyncIterator[World]:
    """The world on an in-process server with an admin token (and ``config``:
    tests/test_error_reasons.py gives it fault hooks)."""
    async with running(None, admin_token=ADMIN, **config) as (app, lobby):
        bot_id, bot = await lobby.register("pinned", admin=ADMIN)
        waiting, host = await lobby.create("block", [OPEN] * 4, timer_ms=HOUR_MS)
        joined = await lobby.matches.JoinMatch(
            match_pb2.JoinMatchRequest(name=waiting.name, seat=1), timeout=CALL_TIMEOUT
        )
        started, running_host = await lobby.create(
            "block", [bot_seat(bot_id)] + [cpu_seat()] * 3, timer_ms=HOUR_MS, seed=1
        )
        await lobby.start(started.name, running_host)
        full, _ = await lobby.create("iq-1v1", [OPEN] * 2)
        for seat in (0, 1):
            await lobby.matches.JoinMatch(
                match_pb2.JoinMatchRequest(name=full.name, seat=seat), timeout=CALL_TIMEOUT
            )
        over, over_host = await lobby.create("block", [OPEN] * 4)
        await lobby.matches.CancelMatch(
            match_pb2.CancelMatchRequest(name=over.name), metadata=auth(over_host)
        )
        _, other_host = await lobby.create("block", [OPEN] * 4)
        yield World(
            app,
            lobby,
            bot_id,
            bot,
            waiting.name,
            host,
            joined.seat_token,
            started.name,
            running_host,
            full.name,
            over.name,
            other_host,
        )


def status_of(error: grpc.aio.AioRpcError | status_pb2.Status) -> status_pb2.Status:
    if isinstance(error, status_pb2.Status):
        return error
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            return status_pb2.Status.FromString(value)
    raise AssertionError(f"no rich status in {error.code()}: {error.details()}")


def refusal(world: World, error: grpc.aio.AioRpcError | status_pb2.Status) -> Refusal:
    """What a client sees of a refusal, the world's names written back as placeholders."""
    status = status_of(error)
    [detail] = status.details
    info = error_details_pb2.ErrorInfo()
    assert detail.Unpack(info) and info.domain == "capicua.dev"
    if isinstance(error, grpc.aio.AioRpcError):
        assert error.code().value[0] == status.code and error.details() == status.message
    metadata = {k: placeholders(world, v) for k, v in info.metadata.items()}
    return (
        grpc.StatusCode(_code(status.code)).name,
        info.reason,
        metadata,
        placeholders(world, status.message),
    )


def placeholders(world: World, text: str) -> str:
    """``text`` with the world's names written as placeholders (``{waiting}``...)."""
    for key, name in world.names().items():
        text = text.replace(name, "{" + key + "}")
    return text


def _code(number: int) -> Any:
    return next(c.value for c in grpc.StatusCode if c.value[0] == number)


async def refused(world: World, call: Awaitable[Any]) -> Refusal:
    try:
        await asyncio.wait_for(call, CALL_TIMEOUT)
    except grpc.aio.AioRpcError as e:
        return refusal(world, e)
    raise AssertionError("the call succeeded")


async def play_stream(world: World, token: str | None) -> None:
    """A Play stream that must end at once with an error."""
    async with grpc.aio.insecure_channel(world.lobby.address, options=OPTIONS) as channel:
        call = play_pb2_grpc.PlayServiceStub(channel).Play(iter(()), metadata=auth(token))
        async for _ in call:
            raise AssertionError("a refused stream sent a message")


async def in_stream(world: World, token: str, *requests: play_pb2.PlayRequest) -> list[Refusal]:
    """The in-stream errors a Play stream gets for ``requests`` (one each); it stays open."""
    async with grpc.aio.insecure_channel(world.lobby.address, options=OPTIONS) as channel:
        outbox: asyncio.Queue[play_pb2.PlayRequest | None] = asyncio.Queue()
        for request in requests:
            outbox.put_nowait(request)

        async def source() -> AsyncIterator[play_pb2.PlayRequest]:
            while (item := await outbox.get()) is not None:
                yield item

        call = play_pb2_grpc.PlayServiceStub(channel).Play(source(), metadata=auth(token))
        out: list[Refusal] = []
        async for message in call:
            if message.WhichOneof("message") == "error":
                out.append(refusal(world, message.error))
                if len(out) == len(requests):
                    break
        call.cancel()
        return out


#: (label, the call, the refusal; or for a message the rules engine writes, only the field)
Case = tuple[str, Callable[[World], Awaitable[Any]], Refusal | str]

WAIT = "{waiting}"


def _match(world: World) -> Any:
    return world.lobby.matches


def _create(**kwargs: Any) -> Callable[[World], Awaitable[Any]]:
    metadata = kwargs.pop("metadata", ())
    return lambda w: _match(w).CreateMatch(
        match_pb2.CreateMatchRequest(**kwargs), metadata=metadata(w) if metadata else ()
    )


def _settings(**kwargs: Any) -> Callable[[World], Awaitable[Any]]:
    return _create(preset="block", settings=match_pb2.MatchSettings(**kwargs))


def _seats(*seats: match_pb2.SeatSpec) -> Callable[[World], Awaitable[Any]]:
    return _create(preset="block", seats=list(seats))


def _invalid(field: str, message: str, **metadata: str) -> Refusal:
    return (
        "INVALID_ARGUMENT",
        "INVALID_ARGUMENT",
        {"field": field, **metadata},
        f"{field}: {message}",
    )


BEARER: Refusal = ("UNAUTHENTICATED", "BAD_TOKEN", {}, "authorization: expected 'Bearer <token>'")
UNKNOWN_TOKEN: Refusal = ("UNAUTHENTICATED", "BAD_TOKEN", {}, "authorization: unknown token")
MISSING: Refusal = (
    "UNAUTHENTICATED",
    "MISSING_TOKEN",
    {},
    "authorization: missing; send the metadata 'authorization: Bearer <token>'",
)
NOT_HOST: Refusal = (
    "PERMISSION_DENIED",
    "NOT_HOST",
    {"match": "{waiting}"},
    "authorization: not the host token of {waiting}",
)
BAD_NAME = _invalid("name", "expected 'matches/{match_id}', got 'x/y'")
NOT_OPEN: Refusal = (
    "NOT_FOUND",
    "MATCH_NOT_FOUND",
    {"match": "{missing}"},
    "name: no match {missing} is open",
)
NO_MATCH: Refusal = (
    "NOT_FOUND",
    "MATCH_NOT_FOUND",
    {"match": "{missing}"},
    "name: no match {missing}",
)
JOIN_TOKEN: Refusal = (
    "PERMISSION_DENIED",
    "BAD_TOKEN",
    {},
    "authorization: JoinMatch takes a bot token, or no token for a seat token",
)
CREATE_TOKEN: Refusal = (
    "PERMISSION_DENIED",
    "BAD_TOKEN",
    {},
    "authorization: CreateMatch takes a bot token, the admin token, or no token",
)
STARTED: Refusal = (
    "FAILED_PRECONDITION",
    "MATCH_STARTED",
    {"match": "{running}"},
    "name: {running} has already started",
)
PLAY_TOKEN: Refusal = (
    "PERMISSION_DENIED",
    "BAD_TOKEN",
    {},
    "authorization: Play needs a bot token or a seat token",
)


def _bearer(text: str) -> Callable[[World], tuple[tuple[str, str], ...]]:
    return lambda w: (("authorization", text),)


def _token(attr: str) -> Callable[[World], tuple[tuple[str, str], ...]]:
    return lambda w: auth(getattr(w, attr))


def _name_call(
    method: str, request: type, name: str, token: str | None = None, **kwargs: Any
) -> Callable[[World], Awaitable[Any]]:
    def call(w: World) -> Awaitable[Any]:
        resolved = w.names().get(name.strip("{}"), name) if name.startswith("{") else name
        metadata: Any = ()
        if token == "garbage":
            metadata = (("authorization", "Bearer nope"),)
        elif token == "basic":
            metadata = (("authorization", "Basic abc"),)
        elif token is not None:
            metadata = auth(getattr(w, token))
        rpc: Callable[..., Awaitable[Any]] = getattr(_match(w), method)
        return rpc(request(name=resolved, **kwargs), metadata=metadata)

    return call


def _watch(name: str) -> Callable[[World], Awaitable[Any]]:
    async def call(w: World) -> None:
        async for _ in _match(w).WatchMatch(match_pb2.WatchMatchRequest(name=name)):
            raise AssertionError("a refused watch sent a message")

    return call


def _register(
    bot_id: str, description: str = "", token: Any = None
) -> Callable[[World], Awaitable[Any]]:
    def call(w: World) -> Awaitable[Any]:
        request = play_pb2.RegisterBotRequest(
            bot_id=w.bot_id if bot_id == "{bot}" else bot_id, description=description
        )
        registered: Awaitable[Any] = w.lobby.play.RegisterBot(
            request, metadata=token(w) if token else ()
        )
        return registered

    return call


_start = match_pb2.StartMatchRequest
_cancel = match_pb2.CancelMatchRequest
_join = match_pb2.JoinMatchRequest
_replay = match_pb2.GetReplayRequest
_get = match_pb2.GetMatchRequest

CASES: list[Case] = [
    # GetRuleset
    (
        "GetRuleset no preset",
        lambda w: _match(w).GetRuleset(match_pb2.GetRulesetRequest()),
        _invalid("preset", "required"),
    ),
    (
        "GetRuleset unknown preset",
        lambda w: _match(w).GetRuleset(match_pb2.GetRulesetRequest(preset="nope")),
        "preset",
    ),
    (
        "GetRuleset bad override",
        lambda w: _match(w).GetRuleset(
            match_pb2.GetRulesetRequest(preset="cuban", overrides=["target=1", "hand_sise=3"])
        ),
        _invalid("overrides[1]", "hand_sise: unknown knob"),
    ),
    # CreateMatch
    (
        "CreateMatch nothing",
        _create(),
        _invalid("preset", "required: a preset name, or a full ruleset"),
    ),
    (
        "CreateMatch unknown bearer",
        _create(preset="block", metadata=_bearer("Bearer nope")),
        UNKNOWN_TOKEN,
    ),
    ("CreateMatch host token", _create(preset="block", metadata=_token("host")), CREATE_TOKEN),
    ("CreateMatch seat token", _create(preset="block", metadata=_token("seat")), CREATE_TOKEN),
    ("CreateMatch not bearer", _create(preset="block", metadata=_bearer("Basic abc")), BEARER),
    ("CreateMatch empty bearer", _create(preset="block", metadata=_bearer("Bearer ")), BEARER),
    (
        "CreateMatch bad token before bad preset",
        _create(preset="nope", metadata=_bearer("Bearer nope")),
        UNKNOWN_TOKEN,
    ),
    (
        "CreateMatch custom ruleset",
        _create(ruleset=rules_pb2.Ruleset(name="half", seats=2)),
        "ruleset",
    ),
    (
        "CreateMatch three seats",
        _seats(OPEN, OPEN, OPEN),
        _invalid("seats", "block has 4 seats, got 3"),
    ),
    (
        "CreateMatch seat kind",
        _seats(OPEN, match_pb2.SeatSpec(), OPEN, OPEN),
        _invalid("seats[1].kind", "required: one of SEAT_KIND_OPEN, SEAT_KIND_BOT, SEAT_KIND_CPU"),
    ),
    (
        "CreateMatch unknown cpu level",
        _seats(
            OPEN,
            match_pb2.SeatSpec(
                kind=match_pb2.SEAT_KIND_CPU, cpu_level=match_pb2.CpuLevel.ValueType(9)
            ),
            OPEN,
            OPEN,
        ),
        _invalid("seats[1].cpu_level", "unknown level 9"),
    ),
    (
        "CreateMatch bot without id",
        _seats(OPEN, OPEN, match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_BOT), OPEN),
        _invalid("seats[2].bot_id", "required for SEAT_KIND_BOT"),
    ),
    (
        "CreateMatch unknown bot",
        _seats(OPEN, OPEN, bot_seat("ghost"), OPEN),
        _invalid("seats[2].bot_id", "no bot 'ghost' is registered"),
    ),
    (
        "CreateMatch bot id on a cpu",
        _seats(match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_CPU, bot_id="x"), OPEN, OPEN, OPEN),
        _invalid("seats[0].bot_id", "only for SEAT_KIND_BOT"),
    ),
    (
        "CreateMatch timer",
        _settings(turn_timer_ms=1),
        _invalid("settings.turn_timer_ms", "1 is not in 50..3600000"),
    ),
    (
        "CreateMatch policy",
        _settings(on_timeout=7),
        _invalid(
            "settings.on_timeout",
            "7 is not one of TIMEOUT_POLICY_AUTO_PLAY, TIMEOUT_POLICY_FORFEIT",
        ),
    ),
    (
        "CreateMatch visibility",
        _settings(visibility=7),
        _invalid("settings.visibility", "7 is not one of VISIBILITY_PUBLIC, VISIBILITY_PRIVATE"),
    ),
    ("CreateMatch tags", _settings(tags=["t"] * 17), _invalid("settings.tags", "at most 16 tags")),
    (
        "CreateMatch tag",
        _settings(tags=["ok", "a b"]),
        _invalid("settings.tags[1]", "expected 1-64 characters of [A-Za-z0-9_.:-]"),
    ),
    (
        "CreateMatch override",
        _create(preset="block", overrides=["seats=9"]),
        "overrides[0]",
    ),
    # ListMatches
    (
        "ListMatches page size",
        lambda w: _match(w).ListMatches(match_pb2.ListMatchesRequest(page_size=-1)),
        _invalid("page_size", "must not be negative"),
    ),
    (
        "ListMatches state",
        lambda w: _match(w).ListMatches(
            match_pb2.ListMatchesRequest(state=match_pb2.MatchState.ValueType(9))
        ),
        _invalid("state", "unknown state 9"),
    ),
    (
        "ListMatches token",
        lambda w: _match(w).ListMatches(match_pb2.ListMatchesRequest(page_token="!!")),
        _invalid("page_token", "not a token from a previous response"),
    ),
    # GetMatch
    ("GetMatch bad name", _name_call("GetMatch", _get, "x/y"), BAD_NAME),
    ("GetMatch unknown", _name_call("GetMatch", _get, "{missing}"), NO_MATCH),
    # JoinMatch
    ("JoinMatch bad name", _name_call("JoinMatch", _join, "x/y"), BAD_NAME),
    ("JoinMatch unknown", _name_call("JoinMatch", _join, "{missing}"), NOT_OPEN),
    ("JoinMatch unknown token", _name_call("JoinMatch", _join, WAIT, "garbage"), UNKNOWN_TOKEN),
    ("JoinMatch host token", _name_call("JoinMatch", _join, WAIT, "host"), JOIN_TOKEN),
    ("JoinMatch seat token", _name_call("JoinMatch", _join, WAIT, "seat"), JOIN_TOKEN),
    (
        "JoinMatch bad token before bad name",
        _name_call("JoinMatch", _join, "x/y", "garbage"),
        UNKNOWN_TOKEN,
    ),
    (
        "JoinMatch host token before unknown match",
        _name_call("JoinMatch", _join, "{missing}", "host"),
        JOIN_TOKEN,
    ),
    (
        "JoinMatch display name",
        _name_call("JoinMatch", _join, WAIT, display_name="x" * 65),
        _invalid("display_name", "at most 64 characters", match=WAIT),
    ),
    (
        "JoinMatch seat out of range",
        _name_call("JoinMatch", _join, WAIT, seat=4),
        _invalid("seat", "{waiting} has seats 0..3", match=WAIT),
    ),
    (
        "JoinMatch seat taken",
        _name_call("JoinMatch", _join, WAIT, seat=1),
        (
            "FAILED_PRECONDITION",
            "SEAT_TAKEN",
            {"match": WAIT, "seat": "1"},
            "seat: seat 1 of {waiting} is not open",
        ),
    ),
    (
        "JoinMatch full",
        _name_call("JoinMatch", _join, "{full}"),
        (
            "FAILED_PRECONDITION",
            "NO_OPEN_SEAT",
            {"match": "{full}"},
            "name: {full} has no open seat",
        ),
    ),
    (
        "JoinMatch running",
        _name_call("JoinMatch", _join, "{running}", "bot"),
        STARTED,
    ),
    # StartMatch
    ("StartMatch no token", _name_call("StartMatch", _start, WAIT), MISSING),
    ("StartMatch unknown token", _name_call("StartMatch", _start, WAIT, "garbage"), UNKNOWN_TOKEN),
    ("StartMatch not bearer", _name_call("StartMatch", _start, WAIT, "basic"), BEARER),
    ("StartMatch bot token", _name_call("StartMatch", _start, WAIT, "bot"), NOT_HOST),
    ("StartMatch seat token", _name_call("StartMatch", _start, WAIT, "seat"), NOT_HOST),
    ("StartMatch other host", _name_call("StartMatch", _start, WAIT, "other_host"), NOT_HOST),
    ("StartMatch no token before bad name", _name_call("StartMatch", _start, "x/y"), MISSING),
    ("StartMatch no token before unknown", _name_call("StartMatch", _start, "{missing}"), MISSING),
    (
        "StartMatch bad name with a token",
        _name_call("StartMatch", _start, "x/y", "other_host"),
        BAD_NAME,
    ),
    (
        "StartMatch unknown with a token",
        _name_call("StartMatch", _start, "{missing}", "other_host"),
        NOT_OPEN,
    ),
    (
        "StartMatch running",
        _name_call("StartMatch", _start, "{running}", "running_host"),
        STARTED,
    ),
    (
        "StartMatch over",
        _name_call("StartMatch", _start, "{over}", "bot"),
        (
            "PERMISSION_DENIED",
            "NOT_HOST",
            {"match": "{over}"},
            "authorization: not the host token of {over}",
        ),
    ),
    # CancelMatch
    ("CancelMatch no token", _name_call("CancelMatch", _cancel, WAIT), MISSING),
    ("CancelMatch bot token", _name_call("CancelMatch", _cancel, WAIT, "bot"), NOT_HOST),
    ("CancelMatch no token before bad name", _name_call("CancelMatch", _cancel, "x/y"), MISSING),
    (
        "CancelMatch no token before unknown",
        _name_call("CancelMatch", _cancel, "{missing}"),
        MISSING,
    ),
    (
        "CancelMatch bad name with a token",
        _name_call("CancelMatch", _cancel, "x/y", "other_host"),
        BAD_NAME,
    ),
    (
        "CancelMatch unknown with a token",
        _name_call("CancelMatch", _cancel, "{missing}", "other_host"),
        NOT_OPEN,
    ),
    (
        "CancelMatch not host before long reason",
        _name_call("CancelMatch", _cancel, WAIT, "other_host", reason="r" * 201),
        NOT_HOST,
    ),
    (
        "CancelMatch long reason",
        _name_call("CancelMatch", _cancel, WAIT, "host", reason="r" * 201),
        _invalid("reason", "at most 200 characters", match=WAIT),
    ),
    # GetReplay
    ("GetReplay bad name", _name_call("GetReplay", _replay, "x/y"), BAD_NAME),
    ("GetReplay unknown", _name_call("GetReplay", _replay, "{missing}"), NO_MATCH),
    (
        "GetReplay waiting",
        _name_call("GetReplay", _replay, WAIT),
        (
            "FAILED_PRECONDITION",
            "MATCH_NOT_FINISHED",
            {"match": WAIT},
            "name: {waiting} is not over yet",
        ),
    ),
    (
        "GetReplay running",
        _name_call("GetReplay", _replay, "{running}"),
        (
            "FAILED_PRECONDITION",
            "MATCH_NOT_FINISHED",
            {"match": "{running}"},
            "name: {running} is not over yet",
        ),
    ),
    (
        "GetReplay never started",
        _name_call("GetReplay", _replay, "{over}"),
        ("NOT_FOUND", "REPLAY_NOT_FOUND", {"match": "{over}"}, "name: {over} never started"),
    ),
    # WatchMatch
    ("WatchMatch bad name", lambda w: _watch("x/y")(w), BAD_NAME),
    ("WatchMatch unknown", lambda w: _watch("matches/nosuchmatch")(w), NO_MATCH),
    # RegisterBot (this server has an admin token)
    ("RegisterBot no token", _register("b1"), MISSING),
    ("RegisterBot unknown token", _register("b1", token=_bearer("Bearer nope")), UNKNOWN_TOKEN),
    (
        "RegisterBot bot token",
        _register("b1", token=_token("bot")),
        (
            "PERMISSION_DENIED",
            "NOT_ADMIN",
            {},
            "authorization: this server registers bots for its admin",
        ),
    ),
    (
        "RegisterBot no token before bad id",
        _register("not ok"),
        MISSING,
    ),
    (
        "RegisterBot bad id",
        _register("not ok", token=lambda w: auth(ADMIN)),
        _invalid("bot_id", "expected 1-64 characters of [A-Za-z0-9_.-]"),
    ),
    (
        "RegisterBot description",
        _register("b1", "d" * 501, token=lambda w: auth(ADMIN)),
        _invalid("description", "at most 500 characters"),
    ),
    (
        "RegisterBot taken",
        _register("{bot}", token=lambda w: auth(ADMIN)),
        (
            "ALREADY_EXISTS",
            "BOT_EXISTS",
            {"bot": "bots/{bot}"},
            "bot_id: bots/{bot} is already registered",
        ),
    ),
    # Play
    ("Play no token", lambda w: play_stream(w, None), MISSING),
    ("Play unknown token", lambda w: play_stream(w, "nope"), UNKNOWN_TOKEN),
    ("Play host token", lambda w: play_stream(w, w.host), PLAY_TOKEN),
    ("Play admin token", lambda w: play_stream(w, ADMIN), PLAY_TOKEN),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
async def test_each_refusal_answers_as_before(world: World, case: Case) -> None:
    _, call, expected = case
    got = await refused(world, call(world))
    if isinstance(expected, str):  # the rules engine's message: its field and reason
        assert got[:3] == ("INVALID_ARGUMENT", "INVALID_ARGUMENT", {"field": expected})
        assert got[3].startswith(f"{expected}: ")
        return
    assert got == expected


async def test_refusals_while_shutting_down_come_after_the_token(world: World) -> None:
    """A bad token is refused first, then SHUTTING_DOWN comes before the request's fields
    (CreateMatch, JoinMatch, StartMatch); CancelMatch and the reads still answer as usual."""
    world.app.lobby.closing = True  # what App.shutdown sets first
    down: Refusal = ("UNAVAILABLE", "SHUTTING_DOWN", {}, "the server is shutting down")
    nope = (("authorization", "Bearer nope"),)
    host = auth(world.other_host)
    m = _match(world)
    assert (
        await refused(world, m.CreateMatch(match_pb2.CreateMatchRequest(), metadata=nope))
        == UNKNOWN_TOKEN
    )
    assert await refused(world, m.CreateMatch(match_pb2.CreateMatchRequest())) == down
    join = m.JoinMatch(match_pb2.JoinMatchRequest(name="x/y"))
    assert await refused(world, join) == down
    start = m.StartMatch(match_pb2.StartMatchRequest(name="x/y"), metadata=host)
    assert await refused(world, start) == down
    cancel = m.CancelMatch(match_pb2.CancelMatchRequest(name="x/y"), metadata=host)
    assert await refused(world, cancel) == BAD_NAME


async def test_in_stream_refusals_keep_the_stream_open(world: World) -> None:
    def action(match: str, turn_id: int = 1) -> play_pb2.PlayRequest:
        return play_pb2.PlayRequest(
            action=play_pb2.ActionReply(match=match, turn_id=turn_id, action_id=0)
        )

    got = await in_stream(
        world,
        world.seat,
        play_pb2.PlayRequest(),
        action("x/y"),
        action(world.running),
    )
    assert got == [
        _invalid("message", "empty PlayRequest: set hello or action"),
        _invalid("match", "expected 'matches/{match_id}', got 'x/y'"),
        (
            "PERMISSION_DENIED",
            "NOT_YOUR_SEAT",
            {"match": "{running}", "turn_id": "1"},
            "match: this seat token plays {waiting}/seats/1, not {running}",
        ),
    ]
    missing = f"matches/m{uuid.uuid4().hex[:8]}"
    got = await in_stream(world, world.bot, action(missing), action(world.running, 999_999))
    assert got[0][:3] == ("NOT_FOUND", "UNKNOWN_MATCH", {"match": missing, "turn_id": "1"})
    assert got[0][3] == f"match: no match {missing}"
    assert got[1] == (
        "INVALID_ARGUMENT",
        "UNKNOWN_TURN",
        {"field": "turn_id", "match": "{running}", "turn_id": "999999"},
        "turn_id: {running} sent this token no turn 999999",
    )


async def test_calls_that_need_no_token_ignore_a_bad_one(world: World) -> None:
    """Reads go by no token, even a malformed one; CreateMatch takes a bot token or the
    admin token (a host or seat token names no creator: tested in CASES); an open
    server's RegisterBot ignores the token."""
    m, basic = _match(world), (("authorization", "Basic abc"),)
    await m.ListRulesets(match_pb2.ListRulesetsRequest(), metadata=basic)
    await m.GetRuleset(match_pb2.GetRulesetRequest(preset="block"), metadata=basic)
    await m.ListMatches(match_pb2.ListMatchesRequest(), metadata=basic)
    await m.GetMatch(match_pb2.GetMatchRequest(name=world.waiting), metadata=basic)
    for token in (world.bot, ADMIN):
        created = await m.CreateMatch(
            match_pb2.CreateMatchRequest(preset="block"), metadata=auth(token)
        )
        world.lobby.track(created)
    async with running(None) as (_, open_lobby):
        request = play_pb2.RegisterBotRequest(bot_id="anyone")
        await open_lobby.play.RegisterBot(request, metadata=basic, timeout=CALL_TIMEOUT)


def test_every_reason_is_in_the_protocol_docs() -> None:
    """Clients branch on reasons: each one the server sends is in docs/protocol.md's table."""
    constants = vars(errors).items()
    reasons = {v for k, v in constants if k.isupper() and isinstance(v, str) and k != "DOMAIN"}
    text = Path(__file__).parent.parent.joinpath("docs", "protocol.md").read_text()
    table = text[text.index("## Errors") : text.index("### When the server fails")]
    documented = set(re.findall(r"\| `[A-Z_]+` \| ([^|]+) \|", table))
    named = {r for cell in documented for r in re.findall(r"`([A-Z_]+)`", cell)}
    assert reasons - named == set()
