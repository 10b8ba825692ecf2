"""Every lobby call the server answers OK is on disk before its reply: a real ``capicua
serve`` is killed with SIGKILL the moment each reply arrives, restarted on the same
``--data``, and still holds what it acknowledged (a bot, its access list, a match, a join,
a seat token, a start, a cancel). The tokens of a match that ended before the kill are
still told that it is over."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from capicua.v1 import game_pb2, match_pb2, play_pb2
from tests.compliance.client import (
    CALL_TIMEOUT,
    OPEN,
    Lobby,
    auth,
    bot_seat,
    call_error,
    expect_error,
)
from tests.serverkit import ServerProcess, server_process

ROUNDS = 2  # each round kills the server eight times


@asynccontextmanager
async def killed_on_reply(data: Path, logs: Path) -> AsyncIterator[Lobby]:
    """A server on ``data`` for one call: SIGKILL the moment the body's call returns."""
    with server_process(["--data", str(data)], logs) as server:
        lobby = Lobby(server.address)
        try:
            yield lobby
        finally:
            server.proc.kill()  # before anything else: no shutdown code runs
            server.proc.wait(30)
            await lobby.close()


async def one_round(data: Path, logs: Path) -> dict[str, str]:
    """Register, allow, create, join (bot and seat token), start, create and cancel, each
    followed by a SIGKILL; each call needs what the one before acknowledged."""
    bot_id = f"durable-{uuid.uuid4().hex[:8]}"
    async with killed_on_reply(data, logs) as lobby:
        registered = await lobby.play.RegisterBot(
            play_pb2.RegisterBotRequest(bot_id=bot_id), timeout=CALL_TIMEOUT
        )
    bot_token = registered.token
    async with killed_on_reply(data, logs) as lobby:
        await lobby.play.SetBotAccess(
            play_pb2.SetBotAccessRequest(reservable_by=["*"]),
            metadata=auth(bot_token),
            timeout=CALL_TIMEOUT,
        )
    async with killed_on_reply(data, logs) as lobby:  # anonymous: needs the access list
        match, host = await lobby.create("block", [bot_seat(bot_id), OPEN, OPEN, OPEN])
    async with killed_on_reply(data, logs) as lobby:  # needs the bot token and the match
        await lobby.matches.JoinMatch(
            match_pb2.JoinMatchRequest(name=match.name), metadata=auth(bot_token)
        )
    async with killed_on_reply(data, logs) as lobby:
        joined = await lobby.matches.JoinMatch(
            match_pb2.JoinMatchRequest(name=match.name, display_name="guest")
        )
    async with killed_on_reply(data, logs) as lobby:  # needs the host token
        started = await lobby.start(match.name, host)
        assert started.state == match_pb2.MATCH_STATE_RUNNING
    async with killed_on_reply(data, logs) as lobby:
        other, other_host = await lobby.create("block", [OPEN] * 4)
    async with killed_on_reply(data, logs) as lobby:
        await lobby.matches.CancelMatch(
            match_pb2.CancelMatchRequest(name=other.name), metadata=auth(other_host)
        )
    return {
        "bot": bot_id,
        "bot_token": bot_token,
        "match": match.name,
        "host": host,
        "seat_token": joined.seat_token,
        "cancelled": other.name,
        "cancelled_host": other_host,
    }


async def check(lobby: Lobby, facts: dict[str, str]) -> None:
    """What the killed servers acknowledged, as a restarted one sees it."""
    running = await lobby.get(facts["match"])
    assert running.state == match_pb2.MATCH_STATE_RUNNING
    assert running.seats[0].kind == match_pb2.SEAT_KIND_BOT
    assert running.seats[0].bot_id == facts["bot"]
    assert running.seats[1].player == "guest"  # the seat-token join
    assert [s.kind for s in running.seats[2:]] == [match_pb2.SEAT_KIND_CPU] * 2  # filled
    cancelled = await lobby.get(facts["cancelled"])
    assert cancelled.state == match_pb2.MATCH_STATE_FINISHED
    assert cancelled.outcome.termination == game_pb2.TERMINATION_CANCELLED
    # The seat token still plays its seat (tokens are journaled with the join).
    stream = lobby.play.Play(metadata=auth(facts["seat_token"]))
    first = await stream.read()
    assert first.welcome.principal == f"{facts['match']}/seats/1"
    stream.cancel()
    # A token revoked before the kill is told its match is over, as before the restart.
    await expect_error(
        lobby.matches.CancelMatch(
            match_pb2.CancelMatchRequest(name=facts["cancelled"]),
            metadata=auth(facts["cancelled_host"]),
        ),
        grpc.StatusCode.FAILED_PRECONDITION,
        "MATCH_FINISHED",
    )


async def test_every_acknowledged_lobby_call_survives_a_sigkill_on_its_reply(
    tmp_path: Path,
) -> None:
    data, logs = tmp_path / "data", tmp_path / "logs"
    rounds = [await one_round(data, logs) for _ in range(ROUNDS)]
    with server_process(["--data", str(data)], logs) as server:
        lobby = Lobby(server.address)
        try:
            for facts in rounds:
                await check(lobby, facts)
            # and a revoked seat token, after the match it belonged to was cancelled
            await lobby.matches.CancelMatch(
                match_pb2.CancelMatchRequest(name=rounds[0]["match"]),
                metadata=auth(rounds[0]["host"]),
            )
        finally:
            await lobby.close()
    with server_process(["--data", str(data)], logs) as server:
        lobby = Lobby(server.address)
        try:
            stream = lobby.play.Play(metadata=auth(rounds[0]["seat_token"]))
            await expect_error(stream.read(), grpc.StatusCode.FAILED_PRECONDITION, "MATCH_FINISHED")
        finally:
            await lobby.close()


@dataclass
class Churned:
    """What the churning clients were told: created, started and cancelled matches."""

    created: set[str] = field(default_factory=set)
    started: set[str] = field(default_factory=set)
    cancelled: set[str] = field(default_factory=set)

    async def check(self, lobby: Lobby) -> None:
        for name in sorted(self.created):
            match = await lobby.get(name)  # NOT_FOUND fails the test
            if name in self.started:
                assert match.state != match_pb2.MATCH_STATE_WAITING, f"{name} was started"
            if name in self.cancelled:
                assert match.state == match_pb2.MATCH_STATE_FINISHED, f"{name} was cancelled"
                assert match.outcome.termination == game_pb2.TERMINATION_CANCELLED


async def _churn_until_killed(server: ServerProcess, lobby: Lobby, churned: Churned) -> None:
    """Eight clients create, then start or cancel, until the server's 30th reply of the
    round, on which it is killed at once (before any other reply is read)."""
    replies = 0
    killed = asyncio.Event()

    def acknowledged() -> None:
        nonlocal replies
        replies += 1
        if replies == 30:
            server.proc.kill()
            killed.set()

    async def client(n: int) -> None:
        while not killed.is_set():
            match, host = await lobby.create("block", [OPEN] * 4)
            churned.created.add(match.name)
            acknowledged()
            if n % 2:
                await lobby.start(match.name, host)
                churned.started.add(match.name)
            else:
                cancel = match_pb2.CancelMatchRequest(name=match.name)
                await lobby.matches.CancelMatch(cancel, metadata=auth(host))
                churned.cancelled.add(match.name)
            acknowledged()

    clients = [asyncio.ensure_future(client(n)) for n in range(8)]
    results = await asyncio.gather(*clients, return_exceptions=True)
    assert killed.is_set(), results
    for result in results:  # each ends with the kill: the server is gone, nothing refused
        if result is not None:
            error = call_error(result)
            assert isinstance(error, grpc.aio.AioRpcError), result
            assert error.code() == grpc.StatusCode.UNAVAILABLE, result


async def test_acknowledged_calls_survive_kills_under_churn(tmp_path: Path) -> None:
    """Many clients create, start and cancel at once while the server is killed, three
    times: every match whose creation was acknowledged is there after the restart, every
    acknowledged start has started, every acknowledged cancel is cancelled."""
    data, logs = tmp_path / "data", tmp_path / "logs"
    args = ["--data", str(data), "--max-matches-per-address", "10000"]
    args += ["--max-matches-from-address", "10000"]
    churned = Churned()
    for _ in range(3):
        with server_process(args, logs) as server:
            lobby = Lobby(server.address)
            try:
                await churned.check(lobby)
                await _churn_until_killed(server, lobby, churned)
            finally:
                server.proc.kill()
                server.proc.wait(30)
                await lobby.close()
    with server_process(args, logs) as server:
        lobby = Lobby(server.address)
        try:
            await churned.check(lobby)
        finally:
            await lobby.close()
    assert len(churned.created) >= 45 and churned.started and churned.cancelled
