"""Seat squatting: reserving a bot's seat takes its consent (its token, the admin token, or
its ``reservable_by`` list), and creators are limited (a bot by its token, a caller without
a token by its address). Real gRPC on loopback, a real SQLite store."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import grpc
import pytest

from capicua.server.auth import creator_of
from capicua.server.errors import ApiError
from capicua.server.play import Bots, Registrations
from capicua.server.store import DB_NAME
from capicua.v1 import match_pb2, play_pb2
from tests.compliance.client import (
    CALL_TIMEOUT,
    OPEN,
    Lobby,
    auth,
    bot_seat,
    cpu_seat,
    error_info,
    expect_error,
)
from tests.serverkit import journal_rows, running, server_process

ADMIN = "admin-secret-for-the-test"
DENIED = grpc.StatusCode.PERMISSION_DENIED
EXHAUSTED = grpc.StatusCode.RESOURCE_EXHAUSTED


def _seats(bot_id: str) -> list[match_pb2.SeatSpec]:
    return [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]


async def _set_access(lobby: Lobby, token: str, *who: str) -> list[str]:
    response = await lobby.play.SetBotAccess(
        play_pb2.SetBotAccessRequest(reservable_by=who), metadata=auth(token), timeout=CALL_TIMEOUT
    )
    return list(response.reservable_by)


async def _joins_an_open_seat(lobby: Lobby, bot_id: str, token: str) -> None:
    """A new match with open seats, and the bot takes one with its token."""
    match, _ = await lobby.create("block", [OPEN] * 4)
    joined = await lobby.matches.JoinMatch(
        match_pb2.JoinMatchRequest(name=match.name), metadata=auth(token), timeout=CALL_TIMEOUT
    )
    assert joined.match.seats[joined.seat].bot_id == bot_id


async def test_reserving_a_bot_takes_its_consent() -> None:
    async with running(None, admin_token=ADMIN) as (_, lobby):
        victim, victim_token = await lobby.register("victim", admin=ADMIN, reservable_by=())
        other, other_token = await lobby.register("other", admin=ADMIN, reservable_by=())

        # anonymous, another bot: refused, the message naming the seat and the way out
        for token, who in ((None, "a caller without a token"), (other_token, f"bots/{other}")):
            e = await expect_error(
                lobby.create("block", [OPEN, bot_seat(victim), OPEN, OPEN], token=token),
                DENIED,
                "NOT_RESERVABLE",
            )
            assert e.details().startswith(
                f"seats[1].bot_id: bots/{victim} does not let {who} reserve its seats"
            )
            info = error_info(e)
            assert info is not None and info.metadata["field"] == "seats[1].bot_id"
        # the bot itself and the admin may
        mine, _ = await lobby.create("block", _seats(victim), token=victim_token)
        assert mine.seats[0].bot_id == victim
        await lobby.create("block", _seats(victim), token=ADMIN)

        # the bot lets `other`: other's token now may, anonymous still not
        assert await _set_access(lobby, victim_token, f"bots/{other}") == [f"bots/{other}"]
        kept, _ = await lobby.create("block", _seats(victim), token=other_token)
        await expect_error(lobby.create("block", _seats(victim)), DENIED, "NOT_RESERVABLE")
        # anyone: a caller without a token too
        assert await _set_access(lobby, victim_token, "*", "*") == ["*"]
        await lobby.create("block", _seats(victim))
        # back to nobody: refused again, and a match made before the change keeps its seat
        assert await _set_access(lobby, victim_token) == []
        await expect_error(lobby.create("block", _seats(victim)), DENIED, "NOT_RESERVABLE")
        assert (await lobby.get(kept.name)).seats[0].bot_id == victim
        # open seats need nobody's consent, and a bot joining one is its own
        await _joins_an_open_seat(lobby, victim, victim_token)
        await lobby.cancel_created()


async def test_a_squatter_cannot_lock_a_bot_out() -> None:
    """The attack of the issue: fill a bot's match limit with matches that never start.
    Refused from the first, so the bot still joins what it wants."""
    async with running(None, max_matches_per_bot=3) as (_, lobby):
        victim, victim_token = await lobby.register("victim", reservable_by=())
        for _ in range(5):
            await expect_error(lobby.create("block", _seats(victim)), DENIED, "NOT_RESERVABLE")
        await _joins_an_open_seat(lobby, victim, victim_token)
        await lobby.cancel_created()


async def test_reservable_by_is_checked() -> None:
    async with running(None) as (_, lobby):
        bot_id, token = await lobby.register("bot", reservable_by=())
        _, seat_token = await lobby.create("iq-1v1", [OPEN, OPEN])
        cases = [
            (["bots/nobody-has-this"], "reservable_by: no bot bots/nobody-has-this is registered"),
            (["friend"], "reservable_by: 'friend' is neither '*' nor 'bots/BOT_ID'"),
            (["bots/"], "reservable_by: 'bots/' is neither '*' nor 'bots/BOT_ID'"),
            (["bots/a b"], "reservable_by: 'bots/a b' is neither '*' nor 'bots/BOT_ID'"),
            ([f"bots/{i}" for i in range(101)], "reservable_by: at most 100 entries"),
        ]
        for given, message in cases:
            for call in (
                lobby.play.RegisterBot(
                    play_pb2.RegisterBotRequest(bot_id="new-bot", reservable_by=given),
                    timeout=CALL_TIMEOUT,
                ),
                lobby.play.SetBotAccess(
                    play_pb2.SetBotAccessRequest(reservable_by=given),
                    metadata=auth(token),
                    timeout=CALL_TIMEOUT,
                ),
            ):
                e = await expect_error(call, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT")
                assert e.details() == message
        # nothing was registered or changed by a refused call
        registered = await lobby.play.RegisterBot(
            play_pb2.RegisterBotRequest(bot_id="new-bot"), timeout=CALL_TIMEOUT
        )
        assert list(registered.reservable_by) == []
        await expect_error(lobby.create("block", _seats(bot_id)), DENIED, "NOT_RESERVABLE")
        # SetBotAccess takes the bot's own token only
        request = play_pb2.SetBotAccessRequest(reservable_by=["*"])
        await expect_error(
            lobby.play.SetBotAccess(request, timeout=CALL_TIMEOUT),
            grpc.StatusCode.UNAUTHENTICATED,
            "MISSING_TOKEN",
        )
        e = await expect_error(
            lobby.play.SetBotAccess(request, metadata=auth(seat_token), timeout=CALL_TIMEOUT),
            DENIED,
            "BAD_TOKEN",
        )
        assert e.details() == "authorization: SetBotAccess takes the bot's own token"
        await lobby.cancel_created()


async def test_access_survives_a_restart(tmp_path: Path) -> None:
    data = tmp_path / "data"
    async with running(data) as (_, lobby):
        friend, friend_token = await lobby.register("friend", reservable_by=())
        bot_id, token = await lobby.register("bot", reservable_by=(f"bots/{friend}",))
        assert await _set_access(lobby, token, f"bots/{friend}", "*") == ["*", f"bots/{friend}"]
    with sqlite3.connect(data / DB_NAME) as db:
        rows = db.execute("SELECT bot_id, reserver FROM bot_access ORDER BY reserver").fetchall()
    assert rows == [(bot_id, "*"), (bot_id, f"bots/{friend}")]
    async with running(data) as (_, lobby):
        await lobby.create("block", _seats(bot_id))  # "*" held
        await expect_error(lobby.create("block", _seats(friend)), DENIED, "NOT_RESERVABLE")
        await lobby.create("block", _seats(friend), token=friend_token)
        await lobby.cancel_created()


async def test_seed_consent_and_chosen_seeds_survive_a_restart(tmp_path: Path) -> None:
    """A bot's acceptance of chosen seeds is stored with its access, and a waiting match
    with a chosen seed still says so (and still refuses joiners who do not accept it) when
    the server comes back; the admin may choose the seed of any bot's match."""
    data = tmp_path / "data"
    async with running(data, admin_token=ADMIN, on_stop="suspend") as (_, lobby):
        taker, _ = await lobby.register("taker", admin=ADMIN, reservable_by=["*"])
        refuser, _ = await lobby.register(
            "refuser", admin=ADMIN, reservable_by=["*"], accept_chosen_seeds=False
        )
        seeded, _ = await lobby.create("block", [OPEN, *_seats(taker)[1:]], seed=5)
        admins, _ = await lobby.create("block", _seats(refuser), seed=5, token=ADMIN)
        assert seeded.seed_chosen and admins.seed_chosen
    with sqlite3.connect(data / DB_NAME) as db:
        assert db.execute("SELECT bot_id FROM bot_seed_consent").fetchall() == [(taker,)]
    async with running(data, admin_token=ADMIN) as (_, lobby):
        await lobby.create("block", _seats(taker), seed=5)
        await expect_error(
            lobby.create("block", _seats(refuser), seed=5), DENIED, "SEED_NOT_ALLOWED"
        )
        assert (await lobby.get(seeded.name)).seed_chosen
        await expect_error(
            lobby.matches.JoinMatch(match_pb2.JoinMatchRequest(name=seeded.name)),
            grpc.StatusCode.FAILED_PRECONDITION,
            "SEED_CHOSEN",
        )
        await lobby.cancel_created()


async def test_creators_have_their_own_limits() -> None:
    config = {"admin_token": ADMIN, "max_matches_per_address": 2, "max_matches_per_creator": 3}
    async with running(None, **config) as (_, lobby):
        _, token = await lobby.register("creator", admin=ADMIN)
        anonymous = [await lobby.create("iq-1v1", [OPEN, OPEN]) for _ in range(2)]
        e = await expect_error(lobby.create("iq-1v1", [OPEN, OPEN]), EXHAUSTED, "TOO_MANY_MATCHES")
        assert e.details() == (
            "the local machine (127.0.0.0/8 and ::1) already created 2 unfinished matches "
            "without a token (limit 2, --max-matches-per-address); finish or cancel some first"
        )
        # a bot creates under its own limit, the admin under the server's only
        created = [await lobby.create("iq-1v1", [OPEN, OPEN], token=token) for _ in range(3)]
        e = await expect_error(
            lobby.create("iq-1v1", [OPEN, OPEN], token=token), EXHAUSTED, "TOO_MANY_MATCHES"
        )
        assert "(limit 3, --max-matches-per-creator)" in e.details()
        for _ in range(5):
            await lobby.create("iq-1v1", [OPEN, OPEN], token=ADMIN)
        # a finished (here cancelled) match counts no more
        for match, host in (anonymous[0], created[0]):
            await lobby.matches.CancelMatch(
                match_pb2.CancelMatchRequest(name=match.name), metadata=auth(host)
            )
        await lobby.create("iq-1v1", [OPEN, OPEN])
        await lobby.create("iq-1v1", [OPEN, OPEN], token=token)
        await lobby.cancel_created()


def test_a_creator_is_known_by_its_address_without_a_token() -> None:
    """Its own address, the port dropped (the limits count it in its address group: see
    tests/test_server_limits.py)."""
    assert creator_of(None, "ipv4:127.0.0.1:53412") == "address:127.0.0.1"
    assert creator_of(None, "ipv6:[::1]:53412") == "address:::1"
    assert creator_of(None, "ipv6:%5B::1%5D:5") == "address:::1"  # grpc's URI form
    assert creator_of(None, "unix:/tmp/s") == "address:unix:/tmp/s"
    assert creator_of(None, "ipv6:[2001:db8:1:2::7]:9") == "address:2001:db8:1:2::7"
    assert creator_of(None, "ipv6:[::ffff:10.0.0.1]:9") == "address:::ffff:10.0.0.1"
    assert creator_of(None, "") == "address:unknown"


async def test_creator_counts_survive_a_crash(tmp_path: Path) -> None:
    """Who created each unfinished match is journaled: after a SIGKILL and a restart the
    per-address limit still counts the matches it holds again."""
    data = tmp_path / "data"
    args = ["--data", str(data), "--max-matches-per-address", "2"]
    with server_process(args, tmp_path / "logs") as first:
        lobby = Lobby(first.address)
        held = [await lobby.create("iq-1v1", [OPEN, OPEN]) for _ in range(2)]
        # acknowledged: each create's journal, its creator with it, is on disk already
        assert [journal_rows(data, "live_creators", m.name) for m, _ in held] == [1, 1]
        first.proc.kill()
        first.proc.wait(10)
        await lobby.close()
    with server_process(args, tmp_path / "logs") as second:
        lobby = Lobby(second.address)
        try:
            await expect_error(lobby.create("iq-1v1", [OPEN, OPEN]), EXHAUSTED, "TOO_MANY_MATCHES")
            match, host = held[0]
            await lobby.matches.CancelMatch(
                match_pb2.CancelMatchRequest(name=match.name), metadata=auth(host)
            )
            await lobby.create("iq-1v1", [OPEN, OPEN])
            await lobby.cancel_created()
        finally:
            await lobby.close()


async def test_an_open_server_registers_only_so_many_bots_an_hour_per_address() -> None:
    async with running(None, max_registrations_per_hour=3) as (_, lobby):
        for _ in range(3):
            await lobby.register("flood")
        e = await expect_error(lobby.register("flood"), EXHAUSTED, "TOO_MANY_REGISTRATIONS")
        assert re.fullmatch(
            r"the local machine \(127\.0\.0\.0/8 and ::1\) registered 3 bots in the last hour "
            r"\(limit 3, "
            r"--max-registrations-per-hour\); try again in \d+ s, or ask the operator",
            e.details(),
        )
    # with an admin token registration is the admin's, and not counted
    async with running(None, admin_token=ADMIN, max_registrations_per_hour=1) as (_, lobby):
        for _ in range(3):
            await lobby.register("admin", admin=ADMIN)


def test_registrations_are_counted_over_a_sliding_hour() -> None:
    now = [1000.0]
    window = Registrations(2, clock=lambda: now[0])
    for _ in range(2):
        window.take("address:a")
    with pytest.raises(ApiError, match="try again in 3601 s"):
        window.take("address:a")
    window.take("address:b")  # each address has its own count
    now[0] += 1800
    window.add("address:a", now[0])  # (a stored registration: counted whatever the limit)
    now[0] += 1800.5  # the first two are more than an hour old now
    when = window.take("address:a")
    with pytest.raises(ApiError, match="registered 2 bots"):
        window.take("address:a")
    window.give_back("address:a", when)  # that registration failed: its place is free
    window.take("address:a")
    window.add("address:c", now[0] - 3600.5)  # stored more than an hour ago: not counted
    window.take("address:c")
    window.take("address:c")


def test_a_bot_still_being_registered_cannot_be_granted_access() -> None:
    """Its name is taken but its registration not yet written: were the write to fail, an
    entry naming it would let whoever registers the name next reserve the granting bot."""
    bots = Bots()
    bots.descriptions["y"] = ""
    bots.registering.add("y")
    with pytest.raises(ApiError, match="no bot bots/y is registered"):
        bots.reservers(["bots/y"], "reservable_by")
    bots.registering.discard("y")
    assert bots.reservers(["bots/y", "*", "bots/y"], "reservable_by") == ("*", "bots/y")
