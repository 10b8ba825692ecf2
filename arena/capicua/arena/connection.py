"""The arena's server: the embedded ``capicua serve`` it starts (unless the tournament
names a server), who the arena is on it, and its lobby calls, whose refusals become
:class:`~capicua.arena.errors.ArenaError`.

The lobby is spoken through the SDK (:class:`capicua.client.Lobby`); the embedded server
is started with :func:`capicua.client.launch_server`."""

from __future__ import annotations

import asyncio
import os
import secrets
import shutil
from collections.abc import Awaitable
from pathlib import Path
from typing import TypeVar

from capicua.client.launch import Launched, LaunchError, launch_server, new_admin_token
from capicua.client.lobby import Lobby, LobbyError, ServerUnavailable, TokenRefused
from capicua.common.channel import ClientTLS, env_tls
from capicua.common.tokens import ADMIN_TOKEN_ENV
from capicua.v1 import match_pb2, play_pb2

from .config import Tournament
from .errors import RESUME, ArenaError
from .supervisor import BotHost

T = TypeVar("T")

#: How long the embedded server may take to print its address.
SERVER_START_TIMEOUT_S = 60.0
RPC_TIMEOUT_S = 30.0


class ServerConnection:
    """The server of one arena run, once :meth:`open`; :meth:`close` stops an embedded one."""

    def __init__(self, tournament: Tournament, out: Path) -> None:
        self.t = tournament
        self.out = out
        self.server: Launched | None = None  # the embedded server, when there is one
        self.address = ""
        self.tls: ClientTLS | None = None
        # The token the arena registers bots with (the admin's, or none) and the one it
        # creates matches with (the admin's, or its own organizer bot's): reserving a bot's
        # seats takes that bot's consent, which the admin has and which the arena's bots
        # give to the organizer.
        self.admin_token: str | None = None
        self.creator_token: str | None = None
        self.organizer = ""  # "bots/x" of the organizer bot, on a shared server without admin
        self.lobby = Lobby("", timeout=RPC_TIMEOUT_S)  # the server's, once connected

    @property
    def log(self) -> Path:
        """Where the embedded server's stderr goes."""
        return self.out / "logs" / "server.log"

    async def open(self) -> None:
        """Connect (starting the embedded server) and say who the arena is."""
        await self._connect()
        await self._identify()

    def bot_id(self, name: str) -> str:
        """The server's id of the tournament's bot ``name``."""
        spec = self.t.bot(name)
        if spec.kind == "remote":
            return spec.target
        if self.t.server is None:
            return name  # the embedded server is new for every run
        return f"{name}-{secrets.token_hex(3)}"[:64]  # a shared server may know the name

    async def _connect(self) -> None:
        if self.t.server is not None:
            self.address = self.t.server
        else:
            self.address = await self._start_server()
        self.tls = self._client_tls()
        self.lobby = Lobby(self.address, tls=self.tls, timeout=RPC_TIMEOUT_S)
        try:
            await self.lobby.wait_ready(RPC_TIMEOUT_S)
        except ServerUnavailable:
            raise ArenaError(f"cannot reach the server at {self.address}") from None

    def _client_tls(self) -> ClientTLS | None:
        """A shared server may use TLS ($CAPICUA_TLS*: docs/tls.md); the embedded one does
        not."""
        return env_tls() if self.t.server is not None else None

    async def _identify(self) -> None:
        """Who the arena is on the server. The embedded server has an admin token made for
        the run; on a shared one ``$CAPICUA_ADMIN_TOKEN`` if set, else the arena registers an
        organizer bot that never plays and creates the matches with its token (its own
        bots let it reserve them; a ``remote:`` bot must let anyone, ``*``)."""
        if self.t.server is not None:
            self.admin_token = os.environ.get(ADMIN_TOKEN_ENV, "").strip() or None
        if self.admin_token is not None:
            self.creator_token = self.admin_token
            return
        reply = await self._register(
            play_pb2.RegisterBotRequest(
                bot_id=f"arena-{secrets.token_hex(6)}",
                description=f"arena {self.t.name}: creates its matches, never plays",
            )
        )
        self.organizer, self.creator_token = reply.name, reply.token

    async def register(self, host: BotHost) -> None:
        """Register a bot of the tournament that the arena starts (sets its token)."""
        reply = await self._register(
            play_pb2.RegisterBotRequest(
                bot_id=host.bot_id,
                description=f"arena {self.t.name}: {host.spec.spec}",
                reservable_by=[self.organizer] if self.organizer else [],
                # the organizer deals each pair's matches from one seed (duplicate deals)
                accept_chosen_seeds=bool(self.organizer),
            )
        )
        host.token = reply.token

    async def _register(self, request: play_pb2.RegisterBotRequest) -> play_pb2.RegisterBotResponse:
        try:
            return await self.lobby.register_bot(request, token=self.admin_token)
        except TokenRefused as e:
            raise ArenaError(
                f"the server at {self.address} refused to register a bot ({e.details}); "
                f"it registers bots for its admin only: set ${ADMIN_TOKEN_ENV} to its "
                "admin token"
            ) from None
        except LobbyError as e:
            raise self.error(e) from None

    async def _start_server(self) -> str:
        data = self.out / "server"
        shutil.rmtree(data, ignore_errors=True)  # the arena's results are its own
        self.admin_token = new_admin_token()
        args = [
            "--turn-timer-ms",
            str(max(50, self.t.time_limit_ms)),
            "--cpu-workers",
            "1",
            "--log-level",
            "warning",
        ]
        try:
            self.server = await asyncio.to_thread(
                launch_server,
                args,
                data=data,
                admin_token=self.admin_token,
                log=self.log,
                cwd=self.out,
                timeout=SERVER_START_TIMEOUT_S,
            )
        except LaunchError as e:
            raise ArenaError(f"the embedded server did not start: {e}") from None
        return self.server.address

    async def get_match(self, name: str) -> match_pb2.Match:
        """The match's record, as :meth:`ask` maps a refusal."""
        return await self.ask(self.lobby.get_match(name))

    async def create_match(
        self, request: match_pb2.CreateMatchRequest
    ) -> match_pb2.CreateMatchResponse:
        """A new match, created with the arena's creator token."""
        return await self.ask(self.lobby.create_match(request, token=self.creator_token))

    async def start_match(self, name: str, host_token: str) -> None:
        """Start match ``name`` as its host."""
        await self.ask(self.lobby.start_match(name, token=host_token))

    async def ask(self, call: Awaitable[T]) -> T:
        """A lobby call's answer; a refusal becomes an ArenaError."""
        try:
            return await call
        except LobbyError as e:
            raise self.error(e) from None

    def error(self, e: LobbyError) -> ArenaError:
        """What a lobby error means for the run."""
        if isinstance(e, ServerUnavailable):
            where = "the embedded server" if self.server is not None else "the server"
            log = f"; see {self.log}" if self.server is not None else ""
            return ArenaError(f"{where} at {self.address} went away ({e.details}){log}; {RESUME}")
        return ArenaError(f"server refused: {e.code.name}: {e.details}")

    async def close(self) -> None:
        """Close the lobby; stop the embedded server and drop its store (the arena's
        results keep everything it held)."""
        await self.lobby.close()
        if self.server is not None:
            await self.server.aclose(grace=8.0)
            # the server's own store only duplicates what the arena keeps
            shutil.rmtree(self.out / "server", ignore_errors=True)
