"""Server assembly: ``capicua serve``.

:meth:`App.start` builds the grpc.aio server (PlayService, MatchService, health checking,
reflection), opens the store and the CPU pool, and binds the port (``0``: any free port,
read back from :attr:`App.port`). :func:`serve` runs it until SIGTERM or SIGINT, then shuts
down gracefully: health goes NOT_SERVING, the lobby refuses new matches, every Play stream
gets ServerStopping, every running match is cancelled and recorded (TERMINATION_CANCELLED,
with its replay, in one transaction), the streams close, and ``server.stop(grace)`` ends
what is left.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import faulthandler
import ipaddress
import logging
import os
import shutil
import socket
import sqlite3
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, TextIO

import grpc
import structlog
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from capicua.common import channel, interrupt
from capicua.common.errors import CapicuaError
from capicua.common.tokens import new_admin_token
from capicua.common.version import version
from capicua.server import auth, errors
from capicua.server.addresses import DEFAULT_PREFIXES, AddressGroups
from capicua.server.auth import Principal, Tokens
from capicua.server.cpu import CpuPool
from capicua.server.faults import Faults
from capicua.server.ladders import LadderDef, LadderService
from capicua.server.lobby import Lobby
from capicua.server.matches import FINISHED, Registry, Services
from capicua.server.outbox import MAX_UNREAD_BYTES
from capicua.server.play import Bots, Hub, PlayService, Registrations
from capicua.server.relay import Relays
from capicua.server.shared import SharedSync
from capicua.server.store import Store, StoredBot
from capicua.v1 import (
    ladder_pb2,
    ladder_pb2_grpc,
    match_pb2,
    match_pb2_grpc,
    play_pb2,
    play_pb2_grpc,
)

log = structlog.get_logger("capicua.server")

PLAY_SERVICE = play_pb2.DESCRIPTOR.services_by_name["PlayService"].full_name
MATCH_SERVICE = match_pb2.DESCRIPTOR.services_by_name["MatchService"].full_name
LADDER_SERVICE = ladder_pb2.DESCRIPTOR.services_by_name["LadderService"].full_name


@dataclass
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 50051
    data: Path | None = None  # None: a temporary directory, removed at shutdown
    admin_token: str | None = None
    turn_timer_ms: int = 30_000
    cpu_workers: int | None = None
    max_matches: int = 10_000
    max_matches_per_bot: int = 1_000
    max_matches_per_creator: int = 1_000  # created with a bot token
    max_matches_per_address: int = 50  # created without a token, per address group
    # created from one address group in all: without a token, and by the bots registered
    # from it (so that no small block of addresses fills the server: docs/security.md)
    max_matches_from_address: int = 1_000
    max_registrations_per_hour: int = 60  # RegisterBot without a token, per address group
    # the address groups of the limits above (capicua.server.addresses): IPv4 addresses by
    # this prefix length (8..32), IPv6 ones by that one (32..128)
    ipv4_group_prefix: int = DEFAULT_PREFIXES[4]
    ipv6_group_prefix: int = DEFAULT_PREFIXES[6]
    max_receive_bytes: int = channel.MAX_RECEIVE_BYTES
    # what one Play stream or spectator may leave unread before the server ends it
    max_unread_bytes: int = MAX_UNREAD_BYTES
    # finished matches held in memory (late answers are told STALE_TURN, not UNKNOWN_MATCH;
    # reads skip the store); older ones are read from the store
    keep_finished: int = 1000
    grace_s: float = 5.0
    # how far a stop (serve()'s) may run past grace_s before the process gives up on it:
    # what is still running is logged with its stacks, and the process exits (status 1)
    stop_overrun_s: float = 30.0
    # a graceful stop: "cancel" ends running matches CANCELLED (with their replays);
    # "suspend" leaves them, and waiting ones, to the journal for the next start
    on_stop: str = "cancel"
    tls: channel.ServerTLS | None = None  # None: plaintext (loopback, trusted networks)
    # the standing ladders it runs (their rosters; the arena's ladder runner plays them)
    ladders: tuple[LadderDef, ...] = ()
    max_ladder_entries: int = 1000  # active entries of one ladder
    max_versions_per_day: int = 24  # new versions of one bot on one ladder in 24 hours
    # a PostgreSQL URL: the bots and ladder rosters shared with every server process given
    # the same one (capicua.server.shared); None: all in --data's SQLite
    db: str | None = None
    # relay the Play streams of the bots connected here to the other processes that host
    # their matches, as App.relays.want names them (capicua.server.relay); False: none
    relay: bool = False
    faults: Faults | None = None  # tests only: bugs and failing disks (capicua.server.faults)


class _Preserialized:
    """The server, as a generated ``add_*Servicer_to_server`` sees it: registers the
    service's methods, but those named in ``methods`` without a response serializer, since
    their handlers send messages they serialized themselves (a stream's outbox holds bytes,
    so that its bound counts bytes: :mod:`capicua.server.outbox`)."""

    def __init__(self, server: Any, methods: set[str]) -> None:
        self._server = server
        self._methods = methods

    def add_generic_rpc_handlers(self, generic_handlers: Sequence[Any]) -> None:
        """Ignored: the generated code passes the same handlers to
        :meth:`add_registered_method_handlers` next, which registers both ways."""

    def add_registered_method_handlers(self, service: str, handlers: dict[str, Any]) -> None:
        handlers = {
            name: h._replace(response_serializer=None) if name in self._methods else h
            for name, h in handlers.items()
        }
        generic = grpc.method_handlers_generic_handler(service, handlers)
        self._server.add_generic_rpc_handlers((generic,))
        self._server.add_registered_method_handlers(service, handlers)


def _redact(_logger: Any, _name: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Never let a token reach the log, whatever a caller passed."""
    for key in list(event):
        if "token" in key.lower() or key.lower() == "authorization":
            event[key] = "<redacted>"
    return event


def configure_logging(
    level: str = "info", stream: TextIO | None = None, *, whole_process: bool = False
) -> None:
    """JSON lines on stderr (stdout carries only the ``listening on`` line);
    ``whole_process``: what Python and the libraries write there too
    (:func:`_log_python_output`), for a process that is the server."""
    out = stream or sys.stderr
    threshold = logging.getLevelNamesMapping()[level.upper()]
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            *_log_fields(),
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(threshold),
        logger_factory=structlog.PrintLoggerFactory(file=out),
        cache_logger_on_first_use=False,
    )
    if whole_process:
        _log_python_output(threshold, out)


def _log_fields() -> list[Any]:
    """What every log line gets: its level, its time, no token, a traceback as text."""
    return [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _redact,
        structlog.processors.format_exc_info,
    ]


def _log_python_output(threshold: int, out: TextIO) -> None:
    """What Python itself and the libraries write to stderr goes out as the same JSON
    lines: the standard ``logging`` of asyncio and grpc ("Task was destroyed but it is
    pending!"), warnings, and an exception dropped in a ``__del__``, a weakref callback or
    a thread. Each was a line of plain text among the JSON before, which breaks every
    reader of the log (a stressed test run met one). A dropped KeyboardInterrupt still goes
    to the entry point's hook, which sends it again (:mod:`capicua.entry`)."""
    handler = logging.StreamHandler(out)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.JSONRenderer(),
            ],
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *_log_fields()],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    # what Python printed before (its last-resort handler: warnings and worse), no more
    root.setLevel(max(threshold, logging.WARNING))
    logging.captureWarnings(True)  # as records of the "py.warnings" logger
    log = structlog.get_logger()
    previous = sys.unraisablehook

    def unraisable(args: sys.UnraisableHookArgs) -> None:
        if issubclass(args.exc_type, KeyboardInterrupt):
            previous(args)
            return
        where = None if args.object is None else repr(args.object)
        failure = _exception(args.exc_type, args.exc_value, args.exc_traceback)
        message = args.err_msg or "Exception ignored in"  # Python's own words
        log.error("exception_ignored", message=message, object=where, **failure)

    def thread_failed(args: threading.ExceptHookArgs) -> None:
        name = None if args.thread is None else args.thread.name
        failure = _exception(args.exc_type, args.exc_value, args.exc_traceback)
        log.error("thread_failed", thread=name, **failure)

    sys.unraisablehook = unraisable
    threading.excepthook = thread_failed


def _exception(
    kind: type[BaseException], value: BaseException | None, tb: TracebackType | None
) -> dict[str, Any]:
    """A hook's exception as log fields: its traceback (format_exc_info renders it)."""
    if value is None:  # a hook may be given the type alone
        return {"exception": kind.__name__}
    return {"exc_info": (kind, value, tb)}


def _format_address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _loopback(host: str) -> bool:
    if host in ("localhost", ""):
        return host == "localhost"
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@contextlib.contextmanager
def _readable_store(data: Path) -> Iterator[None]:
    """A store whose tables are not the ones this version reads (another version's, or
    altered by hand) stops the start with one line saying so, not a traceback. A damaged
    value is not this: it costs only its match or its bot."""
    try:
        yield
    except sqlite3.Error as e:
        raise CapicuaError(
            f"--data {data}: cannot read the store ({e}): its tables are not the ones this "
            "version of capicua writes"
        ) from None


class App:
    """A running server. Build with :meth:`start`; stop with :meth:`shutdown`."""

    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        # checked before anything is opened: a bad prefix is the caller's one-line error
        groups = AddressGroups(config.ipv4_group_prefix, config.ipv6_group_prefix)
        self._tmp: Path | None = None
        data = config.data
        if data is None:
            data = self._tmp = Path(tempfile.mkdtemp(prefix="capicua-"))
        self.data = data
        try:
            self.store = Store(data, faults=config.faults, shared=config.db)
        except (OSError, sqlite3.Error, CapicuaError) as e:
            if self._tmp is not None:
                shutil.rmtree(self._tmp, ignore_errors=True)
            if isinstance(e, CapicuaError):  # the --db database's own line
                raise CapicuaError(f"--db {e}") from None
            raise CapicuaError(f"--data {data}: cannot open the store: {e}") from None
        self.tokens = Tokens(config.admin_token)
        # The ladders' runner (the arena's, in this process) plays them as a client with the
        # admin's powers: a token made for it, known to this process only. (It does not
        # make the server an admin-only one: RegisterBot stays as --admin-token sets it.)
        self.ladder_token: str | None = None
        if config.ladders:
            self.ladder_token = new_admin_token()
            self.tokens.add_digest(auth.digest(self.ladder_token), auth.ADMIN)
        self.bots = Bots()
        self.registrations = Registrations(config.max_registrations_per_hour, groups=groups)
        wall_s, clock_s = time.time(), self.registrations.clock()
        with _readable_store(data):
            bots, revoked = self.store.shared.load_bots(), self.store.load_revoked()
        for bot in bots:
            self._know(bot)
            if bot.origin:
                self.registrations.add(bot.origin, clock_s - (wall_s - bot.create_ns / 1e9))
        for token_digest, match_id in revoked:
            self.tokens.add_revoked(token_digest, auth.match_over(match_id))
        self.hub = Hub(config.max_unread_bytes)
        self.pool = CpuPool(config.cpu_workers)
        self.relays = Relays() if config.relay else None
        self.services = Services(
            self.hub,
            self.pool,
            self.store,
            config.turn_timer_ms,
            tokens=self.tokens,
            faults=config.faults,
        )
        self.registry = Registry(
            self.services,
            keep_finished=config.keep_finished,
            origin_of=self.bots.origin_of,
            groups=groups,
        )
        self.play = PlayService(
            tokens=self.tokens,
            bots=self.bots,
            registry=self.registry,
            hub=self.hub,
            store=self.store,
            version=version(),
            registrations=self.registrations,
            faults=config.faults,
            relays=self.relays,
        )
        self.lobby = Lobby(
            tokens=self.tokens,
            bots=self.bots,
            registry=self.registry,
            store=self.store,
            default_timer_ms=config.turn_timer_ms,
            max_matches=config.max_matches,
            max_matches_per_bot=config.max_matches_per_bot,
            max_matches_per_creator=config.max_matches_per_creator,
            max_matches_per_address=config.max_matches_per_address,
            max_matches_from_address=config.max_matches_from_address,
            max_unread_bytes=config.max_unread_bytes,
            faults=config.faults,
        )
        with _readable_store(data):
            self.ladders = LadderService(
                config.ladders,
                store=self.store,
                hub=self.hub,
                max_entries=config.max_ladder_entries,
                max_versions_per_day=config.max_versions_per_day,
                faults=config.faults,
            )
        # --db: what other processes register and join is read again (capicua.server.shared)
        self.shared = SharedSync(self._reload_shared) if config.db else None
        self._syncing: asyncio.Task[None] | None = None
        self.health = health.aio.HealthServicer()
        self.server: Any = grpc.aio.server(
            interceptors=[
                auth.Authenticate(
                    self.tokens,
                    auth.needs(admin_required=self.tokens.admin_required),
                    on_unknown=self.shared.on_unknown_token if self.shared else None,
                )
            ],
            options=[
                ("grpc.max_receive_message_length", config.max_receive_bytes),
                ("grpc.so_reuseport", 0),  # a port in use is an error, not shared
                *channel.SERVER_KEEPALIVE,
            ],
        )
        preserialized = _Preserialized(self.server, {"Play", "WatchMatch"})
        play_pb2_grpc.add_PlayServiceServicer_to_server(self.play, preserialized)
        match_pb2_grpc.add_MatchServiceServicer_to_server(self.lobby, preserialized)
        ladder_pb2_grpc.add_LadderServiceServicer_to_server(self.ladders, self.server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self.server)
        reflection.enable_server_reflection(
            [
                PLAY_SERVICE,
                MATCH_SERVICE,
                LADDER_SERVICE,
                health.SERVICE_NAME,
                reflection.SERVICE_NAME,
            ],
            self.server,
        )
        self.port = 0
        # the ladders' runner reaches the server on a plaintext loopback port of its own,
        # whatever --host and TLS the clients get (0: none, no ladders)
        self.ladder_port = 0
        self._stopping = False
        self._stopped = asyncio.Event()
        self._warm: asyncio.Task[list[int]] | None = None

    @property
    def address(self) -> str:
        return _format_address(self.config.host, self.port)

    def _know(self, bot: StoredBot) -> None:
        """Accept ``bot``'s token and keep what its seats need (its access, its origin)."""
        self.bots.descriptions[bot.bot_id] = bot.description
        self.bots.set_access(bot.bot_id, bot.reservable_by, bot.accepts_chosen_seeds)
        self.tokens.add_digest(bot.token_sha256, Principal.bot(bot.bot_id))
        if bot.origin:
            self.bots.origins[bot.bot_id] = bot.origin

    async def _reload_shared(self) -> bool:
        """Read the shared tables again (``--db``): the bots other processes registered or
        changed, and the ladders' rosters. True when a new bot was learned."""
        new = False
        for bot in await self.store.shared.reload_bots():
            new = new or bot.bot_id not in self.bots
            self._know(bot)
        await self.ladders.refresh()
        return new

    @classmethod
    async def start(cls, config: ServerConfig) -> App:
        app = cls(config)
        try:
            _check_free(config.host, config.port)
            where = _format_address(config.host, config.port)
            try:
                if config.tls is not None:
                    app.port = app.server.add_secure_port(where, config.tls.credentials())
                else:
                    app.port = app.server.add_insecure_port(where)
            except channel.TLSError as e:
                raise CapicuaError(str(e)) from None
            except RuntimeError as e:
                raise CapicuaError(f"cannot listen on {config.host}:{config.port}: {e}") from None
            if not app.port:
                raise CapicuaError(f"cannot listen on {config.host}:{config.port}")
            if config.ladders:
                app.ladder_port = app.server.add_insecure_port("127.0.0.1:0")
            await app._restore()
            await app.server.start()
        except BaseException:
            app._release()
            raise
        for service in ("", PLAY_SERVICE, MATCH_SERVICE, LADDER_SERVICE):
            await app.health.set(service, health_pb2.HealthCheckResponse.SERVING)
        if app.shared is not None:
            app._syncing = asyncio.create_task(app.shared.run())
        app._warm = asyncio.create_task(app.pool.warm_up())
        app._warm.add_done_callback(app._warmed)
        log.info(
            "server_started",
            address=app.address,
            data=str(app.data),
            temporary_data=app._tmp is not None,
            version=version(),
            cpu_workers=app.pool.workers,
            admin=app.tokens.admin_required,
            tls=config.tls is not None,
            client_certificates=config.tls is not None and config.tls.client_ca is not None,
        )
        if config.tls is None and not _loopback(config.host):
            log.warning(
                "plaintext_on_network",
                host=config.host,
                message="listening without TLS on a non-loopback address: tokens and games "
                "cross the network in clear; see --tls-cert/--tls-key (docs/tls.md)",
            )
        return app

    async def _restore(self) -> None:
        """Hold again every match a previous process left unfinished (it crashed, or was
        killed): its tokens work again, a waiting match waits, a running one goes on."""
        resumed = 0
        with _readable_store(self.data):
            journal = self.store.load_live()
        for live in journal:
            match = await self.registry.restore(live)
            resumed += match is not None and match.status != FINISHED
        if resumed:
            log.info("matches_restored", matches=resumed)

    async def shutdown(
        self, grace: float | None = None, reason: str = "server shutting down"
    ) -> None:
        """Stop gracefully (idempotent; a second call waits for the first)."""
        if self._stopping:
            await self._stopped.wait()
            return
        self._stopping = True
        grace = self.config.grace_s if grace is None else grace
        started = time.monotonic()
        log.info("server_stopping", reason=reason)
        try:
            await self.health.enter_graceful_shutdown()
            self.lobby.closing = True
            self.hub.broadcast(
                play_pb2.PlayResponse(stopping=play_pb2.ServerStopping(reason=reason))
            )
            if self.config.on_stop == "suspend" and self._tmp is None:
                await self.registry.suspend_all(timeout=grace)
            else:
                await self.registry.stop_all(reason, timeout=grace)
            # the streams' final status: reconnect with backoff (a suspended match resumes)
            self.hub.close_all(errors.shutting_down())
            await self.server.stop(max(0.5, grace - (time.monotonic() - started)))
        finally:
            for task in (self._warm, self._syncing):
                if task is not None and not task.done():
                    task.cancel()
            if self.relays is not None:  # the streams' ends closed them: their tasks end
                await self.relays.close()
            self._release()
            self._stopped.set()
            log.info("server_stopped", seconds=round(time.monotonic() - started, 3))

    def _warmed(self, task: asyncio.Task[list[int]]) -> None:
        """The workers' warm-up ended. A stop while it runs can cut it (the pool shut down
        under it; a forkserver that the stop's SIGTERM to the process group reached before
        it ignores signals), so a failure is only noted (info): the first CPU decision
        starts the workers anyway, and a real fault shows there."""
        if not task.cancelled() and task.exception() is not None:
            log.info("cpu_warm_up_failed", error=repr(task.exception()), stopping=self._stopping)

    def _release(self) -> None:
        self.pool.shutdown()
        self.store.close()
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)


def _check_free(host: str, port: int) -> None:
    """Refuse a port another program listens on with one line, before gRPC's core tries it
    (and logs its own error lines to stderr)."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as e:
        raise CapicuaError(f"cannot listen on {host}:{port}: {e.strerror}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as e:
            if e.errno == errno.EADDRINUSE:
                raise CapicuaError(
                    f"cannot listen on {host}:{port}: address already in use"
                ) from None
            raise CapicuaError(f"cannot listen on {host}:{port}: {e.strerror}") from None


async def serve(
    config: ServerConfig,
    out: TextIO | None = None,
    companion: Callable[[App], Awaitable[object]] | None = None,
) -> int:
    """Run a server until SIGTERM or SIGINT; print ``listening on HOST:PORT`` once bound.
    Returns the signal that stopped it. ``companion(app)``: work that runs beside the
    server once it listens (its ladders' runner), cancelled first when it stops; if it
    fails, the server stops with its error.

    The signal handlers come first, so a Ctrl-C while the server is still starting (its
    worker processes, the store) stops it cleanly once it is up, instead of interrupting
    the start half way."""
    stop = asyncio.Event()
    received: list[int] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        stop.set()

    with interrupt.signals(on_signal):
        app = await App.start(config)
        beside: asyncio.Task[object] | None = None
        try:
            if not stop.is_set():
                print(f"listening on {app.address}", file=out or sys.stdout, flush=True)
                if companion is not None:
                    beside = asyncio.ensure_future(companion(app))
                    beside.add_done_callback(lambda _: stop.set())
                await stop.wait()
        finally:
            _watch_the_stop(config.grace_s + config.stop_overrun_s)
            try:
                if beside is not None:
                    await _stop_companion(beside)
            finally:
                await app.shutdown()
    return received[0] if received else 0


#: The status of a process whose stop overran (:func:`_watch_the_stop`).
STOP_OVERRAN_EXIT = 1


def _watch_the_stop(seconds: float) -> None:
    """Bound the stop that begins now: a server asked to stop must end, even if a part
    of it hangs on the way out. If the loop is still running ``seconds`` from now, the
    tasks left on it are logged (``server_stop_overran``, each with its stack: what hung)
    and the process exits; if the loop itself is stuck by then (a blocking call on its
    thread), ``faulthandler`` writes every thread's stack to stderr once ``2 * seconds``
    have passed, and exits. Exiting loses nothing recorded: the journal and the results
    commit as they go, and a server killed outright keeps every acknowledged move
    (docs/security.md, "What a crash can and cannot lose"). The process-wide timer stays
    armed to the end, so a hang after the loop (joining a thread at exit) is bounded too:
    :func:`serve` is for a process that ends with it."""
    asyncio.get_running_loop().call_later(seconds, _stop_overran, seconds)
    faulthandler.dump_traceback_later(2 * seconds, exit=True)


def _stop_overran(seconds: float) -> None:
    pending = [t for t in asyncio.all_tasks() if not t.done()]
    log.error(
        "server_stop_overran",
        seconds=seconds,
        tasks=[
            f"{t.get_name()}: {''.join(traceback.format_list(_stack_of(t))).strip()}"
            for t in pending
        ],
    )
    faulthandler.dump_traceback(all_threads=True)
    sys.stderr.flush()
    os._exit(STOP_OVERRAN_EXIT)


def _stack_of(task: asyncio.Task[Any]) -> traceback.StackSummary:
    # (not Task.print_stack: it fails on a frame whose line number is None, as some of the
    # server's grpc tasks have while it stops)
    return traceback.StackSummary.extract((f, f.f_lineno) for f in task.get_stack())


async def _stop_companion(task: asyncio.Task[object]) -> None:
    """Cancel the companion (it winds down while the server still serves it); its error,
    if it ended with one, is the command's."""
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        return
    task.result()
