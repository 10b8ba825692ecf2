"""CreateMatch's request_id (AIP-155), over real gRPC on loopback: a retry of the same
request gets the first response (the same match, the same host token) and creates nothing;
the same id for another request, another caller or in another form is refused."""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2

from capicua.server.app import App
from capicua.server.request_ids import RequestIds
from capicua.v1 import match_pb2
from tests.compliance.client import CALL_TIMEOUT, OPEN, Lobby, auth, bot_seat, cpu_seat
from tests.serverkit import running
from tests.test_server_cli import cli
from tests.test_server_refusals import status_of

HOUR_MS = 3_600_000
LOG_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ")


@dataclass
class Server:
    app: App
    lobby: Lobby

    def held(self) -> int:
        """How many matches the server holds."""
        return len(self.app.registry.matches)

    async def create(
        self, request: match_pb2.CreateMatchRequest, token: str | None = None
    ) -> match_pb2.CreateMatchResponse:
        response = await self.lobby.matches.CreateMatch(
            request, metadata=auth(token), timeout=CALL_TIMEOUT
        )
        return self.lobby.track(response)

    async def refused(
        self, request: match_pb2.CreateMatchRequest, token: str | None = None
    ) -> tuple[grpc.StatusCode, str, dict[str, str], str]:
        """(code, reason, metadata, message) of a refused CreateMatch."""
        try:
            await self.create(request, token)
        except grpc.aio.AioRpcError as e:
            [detail] = status_of(e).details
            info = error_details_pb2.ErrorInfo()
            assert detail.Unpack(info) and info.domain == "capicua.dev"
            return e.code(), info.reason, dict(info.metadata), e.details() or ""
        raise AssertionError("CreateMatch succeeded")


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    async with running(None, max_matches=3, max_matches_per_bot=1) as (app, lobby):
        yield Server(app, lobby)
        await lobby.cancel_created()


def request(request_id: str = "", **fields: Any) -> match_pb2.CreateMatchRequest:
    """A four-seat block match, waiting for an hour."""
    defaults: dict[str, Any] = {
        "preset": "block",
        "seats": [OPEN, cpu_seat(), OPEN, OPEN],
        "settings": match_pb2.MatchSettings(turn_timer_ms=HOUR_MS, tags=["retry"]),
        "seed": 7,
    }
    return match_pb2.CreateMatchRequest(request_id=request_id, **{**defaults, **fields})


async def test_a_retry_gets_the_first_response_and_creates_nothing(server: Server) -> None:
    rid = str(uuid.uuid4())
    first = await server.create(request(rid))
    assert server.held() == 1
    again = await server.create(request(rid))
    assert again == first  # the same match (as first sent) and the same host token
    assert again.match.name == first.match.name and again.host_token == first.host_token
    assert server.held() == 1
    # the host token of the retry is the match's
    await server.lobby.start(again.match.name, again.host_token)
    # the response is the one first sent, even once the match has moved on
    later = await server.create(request(rid))
    assert later == first and later.match.state == match_pb2.MATCH_STATE_WAITING
    assert server.held() == 1


async def test_copies_sent_at_once_create_one_match(server: Server) -> None:
    rid = str(uuid.uuid4())
    answers = await asyncio.gather(*(server.create(request(rid)) for _ in range(5)))
    assert all(a == answers[0] for a in answers)
    assert server.held() == 1


async def test_the_id_is_one_uuid_in_either_case(server: Server) -> None:
    rid = str(uuid.uuid4())
    first = await server.create(request(rid.upper()))
    assert await server.create(request(rid)) == first
    assert server.held() == 1


async def test_a_retry_does_not_count_against_the_limits(server: Server) -> None:
    bot_id, _ = await server.lobby.register("limit")
    seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
    rid = str(uuid.uuid4())
    first = await server.create(request(rid, seats=seats))
    # the bot is in its one allowed match: a retry is answered, a new match is refused
    assert await server.create(request(rid, seats=seats)) == first
    code, reason, _, _ = await server.refused(request(str(uuid.uuid4()), seats=seats))
    assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_MATCHES")
    # the server holds at most three unfinished matches
    rids = [str(uuid.uuid4()) for _ in range(2)]
    created = [await server.create(request(r)) for r in rids]
    assert server.held() == 3
    code, reason, _, _ = await server.refused(request(str(uuid.uuid4())))
    assert (code, reason) == (grpc.StatusCode.RESOURCE_EXHAUSTED, "TOO_MANY_MATCHES")
    assert [await server.create(request(r)) for r in rids] == created
    assert await server.create(request(rid, seats=seats)) == first
    assert server.held() == 3


@pytest.mark.parametrize(
    "other",
    [
        {"seed": 8},
        {"settings": match_pb2.MatchSettings(turn_timer_ms=HOUR_MS, tags=["other"])},
        {"preset": "cuban"},
        {"overrides": ["target=50"]},
        {"seats": [OPEN] * 4},
    ],
    ids=["seed", "tags", "preset", "overrides", "seats"],
)
async def test_the_same_id_for_another_request_is_refused(
    server: Server, other: dict[str, object]
) -> None:
    rid = str(uuid.uuid4())
    await server.create(request(rid))
    assert await server.refused(request(rid, **other)) == (
        grpc.StatusCode.ALREADY_EXISTS,
        "REQUEST_ID_REUSED",
        {"field": "request_id", "request_id": rid},
        f"request_id: {rid} was used for another CreateMatch request (other fields or another "
        "caller); send a new request_id for a new match",
    )
    assert server.held() == 1


async def test_the_same_id_from_another_caller_is_refused(server: Server) -> None:
    _, bot_token = await server.lobby.register("caller")
    _, other_token = await server.lobby.register("other")
    anonymous, by_bot = str(uuid.uuid4()), str(uuid.uuid4())
    await server.create(request(anonymous))
    first = await server.create(request(by_bot), bot_token)
    assert await server.create(request(by_bot), bot_token) == first
    for rid, token in ((anonymous, bot_token), (by_bot, None), (by_bot, other_token)):
        code, reason, _, _ = await server.refused(request(rid), token)
        assert (code, reason) == (grpc.StatusCode.ALREADY_EXISTS, "REQUEST_ID_REUSED")
    assert server.held() == 2


@pytest.mark.parametrize(
    "bad",
    [
        "nope",
        "123e4567e89b42d3a456426614174000",  # no hyphens
        "{123e4567-e89b-42d3-a456-426614174000}",
        "urn:uuid:123e4567-e89b-42d3-a456-426614174000",
        " 123e4567-e89b-42d3-a456-426614174000",
        "123e4567-e89b-42d3-a456-42661417400g",
        "00000000-0000-0000-0000-000000000000",  # nil: what a client that forgot sends
    ],
)
async def test_a_malformed_id_is_refused(server: Server, bad: str) -> None:
    assert await server.refused(request(bad)) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_ARGUMENT",
        {"field": "request_id"},
        "request_id: expected a UUID such as '123e4567-e89b-42d3-a456-426614174000' (a fresh "
        f"UUID4 per match), got {bad!r}",
    )
    assert server.held() == 0


async def test_any_uuid_version_is_taken(server: Server) -> None:
    versions = (uuid.uuid1(), uuid.uuid5(uuid.NAMESPACE_DNS, "x"), uuid.UUID(int=2**128 - 1))
    for rid in versions:
        await server.create(request(str(rid), seats=[OPEN] * 4))
    assert server.held() == 3


async def test_without_an_id_each_call_creates_a_match(server: Server) -> None:
    first = await server.create(request())
    second = await server.create(request())
    assert first.match.name != second.match.name and first.host_token != second.host_token
    assert server.held() == 2
    assert len(server.app.lobby.request_ids) == 0


async def test_a_refused_request_is_not_remembered(server: Server) -> None:
    rid = str(uuid.uuid4())
    code, _, metadata, _ = await server.refused(request(rid, preset="nope"))
    # the refusal names the request_id (as sent), so a client retrying several tells them apart
    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert metadata == {"field": "preset", "request_id": rid}
    created = await server.create(request(rid))  # the corrected request, same id
    assert await server.create(request(rid)) == created
    assert server.held() == 1


async def test_the_oldest_ids_are_forgotten_past_the_limit() -> None:
    ids = RequestIds(limit=2)
    rids = [str(uuid.uuid4()) for _ in range(3)]
    stored = asyncio.get_running_loop().create_future()
    stored.set_result(None)
    for n, rid in enumerate(rids):
        attempt = ids.attempt(request(rid), "")
        assert attempt.earlier is None
        ids.remember(attempt, match_pb2.CreateMatchResponse(host_token=f"host_{n}"), stored)
    assert len(ids) == 2
    assert ids.attempt(request(rids[0]), "").earlier is None  # forgotten: a new match
    earlier = ids.attempt(request(rids[2]), "").earlier
    assert earlier is not None and earlier.host_token == "host_2"


def printed(output: str) -> str:
    """What the command printed, without the in-process server's log lines."""
    return "\n".join(line for line in output.splitlines() if not LOG_LINE.match(line))


async def test_the_command_line_sends_one_and_takes_one_to_retry(server: Server) -> None:
    """``capicua match create`` sends a fresh UUID4 each time; with ``--request-id`` the
    same command run again prints the same match and host token."""
    address = ["--server", server.app.address]
    plain = await cli("match", "create", "--rules", "block", *address)
    assert plain.exit_code == 0, plain.output
    assert len(server.app.lobby.request_ids) == 1
    rid = str(uuid.uuid4())
    runs = [await cli("match", "create", "--rules", "block", "--request-id", rid, *address)]
    runs.append(await cli("match", "create", "--rules", "block", "--request-id", rid, *address))
    assert runs[0].exit_code == runs[1].exit_code == 0, runs[0].output + runs[1].output
    assert printed(runs[0].output) == printed(runs[1].output)
    assert "host token: host_" in printed(runs[0].output)
    assert server.held() == 2 and len(server.app.lobby.request_ids) == 2
    bad = await cli("match", "create", "--rules", "block", "--request-id", "x", *address)
    assert bad.exit_code == 2 and "INVALID_ARGUMENT: request_id: expected a UUID" in bad.output
