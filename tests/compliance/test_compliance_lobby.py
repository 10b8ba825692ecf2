"""MatchService and RegisterBot: rulesets, creating, joining, starting, listing,
cancelling, replays; errors with proper codes and messages naming the field; health
checking and reflection."""

from __future__ import annotations

import asyncio
import uuid

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from capicua.engine.records import Termination
from capicua.engine.rules import preset_names
from capicua.v1 import game_pb2, match_pb2, play_pb2, rules_pb2
from tests.compliance.client import (
    CALL_TIMEOUT,
    OPEN,
    Bot,
    Lobby,
    auth,
    bot_seat,
    cpu_seat,
    expect_error,
    watch,
)

INVALID = grpc.StatusCode.INVALID_ARGUMENT


async def test_rulesets(lobby: Lobby) -> None:
    listed = await lobby.matches.ListRulesets(match_pb2.ListRulesetsRequest(), timeout=CALL_TIMEOUT)
    names = [r.name for r in listed.rulesets]
    assert names == sorted(preset_names())
    got = await lobby.matches.GetRuleset(
        match_pb2.GetRulesetRequest(preset="cuban", overrides=["target=150"]), timeout=CALL_TIMEOUT
    )
    assert got.ruleset.target == 150 and list(got.ruleset.overrides) == ["target=150"]
    assert got.ruleset.first_opener == rules_pb2.FIRST_OPENER_RANDOM_SIDE
    get = lobby.matches.GetRuleset
    e = await expect_error(get(match_pb2.GetRulesetRequest(preset="nope")), INVALID)
    assert e.details().startswith("preset:")
    e = await expect_error(
        get(match_pb2.GetRulesetRequest(preset="cuban", overrides=["target=1", "hand_sise=3"])),
        INVALID,
        "INVALID_ARGUMENT",
    )
    assert e.details().startswith("overrides[1]:") and "hand_sise" in e.details()


async def test_create_errors_name_the_field(lobby: Lobby) -> None:
    create = lobby.matches.CreateMatch

    async def refused(request: match_pb2.CreateMatchRequest, field: str) -> None:
        e = await expect_error(create(request), INVALID, "INVALID_ARGUMENT")
        assert e.details().startswith(f"{field}:"), e.details()

    await refused(match_pb2.CreateMatchRequest(), "preset")
    await refused(match_pb2.CreateMatchRequest(preset="nope"), "preset")
    await refused(match_pb2.CreateMatchRequest(preset="block", seats=[OPEN] * 3), "seats")
    await refused(
        match_pb2.CreateMatchRequest(
            preset="block", seats=[OPEN, match_pb2.SeatSpec(), OPEN, OPEN]
        ),
        "seats[1].kind",
    )
    await refused(
        match_pb2.CreateMatchRequest(preset="block", seats=[OPEN, OPEN, bot_seat("ghost"), OPEN]),
        "seats[2].bot_id",
    )
    await refused(
        match_pb2.CreateMatchRequest(
            preset="block", settings=match_pb2.MatchSettings(turn_timer_ms=1)
        ),
        "settings.turn_timer_ms",
    )
    await refused(
        match_pb2.CreateMatchRequest(
            preset="block", settings=match_pb2.MatchSettings(tags=["a b"])
        ),
        "settings.tags[0]",
    )
    await refused(
        match_pb2.CreateMatchRequest(ruleset=rules_pb2.Ruleset(name="half", seats=2)), "ruleset"
    )
    await refused(
        match_pb2.CreateMatchRequest(preset="block", overrides=["seats=9"]), "overrides[0]"
    )


async def test_custom_ruleset_with_overrides(lobby: Lobby) -> None:
    base = (
        await lobby.matches.GetRuleset(
            match_pb2.GetRulesetRequest(preset="block"), timeout=CALL_TIMEOUT
        )
    ).ruleset
    base.name = "my-block"
    response = lobby.track(
        await lobby.matches.CreateMatch(
            match_pb2.CreateMatchRequest(
                ruleset=base, overrides=["target=10"], seats=[cpu_seat()] * 4
            ),
            timeout=CALL_TIMEOUT,
        )
    )
    assert response.match.ruleset.name == "my-block" and response.match.ruleset.target == 10


async def test_unknown_and_malformed_names(lobby: Lobby) -> None:
    missing = f"matches/{uuid.uuid4().hex}"
    await expect_error(
        lobby.matches.GetMatch(match_pb2.GetMatchRequest(name=missing)),
        grpc.StatusCode.NOT_FOUND,
        "MATCH_NOT_FOUND",
    )
    e = await expect_error(lobby.matches.GetMatch(match_pb2.GetMatchRequest(name="x/y")), INVALID)
    assert e.details().startswith("name:")
    await expect_error(
        lobby.matches.GetReplay(match_pb2.GetReplayRequest(name=missing)), grpc.StatusCode.NOT_FOUND
    )
    await expect_error(
        lobby.matches.JoinMatch(match_pb2.JoinMatchRequest(name=missing)), grpc.StatusCode.NOT_FOUND
    )


async def test_register_bot(lobby: Lobby) -> None:
    bot_id, token = await lobby.register("reg")
    again = lobby.play.RegisterBot(play_pb2.RegisterBotRequest(bot_id=bot_id))
    await expect_error(again, grpc.StatusCode.ALREADY_EXISTS, "BOT_EXISTS")
    bad = lobby.play.RegisterBot(play_pb2.RegisterBotRequest(bot_id="no spaces"))
    e = await expect_error(bad, INVALID)
    assert e.details().startswith("bot_id:")


async def test_reserving_a_bot_takes_its_consent(lobby: Lobby) -> None:
    """A seat reserved for a bot needs that bot's consent: its own token, or its
    reservable_by list (``bots/x`` or ``*``); a bot lets nobody else by default."""
    shy, shy_token = await lobby.register("shy", reservable_by=())
    friend, friend_token = await lobby.register("friend", reservable_by=())
    seats = [bot_seat(shy), cpu_seat(), cpu_seat(), cpu_seat()]
    for token in (None, friend_token):
        await expect_error(
            lobby.create("block", seats, token=token),
            grpc.StatusCode.PERMISSION_DENIED,
            "NOT_RESERVABLE",
        )
    await lobby.create("block", seats, token=shy_token)
    changed = await lobby.play.SetBotAccess(
        play_pb2.SetBotAccessRequest(reservable_by=[f"bots/{friend}"]),
        metadata=auth(shy_token),
        timeout=CALL_TIMEOUT,
    )
    assert changed.name == f"bots/{shy}" and list(changed.reservable_by) == [f"bots/{friend}"]
    both = [bot_seat(shy), bot_seat(friend), cpu_seat(), cpu_seat()]
    match, _ = await lobby.create("block", both, token=friend_token)
    assert [s.bot_id for s in match.seats[:2]] == [shy, friend]


async def test_join_start_and_seats(lobby: Lobby) -> None:
    bot_id, token = await lobby.register("joiner")
    reserved_id, reserved_token = await lobby.register("reserved")
    match, host = await lobby.create(
        "block",
        [OPEN, bot_seat(reserved_id), OPEN, cpu_seat(match_pb2.CPU_LEVEL_MEDIUM)],
        overrides=["target=10"],
        seed=3,
    )
    join = lobby.matches.JoinMatch
    # its creator chose the seed: an open seat is taken only by a joiner who accepts that
    assert match.seed_chosen
    await expect_error(
        join(match_pb2.JoinMatchRequest(name=match.name), metadata=auth(token)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "SEED_CHOSEN",
    )
    by_bot = await join(
        match_pb2.JoinMatchRequest(name=match.name, accept_chosen_seed=True),
        metadata=auth(token),
        timeout=CALL_TIMEOUT,
    )
    assert by_bot.seat == 0 and not by_bot.seat_token
    assert by_bot.match.seats[0].bot_id == bot_id and by_bot.match.seats[0].occupied
    await expect_error(
        join(match_pb2.JoinMatchRequest(name=match.name, seat=0)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "SEAT_TAKEN",
    )
    await expect_error(
        join(match_pb2.JoinMatchRequest(name=match.name, seat=1)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "SEAT_TAKEN",
    )
    e = await expect_error(join(match_pb2.JoinMatchRequest(name=match.name, seat=7)), INVALID)
    assert e.details().startswith("seat:")
    await expect_error(
        join(match_pb2.JoinMatchRequest(name=match.name), metadata=auth("bogus")),
        grpc.StatusCode.UNAUTHENTICATED,
    )
    guest = await join(
        match_pb2.JoinMatchRequest(name=match.name, display_name="ana", accept_chosen_seed=True),
        timeout=CALL_TIMEOUT,
    )
    assert guest.seat == 2 and guest.seat_token and guest.match.seats[2].player == "ana"
    await expect_error(
        join(match_pb2.JoinMatchRequest(name=match.name)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "NO_OPEN_SEAT",
    )

    players = [
        Bot(lobby.address, token, seed=1),
        Bot(lobby.address, reserved_token, seed=2),
        Bot(lobby.address, guest.seat_token, seed=3),
    ]
    runs = [asyncio.create_task(p.run([match.name])) for p in players]
    for p in players:
        while p.welcome is None:
            await asyncio.sleep(0.01)
    assert players[2].welcome is not None
    assert players[2].welcome.principal == f"{match.name}/seats/2"
    shown = await lobby.get(match.name)
    assert [s.connected for s in shown.seats] == [True, True, True, True]
    started = await lobby.start(match.name, host)
    assert started.state == match_pb2.MATCH_STATE_RUNNING
    await expect_error(
        lobby.matches.StartMatch(match_pb2.StartMatchRequest(name=match.name), metadata=auth(host)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "MATCH_STARTED",
    )
    await expect_error(
        join(match_pb2.JoinMatchRequest(name=match.name), metadata=auth(token)),
        grpc.StatusCode.FAILED_PRECONDITION,
    )
    await asyncio.wait_for(asyncio.gather(*runs), 60)
    for seat, p in enumerate(players):
        assert [m.match_started.seat for m in p.messages if m.HasField("match_started")] == [seat]
    replay = await lobby.replay(match.name)
    assert list(replay.players) == [bot_id, reserved_id, "ana", "cpu:medium"]


async def test_cancel_waiting_and_running(lobby: Lobby) -> None:
    waiting, host = await lobby.create("block", [OPEN] * 4)
    cancelled = await lobby.matches.CancelMatch(
        match_pb2.CancelMatchRequest(name=waiting.name, reason="nobody came"),
        metadata=auth(host),
        timeout=CALL_TIMEOUT,
    )
    assert cancelled.match.state == match_pb2.MATCH_STATE_FINISHED
    assert cancelled.match.outcome.termination == game_pb2.TERMINATION_CANCELLED
    assert cancelled.match.outcome.reason == "nobody came"
    await expect_error(
        lobby.matches.GetReplay(match_pb2.GetReplayRequest(name=waiting.name)),
        grpc.StatusCode.NOT_FOUND,
        "REPLAY_NOT_FOUND",
    )
    watched = await watch(lobby, waiting.name, 10)
    assert watched[-1].HasField("match_ended")
    assert watched[-1].match_ended.outcome.termination == game_pb2.TERMINATION_CANCELLED
    # the match is over: its host token was revoked with it
    revoked = await expect_error(
        lobby.matches.StartMatch(
            match_pb2.StartMatchRequest(name=waiting.name), metadata=auth(host)
        ),
        grpc.StatusCode.FAILED_PRECONDITION,
        "MATCH_FINISHED",
    )
    assert revoked.details() == f"authorization: this token was revoked: {waiting.name} is over"

    bot_id, token = await lobby.register("cancel")
    running, host = await lobby.create("block", [bot_seat(bot_id)] + [cpu_seat()] * 3)
    bot = Bot(lobby.address, token, chooser=lambda b, d: None)  # keeps the match waiting on it
    run = asyncio.create_task(bot.run([running.name]))
    while bot.welcome is None:
        await asyncio.sleep(0.01)
    await lobby.start(running.name, host)
    while not bot.decisions:
        await asyncio.sleep(0.01)
    await expect_error(
        lobby.matches.GetReplay(match_pb2.GetReplayRequest(name=running.name)),
        grpc.StatusCode.FAILED_PRECONDITION,
        "MATCH_NOT_FINISHED",
    )
    done = await lobby.matches.CancelMatch(
        match_pb2.CancelMatchRequest(name=running.name), metadata=auth(host), timeout=CALL_TIMEOUT
    )
    assert done.match.outcome.termination == game_pb2.TERMINATION_CANCELLED
    await asyncio.wait_for(run, 10)
    assert bot.ended[running.name].outcome.termination == game_pb2.TERMINATION_CANCELLED
    replay = await lobby.replay(running.name)  # verified: every event up to the cancel
    assert replay.outcome is not None and replay.outcome.termination is Termination.CANCELLED


async def test_list_matches_pages_and_filters(lobby: Lobby) -> None:
    tag = f"t{uuid.uuid4().hex[:8]}"
    names = []
    for _ in range(5):
        match, _ = await lobby.create("block", [OPEN] * 4, tags=[tag])
        names.append(match.name)
    hidden, _ = await lobby.create("block", [OPEN] * 4, tags=[tag], private=True)
    finished, fhost = await lobby.create(
        "block", [cpu_seat()] * 4, overrides=["target=5"], tags=[tag]
    )
    await lobby.start(finished.name, fhost)
    for _ in range(400):
        if (await lobby.get(finished.name)).state == match_pb2.MATCH_STATE_FINISHED:
            break
        await asyncio.sleep(0.05)

    seen: list[str] = []
    token = ""
    for _ in range(10):
        page = await lobby.matches.ListMatches(
            match_pb2.ListMatchesRequest(page_size=2, tag=tag, page_token=token),
            timeout=CALL_TIMEOUT,
        )
        assert len(page.matches) <= 2
        seen += [m.name for m in page.matches]
        token = page.next_page_token
        if not token:
            break
    assert len(seen) == len(set(seen)) == 6
    assert set(seen) == {*names, finished.name} and hidden.name not in seen
    times = [(await lobby.get(n)).create_time.ToNanoseconds() for n in seen]
    assert times == sorted(times, reverse=True), "newest first"

    waiting = await lobby.matches.ListMatches(
        match_pb2.ListMatchesRequest(tag=tag, state=match_pb2.MATCH_STATE_WAITING),
        timeout=CALL_TIMEOUT,
    )
    assert {m.name for m in waiting.matches} == set(names)
    done = await lobby.matches.ListMatches(
        match_pb2.ListMatchesRequest(tag=tag, state=match_pb2.MATCH_STATE_FINISHED),
        timeout=CALL_TIMEOUT,
    )
    assert [m.name for m in done.matches] == [finished.name]
    assert done.matches[0].outcome.termination == game_pb2.TERMINATION_NORMAL
    private = await lobby.get(hidden.name)  # reachable by name
    assert private.settings.visibility == match_pb2.VISIBILITY_PRIVATE

    e = await expect_error(
        lobby.matches.ListMatches(match_pb2.ListMatchesRequest(page_token="garbage!")), INVALID
    )
    assert e.details().startswith("page_token:")
    await expect_error(
        lobby.matches.ListMatches(match_pb2.ListMatchesRequest(page_size=-1)), INVALID
    )


async def test_oversized_request_is_resource_exhausted(lobby: Lobby) -> None:
    huge = match_pb2.CreateMatchRequest(preset="block", overrides=["x" * (8 << 20)])
    await expect_error(lobby.matches.CreateMatch(huge), grpc.StatusCode.RESOURCE_EXHAUSTED)


async def test_health_and_reflection(lobby: Lobby) -> None:
    health = health_pb2_grpc.HealthStub(lobby.channel)
    for service in ("", "capicua.v1.PlayService", "capicua.v1.MatchService"):
        response = await health.Check(
            health_pb2.HealthCheckRequest(service=service), timeout=CALL_TIMEOUT
        )
        assert response.status == health_pb2.HealthCheckResponse.SERVING
    stub = reflection_pb2_grpc.ServerReflectionStub(lobby.channel)

    async def ask() -> reflection_pb2.ServerReflectionResponse:
        async for response in stub.ServerReflectionInfo(
            iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=CALL_TIMEOUT
        ):
            return response
        raise AssertionError("no reflection response")

    listed = {s.name for s in (await ask()).list_services_response.service}
    assert {"capicua.v1.PlayService", "capicua.v1.MatchService", "grpc.health.v1.Health"} <= listed
