"""The check's world: servers of its own, the bot under check (its process behind a proxy,
or a remote bot), and the lobby calls that set its matches up.

Nothing here knows the rows (:mod:`.rows`); it gives them servers to start, stop, kill and
restart, a bot process per row with ``CAPICUA_SERVER`` at that row's proxy, matches
against CPU seats, and ways to wait for what the bot or the server does.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import subprocess
import uuid
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from capicua.client.launch import Launched, LaunchError, launch_server, new_admin_token
from capicua.client.lobby import Lobby, LobbyError
from capicua.common.errors import CapicuaError
from capicua.v1 import match_pb2, play_pb2

from ..store import termination_name
from ..supervisor import bot_env as supervisor_bot_env
from ..supervisor import log_tail, spawn, stop_process
from .proxy import Faults, Proxy
from .record import Recorder

T = TypeVar("T")

#: Seconds a lobby call may take.
RPC_TIMEOUT_S = 15.0
#: Seconds the server may take to print its address.
START_TIMEOUT_S = 30.0
#: Seconds a stopping server gets to finish its streams (its --grace).
GRACE_S = 2.0

#: Tokens a bot could take instead of the one it is given (the check's servers are
#: plaintext, and a bot is no admin: :func:`~capicua.arena.supervisor.bot_env` drops those).
_OTHER_TOKENS = ("CAPICUA_BOT_TOKEN", "CAPICUA_SEAT_TOKEN")


class CheckError(CapicuaError):
    """The check cannot run as asked (a command that does not exist, no server): one line,
    exit code 2."""


class RowFailed(Exception):
    """A row's verdict: the bot did something wrong, said in one line."""


class SetupFailed(Exception):
    """A row could not make the situation it names (the check's fault or the server's, not
    the bot's), said in one line."""


class LocalServer:
    """A ``capicua serve`` of the check's own: loopback, its own ``--data``, its log in
    ``log``, an admin token made for it (so it may register bots and reserve them). ``suspend``:
    ``--on-stop suspend``, so that a graceful stop keeps its running matches for the
    restart."""

    def __init__(self, data: Path, log: Path, *, suspend: bool = False) -> None:
        self.data = data
        self.log = log
        self.suspend = suspend
        self.admin_token = new_admin_token()
        self.address = ""
        self.lobby = Lobby("", timeout=RPC_TIMEOUT_S)
        self._launched: Launched | None = None

    async def start(self, port: int = 0) -> str:
        """Start it (on ``port``, 0: a free one); returns its address."""
        args = ["--host", "127.0.0.1", "--cpu-workers", "1", "--log-level", "warning"]
        args += ["--grace", str(GRACE_S)]
        if self.suspend:
            args += ["--on-stop", "suspend"]
        if port:
            args += ["--port", str(port)]  # after launch_server's --port 0: the last one wins
        self.data.mkdir(parents=True, exist_ok=True)
        try:
            self._launched = await asyncio.to_thread(
                launch_server,
                args,
                data=self.data,
                admin_token=self.admin_token,
                log=self.log,
                timeout=START_TIMEOUT_S,
            )
        except LaunchError as e:
            raise CheckError(f"the check's own server did not start: {e}") from None
        self.address = self._launched.address
        # the same Lobby object on a new channel: the matches created with it (Created.lobby)
        # are followed through a restart
        await self.lobby.close()
        self.lobby.address, self.lobby.token = self.address, self.admin_token
        return self.address

    @property
    def port(self) -> int:
        return int(self.address.rsplit(":", 1)[1])

    async def stop(self, *, kill: bool = False) -> None:
        """A graceful stop (SIGTERM), or SIGKILL to its process group. SIGTERM goes to the
        server alone, which stops its CPU workers itself: sent to the whole group it kills
        them too, and a CPU decision in flight then cancels its match, even with
        ``--on-stop suspend`` (the server's bug, not the bot's)."""
        launched = self._launched
        if launched is None:
            return
        pid = launched.process.pid
        with contextlib.suppress(ProcessLookupError, PermissionError):
            if kill:
                os.killpg(pid, signal.SIGKILL)
            else:
                os.kill(pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            await asyncio.to_thread(launched.process.wait, GRACE_S + 10.0)
        await launched.aclose(grace=5.0)  # reaps it (stops it, had it not stopped)
        self._launched = None

    async def restart(self) -> str:
        """Start it again on the same ``--data`` and port (another port if that one was
        taken meanwhile: the bot reaches it through the proxy either way)."""
        try:
            return await self.start(self.port)
        except CheckError:
            return await self.start()

    async def close(self) -> None:
        await self.lobby.close()
        await self.stop()


def bot_env(address: str, token: str) -> dict[str, str]:
    """The environment of a bot process: this one's, pointed at ``address`` with ``token``
    (the variables every client of docs/writing-a-bot.md reads)."""
    env = supervisor_bot_env(address, token, plaintext=True)
    for name in _OTHER_TOKENS:
        env.pop(name, None)
    return env


@dataclass
class Created:
    """A match the check created."""

    name: str
    host_token: str
    lobby: Lobby
    bot_seats: tuple[int, ...]


@dataclass
class Subject:
    """The bot under check in one row: its id on the server, and (local) its process, the
    proxy it talks to and what that saw. A remote bot has only its id."""

    bot_id: str
    server: LocalServer | None = None  # the server it plays on (local)
    token: str = ""  # the token its process was given (local)
    lobby: Lobby | None = None  # who creates its matches
    recorder: Recorder = field(default_factory=Recorder)
    proxy: Proxy | None = None
    process: asyncio.subprocess.Process | None = None
    log: Path | None = None
    created: list[Created] = field(default_factory=list)
    # what the row did to it last ("STALE_TURN", "the server stopped"), for the verdict
    # when its process exits: set by the row once the bot has been sent it
    episode: str = ""
    _exit: asyncio.Task[int] | None = None

    @property
    def local(self) -> bool:
        return self.server is not None

    @property
    def exited(self) -> int | None:
        """The exit code of its process, once it ended."""
        return self.process.returncode if self.process is not None else None

    async def launch(
        self, argv: Sequence[str], token: str, *, cwd: Path, log: Path, faults: Faults | None
    ) -> None:
        """Start a proxy in front of its server and the bot's command behind it, given the
        proxy's stand-in for ``token`` (the real one stays in this process)."""
        assert self.server is not None
        self.log, self.token = log, token
        self.proxy = Proxy(self.server.address, self.recorder, token, faults)
        address = await self.proxy.start()
        env = bot_env(address, self.proxy.stand_in)
        try:
            self.process = await spawn(argv, env=env, cwd=cwd, log=log)
        except CapicuaError as e:
            raise CheckError(str(e)) from None
        self._exit = asyncio.ensure_future(self.process.wait())
        # an exit wakes every wait on the recorder: a row never waits for a dead bot
        self._exit.add_done_callback(lambda _: self.recorder.changed())

    def tail(self) -> str:
        """The last line of its log, for a verdict ("" without one)."""
        if self.log is None:
            return ""
        line = log_tail(self.log, 1)
        return f" (its log: {line[:200]})" if line else ""

    def exit_failure(self, during: str) -> RowFailed | None:
        """RowFailed if its process has exited: after what (the first error, withdrawal,
        MatchEnded or ServerStopping it was sent after its last answer, the likeliest
        cause; else what the row did to it last), else ``during`` what."""
        code = self.exited
        if code is None:
            return None
        cause = self.recorder.news_since_last_answer() or self.episode
        when = f"after {cause}" if cause else during
        return RowFailed(f"its process exited with code {code} {when}{self.tail()}")

    async def close(self) -> None:
        """Stop its process and proxy; cancel its matches that are not over. Each step is
        taken whatever the others did: nothing the check started may outlive it."""
        for step in (self._stop_process, self._close_proxy, self._cancel_matches):
            with contextlib.suppress(Exception):
                await step()

    async def _stop_process(self) -> None:
        if self.process is not None:
            await stop_process(self.process)
        if self._exit is not None:
            self._exit.cancel()

    async def _close_proxy(self) -> None:
        if self.proxy is not None:
            await self.proxy.close()

    async def _cancel_matches(self) -> None:
        for created in self.created:
            with contextlib.suppress(LobbyError):
                await created.lobby.cancel_match(
                    created.name, "capicua bot check: row over", token=created.host_token
                )

    # -- matches ---------------------------------------------------------------------------

    async def create(
        self,
        preset: str,
        seats: Sequence[match_pb2.SeatSpec],
        *,
        overrides: Sequence[str] = (),
        seed: int | None = None,
        timer_ms: int = 0,
        token: str | None = None,
    ) -> Created:
        """A waiting match of ``preset`` with these seats (:func:`seats`); ``token``:
        create it as that (default: the lobby's own)."""
        lobby = self._lobby()
        request = match_pb2.CreateMatchRequest(
            preset=preset,
            overrides=list(overrides),
            seats=list(seats),
            settings=match_pb2.MatchSettings(
                turn_timer_ms=timer_ms,
                on_timeout=match_pb2.TIMEOUT_POLICY_AUTO_PLAY,
                visibility=match_pb2.VISIBILITY_PRIVATE,
                tags=["capicua-bot-check"],
            ),
            request_id=str(uuid.uuid4()),
        )
        if seed is not None:
            request.seed = seed
        reply = await lobby.create_match(request, token=token)
        mine = tuple(
            i
            for i, s in enumerate(seats)
            if s.kind == match_pb2.SEAT_KIND_OPEN
            or (s.kind == match_pb2.SEAT_KIND_BOT and s.bot_id == self.bot_id)
        )
        created = Created(reply.match.name, reply.host_token, lobby, mine)
        self.created.append(created)
        return created

    def seats(self, count: int, mine: Sequence[int]) -> list[match_pb2.SeatSpec]:
        """``count`` seats: ``mine`` reserved for the bot, Easy CPUs elsewhere."""
        return [
            match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_BOT, bot_id=self.bot_id)
            if s in mine
            else match_pb2.SeatSpec(
                kind=match_pb2.SEAT_KIND_CPU, cpu_level=match_pb2.CPU_LEVEL_EASY
            )
            for s in range(count)
        ]

    def _lobby(self) -> Lobby:
        if self.lobby is not None:
            return self.lobby
        assert self.server is not None
        return self.server.lobby

    async def race(self, awaitable: Awaitable[T], during: str) -> T:
        """``awaitable``'s result; RowFailed at once if the bot's process exits first
        (``during`` says when, for the verdict)."""
        task = asyncio.ensure_future(awaitable)
        task.add_done_callback(lambda _: self.recorder.changed())
        try:
            await self.recorder.until(lambda: task.done() or self.exited is not None)
        finally:
            if not task.done():
                task.cancel()
        if task.done() and not task.cancelled():
            return task.result()
        failure = self.exit_failure(during)
        assert failure is not None
        raise failure

    async def start(self, created: Created) -> None:
        """Start ``created`` once the bot is connected to it."""
        await self.race(self.connected(created), f"before {created.name} started")
        await created.lobby.start_match(created.name, token=created.host_token)

    async def connected(self, created: Created) -> None:
        """Until the server says every seat of the bot in ``created`` is connected (a
        spectator's match updates: no polling)."""
        stream = created.lobby.watch_match(created.name, match_updates=True)
        try:
            async for message in stream:
                if message.HasField("match") and all(
                    s.connected for s in message.match.seats if s.seat in created.bot_seats
                ):
                    return
        finally:
            await stream.aclose()

    async def finished(self, created: Created) -> match_pb2.Match:
        """The match's record once it is over; RowFailed at once if the bot's process exits
        first."""
        await self.race(_follow(created), f"while playing {created.name}")
        return await created.lobby.get_match(created.name)


async def _follow(created: Created) -> None:
    """Until ``created`` ends, as a spectator sees it."""
    with contextlib.suppress(LobbyError):
        async for message in created.lobby.watch_match(created.name):
            if message.HasField("match_ended"):
                return
    while (await created.lobby.get_match(created.name)).state != match_pb2.MATCH_STATE_FINISHED:
        await asyncio.sleep(0.2)  # the spectator stream broke (a restart): ask now and then


def unique_bot_id(prefix: str) -> str:
    """A bot id nobody holds yet: the row's name and random hex."""
    return f"check-{prefix}-{secrets.token_hex(4)}"[:64]


async def register(server: LocalServer, prefix: str) -> tuple[str, str]:
    """Register a new bot on the check's own server; returns (bot_id, token)."""
    bot_id = unique_bot_id(prefix)
    reply = await server.lobby.register_bot(
        play_pb2.RegisterBotRequest(bot_id=bot_id, description="capicua bot check")
    )
    return bot_id, reply.token


def termination(match: match_pb2.Match) -> str:
    """``normal``, ``cancelled``...: how a finished match ended."""
    return termination_name(match.outcome.termination)
