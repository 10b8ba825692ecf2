"""Limits that one address, or a small block of them, cannot get around, checked and
counted in one step, and kept across a restart; and lobby calls whose write fails answer
INTERNAL without holding what they did. Real gRPC on loopback, a real SQLite store."""

from __future__ import annotations

import asyncio
import sqlite3
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import grpc
import pytest

from capicua.client import LobbyError
from capicua.common.errors import CapicuaError
from capicua.server.addresses import LOOPBACK, AddressGroups
from capicua.server.app import App, ServerConfig
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
from tests.serverkit import has_ipv6_loopback, running, sending_from, server_process

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
        for creator in (bots[3][1], bots[9][1], None):
            e = await expect_error(_create(lobby, creator), EXHAUSTED, "TOO_MANY_MATCHES")
            assert e.details() == (
                "the local machine (127.0.0.0/8 and ::1) and the bots registered from it "
                "already created 10 unfinished matches (limit 10, --max-matches-from-address); "
                "finish or cancel some first"
            )
        assert app.registry.active_count() == 10
    # The same server restarted: the bots still belong to the address, and the matches
    # to their creators (all were cancelled by the stop: the address may create again).
    async with running(data, **limits) as (app, lobby):
        for _, token in bots:
            await _create(lobby, token)
        await expect_error(_create(lobby, None), EXHAUSTED, "TOO_MANY_MATCHES")


# -- address groups ---------------------------------------------------------------------

# One group's share, small: 2 matches without a token, 2 bots an hour, 3 matches in all.
SHARE = {
    "max_matches_per_address": 2,
    "max_registrations_per_hour": 2,
    "max_matches_from_address": 3,
}
ALONE = {"ipv4_group_prefix": 32, "ipv6_group_prefix": 128}  # every address its own group
# The local machine's addresses; ::1 where there is IPv6 (a dual-stack listener then sees
# the others as IPv4-mapped ::ffff:127.0.0.x).
SOURCES = ["127.0.0.1", "127.0.0.2", "127.0.0.3", *(["::1"] if has_ipv6_loopback() else [])]
LISTEN = "::" if has_ipv6_loopback() else "0.0.0.0"


async def _taken(call: Callable[[], Awaitable[object]], reason: str) -> tuple[int, str]:
    """Make ``call`` until the server refuses it RESOURCE_EXHAUSTED / ``reason`` (at most 9
    times): how many it took, and the refusal."""
    for taken in range(10):
        try:
            await call()
        except LobbyError as raised:
            e = raised.rpc_error
            assert e is not None, raised
            info = error_info(e)
            assert e.code() == EXHAUSTED and info is not None, e.details()
            assert info.reason == reason, e.details()
            return taken, e.details()
    raise AssertionError(f"10 calls, never refused {reason}")


async def _share(lobby: Lobby) -> tuple[int, int, int]:
    """What one client takes of the per-address limits, each until refused: matches created
    without a token, bots registered, and matches created with those bots' tokens."""
    anonymous, _ = await _taken(lambda: _create(lobby, None), "TOO_MANY_MATCHES")
    tokens: list[str] = []

    async def register() -> None:
        tokens.append((await lobby.register("share"))[1])

    registered, _ = await _taken(register, "TOO_MANY_REGISTRATIONS")
    by_bots = 0
    for token in tokens:
        by_bots += (await _taken(partial(_create, lobby, token), "TOO_MANY_MATCHES"))[0]
    return anonymous, registered, by_bots


@asynccontextmanager
async def _clients(port: int, sources: Sequence[str]) -> AsyncIterator[list[Lobby]]:
    """A lobby client per source address, each seen by the server as calling from it."""
    async with AsyncExitStack() as stack:
        lobbies = []
        for source in sources:
            lobby = Lobby(await stack.enter_async_context(sending_from(source, port)))
            stack.push_async_callback(lobby.close)
            lobbies.append(lobby)
        yield lobbies


@pytest.mark.parametrize("prefixes", [{}, ALONE], ids=["default-groups", "each-address-alone"])
async def test_the_local_machines_addresses_share_one_groups_limits(
    prefixes: dict[str, int],
) -> None:
    """127.0.0.1, 127.0.0.2, 127.0.0.3 and ::1 over real sockets to a server listening on
    every address: by default one group, whose one share of every per-address limit they
    split (the first takes it all); counted each alone (/32, /128), each takes a share."""
    async with (
        running(None, host=LISTEN, **SHARE, **prefixes) as (app, _),
        _clients(app.port, SOURCES) as lobbies,
    ):
        shares = [await _share(lobby) for lobby in lobbies]
        if prefixes:
            assert shares == [(2, 2, 1)] * len(SOURCES)
        else:
            assert shares == [(2, 2, 1)] + [(0, 0, 0)] * (len(SOURCES) - 1)
        _, refused = await _taken(lambda: _create(lobbies[1], None), "TOO_MANY_MATCHES")
    who = "127.0.0.2" if prefixes else "the local machine (127.0.0.0/8 and ::1)"
    assert refused == (
        f"{who} already created 2 unfinished matches without a token (limit 2, "
        "--max-matches-per-address); finish or cancel some first"
    )


async def test_stored_addresses_count_by_the_groups_of_each_start(tmp_path: Path) -> None:
    """The store keeps each bot's and each unfinished match's own address, so a restart
    with other prefixes counts them by its own groups: what 127.0.0.1 and .2 took alone
    fills the local machine's one group after a restart with the defaults, and counts for
    each of them alone again after one with /32 (the last start from the command line)."""
    data = tmp_path / "data"
    config = {"host": "127.0.0.1", "on_stop": "suspend", **SHARE}
    async with (
        running(data, **config, **ALONE) as (app, _),
        _clients(app.port, SOURCES[:2]) as lobbies,
    ):
        assert [await _share(lobby) for lobby in lobbies] == [(2, 2, 1)] * 2
    async with running(data, **config) as (app, _), _clients(app.port, SOURCES[2:3]) as lobbies:
        assert app.registry.active_count() == 6  # the suspended matches resumed
        assert await _share(lobbies[0]) == (0, 0, 0)
    args = ["--data", str(data), "--ipv4-group-prefix", "/32", "--ipv6-group-prefix", "128"]
    for name, limit in SHARE.items():
        args += [f"--{name.replace('_', '-')}", str(limit)]
    with server_process(args, tmp_path / "logs") as server:
        async with _clients(int(server.address.rsplit(":", 1)[1]), SOURCES[:3]) as lobbies:
            assert [await _share(lobby) for lobby in lobbies] == [(0, 0, 0)] * 2 + [(2, 2, 1)]


def test_addresses_count_by_their_group() -> None:
    default = AddressGroups()
    assert (default.ipv4_prefix, default.ipv6_prefix) == (24, 48)
    # a small block counts once: a rented server's extra addresses, a site's /48
    assert default.of("address:203.0.113.7") == "address:203.0.113.0/24"
    assert default.of("address:203.0.113.250") == "address:203.0.113.0/24"
    assert default.of("address:203.0.114.7") == "address:203.0.114.0/24"
    assert default.of("address:2001:db8:1:2::7") == "address:2001:db8:1::/48"
    assert default.of("address:2001:db8:1:ff00::1") == "address:2001:db8:1::/48"
    assert default.of("address:2001:db8:2::1") == "address:2001:db8:2::/48"
    # an IPv4 caller of a dual-stack listener counts as its IPv4 address
    assert default.of("address:::ffff:203.0.113.7") == "address:203.0.113.0/24"
    # the local machine is one group, both families
    for local in ("127.0.0.1", "127.255.0.9", "::1", "::ffff:127.0.0.2"):
        assert default.of(f"address:{local}") == LOOPBACK
    # a store from before the groups kept an IPv6 caller by its /64: its first address
    assert default.of("address:2001:db8:1:2::/64") == "address:2001:db8:1::/48"
    assert AddressGroups(16, 96).of("address:2001:db8:1:2::/64") == "address:2001:db8:1:2::/96"
    # other prefixes, down to each address alone (the loopback ones too)
    alone = AddressGroups(32, 128)
    assert alone.of("address:203.0.113.7") == "address:203.0.113.7"
    assert alone.of("address:127.0.0.2") == "address:127.0.0.2"
    assert alone.of("address:::1") == "address:::1"
    assert alone.of("address:::ffff:127.0.0.2") == "address:127.0.0.2"
    assert AddressGroups(32, 64).of("address:::1") == LOOPBACK
    assert AddressGroups(16, 56).of("address:10.1.2.3") == "address:10.1.0.0/16"
    assert AddressGroups(16, 56).of("address:2001:db8:1:2::7") == "address:2001:db8:1::/56"
    # what is no IP address, and what is no address, as it is
    for other in ("address:unix:/tmp/s", "address:unknown", "bots/x", "admin", ""):
        assert default.of(other) == other


@pytest.mark.parametrize(
    ("version", "prefix", "allowed"),
    [
        (4, 33, "8 to 32"),
        (4, 0, "8 to 32"),
        (4, "24", "8 to 32"),
        (6, 0, "32 to 128"),
        (6, 129, "32 to 128"),
    ],
)
async def test_a_bad_group_prefix_in_the_config_is_one_error(
    version: int, prefix: object, allowed: str, tmp_path: Path
) -> None:
    prefixes: dict[str, Any] = {f"ipv{version}_group_prefix": prefix}
    config = ServerConfig(port=0, data=tmp_path / "data", **prefixes)
    with pytest.raises(CapicuaError) as refused:
        await App.start(config)
    assert str(refused.value) == (
        f"--ipv{version}-group-prefix {prefix!r}: expected a prefix length from {allowed} "
        f"(IPv{version} addresses count by that network)"
    )
    assert not (tmp_path / "data").exists()  # refused before anything was opened


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
