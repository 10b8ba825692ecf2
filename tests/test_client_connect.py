"""How a bot finds its token and its server: the variable of each kind of token, a token of
the wrong kind refused before connecting, a refusal naming where the token came from, a
bot token from before the prefixes still playing, and a bot that gives up on an address
where no server ever answered (but waits forever for one that did)."""

from __future__ import annotations

import asyncio
import secrets
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from capicua.client import Bot, ClientError, Session
from capicua.common.tokens import Kind, kind_of, new_token
from capicua.engine.actions import Action
from capicua.engine.observation import Observation
from capicua.engine.records import Termination
from capicua.server.app import App, ServerConfig
from capicua.server.auth import digest
from capicua.server.store import Store, StoredBot
from capicua.v1 import match_pb2
from tests.clientkit import CountingBackoff, Proc, capicua_args, until
from tests.compliance.client import OPEN, Lobby, bot_seat, cpu_seat
from tests.serverkit import running

SHORT = ["target=15"]  # one or two hands of block dominoes
NO_TOKENS = {"CAPICUA_TOKEN": "", "CAPICUA_BOT_TOKEN": "", "CAPICUA_SEAT_TOKEN": ""}


class First(Bot):
    def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        return legal_actions[0]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bot(*args: str, env: dict[str, str]) -> Proc:
    return Proc(capicua_args("bot", *args), env={**NO_TOKENS, **env})


async def test_every_token_names_its_kind_and_older_tokens_name_none() -> None:
    async with running(None) as (_, lobby):
        _, bot_token = await lobby.register("kind")
        match, host = await lobby.create("block", [OPEN] * 4)
        joined = await lobby.matches.JoinMatch(
            match_pb2.JoinMatchRequest(name=match.name, accept_chosen_seed=True)
        )
    assert [kind_of(t) for t in (bot_token, host, joined.seat_token)] == [
        Kind.BOT,
        Kind.HOST,
        Kind.SEAT,
    ]
    # a token from before the prefixes: 43 random characters, even if they start "bot_"
    assert kind_of(secrets.token_urlsafe(32)) is None
    assert kind_of("bot_" + secrets.token_urlsafe(32)[4:]) is None
    assert kind_of("an admin's own token") is None


async def test_a_bot_token_from_before_the_prefixes_still_plays(tmp_path: Path) -> None:
    data = tmp_path / "data"
    old = secrets.token_urlsafe(32)  # what RegisterBot issued before the prefixes
    store = Store(data)
    await store.shared.add_bot(StoredBot("old-bot", "", digest(old)), time.time_ns())
    store.close()
    async with running(data) as (_, lobby):
        seats = [bot_seat("old-bot"), cpu_seat(), cpu_seat(), cpu_seat()]
        # a bot from before bot_access lets nobody else reserve it: it creates the match
        match, host = await lobby.create("block", seats, overrides=SHORT, seed=3, token=old)
        await lobby.start(match.name, host)
        session = Session(First(), server=lobby.address, token=old, matches=1)
        summary = await asyncio.wait_for(session.run(), 60)
    assert summary.principal == "bots/old-bot"
    assert summary.outcomes[match.name].termination is Termination.NORMAL


async def test_bots_read_the_variable_of_their_kind_and_say_so() -> None:
    async with running(None) as (app, lobby):
        bot_id, token = await lobby.register("env")
        seats = [bot_seat(bot_id), OPEN, cpu_seat(), cpu_seat()]
        match, host = await lobby.create("block", seats, overrides=SHORT, seed=5)
        joined = await lobby.matches.JoinMatch(
            match_pb2.JoinMatchRequest(name=match.name, accept_chosen_seed=True)
        )
        players = [
            bot("builtin", "easy", "--server", app.address, "--matches", "1",
                env={"CAPICUA_BOT_TOKEN": token}),
            bot("builtin", "easy", "--server", app.address,
                env={"CAPICUA_SEAT_TOKEN": joined.seat_token}),
        ]  # fmt: skip
        try:
            await players[0].wait_for(
                rf"connected to {app.address} as bots/{bot_id} .*token from \$CAPICUA_BOT_TOKEN"
            )
            await players[1].wait_for(rf"as {match.name}/seats/1 .*token from \$CAPICUA_SEAT_TOKEN")
            await lobby.start(match.name, host)
            codes = [await p.wait(60) for p in players]
        finally:
            for p in players:
                p.kill()
    assert codes == [0, 0], "\n".join(p.report() for p in players)


@pytest.mark.parametrize(
    ("env", "line"),
    [
        (
            {"CAPICUA_BOT_TOKEN": "host"},
            "the token from $CAPICUA_BOT_TOKEN is a host token; a bot plays with a bot token",
        ),
        ({"CAPICUA_SEAT_TOKEN": "bot"}, "the token from $CAPICUA_SEAT_TOKEN is a bot token"),
        ({"CAPICUA_BOT_TOKEN": "seat"}, "the token from $CAPICUA_BOT_TOKEN is a seat token"),
        ({"CAPICUA_TOKEN": "host"}, "the token from $CAPICUA_TOKEN is a host token"),
        (
            {"CAPICUA_BOT_TOKEN": "bot", "CAPICUA_SEAT_TOKEN": "seat"},
            "both $CAPICUA_BOT_TOKEN and $CAPICUA_SEAT_TOKEN are set: give --token",
        ),
        ({}, "no token: give --token or set CAPICUA_BOT_TOKEN"),
    ],
)
def test_a_token_of_the_wrong_kind_is_refused_before_connecting(
    env: dict[str, str], line: str
) -> None:
    """Nothing listens at the address: the refusal comes before any connection."""
    address = f"127.0.0.1:{closed_port()}"
    tokens = {name: new_token(Kind(kind)) for name, kind in env.items()}
    p = bot("builtin", "easy", "--server", address, env=tokens)
    assert asyncio.run(p.wait(30)) == 2
    assert p.err[-1].startswith(f"capicua: error: {line}"), p.report()
    assert "Traceback" not in p.stderr and "cannot reach" not in p.stderr


async def test_a_refused_token_names_where_it_came_from() -> None:
    async with running(None) as (app, lobby):
        unknown = new_token(Kind.BOT)  # the right kind, but not this server's
        p = bot("builtin", "easy", "--server", app.address, env={"CAPICUA_BOT_TOKEN": unknown})
        assert await p.wait(30) == 2, p.report()
        q = bot("builtin", "easy", "--server", app.address, "--token", unknown, env={})
        assert await q.wait(30) == 2, q.report()
    assert p.err[-1].startswith(
        f"capicua: error: {app.address}: UNAUTHENTICATED: authorization: unknown token (the "
        "server does not know the token from $CAPICUA_BOT_TOKEN; a bot plays with a bot token"
    ), p.report()
    assert "not retrying" in p.err[-1] and "token from --token" in q.err[-1], q.report()


@pytest.mark.parametrize(
    ("command", "child"),
    [
        (["builtin", "easy"], []),
        (["run", "tests.clientkit:RecordingBot"], []),
        (["stdio"], ["--", sys.executable, "-c", "import sys; sys.stdin.read()"]),
    ],
)
def test_a_bot_gives_up_on_an_address_where_no_server_answered(
    command: list[str], child: list[str]
) -> None:
    address = f"127.0.0.1:{closed_port()}"
    args = [*command, "--server", address, "--connect-timeout", "0.5", *child]
    p = bot(*args, env={"CAPICUA_BOT_TOKEN": new_token(Kind.BOT)})
    assert asyncio.run(p.wait(60)) == 2, p.report()
    assert p.err[-1].startswith(
        f"capicua: error: no capicua server answered at {address} in 0.5 s ("
    ), p.report()
    assert p.err[-1].endswith(
        "); is `capicua serve` running there? (--server or $CAPICUA_SERVER)"
    ), p.report()
    assert "Traceback" not in p.stderr


async def test_the_sdk_gives_up_on_a_silent_address_and_waits_for_one_that_answered(
    tmp_path: Path,
) -> None:
    """A socket that accepts and never speaks gRPC: the session gives up after its bound.
    Once a server has answered, its going away is waited out, however long."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        address = f"127.0.0.1:{silent.getsockname()[1]}"
        session = Session(First(), server=address, token="t", connect_timeout=0.3)
        with pytest.raises(ClientError, match=f"no capicua server answered at {address} in 0.3 s"):
            await asyncio.wait_for(session.run(), 30)

    data = tmp_path / "data"
    async with running(data) as (app, lobby):
        bot_id, token = await lobby.register("patient")
        port = app.port
        backoff = CountingBackoff(initial=0.05, maximum=0.2)
        session = Session(First(), server=app.address, token=token, matches=1, backoff=backoff,
                          connect_timeout=0.3)  # fmt: skip
        run = asyncio.create_task(session.run())
        await until(lambda: session.summary.connections == 1, 20, "the first connection")
    # the session has waited out more than connect_timeout between refused attempts
    await until(lambda: backoff.waited() > 0.3 or run.done(), 20, "retries past connect_timeout")
    assert not run.done(), run.result()
    app = await App.start(ServerConfig(port=port, data=data, cpu_workers=1))
    lobby = Lobby(app.address)
    try:
        await until(lambda: session.summary.connections == 2, 20, "the reconnection")
        seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
        match, host = await lobby.create("block", seats, overrides=SHORT, seed=4)
        await lobby.start(match.name, host)
        summary = await asyncio.wait_for(run, 60)
    finally:
        run.cancel()
        await lobby.close()
        await app.shutdown(grace=2)
    assert summary.outcomes[match.name].termination is Termination.NORMAL
