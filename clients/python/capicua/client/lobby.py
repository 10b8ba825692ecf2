"""The lobby of a capicua server, spoken from Python: create, join, start, watch, list and
cancel matches, register bots.

:class:`Lobby` is the protocol core (``grpc.aio``: use it from async code); :class:`SyncLobby`
is a thin blocking façade over it for scripts and command lines (it runs a :class:`Lobby`
on an event loop of its own, in a thread). Both take and return the protocol's own
messages (``capicua.v1.match_pb2``, ``play_pb2``), the full control the ``.proto`` files
document, and turn a refusal into one exception with the server's reason::

    async with Lobby("127.0.0.1:50051") as lobby:
        created = await lobby.create_match(match_pb2.CreateMatchRequest(preset="block"))
        ...

    with SyncLobby("127.0.0.1:50051", token=host_token) as lobby:
        lobby.start_match(name)

Errors: :class:`LobbyError` (``code``, ``reason``, ``details``, ``metadata`` from the
``ErrorInfo`` the server attaches); :class:`ServerUnavailable` when the server cannot be
reached (worth retrying); :class:`TokenRefused` for UNAUTHENTICATED and PERMISSION_DENIED
(retrying will not help).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from types import TracebackType
from typing import Any, TypeVar

import grpc
from google.rpc import error_details_pb2, status_pb2

from capicua.common.channel import ClientTLS, aio_channel, bearer, tls_hint
from capicua.v1 import (
    ladder_pb2,
    ladder_pb2_grpc,
    match_pb2,
    match_pb2_grpc,
    play_pb2,
    play_pb2_grpc,
)

from .bot import ClientError

Traceback = TracebackType | None

__all__ = [
    "Lobby",
    "LobbyError",
    "ServerUnavailable",
    "SyncLobby",
    "TokenRefused",
    "error_info",
]

T = TypeVar("T")

#: Seconds a unary lobby call may take before it fails (DEADLINE_EXCEEDED).
TIMEOUT_S = 10.0
#: What ListMatches is asked per page.
PAGE_SIZE = 200


class LobbyError(ClientError):
    """The server refused a lobby call, or could not be reached."""

    def __init__(
        self,
        code: grpc.StatusCode,
        details: str,
        reason: str = "",
        metadata: dict[str, str] | None = None,
        text: str | None = None,
        rpc_error: grpc.RpcError | None = None,
    ) -> None:
        super().__init__(text or f"{code.name}: {details}")
        self.code = code
        self.details = details
        self.reason = reason or code.name  # the ErrorInfo reason (MATCH_NOT_FOUND, ...)
        self.metadata = metadata or {}  # the ErrorInfo metadata (field, match, ...)
        # the failed call itself (None when no call failed: a channel that never connected),
        # for what the fields above leave out: its trailers, the ErrorInfo's domain
        self.rpc_error = rpc_error


class ServerUnavailable(LobbyError):
    """The server could not be reached, or did not answer in time: retrying may help."""


class TokenRefused(LobbyError):
    """UNAUTHENTICATED or PERMISSION_DENIED: the token is unknown, revoked, or may not do
    this. Retrying will not help."""


def error_info(status: status_pb2.Status) -> tuple[str, dict[str, str]]:
    """The ``ErrorInfo`` reason and metadata of a ``google.rpc.Status`` ("" and {} if it
    carries none)."""
    for detail in status.details:
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info):
            return info.reason, dict(info.metadata)
    return "", {}


def lobby_error(error: grpc.RpcError, address: str, tls: ClientTLS | None = None) -> LobbyError:
    """One exception for a failed call, of the class its status code calls for."""
    code: grpc.StatusCode = error.code()
    details: str = error.details() or ""
    reason, metadata = "", dict[str, str]()
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            reason, metadata = error_info(status_pb2.Status.FromString(value))
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        hint = tls_hint(details, tls)
        text = f"cannot reach a capicua server at {address} ({details}){hint}"
        return ServerUnavailable(code, details, reason, metadata, text, error)
    if code in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        return TokenRefused(code, details, reason, metadata, rpc_error=error)
    return LobbyError(code, details, reason, metadata, rpc_error=error)


class Lobby:
    """The lobby of the server at ``address`` (``HOST:PORT``), over one channel.

    ``token`` is sent with every call (a bot's, a host's or the admin's token); a call's own
    ``token=`` replaces it (``""``: that call goes without one). ``tls``: connect over TLS
    (``capicua.common.channel.client_tls``)."""

    def __init__(
        self,
        address: str,
        *,
        token: str | None = None,
        tls: ClientTLS | None = None,
        timeout: float = TIMEOUT_S,
    ) -> None:
        self.address = address
        self.token = token
        self.tls = tls
        self.timeout = timeout
        self._channel: Any = None

    # -- the channel -----------------------------------------------------------------------

    @property
    def channel(self) -> Any:
        """The grpc.aio channel, made on first use (on the event loop that uses it)."""
        if self._channel is None:
            self._channel = aio_channel(self.address, self.tls)
        return self._channel

    @property
    def matches(self) -> match_pb2_grpc.MatchServiceStub:
        """The raw MatchService stub, for what this class does not wrap."""
        return match_pb2_grpc.MatchServiceStub(self.channel)

    @property
    def play(self) -> play_pb2_grpc.PlayServiceStub:
        """The raw PlayService stub (the Play stream is :class:`~capicua.client.Session`'s)."""
        return play_pb2_grpc.PlayServiceStub(self.channel)

    @property
    def ladder_service(self) -> ladder_pb2_grpc.LadderServiceStub:
        """The raw LadderService stub."""
        return ladder_pb2_grpc.LadderServiceStub(self.channel)

    async def wait_ready(self, timeout: float | None = None, *, forever: bool = False) -> None:
        """Wait until the channel is connected (ServerUnavailable after ``timeout``, default
        the lobby's; never with ``forever``)."""
        try:
            limit = None if forever else timeout or self.timeout
            await asyncio.wait_for(self.channel.channel_ready(), limit)
        except TimeoutError:
            raise ServerUnavailable(
                grpc.StatusCode.UNAVAILABLE,
                "no connection",
                text=f"cannot reach a capicua server at {self.address}",
            ) from None

    async def close(self) -> None:
        if self._channel is not None:
            channel, self._channel = self._channel, None
            await channel.close()

    async def __aenter__(self) -> Lobby:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: Traceback
    ) -> None:
        await self.close()

    async def _call(
        self, method: Callable[..., Awaitable[T]], request: Any, token: str | None
    ) -> T:
        try:
            return await method(
                request,
                metadata=bearer(self.token if token is None else token),
                timeout=self.timeout,
            )
        except grpc.RpcError as e:
            raise lobby_error(e, self.address, self.tls) from None

    # -- rulesets and matches --------------------------------------------------------------

    async def list_rulesets(self, *, token: str | None = None) -> match_pb2.ListRulesetsResponse:
        return await self._call(self.matches.ListRulesets, match_pb2.ListRulesetsRequest(), token)

    async def get_ruleset(
        self, request: match_pb2.GetRulesetRequest, *, token: str | None = None
    ) -> match_pb2.GetRulesetResponse:
        return await self._call(self.matches.GetRuleset, request, token)

    async def create_match(
        self, request: match_pb2.CreateMatchRequest, *, token: str | None = None
    ) -> match_pb2.CreateMatchResponse:
        return await self._call(self.matches.CreateMatch, request, token)

    async def join_match(
        self, request: match_pb2.JoinMatchRequest, *, token: str | None = None
    ) -> match_pb2.JoinMatchResponse:
        return await self._call(self.matches.JoinMatch, request, token)

    async def start_match(self, name: str, *, token: str | None = None) -> match_pb2.Match:
        """Start ``name`` (``matches/ID``): its host token or the admin's."""
        request = match_pb2.StartMatchRequest(name=name)
        response: match_pb2.StartMatchResponse
        response = await self._call(self.matches.StartMatch, request, token)
        return response.match

    async def cancel_match(
        self, name: str, reason: str = "", *, token: str | None = None
    ) -> match_pb2.Match:
        """Cancel ``name`` (``reason`` goes into its outcome): its host token or the admin's."""
        request = match_pb2.CancelMatchRequest(name=name, reason=reason)
        response: match_pb2.CancelMatchResponse
        response = await self._call(self.matches.CancelMatch, request, token)
        return response.match

    async def get_match(self, name: str, *, token: str | None = None) -> match_pb2.Match:
        request = match_pb2.GetMatchRequest(name=name)
        response: match_pb2.GetMatchResponse
        response = await self._call(self.matches.GetMatch, request, token)
        return response.match

    async def list_matches(
        self, request: match_pb2.ListMatchesRequest | None = None, *, token: str | None = None
    ) -> AsyncGenerator[match_pb2.Match, None]:
        """Every match ``request`` selects, page after page."""
        query = match_pb2.ListMatchesRequest()
        if request is not None:
            query.CopyFrom(request)
        query.page_size = query.page_size or PAGE_SIZE
        while True:
            page = await self._call(self.matches.ListMatches, query, token)
            for m in page.matches:
                yield m
            if not page.next_page_token:
                return
            query.page_token = page.next_page_token

    async def get_replay(
        self, name: str, *, token: str | None = None
    ) -> match_pb2.GetReplayResponse:
        request = match_pb2.GetReplayRequest(name=name)
        return await self._call(self.matches.GetReplay, request, token)

    async def watch_match(
        self, name: str, *, match_updates: bool = False, token: str | None = None
    ) -> AsyncGenerator[match_pb2.WatchMatchResponse, None]:
        """The match as a spectator sees it, until it ends (no timeout: a match takes the
        time it takes). ``match_updates``: also its record (``match``) first and at every
        change of its seats or state (a seat taken or connected, the start)."""
        request = match_pb2.WatchMatchRequest(name=name, match_updates=match_updates)
        call = self.matches.WatchMatch(
            request, metadata=bearer(self.token if token is None else token)
        )
        try:
            async for message in call:
                yield message
        except grpc.RpcError as e:
            raise lobby_error(e, self.address, self.tls) from None
        finally:
            call.cancel()

    # -- bots ------------------------------------------------------------------------------

    async def register_bot(
        self, request: play_pb2.RegisterBotRequest, *, token: str | None = None
    ) -> play_pb2.RegisterBotResponse:
        return await self._call(self.play.RegisterBot, request, token)

    async def set_bot_access(
        self, request: play_pb2.SetBotAccessRequest, *, token: str | None = None
    ) -> play_pb2.SetBotAccessResponse:
        return await self._call(self.play.SetBotAccess, request, token)

    # -- ladders ---------------------------------------------------------------------------

    async def list_ladders(self, *, token: str | None = None) -> ladder_pb2.ListLaddersResponse:
        return await self._call(
            self.ladder_service.ListLadders, ladder_pb2.ListLaddersRequest(), token
        )

    async def get_ladder(
        self, name: str, *, token: str | None = None
    ) -> ladder_pb2.GetLadderResponse:
        """``name``: "ladders/{ladder_id}"."""
        request = ladder_pb2.GetLadderRequest(name=name)
        return await self._call(self.ladder_service.GetLadder, request, token)

    async def join_ladder(
        self,
        ladder: str,
        version: str,
        *,
        max_concurrent_matches: int = 1,
        token: str | None = None,
    ) -> ladder_pb2.LadderEntry:
        """Join ``ladder`` ("ladders/{ladder_id}") as the bot of the token, as ``version``
        (a new label starts a new rated entry after the current one), playing at most
        ``max_concurrent_matches`` of its matches at once. They come on the bot's Play
        stream like any other match. Returns the entry."""
        request = ladder_pb2.JoinLadderRequest(
            ladder=ladder, version=version, max_concurrent_matches=max_concurrent_matches
        )
        joined: ladder_pb2.JoinLadderResponse = await self._call(
            self.ladder_service.JoinLadder, request, token
        )
        return joined.entry

    async def leave_ladder(
        self, ladder: str, *, token: str | None = None
    ) -> ladder_pb2.LadderEntry:
        """Leave ``ladder``: no new matches (those in flight finish); results stay."""
        request = ladder_pb2.LeaveLadderRequest(ladder=ladder)
        left: ladder_pb2.LeaveLadderResponse = await self._call(
            self.ladder_service.LeaveLadder, request, token
        )
        return left.entry


class SyncLobby:
    """:class:`Lobby` for code that does not run an event loop: the same calls, blocking.
    It runs its own loop in a thread (made on first use, stopped by :meth:`close`)."""

    def __init__(
        self,
        address: str,
        *,
        token: str | None = None,
        tls: ClientTLS | None = None,
        timeout: float = TIMEOUT_S,
    ) -> None:
        self.lobby = Lobby(address, token=token, tls=tls, timeout=timeout)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> str:
        return self.lobby.address

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._loop is None:
            loop = self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=loop.run_forever, daemon=True)
            self._thread.start()
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def _iterate(self, items: AsyncIterator[T]) -> Iterator[T]:
        sentinel = object()
        pending: list[asyncio.Task[Any]] = []  # the step under way, on the loop

        async def step() -> Any:
            task = asyncio.ensure_future(anext(items, sentinel))
            pending[:] = [task]
            try:
                return await task
            finally:
                pending.clear()

        async def close() -> None:
            # a step still waits when Ctrl-C left the loop above: it ends first (an async
            # generator cannot be closed while it runs), then the stream below
            for task in list(pending):
                task.cancel()
                await asyncio.wait({task})
            aclose = getattr(items, "aclose", None)
            if aclose is not None:
                await aclose()

        try:
            while (item := self._run(step())) is not sentinel:
                yield item
        finally:  # left early (a break, an error, Ctrl-C): the stream below ends too
            if self._loop is not None:
                self._run(close())

    def close(self) -> None:
        if self._loop is not None:
            loop, self._loop = self._loop, None
            asyncio.run_coroutine_threadsafe(self.lobby.close(), loop).result()
            loop.call_soon_threadsafe(loop.stop)
            assert self._thread is not None
            self._thread.join()
            loop.close()

    def __enter__(self) -> SyncLobby:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: Traceback
    ) -> None:
        self.close()

    def list_rulesets(self, *, token: str | None = None) -> match_pb2.ListRulesetsResponse:
        return self._run(self.lobby.list_rulesets(token=token))

    def get_ruleset(
        self, request: match_pb2.GetRulesetRequest, *, token: str | None = None
    ) -> match_pb2.GetRulesetResponse:
        return self._run(self.lobby.get_ruleset(request, token=token))

    def create_match(
        self, request: match_pb2.CreateMatchRequest, *, token: str | None = None
    ) -> match_pb2.CreateMatchResponse:
        return self._run(self.lobby.create_match(request, token=token))

    def join_match(
        self, request: match_pb2.JoinMatchRequest, *, token: str | None = None
    ) -> match_pb2.JoinMatchResponse:
        return self._run(self.lobby.join_match(request, token=token))

    def start_match(self, name: str, *, token: str | None = None) -> match_pb2.Match:
        return self._run(self.lobby.start_match(name, token=token))

    def cancel_match(
        self, name: str, reason: str = "", *, token: str | None = None
    ) -> match_pb2.Match:
        return self._run(self.lobby.cancel_match(name, reason, token=token))

    def get_match(self, name: str, *, token: str | None = None) -> match_pb2.Match:
        return self._run(self.lobby.get_match(name, token=token))

    def list_matches(
        self, request: match_pb2.ListMatchesRequest | None = None, *, token: str | None = None
    ) -> Iterator[match_pb2.Match]:
        return self._iterate(self.lobby.list_matches(request, token=token))

    def get_replay(self, name: str, *, token: str | None = None) -> match_pb2.GetReplayResponse:
        return self._run(self.lobby.get_replay(name, token=token))

    def watch_match(
        self, name: str, *, match_updates: bool = False, token: str | None = None
    ) -> Iterator[match_pb2.WatchMatchResponse]:
        return self._iterate(self.lobby.watch_match(name, match_updates=match_updates, token=token))

    def register_bot(
        self, request: play_pb2.RegisterBotRequest, *, token: str | None = None
    ) -> play_pb2.RegisterBotResponse:
        return self._run(self.lobby.register_bot(request, token=token))

    def set_bot_access(
        self, request: play_pb2.SetBotAccessRequest, *, token: str | None = None
    ) -> play_pb2.SetBotAccessResponse:
        return self._run(self.lobby.set_bot_access(request, token=token))

    def list_ladders(self, *, token: str | None = None) -> ladder_pb2.ListLaddersResponse:
        return self._run(self.lobby.list_ladders(token=token))

    def get_ladder(self, name: str, *, token: str | None = None) -> ladder_pb2.GetLadderResponse:
        return self._run(self.lobby.get_ladder(name, token=token))

    def join_ladder(
        self,
        ladder: str,
        version: str,
        *,
        max_concurrent_matches: int = 1,
        token: str | None = None,
    ) -> ladder_pb2.LadderEntry:
        return self._run(
            self.lobby.join_ladder(
                ladder, version, max_concurrent_matches=max_concurrent_matches, token=token
            )
        )

    def leave_ladder(self, ladder: str, *, token: str | None = None) -> ladder_pb2.LadderEntry:
        return self._run(self.lobby.leave_ladder(ladder, token=token))
