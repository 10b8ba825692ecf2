"""Relayed Play streams (capicua.server.relay): a bot connected to one server process (the
follower) plays the matches another one (the leader) hosts, over real gRPC on loopback.

Two in-process servers. The bot is registered on the leader, and the follower is told its
token digest directly (:func:`known_on`): in the product both read the bots from the
database they share."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import socket
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from capicua.client import Bot as SdkBot
from capicua.client import Session, Summary
from capicua.common.tokens import new_admin_token
from capicua.engine.actions import Action
from capicua.engine.observation import Observation
from capicua.engine.records import Termination
from capicua.server.app import App
from capicua.server.auth import Principal, digest
from capicua.server.relay import Relays
from capicua.v1 import match_pb2, play_pb2
from tests.compliance.client import (
    Bot,
    Chooser,
    Lobby,
    bot_seat,
    check_secrecy,
    check_withdrawals,
    cpu_seat,
    random_choice,
    until,
)
from tests.serverkit import Logs, captured_logs, running, wait_finished

ADMIN = new_admin_token()
SHORT = ["target=15"]  # one or two hands of block dominoes


class First(SdkBot):
    def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        return legal_actions[0]


@pytest.fixture
def logs() -> Iterator[Logs]:
    with captured_logs() as captured:
        yield captured


@dataclass
class Servers:
    leader: App
    leader_lobby: Lobby
    follower: App
    follower_lobby: Lobby

    @property
    def relays(self) -> Relays:
        assert self.follower.relays is not None
        return self.follower.relays

    async def bot(self) -> tuple[str, str]:
        """A bot registered on the leader, known to the follower, relayed to the leader."""
        bot_id, token = await self.leader_lobby.register("relayed", admin=ADMIN)
        known_on(self.follower, bot_id, token)
        self.relays.want({bot_id: frozenset({self.leader.address})})
        return bot_id, token


def known_on(app: App, bot_id: str, token: str) -> None:
    """``app`` knows the bot another server registered, with the same token."""
    app.bots.descriptions[bot_id] = "registered on another server"
    app.bots.set_access(bot_id, ("*",), seeds=True)  # as the tests register them
    app.tokens.add_digest(digest(token), Principal.bot(bot_id))


@asynccontextmanager
async def leader_and_follower(data: Path, leader_relays: bool = False) -> AsyncIterator[Servers]:
    async with (
        running(data, admin_token=ADMIN, relay=leader_relays) as (leader, leader_lobby),
        running(None, relay=True) as (follower, follower_lobby),
    ):
        yield Servers(leader, leader_lobby, follower, follower_lobby)


async def hosted_match(
    lobby: Lobby, bot_id: str, *, admin: str | None = ADMIN, seed: int = 3
) -> match_pb2.Match:
    """A started block match, the bot in seat 0 against three CPUs."""
    seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
    match, host = await lobby.create("block", seats, overrides=SHORT, seed=seed, token=admin)
    return await lobby.start(match.name, host)


def connected(app: App, bot_id: str) -> bool:
    return app.hub.connected(f"bots/{bot_id}")


async def ended_normally(lobby: Lobby, name: str) -> None:
    """The match is over, every turn answered in time, and its replay whole (the engine
    verifies it)."""
    match = await wait_finished(lobby, name, 60)
    assert [(s.timeouts, s.auto_played) for s in match.seats] == [(0, 0)] * 4
    replay = await lobby.replay(name)
    assert replay.outcome is not None and replay.outcome.termination is Termination.NORMAL


async def test_an_sdk_bot_on_the_follower_plays_the_leaders_match(tmp_path: Path) -> None:
    async with leader_and_follower(tmp_path / "leader") as servers:
        bot_id, token = await servers.bot()
        session = Session(
            First(), server=servers.follower.address, token=token, matches=1, ask_forced=True
        )
        run = asyncio.create_task(session.run())
        try:
            leader_streams = servers.leader.hub.streams
            # the bot's Hello reached the leader too
            await until(lambda: getattr(leader_streams.get(f"bots/{bot_id}"), "ask_forced", 0))
            match = await hosted_match(servers.leader_lobby, bot_id)
            summary: Summary = await asyncio.wait_for(run, 60)
        finally:
            run.cancel()
        await ended_normally(servers.leader_lobby, match.name)
        replay = await servers.leader_lobby.replay(match.name)
        assert summary.outcomes == {match.name: replay.outcome}
        assert summary.connections == 1 and not summary.errors
        assert not servers.follower.registry.of_principal(f"bots/{bot_id}")


def held_until_two_matches_ask() -> Chooser:
    """Answers nothing until decisions of two matches are open at once, then answers them
    (and every later one) at random: the two matches' answers cross on the stream."""
    held: list[play_pb2.DecisionRequest] = []
    released = False

    def choose(bot: Bot, decision: play_pb2.DecisionRequest) -> int | None:
        nonlocal released
        if not released and {d.match for d in held} <= {decision.match}:
            held.append(decision)
            return None
        released = True
        for open_request in held:
            bot.answer(open_request, random_choice(bot, open_request))
        held.clear()
        return random_choice(bot, decision)

    return choose


async def test_a_bot_plays_the_leaders_match_and_the_followers_at_once(tmp_path: Path) -> None:
    """Answers reach the server of their match; the bot sees what each sends it, and the
    leader's Welcome and nothing else besides."""
    async with leader_and_follower(tmp_path / "leader") as servers:
        bot_id, token = await servers.bot()
        bot = Bot(servers.follower.address, token, seed=5, chooser=held_until_two_matches_ask())
        follower_match = await hosted_match(servers.follower_lobby, bot_id, admin=None, seed=4)
        run = asyncio.create_task(bot.run(timeout=60))
        try:
            await until(lambda: connected(servers.leader, bot_id), what="the relay")
            leader_match = await hosted_match(servers.leader_lobby, bot_id, seed=4)
            await until(lambda: len(bot.ended) == 2, 60, "both matches' ends")
        finally:
            run.cancel()
        await ended_normally(servers.leader_lobby, leader_match.name)
        await ended_normally(servers.follower_lobby, follower_match.name)
        assert not bot.errors  # no answer went to the wrong server
        for lobby, name in (
            (servers.leader_lobby, leader_match.name),
            (servers.follower_lobby, follower_match.name),
        ):
            replay = await lobby.replay(name)
            assert check_secrecy(bot.by_match[name], [0], replay) > 0
            check_withdrawals(bot.by_match[name])
        kinds = [m.WhichOneof("message") for m in bot.messages]
        assert kinds.count("welcome") == 1 and "error" not in kinds and "stopping" not in kinds


async def test_the_leader_sees_the_bot_leave(tmp_path: Path) -> None:
    """The bot's stream on the follower ends, or the follower no longer relays it: the
    leader sees the bot disconnected."""
    async with leader_and_follower(tmp_path / "leader") as servers:
        bot_id, token = await servers.bot()
        session = Session(First(), server=servers.follower.address, token=token)
        run = asyncio.create_task(session.run())
        await until(lambda: connected(servers.leader, bot_id), what="the relay")
        session.stop()
        await asyncio.wait_for(run, 30)
        await until(lambda: not connected(servers.leader, bot_id), what="the relay's end")

        run = asyncio.create_task(session.run())
        try:
            await until(lambda: connected(servers.leader, bot_id), what="the relay again")
            servers.relays.want({})
            await until(lambda: not connected(servers.leader, bot_id), what="the relay's end")
            assert connected(servers.follower, bot_id)
        finally:
            session.stop()
            await asyncio.wait_for(run, 30)


async def test_a_bot_that_reconnects_to_the_follower_keeps_its_match_on_the_leader(
    tmp_path: Path, logs: Logs
) -> None:
    """A newer stream of the bot on the follower: its relay takes the older one's place at
    the leader (once the older one ended, never the other way round), is sent the pending
    request again, and the match goes on. So does a relay closed and opened at once."""
    async with leader_and_follower(tmp_path / "leader") as servers:
        bot_id, token = await servers.bot()
        silent = Bot(servers.follower.address, token, chooser=lambda bot, decision: None)
        first = asyncio.create_task(silent.run(timeout=60))
        bot = Bot(servers.follower.address, token)
        second: asyncio.Task[None] | None = None
        try:
            await until(lambda: connected(servers.leader, bot_id), what="the relay")
            match = await hosted_match(servers.leader_lobby, bot_id)
            await until(lambda: silent.decisions, what="the first request")
            second = asyncio.create_task(bot.run([match.name], timeout=60))
            await asyncio.wait_for(first, 30)
            assert silent.status_info is not None
            assert silent.status_info.reason == "STREAM_REPLACED"
            await asyncio.wait_for(second, 60)
            await ended_normally(servers.leader_lobby, match.name)
            assert [d.turn_id for d in bot.decisions][:1] == [silent.decisions[0].turn_id]

            third = Bot(servers.follower.address, token)
            second = asyncio.create_task(third.run(timeout=60))
            await until(lambda: len(logs.of("relay_connected")) == 3, what="the third relay")
            servers.relays.want({})
            servers.relays.want({bot_id: frozenset({servers.leader.address})})
            await until(lambda: len(logs.of("relay_connected")) == 4, what="the fourth relay")
            again = await hosted_match(servers.leader_lobby, bot_id)
            await until(lambda: again.name in third.ended, 60, "the match's end")
            await ended_normally(servers.leader_lobby, again.name)
        finally:
            first.cancel()
            if second is not None:
                second.cancel()
        assert not logs.of("relay_stopped") and not bot.errors and not third.errors


async def test_the_relay_outlives_a_leader_restart(tmp_path: Path, logs: Logs) -> None:
    """The leader stops and starts again on its port: the relay waits it out with growing
    delays (its ServerStopping is not the bot's), reconnects, and the bot's next match on
    the leader is played."""
    data = tmp_path / "leader"
    async with leader_and_follower(data) as servers:
        bot_id, token = await servers.bot()
        bot = Bot(servers.follower.address, token)
        run = asyncio.create_task(bot.run(timeout=120))
        try:
            await until(lambda: connected(servers.leader, bot_id), what="the relay")
            port = servers.leader.port
            await servers.leader.shutdown(grace=2)
            await until(lambda: len(logs.of("relay_reconnecting")) >= 4, what="retries")
            delays = [line["seconds"] for line in logs.of("relay_reconnecting")[:4]]
            assert delays == sorted(delays) and len(set(delays)) == 4, delays
            async with running(data, admin_token=ADMIN, port=port) as (leader, lobby):
                await until(lambda: connected(leader, bot_id), what="the relay's return")
                match = await hosted_match(lobby, bot_id)
                await until(lambda: match.name in bot.ended, 60, "the match's end")
                await ended_normally(lobby, match.name)
        finally:
            run.cancel()
        assert connected(servers.follower, bot_id) and bot.status is None  # never cut
        kinds = [m.WhichOneof("message") for m in bot.messages]
        assert kinds.count("welcome") == 1 and "stopping" not in kinds
        assert [line["bot"] for line in logs.of("relay_connected")] == [f"bots/{bot_id}"] * 2


async def test_a_token_the_leader_does_not_know_stops_the_relay(tmp_path: Path, logs: Logs) -> None:
    """Logged once, never retried; the follower's own matches go on."""
    async with leader_and_follower(tmp_path / "leader") as servers:
        bot_id, token = await servers.follower_lobby.register("stranger")
        servers.relays.want({bot_id: frozenset({servers.leader.address})})
        bot = Bot(servers.follower.address, token)
        run = asyncio.create_task(bot.run(timeout=60))
        try:
            await until(lambda: logs.of("relay_stopped"), what="the relay's refusal")
            match = await hosted_match(servers.follower_lobby, bot_id, admin=None)
            await until(lambda: match.name in bot.ended, 60, "the match's end")
        finally:
            run.cancel()
        await ended_normally(servers.follower_lobby, match.name)
        stopped = logs.one("relay_stopped")
        assert stopped["level"] == "warning" and stopped["code"] == "UNAUTHENTICATED"
        assert (stopped["bot"], stopped["leader"]) == (f"bots/{bot_id}", servers.leader.address)
        assert not logs.of("relay_reconnecting") and not logs.of("relay_connected")
        assert not bot.errors and bot.status is None


async def test_a_relayed_stream_is_not_relayed_back(tmp_path: Path, logs: Logs) -> None:
    """Each server would relay the bot to the other: the leader does not relay the stream
    the follower opened for it (it would replace the bot's own stream on the follower)."""
    async with leader_and_follower(tmp_path / "leader", leader_relays=True) as servers:
        bot_id, token = await servers.bot()
        assert servers.leader.relays is not None
        servers.leader.relays.want({bot_id: frozenset({servers.follower.address})})
        session = Session(First(), server=servers.follower.address, token=token, matches=1)
        run = asyncio.create_task(session.run())
        try:
            await until(lambda: connected(servers.leader, bot_id), what="the relay")
            match = await hosted_match(servers.leader_lobby, bot_id)
            summary = await asyncio.wait_for(run, 60)
        finally:
            run.cancel()
        await ended_normally(servers.leader_lobby, match.name)
        assert list(summary.outcomes) == [match.name] and summary.connections == 1
        assert [line["leader"] for line in logs.of("relay_connected")] == [servers.leader.address]


async def test_a_relay_to_a_leader_that_is_gone_leaves_no_task_behind(
    logs: Logs, caplog: pytest.LogCaptureFixture
) -> None:
    """A relay whose leader does not answer (a killed process's address) retries; every
    attempt's stream ends whole, with nothing of it left waiting on the loop. (grpc leaves
    the task that feeds a call its requests pending when the call fails on its own; it was
    then garbage-collected pending, which wrote 'Task was destroyed but it is pending!'
    and an aclose() error into the server's JSON log at each attempt.)"""
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        gone = f"127.0.0.1:{probe.getsockname()[1]}"
    async with running(None, relay=True) as (follower, lobby):
        relays = follower.relays
        assert relays is not None
        bot_id, token = await lobby.register("orphan")
        relays.want({bot_id: frozenset({gone})})
        bot = Bot(follower.address, token)
        run = asyncio.create_task(bot.run(timeout=60))
        try:
            await until(lambda: len(logs.of("relay_reconnecting")) >= 3, what="retries")
            relays.want({})
            await until(lambda: not relays._tasks, what="the relay's end")
        finally:
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
        gc.collect()  # a task left pending and unreferenced is reported as it is collected
        await asyncio.sleep(0)  # (and a generator's aclose() runs as a task)
        assert not [t for t in asyncio.all_tasks() if _feeds_a_relay(t)]
    assert all("UNAVAILABLE" in line["why"] for line in logs.of("relay_reconnecting"))
    errors = [r.getMessage() for r in caplog.records if r.name == "asyncio"]
    assert not errors


def _feeds_a_relay(task: asyncio.Task[object]) -> bool:
    """Whether ``task`` is grpc's, still feeding a relay's call its requests."""
    frame = getattr(task.get_coro(), "cr_frame", None)
    fed = None if frame is None else frame.f_locals.get("request_iterator")
    return not task.done() and getattr(fed, "__name__", None) == "_once_welcomed"
