"""The SDK's lobby client (``capicua.client.Lobby``, ``SyncLobby``) and ``launch_server``,
against a real ``capicua serve`` over loopback: every call, and each kind of refusal
arriving as its own exception with the server's reason."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest

from capicua.client import (
    Launched,
    LaunchError,
    Lobby,
    LobbyError,
    ServerUnavailable,
    SyncLobby,
    TokenRefused,
    launch_server,
    new_admin_token,
)
from capicua.client.launch import launch
from capicua.v1 import match_pb2, play_pb2


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launched]:
    where = tmp_path_factory.mktemp("lobby")
    admin = new_admin_token()
    with launch_server(
        ["--cpu-workers", "1"], data=where / "data", admin_token=admin, log=where / "server.log"
    ) as launched:
        yield launched


def _cpus(n: int) -> list[match_pb2.SeatSpec]:
    return [match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_CPU)] * n


async def test_a_match_from_creation_to_its_replay(server: Launched) -> None:
    async with Lobby(server.address) as lobby:
        await lobby.wait_ready()
        rulesets = await lobby.list_rulesets()
        assert "block" in {r.name for r in rulesets.rulesets}
        # A target no match reaches: the match waits on the guest's seat until the cancel.
        # At target 10 a first hand in which all of the guest's moves are forced (the
        # server plays them: no client asks for them) ends the match (0.16% of deals),
        # and the CPUs could finish it before the cancel.
        request = match_pb2.CreateMatchRequest(
            preset="block",
            overrides=["target=100000"],
            seats=[*_cpus(3), match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_OPEN)],
        )
        created = await lobby.create_match(request)
        name, host = created.match.name, created.host_token
        joined = await lobby.join_match(match_pb2.JoinMatchRequest(name=name, display_name="g"))
        assert joined.seat == 3 and joined.seat_token
        # the record comes first, then at each change: here the start
        watching = lobby.watch_match(name, match_updates=True)
        first = await anext(watching)
        assert first.match.state == match_pb2.MATCH_STATE_WAITING
        assert [s.occupied for s in first.match.seats] == [True, True, True, True]
        started = await lobby.start_match(name, token=host)
        assert started.state == match_pb2.MATCH_STATE_RUNNING
        kinds = []
        async for message in watching:
            kinds.append(message.WhichOneof("message"))
            if message.HasField("match"):
                assert message.match.state == match_pb2.MATCH_STATE_RUNNING
                break
        assert kinds[-1] == "match"
        cancelled = await lobby.cancel_match(name, "enough", token=host)
        assert cancelled.outcome.reason == "enough"
        async for message in watching:  # the stream ends with the match
            last = message
        assert last.HasField("match_ended")
        assert (await lobby.get_match(name)).state == match_pb2.MATCH_STATE_FINISHED
        listed = [m.name async for m in lobby.list_matches()]
        assert name in listed
        replay = await lobby.get_replay(name)
        assert replay.replay.ruleset.name == "block"


async def test_each_refusal_is_its_own_exception(server: Launched, tmp_path: Path) -> None:
    async with Lobby(server.address) as lobby:
        with pytest.raises(LobbyError) as missing:
            await lobby.get_match("matches/0123456789abcdef")
        assert missing.value.code == grpc.StatusCode.NOT_FOUND
        assert missing.value.reason == "MATCH_NOT_FOUND"
        with pytest.raises(LobbyError) as bad:
            await lobby.create_match(match_pb2.CreateMatchRequest(preset="no-such-rules"))
        assert bad.value.code == grpc.StatusCode.INVALID_ARGUMENT
        assert bad.value.metadata.get("field") == "preset"
        with pytest.raises(TokenRefused) as refused:
            await lobby.register_bot(play_pb2.RegisterBotRequest(bot_id="x"), token="nope")
        assert refused.value.code == grpc.StatusCode.UNAUTHENTICATED
        # with the admin token it may
        made = await lobby.register_bot(
            play_pb2.RegisterBotRequest(bot_id="lobby-bot"), token=server.admin_token
        )
        assert made.name == "bots/lobby-bot" and made.token
    async with Lobby("127.0.0.1:1", timeout=5) as nowhere:
        with pytest.raises(ServerUnavailable, match="cannot reach a capicua server at 127.0.0.1:1"):
            await nowhere.get_match("matches/0123456789abcdef")


def test_the_sync_facade_makes_the_same_calls(server: Launched) -> None:
    with SyncLobby(server.address, token=server.admin_token) as lobby:
        # an open seat nobody plays, with an hour's timer: the match waits on it
        settings = match_pb2.MatchSettings(turn_timer_ms=3_600_000)
        seats = [match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_OPEN), *_cpus(3)]
        request = match_pb2.CreateMatchRequest(preset="block", seats=seats, settings=settings)
        name = lobby.create_match(request).match.name
        lobby.join_match(match_pb2.JoinMatchRequest(name=name), token="")  # a guest
        assert lobby.get_match(name).state == match_pb2.MATCH_STATE_WAITING
        assert name in [m.name for m in lobby.list_matches()]
        lobby.start_match(name)
        for message in lobby.watch_match(name):
            assert message.HasField("view")
            break  # leaving the stream early closes it
        lobby.cancel_match(name, "seen enough")
        assert lobby.get_match(name).outcome.reason == "seen enough"
        with pytest.raises(LobbyError, match="MATCH_NOT_FOUND|NOT_FOUND"):
            lobby.get_match("matches/0123456789abcdef")


async def test_lobbies_of_many_tasks_share_nothing(server: Launched) -> None:
    """One Lobby used by many tasks at once (one channel, concurrent calls)."""
    async with Lobby(server.address) as lobby:
        request = match_pb2.CreateMatchRequest(preset="block", seats=_cpus(4))
        made = await asyncio.gather(*(lobby.create_match(request) for _ in range(20)))
        assert len({m.match.name for m in made}) == 20
        for m in made:
            await lobby.cancel_match(m.match.name, token=m.host_token)


def test_a_server_that_cannot_start_says_why(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(LaunchError, match="capicua serve did not start") as failed:
        launch_server(data=blocker / "data", log=tmp_path / "server.log")
    assert "cannot open the store" in str(failed.value)


def test_a_child_that_says_nothing_is_stopped(tmp_path: Path) -> None:
    """A command that never prints the line: LaunchError after the timeout, and the child
    is gone (not left running)."""
    script = "import sys, time\nsys.stdout.write('hello\\n'); sys.stdout.flush(); time.sleep(60)"
    with pytest.raises(LaunchError, match="it printed 'hello'"):
        launch(["python3", "-c", script], what="the child", timeout=30)


async def test_watchers_are_told_when_a_seat_connects_and_goes(server: Launched) -> None:
    """What a host or an arena waits for before starting (a bot connected), pushed by the
    server: the record again when the bot's Play stream opens, and when it closes."""
    async with Lobby(server.address, token=server.admin_token) as lobby:
        bot = await lobby.register_bot(play_pb2.RegisterBotRequest(bot_id="watched"))
        bot_seat = match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_BOT, bot_id="watched")
        created = await lobby.create_match(
            match_pb2.CreateMatchRequest(preset="block", seats=[bot_seat, *_cpus(3)])
        )
        watching = lobby.watch_match(created.match.name, match_updates=True)
        assert not (await anext(watching)).match.seats[0].connected
        leave = asyncio.Event()

        async def requests() -> AsyncIterator[play_pb2.PlayRequest]:
            yield play_pb2.PlayRequest(hello=play_pb2.Hello(client="test"))
            await leave.wait()

        play = lobby.play.Play(requests(), metadata=(("authorization", f"Bearer {bot.token}"),))
        assert (await anext(watching)).match.seats[0].connected
        leave.set()
        async for _ in play:
            pass
        assert not (await anext(watching)).match.seats[0].connected
        await lobby.cancel_match(created.match.name)


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="needs Linux's /proc")
def test_the_admin_token_is_in_neither_the_environment_nor_the_command_line(
    server: Launched,
) -> None:
    """launch_server hands the admin token over through a pipe: any process of the user (a
    bot the server's owner runs, say) can read a server's /proc/PID/environ and cmdline.
    (It works: the refusal test above registers a bot with it.)"""
    assert server.admin_token
    for part in ("environ", "cmdline"):
        held = Path(f"/proc/{server.process.pid}/{part}").read_bytes()
        assert server.admin_token.encode() not in held, part
