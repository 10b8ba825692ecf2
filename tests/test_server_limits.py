"""Limits that one address cannot get around, checked and counted in one step, and kept
across a restart; and lobby calls whose write fails answer INTERNAL without holding what
they did. Real gRPC on loopback, a real SQLite store."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from pathlib import Path

import grpc

from capicua.server.faults import Faults
from capicua.v1 import game_pb2, match_pb2, play_pb2, play_pb2_grpc
from tests.compliance.client import (
    OPEN,
    OPTIONS,
    Lobby,
    auth,
    error_info,
    expect_error,
)
from tests.serverkit import running, server_process

ADMIN = "admin-secret-for-the-limits"
EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED


async def _create(lobby: Lobby, token: str | None) -> None:
    await lobby.create("block", [OPEN] * 4, token=token)


async def test_one_address_cannot_fill_the_server_through_many_bots(tmp_path: Path) -> None:
    """Ten bots from one address, each well inside its own limit, stop at the address's:
    its anonymous calls and all its bots count together (the admin does not)."""
    data = tmp_path / "data"
    limits = {
        "max_matches_from_address": 10,
        "max_matches_per_creator": 4,
        "max_matches_per_address": 3,
    }
    async with running(data, **limits) as (app, lobby):
        bots = [await lobby.register("flood") for _ in range(10)]
        for _, token in bots[:2]:
            for _ in range(4):
                await _create(lobby, token)
        await _create(lobby, None)
        await _create(lobby, bots[2][1])  # the tenth of the address
        for token in (bots[3][1], bots[9][1], None):
            e = await expect_error(_create(lobby, token), EXHAUSTED, "TOO_MANY_MATCHES")
            assert e.details() == (
                "127.0.0.1 and the bots registered from it already created 10 unfinished "
                "matches (limit 10, --max-matches-from-address); finish or cancel some first"
            )
        assert app.registry.active_count() == 10
    # The same server restarted: the bots still belong to the address, and the matches
    # to their creators (all were cancelled by the stop: the address may create again).
    async with running(data, **limits) as (app, lobby):
        for _, token in bots:
            await _create(lobby, token)
        await expect_error(_create(lobby, None), EXHAUSTED, "TOO_MANY_MATCHES")


async def test_the_admins_bots_count_only_against_their_own_limits() -> None:
    async with running(None, admin_token=ADMIN, max_matches_from_address=2) as (_, lobby):
        for _ in range(3):
            _, token = await lobby.register("trusted", admin=ADMIN)
            for _ in range(3):
                await _create(lobby, token)
        for _ in range(3):
            await _create(lobby, ADMIN)


async def test_concurrent_registrations_cannot_pass_the_hourly_limit(tmp_path: Path) -> None:
    """Hundreds of RegisterBot calls at once from one address over many channels: exactly
    the limit get through (the check and the count are one step), and a restart forgets
    none of them."""
    args = ["--data", str(tmp_path / "data"), "--max-registrations-per-hour", "5"]
    with server_process(args, tmp_path / "logs") as server:
        channels = [grpc.aio.insecure_channel(server.address, options=OPTIONS) for _ in range(32)]
        try:
            calls = [
                play_pb2_grpc.PlayServiceStub(channels[n % len(channels)]).RegisterBot(
                    play_pb2.RegisterBotRequest(bot_id=f"race-{n}-{uuid.uuid4().hex[:6]}"),
                    timeout=60,
                )
                for n in range(600)
            ]
            results = await asyncio.gather(*calls, return_exceptions=True)
        finally:
            for channel in channels:
                await channel.close()
    refused = [r for r in results if isinstance(r, grpc.aio.AioRpcError)]
    assert len(results) - len(refused) == 5
    for e in refused:
        assert e.code() == EXHAUSTED, e.details()
        info = error_info(e)
        assert info is not None and info.reason == "TOO_MANY_REGISTRATIONS"
    with server_process(args, tmp_path / "logs") as server:
        lobby = Lobby(server.address)
        try:
            await expect_error(lobby.register("after"), EXHAUSTED, "TOO_MANY_REGISTRATIONS")
        finally:
            await lobby.close()


def _disk_full() -> None:
    """The store's fault hook: every commit fails while it is set, as a full disk makes it."""
    raise sqlite3.OperationalError("database or disk is full")


async def test_a_create_whose_write_fails_holds_no_match() -> None:
    faults = Faults()
    async with running(None, faults=faults) as (app, lobby):
        faults.store_write = _disk_full
        request = match_pb2.CreateMatchRequest(preset="block", request_id=str(uuid.uuid4()))
        e = await expect_error(lobby.matches.CreateMatch(request), grpc.StatusCode.INTERNAL)
        assert "OperationalError" in e.details()
        assert app.registry.active_count() == 0 and len(app.lobby.request_ids) == 0
        listed = await lobby.matches.ListMatches(match_pb2.ListMatchesRequest())
        assert not listed.matches
        faults.store_write = None
        created = await lobby.matches.CreateMatch(request)  # the same request, now stored
        assert created.match.state == match_pb2.MATCH_STATE_WAITING


async def test_a_join_or_start_whose_write_fails_cancels_its_match() -> None:
    faults = Faults()
    async with running(None, faults=faults) as (_, lobby):
        joined, _ = await lobby.create("block", [OPEN] * 4)
        started, host = await lobby.create("block", [OPEN] * 4)
        faults.store_write = _disk_full
        e = await expect_error(
            lobby.matches.JoinMatch(match_pb2.JoinMatchRequest(name=joined.name)),
            grpc.StatusCode.INTERNAL,
        )
        assert e.details() == (
            f"name: the server could not store the join of {joined.name}, and cancelled it; "
            "the server log has the details"
        )
        e = await expect_error(lobby.start(started.name, host), grpc.StatusCode.INTERNAL)
        assert "could not store the start" in e.details()
        faults.store_write = None
        for name, what in ((joined.name, "join"), (started.name, "start")):
            match = await lobby.get(name)
            assert match.state == match_pb2.MATCH_STATE_FINISHED
            assert match.outcome.termination == game_pb2.TERMINATION_CANCELLED
            assert match.outcome.reason == f"the server could not store the {what}"


async def test_a_cancel_whose_record_cannot_be_stored_is_not_acknowledged() -> None:
    faults = Faults()
    async with running(None, faults=faults) as (_, lobby):
        match, host = await lobby.create("block", [OPEN] * 4)
        faults.store_write = _disk_full
        e = await expect_error(
            lobby.matches.CancelMatch(
                match_pb2.CancelMatchRequest(name=match.name), metadata=auth(host)
            ),
            grpc.StatusCode.INTERNAL,
        )
        assert e.details() == (
            f"name: {match.name} is cancelled, but the server could not store its record; "
            "the server log has the details"
        )
