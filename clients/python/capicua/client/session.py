"""The Play stream of one bot: connect, play many matches at once, reconnect, stop.

A :class:`Session` opens one ``Play`` stream with the bot's token (``authorization: Bearer``),
sends ``Hello``, and hands every message to the match it names. Each match has its own
worker task (:class:`~capicua.client.matchrun.MatchRun`), so the hooks of one match run in
order while matches run side by side: a slow ``choose`` in one match never holds up another.

- **Decisions.** A request is answered once; its answer is remembered, so a request sent
  again (after a reconnect) is answered at once with the same id. After ILLEGAL_ACTION the
  server sends the request again and the bot is asked again. The bot is never asked for a
  request that is over before its turn comes (decisions of a match are taken one at a time,
  in order): one the server withdrew (DecisionWithdrawn), one made obsolete by a newer
  request of the same match, or any once the match ended. A ``choose`` still running when
  its request goes stale is cancelled (async) or its result dropped (threads) when nobody
  will take the answer: the match ended, the server stops, or (a server that does not
  withdraw) a newer request came. When the server withdrew it because it played the turn
  itself (the timer ran out, the seat is auto-played), ``choose`` runs to its end and its
  answer is sent: refused as stale, it is what ends the auto-play, so the seat is waited for
  again from its next turn on. ``Decision.stale`` tells a long ``choose`` to wrap up.
- **One message per decision.** The session asks for CAPABILITY_INCREMENTAL_DECISIONS
  (``incremental=False`` does not): the server then sends a seat's events with its next
  request and leaves out of the request's view what the session holds. A session that asks
  keeps each seat's view (:class:`~capicua.wire.views.SeatView`) and completes every
  request's view, so a bot sees the same full view and observation either way, converted
  once; one that does not converts a request's view only when the bot reads it.
- **Errors in the stream** are logged (ILLEGAL_ACTION with the server's reason) and passed to
  ``on_error``; the stream stays open.
- **How the stream ends** decides what comes next, by the call's status (the lifecycle table
  in docs/protocol.md): OK (a seat token's match ended) stops the session; ABORTED /
  STREAM_REPLACED (another client with the same token took over), FAILED_PRECONDITION /
  MATCH_FINISHED (a seat token of a match that is over), UNAUTHENTICATED, PERMISSION_DENIED,
  INVALID_ARGUMENT and UNIMPLEMENTED stop it with an error; anything else is a drop.
- **Reconnect.** A dropped stream (UNAVAILABLE, SHUTTING_DOWN, a server restart, a network
  cut, SLOW_CONSUMER, INTERNAL) is opened again with exponential backoff (0.1 s doubling up
  to 10 s, with jitter; reset once the server welcomes us). The server keeps the seats until
  their deadlines and sends the pending requests to the new stream. Until a server has
  welcomed the session once, it tries for ``connect_timeout`` seconds (30; 0: forever), then
  ends with a line naming the address: a wrong address fails instead of looking like a bot
  waiting for matches.
- **Tokens.** ``token``, else $CAPICUA_TOKEN (what the arena gives the bots it starts), else
  $CAPICUA_BOT_TOKEN or $CAPICUA_SEAT_TOKEN; a token whose prefix shows it is of another
  kind (a host token, a seat token in $CAPICUA_BOT_TOKEN) is refused before connecting.
- **Stop.** :meth:`Session.stop` (SIGINT/SIGTERM in :func:`run_bot`), or after ``matches``
  matches ended (a seat token holds one match: its end stops the session). A match whose
  MatchEnded has arrived still gets its last hooks (up to 5 s) however the session stops.
- **Transport.** Each stream is opened by the session's ``transport``
  (:class:`~capicua.client.transport.GrpcTransport` to ``server`` unless another is given):
  the SDK's tests give a scripted one, to test all of the above without a server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import grpc
from google.rpc import status_pb2

from capicua.common import interrupt
from capicua.common.backoff import Backoff
from capicua.common.channel import DEFAULT_SERVER, ClientTLS, bearer, env_tls, tls_hint
from capicua.common.errors import CapicuaError
from capicua.common.tokens import Kind, wrong_kind
from capicua.engine.records import Outcome
from capicua.v1 import errors_pb2, play_pb2

from .bot import (
    Bot,
    ClientError,
    PlayError,
    _threads,
    as_bot,
    call_hook,
    overrides,
)
from .lobby import error_info
from .matchrun import MatchRun, SessionLinks
from .transport import GrpcTransport, PlayCall, PlayTransport

__all__ = ["Backoff", "ClientError", "Session", "Summary", "resolve", "run", "run_bot"]

log = logging.getLogger("capicua.client")


def _version() -> str:
    try:
        return metadata.version("capicua")
    except metadata.PackageNotFoundError:  # pragma: no cover - a bare checkout
        return "0+unknown"


#: Where a Play client finds its token when none is given, in order. CAPICUA_TOKEN comes first
#: because it is what the arena hands each bot process it starts (over whatever the user's
#: shell exported); the other two are the ones people set, one per kind.
TOKEN_VARIABLES = {
    "CAPICUA_TOKEN": {Kind.BOT, Kind.SEAT},
    "CAPICUA_BOT_TOKEN": {Kind.BOT},
    "CAPICUA_SEAT_TOKEN": {Kind.SEAT},
}

#: What a Play client takes, for the messages.
PLAY_TOKENS = (
    "a bot plays with a bot token from `capicua match register-bot NAME` or a seat token "
    "from `capicua match join ID`"
)


#: Status codes of a failed Play call that retrying cannot fix ({source}: where the token
#: came from).
FATAL = {
    grpc.StatusCode.UNAUTHENTICATED: "the server does not know the token from {source}; "
    + PLAY_TOKENS
    + " on this server",
    grpc.StatusCode.PERMISSION_DENIED: "the token from {source} may not play; " + PLAY_TOKENS,
    grpc.StatusCode.UNIMPLEMENTED: "is this a capicua server?",
    grpc.StatusCode.INVALID_ARGUMENT: "the server refused the stream",
    grpc.StatusCode.ABORTED: "another client with the same token took over the stream",
    grpc.StatusCode.FAILED_PRECONDITION: "the match of the seat token from {source} is over",
}

#: How long a session keeps trying to reach a server that never answered (seconds).
CONNECT_TIMEOUT = 30.0
#: How long a stopping session gives a match whose end it holds to finish its hooks (seconds).
ENDING_GRACE_S = 5.0


@dataclass(frozen=True)
class Token:
    """A token and where it came from (``--token``, ``$CAPICUA_BOT_TOKEN``...), so that a
    refusal can say which one the server refused."""

    value: str
    source: str


def resolve(server: str | None, token: str | None) -> tuple[str, Token]:
    """The address (``server``, $CAPICUA_SERVER, 127.0.0.1:50051) and the token (``token``,
    else the first of $CAPICUA_TOKEN, $CAPICUA_BOT_TOKEN, $CAPICUA_SEAT_TOKEN; one is
    required). A token whose prefix names a kind that cannot play, or not the kind its
    variable names, is refused here, before any connection."""
    address = server or os.environ.get("CAPICUA_SERVER") or DEFAULT_SERVER
    found = _find_token(token)
    allowed = TOKEN_VARIABLES.get(found.source.removeprefix("$"), {Kind.BOT, Kind.SEAT})
    complaint = wrong_kind(found.value, found.source, allowed, PLAY_TOKENS)
    if complaint is not None:
        raise ClientError(complaint)
    return address, found


def _find_token(given: str | None) -> Token:
    if given and given.strip():
        # `capicua bot --token` also reads $CAPICUA_TOKEN (through click): name the variable
        # when that is where it came from.
        source = "$CAPICUA_TOKEN" if given == os.environ.get("CAPICUA_TOKEN") else "--token"
        return Token(given.strip(), source)
    env = {name: os.environ.get(name, "").strip() for name in TOKEN_VARIABLES}
    if env["CAPICUA_TOKEN"]:
        return Token(env["CAPICUA_TOKEN"], "$CAPICUA_TOKEN")
    exported = [name for name in ("CAPICUA_BOT_TOKEN", "CAPICUA_SEAT_TOKEN") if env[name]]
    if len(exported) > 1:  # which one is meant cannot be guessed: say so
        raise ClientError(
            "both $CAPICUA_BOT_TOKEN and $CAPICUA_SEAT_TOKEN are set: give --token, or unset "
            "the one this bot should not use"
        )
    if not exported:
        raise ClientError(
            "no token: give --token or set CAPICUA_BOT_TOKEN (`capicua match register-bot "
            "NAME` prints a bot token) or CAPICUA_SEAT_TOKEN (`capicua match join ID` prints "
            "a seat token)"
        )
    return Token(env[exported[0]], f"${exported[0]}")


@dataclass
class Summary:
    """What a session did."""

    principal: str = ""
    connections: int = 0
    outcomes: dict[str, Outcome] = field(default_factory=dict)  # match -> outcome, in order
    errors: list[PlayError] = field(default_factory=list)
    # match -> the turn_ids the server withdrew (DecisionWithdrawn), in order
    withdrawn: dict[str, list[int]] = field(default_factory=dict)

    @property
    def matches(self) -> int:
        return len(self.outcomes)


def play_error(status: status_pb2.Status) -> PlayError:
    """A :class:`PlayError` from an in-stream ``google.rpc.Status``."""
    reason, meta = error_info(status)
    try:
        code = grpc.StatusCode(_code_tuple(status.code)).name
    except ValueError:
        code = str(status.code)
    turn = meta.get("turn_id", "")
    return PlayError(
        code=code,
        reason=reason or code,
        message=status.message,
        match=meta.get("match") or None,
        turn_id=int(turn) if turn.isdigit() else None,
        metadata=meta,
    )


def _code_tuple(number: int) -> tuple[int, str]:
    for code in grpc.StatusCode:
        if code.value[0] == number:
            return code.value  # type: ignore[no-any-return]
    raise ValueError(number)


class Session:
    """One bot on one Play stream (see the module doc). Use :meth:`run` in a running
    event loop, or :func:`run_bot` from plain code."""

    def __init__(
        self,
        bot: Any,
        *,
        server: str | None = None,
        token: str | None = None,
        matches: int | None = None,
        ask_forced: bool = False,
        client: str = "",
        threads: int = 32,
        backoff: Backoff | None = None,
        max_attempts: int | None = None,
        connect_timeout: float | None = CONNECT_TIMEOUT,
        tls: ClientTLS | bool | None = None,
        incremental: bool = True,
        transport: PlayTransport | None = None,
    ) -> None:
        self.bot: Bot = as_bot(bot)
        # True: TLS with the system's CAs; False: plaintext; None: $CAPICUA_TLS* (docs/tls.md)
        self.tls = ClientTLS() if tls is True else env_tls() if tls is None else tls or None
        self.address, found = resolve(server, token)
        # how each Play stream is opened: gRPC to the address, unless given another way
        self.transport = transport or GrpcTransport(self.address, self.tls)
        self.token, self.token_source = found.value, found.source
        if matches is not None and matches < 1:
            raise ClientError(f"matches: expected at least 1, got {matches}")
        self.max_matches = matches
        self.ask_forced = ask_forced
        self.incremental = incremental  # ask for CAPABILITY_INCREMENTAL_DECISIONS
        self.client = client or f"capicua-python/{_version()} ({self.bot.display_name})"
        self.threads = threads
        self.backoff = backoff or Backoff()
        self.max_attempts = max_attempts
        if connect_timeout is not None and connect_timeout < 0:
            raise ClientError(f"connect_timeout: expected 0 or more, got {connect_timeout}")
        self.connect_timeout = connect_timeout or None  # 0: keep trying forever
        self._connect_by: float | None = None  # loop time; None once a server answered
        self._unreachable = "no reply"  # why the last attempt to reach a server failed
        self.summary = Summary()
        self._runs: dict[str, MatchRun] = {}
        self._finished: set[str] = set()
        self._outbox: asyncio.Queue[play_pb2.PlayRequest | None] | None = None
        self._stopping: asyncio.Event | None = None
        self._fatal: ClientError | None = None
        self._welcomed = False
        self._one_match = False
        self._links = SessionLinks(
            bot=self.bot,
            incremental=incremental,
            send=self._send,
            hook=self._hook,
            give_up=self._give_up,
            withdrawn=self._withdrawn,
            ended=self._ended,
        )

    # -- control ------------------------------------------------------------------------

    def stop(self) -> None:
        """End the session soon (from the event loop's thread; idempotent)."""
        if self._stopping is not None:
            self._stopping.set()

    @property
    def stopping(self) -> bool:
        return self._stopping is not None and self._stopping.is_set()

    async def run(self) -> Summary:
        """Play until stopped, or until ``matches`` matches ended; returns a summary.
        Raises :class:`ClientError` when it cannot go on."""
        self._stopping = asyncio.Event()
        limit = _threads.set(asyncio.Semaphore(self.threads))
        if self.connect_timeout is not None:
            self._connect_by = asyncio.get_running_loop().time() + self.connect_timeout
        attempt = 0
        try:
            while not self.stopping:
                self._welcomed = False
                try:
                    reason = await self._connect_once()
                except grpc.aio.AioRpcError as e:
                    reason = self._failed(e)
                if self._fatal is not None:
                    raise self._fatal
                if self.stopping:
                    break
                if self._welcomed:
                    attempt = 0
                attempt += 1
                if self.max_attempts is not None and attempt > self.max_attempts:
                    raise ClientError(
                        f"{self.address}: gave up after {self.max_attempts} attempts ({reason})"
                    )
                delay = self._next_delay(attempt)
                log.warning("%s; reconnecting in %.1f s", reason, delay)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stopping.wait(), delay)
        finally:
            await self._close_runs()
            await self._hook("close")
            _threads.reset(limit)
        log.info("session ended after %d match(es)", self.summary.matches)
        return self.summary

    def _connect_left(self) -> float | None:
        """Seconds left to hear from a server for the first time (None: no bound)."""
        if self._connect_by is None:
            return None
        return max(0.0, self._connect_by - asyncio.get_running_loop().time())

    def _next_delay(self, attempt: int) -> float:
        """The wait before the next attempt. A server that never answered is given up on
        after ``connect_timeout``: a wrong address should not look like a bot waiting for
        matches; once one has answered, the session waits for it to come back forever."""
        left = self._connect_left()
        if left is not None and left <= 0:
            raise ClientError(
                f"no capicua server answered at {self.address} in {self.connect_timeout:g} s "
                f"({self._unreachable}); is `capicua serve` running there? (--server or "
                "$CAPICUA_SERVER)"
            )
        delay = self.backoff.delay(attempt - 1)
        return delay if left is None else min(delay, left)

    def _failed(self, e: grpc.aio.AioRpcError) -> str:
        code = e.code()
        if code in FATAL:
            why = FATAL[code].format(source=self.token_source)
            self._fatal = ClientError(
                f"{self.address}: {code.name}: {e.details()} ({why}; not retrying)"
            )
        if code == grpc.StatusCode.UNAVAILABLE:
            # gRPC's details end with the cause: "...: Connection refused"
            self._unreachable = (e.details() or "unavailable").rsplit(": ", 1)[-1].strip(" []")
            hint = tls_hint(e.details(), self.tls)
            reason = f"cannot reach a capicua server at {self.address} ({e.details()}){hint}"
            untrusted = "CERTIFICATE_VERIFY_FAILED" in (e.details() or "")
            if untrusted and self._connect_by is not None:  # never reached it: a setup error
                self._fatal = ClientError(f"{reason} (not retrying)")
            return reason
        return f"the stream failed: {code.name}: {e.details()}"

    async def _close_runs(self) -> None:
        """Stop every match's run. One that holds its match's end (the stream may end just
        after MatchEnded: a seat token's does) first works through what it holds, so that
        the bot's last hooks run and the outcome is counted; within a bound, since a hook
        that hangs must not hold the session forever."""
        ending = [r.task for r in self._runs.values() if r.over and r.task is not None]
        if ending:
            await asyncio.wait(ending, timeout=ENDING_GRACE_S)
        tasks = [r.task for r in self._runs.values() if r.task is not None]
        for r in self._runs.values():
            if r.choosing is not None:
                r.choosing[1].cancel()
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=5)
        self._runs.clear()

    # -- one connection -----------------------------------------------------------------

    async def _connect_once(self) -> str:
        """One Play stream until it ends; returns why it ended (raises AioRpcError)."""
        assert self._stopping is not None
        outbox: asyncio.Queue[play_pb2.PlayRequest | None] = asyncio.Queue()
        hello = play_pb2.Hello(ask_forced=self.ask_forced, client=self.client[:100])
        if self.incremental:
            hello.capabilities.append(play_pb2.CAPABILITY_INCREMENTAL_DECISIONS)

        async def requests() -> AsyncIterator[play_pb2.PlayRequest]:
            yield play_pb2.PlayRequest(hello=hello)
            while True:
                item = await outbox.get()
                if item is None:
                    return
                yield item

        stop_wait = asyncio.ensure_future(self._stopping.wait())
        try:
            async with self.transport.play(requests(), bearer(self.token)) as call:
                try:
                    self._outbox = outbox
                    return await self._read(call, stop_wait)
                finally:
                    call.cancel()
        finally:
            self._outbox = None
            outbox.put_nowait(None)
            stop_wait.cancel()

    async def _read(self, call: PlayCall, stop_wait: asyncio.Future[Any]) -> str:
        """Handle ``call``'s messages until it ends or the session stops; returns why
        (raises AioRpcError)."""
        stopping_seen = False
        while True:
            read = asyncio.ensure_future(call.read())
            await asyncio.wait(
                {read, stop_wait},
                timeout=self._connect_left(),  # a server that never answers, bounded
                return_when=asyncio.FIRST_COMPLETED,
            )
            if not read.done():
                read.cancel()
                with contextlib.suppress(asyncio.CancelledError, grpc.aio.AioRpcError):
                    await read
                return "stopped" if stop_wait.done() else "no answer"
            message = read.result()
            if message is grpc.aio.EOF:
                if stopping_seen:  # a server from before every ending had a status
                    return "the server stopped"
                # OK: the server has nothing more for this token (a seat token's match
                # ended); reconnecting would only be told MATCH_FINISHED
                log.info("the server ended the stream")
                self.stop()
                return "stopped"
            stopping_seen = stopping_seen or message.HasField("stopping")
            self._dispatch(message)
            if self._fatal is not None:
                return str(self._fatal)

    def _send(self, reply: play_pb2.ActionReply) -> None:
        if self._outbox is not None:
            self._outbox.put_nowait(play_pb2.PlayRequest(action=reply))

    # -- messages -----------------------------------------------------------------------

    def _dispatch(self, message: play_pb2.PlayResponse) -> None:
        kind = message.WhichOneof("message")
        if kind == "welcome":
            self._welcome(message.welcome)
        elif kind == "error":
            self._error(play_error(message.error))
        elif kind == "stopping":
            log.warning("the server is stopping (%s)", message.stopping.reason)
        elif kind is not None:
            body = getattr(message, kind)
            run = self._run(body.match)
            if run is None:
                return
            try:
                run.message(kind, body)
            except CapicuaError as e:  # a malformed message: drop it, keep the stream
                log.error("%s: cannot read a %s: %s", run.name, kind, e)

    def _welcome(self, welcome: play_pb2.Welcome) -> None:
        self._welcomed = True
        self._connect_by = None
        self.summary.connections += 1
        self.summary.principal = welcome.principal
        self._one_match = "/seats/" in welcome.principal
        again = " again" if self.summary.connections > 1 else ""
        log.info(
            "connected%s to %s as %s (server %s; token from %s)",
            again,
            self.address,
            welcome.principal,
            welcome.server_version,
            self.token_source,
        )

    def _run(self, name: str) -> MatchRun | None:
        if name in self._finished:
            return None
        run = self._runs.get(name)
        if run is None:
            run = self._runs[name] = MatchRun(name, self._links)
            run.task = asyncio.create_task(run.work(), name=f"capicua-{name}")
        return run

    def _error(self, error: PlayError) -> None:
        self.summary.errors.append(error)
        where = f"{error.match} turn {error.turn_id}: " if error.match and error.turn_id else ""
        reason = error.error_reason
        if (
            reason == errors_pb2.STREAM_REPLACED
        ):  # in the stream: servers before every ending was a status
            self._fatal = ClientError(
                f"another client with the same token took over the stream ({error.message}); "
                "stopping this one"
            )
            log.error("%s", self._fatal)
            return
        run = self._runs.get(error.match) if error.match else None
        if reason == errors_pb2.ILLEGAL_ACTION:
            log.warning("%sillegal action: %s (the server asks again)", where, error.message)
        elif reason == errors_pb2.STALE_TURN and run is not None and error.turn_id in run.late:
            log.info("%srefused as stale, as expected: the seat is waited for again", where)
        elif reason == errors_pb2.SLOW_CONSUMER:
            log.warning("%s (reconnecting)", error)
        else:
            log.warning("%s%s", where, error)
        if run is not None and error.turn_id is not None and reason == errors_pb2.ILLEGAL_ACTION:
            run.answers.pop(error.turn_id, None)  # the next request of that turn is new
        if overrides(self.bot, "on_error"):
            if run is not None:
                run.queue.put_nowait(error)
            else:
                asyncio.ensure_future(self._hook("on_error", error))

    async def _hook(self, name: str, *args: Any) -> None:
        if not overrides(self.bot, name):
            return
        try:
            await call_hook(getattr(self.bot, name), *args)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("%s failed", name)

    def _give_up(self, error: ClientError) -> None:
        """The bot raised :class:`ClientError`: :meth:`run` raises it."""
        self._fatal = error
        self.stop()

    def _withdrawn(self, match: str, turn_id: int) -> None:
        self.summary.withdrawn.setdefault(match, []).append(turn_id)

    def _ended(self, run: MatchRun, outcome: Outcome) -> None:
        self._finished.add(run.name)
        self._runs.pop(run.name, None)
        self.summary.outcomes[run.name] = outcome
        limit = self.max_matches if self.max_matches is not None else None
        if limit is None and self._one_match:
            limit = 1
        if limit is not None and self.summary.matches >= limit:
            log.info("%d match(es) played; stopping", self.summary.matches)
            self.stop()


async def run(bot: Any, **options: Any) -> Summary:
    """``await run(MyBot(), server=..., token=..., matches=...)``: a :class:`Session` run."""
    return await Session(bot, **options).run()


def run_bot(bot: Any, *, handle_signals: bool = True, **options: Any) -> Summary:
    """Play with ``bot`` until SIGINT/SIGTERM (or ``matches`` matches): the plain-code entry
    point. ``options`` are :class:`Session`'s (``server``, ``token``, ``matches``,
    ``ask_forced``...)."""
    session = Session(bot, **options)

    async def main() -> Summary:
        with _signals(session, enabled=handle_signals):
            return await session.run()

    return asyncio.run(main())


@contextlib.contextmanager
def _signals(session: Session, *, enabled: bool = True) -> Iterator[list[int]]:
    """SIGINT and SIGTERM stop ``session`` cleanly (a second one interrupts at once);
    yields the signals received, in order, as they come."""
    received: list[int] = []
    if not enabled:
        yield received
        return
    task = asyncio.current_task()

    def on_signal(signum: int) -> None:
        received.append(signum)
        if session.stopping and task is not None:
            task.cancel()
            return
        log.info("%s: stopping", signal.Signals(signum).name)
        session.stop()

    with interrupt.signals(on_signal):
        yield received
