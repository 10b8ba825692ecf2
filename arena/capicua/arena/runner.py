"""``capicua arena run``: play a tournament on a gRPC server.

The arena is a lobby client. It starts (unless the file names a server) an embedded
``capicua serve`` on a free loopback port, registers every bot, starts one process per bot
(``builtin:``, ``python:``, ``cmd:``, ``stdio:``; a ``remote:`` bot connects by itself) with
the server's address and its token in ``CAPICUA_SERVER`` / ``CAPICUA_TOKEN``, and then plays
the schedule with ``concurrency`` matches in flight: create the match with every seat
reserved for its bot, wait until every seat's bot is connected, start it, follow it to its
end, fetch the replay, write it, commit the match. The server is the only authority: the
arena never sees a hand before the replay.

Processes: every child asks the kernel to kill it when the arena dies (so ``kill -9`` leaves
no orphan), and lives in its own process group so its own children are stopped with it. A
bot process that exits is a crash: it is recorded, restarted with backoff, and after
``max_crashes`` crashes the bot is disqualified (its remaining matches are skipped). Ctrl-C
(or SIGTERM) cancels the matches in flight on the server, records them as abandoned, stops
every process and exits; running the same command again resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shutil
import signal
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

from capicua.channel import ClientTLS, env_tls
from capicua.client.launch import Launched, LaunchError, launch_server, new_admin_token
from capicua.client.lobby import Lobby, LobbyError, ServerUnavailable, TokenRefused
from capicua.engine.errors import CapicuaError
from capicua.lifetime import with_parent_death
from capicua.tokens import ADMIN_TOKEN_ENV
from capicua.v1 import match_pb2, play_pb2, replay_pb2
from capicua.version import version

from .config import BotSpec, Tournament
from .schedule import MatchSpec, remaining, schedule
from .store import (
    ConfigMismatchError,
    Results,
    locked,
    now,
    termination_name,
    write_match_replay,
)

T = TypeVar("T")

#: How long a match waits for its bots to be connected before it is put back in the queue.
CONNECT_TIMEOUT_S = 60.0
#: How long the embedded server may take to print its address.
SERVER_START_TIMEOUT_S = 60.0
RPC_TIMEOUT_S = 30.0

_POLICIES = {
    "forfeit": match_pb2.TIMEOUT_POLICY_FORFEIT,
    "auto-play": match_pb2.TIMEOUT_POLICY_AUTO_PLAY,
}
#: Failure kind recorded for the forfeiting bot of a match that ended this way.
_FORFEIT_FAILURES = {"timeout": "timeout", "disconnect": "disconnect", "illegal_actions": "illegal"}


#: How a run that stopped on an error ends its message: nothing recorded is lost.
RESUME = "finished matches are kept: run the same command again to resume"


class ArenaError(CapicuaError):
    """The tournament cannot go on (the message says why and what was kept)."""


class Display(Protocol):
    """What the runner tells the person watching (see :mod:`capicua.arena.live`)."""

    def begin(self, total: int, done: int) -> None: ...
    def match_finished(
        self, spec: MatchSpec, termination: str, reason: str, result: str = ""
    ) -> None:
        """``result`` is the score line: ``1-0``, ``0-1``, ``½-½`` with two sides, else the
        winner's name (or ``no winner``)."""

    def note(self, text: str) -> None: ...
    def end(self) -> None: ...


class SilentDisplay:
    """No output at all (``--quiet``, ``--json`` and tests)."""

    def begin(self, total: int, done: int) -> None:
        pass

    def match_finished(
        self, spec: MatchSpec, termination: str, reason: str, result: str = ""
    ) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def end(self) -> None:
        pass


@dataclass
class Summary:
    """What one ``arena run`` did."""

    total: int  # matches in the schedule
    already: int  # finished before this run (resumed)
    played: int = 0  # finished in this run
    abandoned: int = 0  # cut short by an interrupt (played again on resume)
    skipped: int = 0  # not played: a bot in it was disqualified
    interrupted: bool = False
    disqualified: list[str] = field(default_factory=list)


# -- child processes -----------------------------------------------------------------------


async def spawn(
    argv: Sequence[str], *, env: dict[str, str], cwd: Path, log: Path, stdout_pipe: bool = False
) -> asyncio.subprocess.Process:
    """Start a child that dies with the arena; stderr (and stdout unless piped) go to ``log``."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as sink:
        try:
            return await asyncio.create_subprocess_exec(
                *with_parent_death(argv),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE if stdout_pipe else sink,
                stderr=sink,
                cwd=cwd,
                env=env,
                start_new_session=True,  # its own process group: its children stop with it
            )
        except OSError as e:
            raise ArenaError(f"cannot start {argv[0]!r}: {e.strerror or e}") from None


async def stop_process(proc: asyncio.subprocess.Process, grace: float = 3.0) -> None:
    """SIGTERM the child's process group, then SIGKILL after ``grace`` seconds."""
    if proc.returncode is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            await asyncio.wait_for(proc.wait(), wait)
            return
        except TimeoutError:
            continue


def _tail(path: Path, lines: int = 3) -> str:
    try:
        text = path.read_bytes()[-4000:].decode("utf-8", "replace")
    except OSError:
        return ""
    kept = [ln.strip() for ln in text.splitlines() if ln.strip()][-lines:]
    return " | ".join(kept)[-500:]


def _python() -> list[str]:
    return [sys.executable, "-m", "capicua"]


def bot_argv(spec: BotSpec) -> list[str]:
    """The command that plays ``spec`` as a client of the server (not for ``remote:``)."""
    quiet = ["--log-level", "warning"]
    if spec.kind == "builtin":
        return [*_python(), "bot", "builtin", spec.target, *spec.option_args(), *quiet]
    if spec.kind == "python":
        return [*_python(), "bot", "run", spec.target, *spec.option_args(), *quiet]
    if spec.kind == "stdio":
        return [*_python(), "bot", "stdio", *quiet, "--", *spec.argv()]
    if spec.kind == "cmd":
        return spec.argv()
    raise ValueError(f"{spec.kind}: bots have no process")


@dataclass
class BotHost:
    """One bot of the tournament: its server identity and (unless remote) its process."""

    spec: BotSpec
    bot_id: str
    token: str = ""
    proc: asyncio.subprocess.Process | None = None
    crashes: int = 0
    disqualified: bool = False
    monitor: asyncio.Task[None] | None = None

    @property
    def name(self) -> str:
        return self.spec.name


# -- the runner ----------------------------------------------------------------------------


class Arena:
    """One run of a tournament into an output directory."""

    def __init__(
        self,
        tournament: Tournament,
        out: Path,
        display: Display | None = None,
        *,
        on_progress: Callable[[Results], None] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        matches: Sequence[MatchSpec] | None = None,
        lock: bool = True,
    ) -> None:
        """``matches`` replaces the tournament's schedule (an experiment's or an SPRT's
        matches, which may carry their own rules); ``on_progress`` runs after every commit
        and may call :meth:`drain`."""
        self.t = tournament
        self.matches = list(matches) if matches is not None else None
        self.lock = lock
        self.out = out.resolve()
        self.display: Display = display or SilentDisplay()
        self.on_progress = on_progress
        self.connect_timeout = connect_timeout
        self.results: Results | None = None
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
        self.hosts: dict[str, BotHost] = {}
        # set (and replaced) when a bot process ends or a bot is disqualified: what waits
        # for bots to connect wakes up to check them
        self._bots_changed = asyncio.Event()
        self.stop = asyncio.Event()
        self.stopping = False
        self.draining = False  # no new match starts; those in flight finish
        self.fatal: ArenaError | None = None
        self.summary = Summary(0, 0)
        self._first_create: float | None = None  # monotonic: the first match created
        self._last_commit: float | None = None  # and the last one committed

    @property
    def play_seconds(self) -> float:
        """Seconds from the first match's creation to the last commit (0 before any)."""
        if self._first_create is None or self._last_commit is None:
            return 0.0
        return self._last_commit - self._first_create

    def _log(self, name: str) -> Path:
        """Where a bot's (or the embedded server's) stderr goes."""
        return self.out / "logs" / f"{name}.log"

    # -- lifecycle -----------------------------------------------------------------------

    async def run(self) -> Summary:
        """Play what is left of the schedule (holding the directory's lock, unless the
        caller holds it)."""
        if not self.lock:
            return await self._run()
        with locked(self.out):
            return await self._run()

    async def _run(self) -> Summary:
        try:
            results = self.results = Results(self.out)
        except CapicuaError as e:
            raise ArenaError(str(e)) from None
        except Exception as e:
            raise ArenaError(f"--out {self.out}: cannot open the results: {e}") from None
        fresh = False
        try:
            try:
                fresh = results.bind(self.t.name, self.t.canonical(), self.t.digest(), version())
            except ConfigMismatchError as e:
                raise ArenaError(str(e)) from None
            for b in self.t.bots:
                results.add_bot(b.name, b.label)  # shown by the standings and report
            disqualified = {b.name for b in results.bots() if b.disqualified}
            everything = schedule(self.t) if self.matches is None else self.matches
            todo = remaining(everything, results.finished_keys())
            self.summary = Summary(len(everything), len(everything) - len(todo))
            self.summary.disqualified = sorted(disqualified)
            playable = [m for m in todo if not m.bots & disqualified]
            self.summary.skipped = len(todo) - len(playable)
            todo = playable
            self.display.begin(len(everything), self.summary.already + self.summary.skipped)
            if todo:
                await self._play(todo, disqualified)
            if self.fatal is not None:
                raise self.fatal
            return self.summary
        finally:
            await self._shutdown()
            played = bool(results.finished_keys())
            results.close()
            if fresh and not played:
                # Nothing was played: do not tie the directory to this configuration (a
                # corrected tournament file may use it).
                results.discard()

    async def _play(self, todo: list[MatchSpec], disqualified: set[str]) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self._interrupt)
        try:
            needed = {name for m in todo for name in m.bots} - disqualified
            if await self._open(needed, disqualified):
                await self._drive(todo)
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                with contextlib.suppress(NotImplementedError, RuntimeError):
                    loop.remove_signal_handler(sig)

    async def _open(self, needed: set[str], disqualified: set[str]) -> bool:
        """Connect (starting the embedded server), start the ``needed`` bots and check each
        with one hand; False if interrupted meanwhile."""
        await self._connect()
        await self._identify()
        for spec in self.t.bots:
            host = self.hosts[spec.name] = BotHost(spec, self._bot_id(spec.name))
            host.disqualified = spec.name in disqualified
            if spec.name in needed:
                await self._start_bot(host)
        return await self._preflight(needed)

    async def _drive(self, todo: list[MatchSpec]) -> None:
        """Play ``todo`` with the tournament's concurrency until done, drained, or stopped
        (an interrupt or a fatal error cuts the matches in flight)."""
        queue: asyncio.Queue[MatchSpec] = asyncio.Queue()
        for m in todo:
            queue.put_nowait(m)
        workers = [
            asyncio.create_task(self._worker(queue))
            for _ in range(min(self.t.concurrency, len(todo)))
        ]
        stopper: asyncio.Future[Any] = asyncio.ensure_future(self.stop.wait())
        done: asyncio.Future[Any] = asyncio.gather(*workers)
        await asyncio.wait([done, stopper], return_when=asyncio.FIRST_COMPLETED)
        if not done.done():  # interrupted or a fatal error: cut the matches in flight
            for w in workers:
                w.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await done
        stopper.cancel()

    def drain(self) -> None:
        """Start no new match; the run ends once the matches in flight are committed (an
        SPRT that has reached a decision)."""
        self.draining = True

    def _interrupt(self) -> None:
        if not self.stop.is_set():
            self.summary.interrupted = True
            self.display.note("interrupted: stopping (matches in flight are abandoned)")
        self.stop.set()

    def _fail(self, error: ArenaError) -> None:
        if self.fatal is None:
            self.fatal = error
        self.stop.set()

    async def _shutdown(self) -> None:
        self.stopping = True
        for host in self.hosts.values():
            if host.monitor is not None:
                host.monitor.cancel()
        await asyncio.gather(
            *(stop_process(h.proc) for h in self.hosts.values() if h.proc is not None)
        )
        await self.lobby.close()
        if self.server is not None:
            await self.server.aclose(grace=8.0)
            # the server's own store only duplicates what the arena keeps
            shutil.rmtree(self.out / "server", ignore_errors=True)
        self.display.end()

    # -- server ----------------------------------------------------------------------------

    def _bot_id(self, name: str) -> str:
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
        # a shared server may use TLS ($CAPICUA_TLS*: docs/tls.md); the embedded one does not
        self.tls = env_tls() if self.t.server is not None else None
        self.lobby = Lobby(self.address, tls=self.tls, timeout=RPC_TIMEOUT_S)
        try:
            await self.lobby.wait_ready(RPC_TIMEOUT_S)
        except ServerUnavailable:
            raise ArenaError(f"cannot reach the server at {self.address}") from None

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

    async def _register(self, request: play_pb2.RegisterBotRequest) -> Any:
        try:
            return await self.lobby.register_bot(request, token=self.admin_token)
        except TokenRefused as e:
            raise ArenaError(
                f"the server at {self.address} refused to register a bot ({e.details}); "
                f"it registers bots for its admin only: set ${ADMIN_TOKEN_ENV} to its "
                "admin token"
            ) from None
        except LobbyError as e:
            raise self._rpc_error(e) from None

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
                log=self._log("server"),
                cwd=self.out,
                timeout=SERVER_START_TIMEOUT_S,
            )
        except LaunchError as e:
            raise ArenaError(f"the embedded server did not start: {e}") from None
        return self.server.address

    async def _ask(self, call: Awaitable[T]) -> T:
        """A lobby call's answer; a refusal becomes an ArenaError."""
        try:
            return await call
        except LobbyError as e:
            raise self._rpc_error(e) from None

    def _rpc_error(self, e: LobbyError) -> ArenaError:
        if isinstance(e, ServerUnavailable):
            where = "the embedded server" if self.server is not None else "the server"
            log = f"; see {self._log('server')}" if self.server is not None else ""
            return ArenaError(f"{where} at {self.address} went away ({e.details}){log}; {RESUME}")
        return ArenaError(f"server refused: {e.code.name}: {e.details}")

    # -- bots ------------------------------------------------------------------------------

    async def _start_bot(self, host: BotHost) -> None:
        if host.spec.kind == "remote" or host.disqualified:
            return
        reply = await self._register(
            play_pb2.RegisterBotRequest(
                bot_id=host.bot_id,
                description=f"arena {self.t.name}: {host.spec.spec}",
                reservable_by=[self.organizer] if self.organizer else [],
            )
        )
        host.token = reply.token
        await self._launch(host)
        host.monitor = asyncio.create_task(self._monitor(host))

    async def _launch(self, host: BotHost) -> None:
        env = dict(os.environ)
        env["CAPICUA_SERVER"] = self.address
        if self.tls is None:  # the bots reach the embedded server in plaintext
            for name in ("CAPICUA_TLS", "CAPICUA_TLS_CA", "CAPICUA_TLS_CERT", "CAPICUA_TLS_KEY"):
                env.pop(name, None)
        env.pop(ADMIN_TOKEN_ENV, None)  # a bot is no admin
        env["CAPICUA_TOKEN"] = host.token
        env["CAPICUA_BOT_NAME"] = host.name
        cwd = host.spec.workdir(self.t.base_dir)
        # the bot's own directory first (its python: module imports from there), then the
        # tournament file's, whose modules every bot could import before bots had a dir
        paths = dict.fromkeys((str(cwd), str(self.t.base_dir), env.get("PYTHONPATH")))
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        log = self._log(host.name)
        try:
            host.proc = await spawn(bot_argv(host.spec), env=env, cwd=cwd, log=log)
        except ArenaError as e:
            host.proc = None
            self._record_failure(host.name, "start", str(e))

    # -- the check before the first match ----------------------------------------------

    async def _preflight(self, names: set[str]) -> bool:
        """Every bot that will play (but ``remote:`` ones, which connect when they like)
        plays one hand against itself first, so a bot that can never play is found now,
        with its cause, and not after its matches were forfeited. Returns False if
        interrupted; raises ArenaError naming every bot that failed."""
        hosts = [self.hosts[n] for n in sorted(names) if self.hosts[n].spec.kind != "remote"]
        if not hosts:
            return True
        checks: asyncio.Future[list[str | None]] = asyncio.gather(*(self._probe(h) for h in hosts))
        stopper: asyncio.Future[Any] = asyncio.ensure_future(self.stop.wait())
        await asyncio.wait([checks, stopper], return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
        if not checks.done():
            checks.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await checks
            return False
        failures = [f for f in checks.result() if f]
        if failures:
            raise ArenaError(
                "cannot start the tournament: "
                + "; ".join(failures)
                + " (nothing was played; fix the bot and run the same command again)"
            )
        return True

    async def _probe(self, host: BotHost) -> str | None:
        """One hand of the tournament's rules with every seat ``host``'s: None if it played
        it by the rules, else why not (with the last lines of its log)."""
        t = self.t
        request = match_pb2.CreateMatchRequest(
            request_id=str(uuid.uuid4()),  # a retry of this call would send it again
            preset=t.preset,
            overrides=[*t.overrides, "max_hands=1"],
            seats=[
                match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_BOT, bot_id=host.bot_id)
                for _ in range(t.ruleset.seats)
            ],
            settings=match_pb2.MatchSettings(
                turn_timer_ms=t.time_limit_ms,
                # under auto-play a late bot still plays (the server takes its turns)
                on_timeout=_POLICIES[t.on_timeout],
                visibility=match_pb2.VISIBILITY_PUBLIC,
                tags=[_tag(f"{t.name}-preflight")],
            ),
            seed=1,
        )
        created = await self._ask(self.lobby.create_match(request, token=self.creator_token))
        name, host_token = created.match.name, created.host_token
        cause = await self._probe_match(host, name, host_token)
        if cause is None:
            return None
        await self._cancel(name, host_token, "preflight failed")
        tail = _tail(self._log(host.name))
        where = f"; {self._log(host.name)}: {tail}" if tail else ""
        return f"bot {host.name} ({host.spec.label}) {cause}{where}"

    async def _probe_match(self, host: BotHost, name: str, host_token: str) -> str | None:
        def gone() -> bool:
            return host.proc is None or host.proc.returncode is not None or bool(host.crashes)

        try:
            async with asyncio.timeout(self.connect_timeout):
                if await self._connected(name, gone) is None:
                    return "exited before it connected"
        except TimeoutError:
            return f"did not connect within {self.connect_timeout:.0f} s"
        await self._ask(self.lobby.start_match(name, token=host_token))
        # a hand is a few dozen decisions: allow each its whole time limit, and then some
        budget = 10.0 + 60 * self.t.time_limit_ms / 1000
        try:
            await asyncio.wait_for(self._follow(name), budget)
        except TimeoutError:
            return f"did not finish a one-hand test match in {budget:.0f} s"
        out = (await self._ask(self.lobby.get_match(name))).outcome
        termination = termination_name(out.termination)
        if termination not in ("normal", "hand_limit"):
            return f"lost its one-hand test match by {termination} ({out.reason})"
        return None

    async def _monitor(self, host: BotHost) -> None:
        """Restart a bot whose process ends; disqualify it after ``max_crashes``."""
        log = self._log(host.name)
        while not self.stopping:
            if host.proc is not None:
                code = await host.proc.wait()
                self._bot_changed()
                if self.stopping:
                    return
                detail = f"exited with code {code}"
                tail = _tail(log)
                self._record_failure(host.name, "crash", f"{detail}: {tail}" if tail else detail)
            host.crashes += 1
            if host.crashes >= self.t.max_crashes:
                tail = _tail(log, 1)
                last = f" (last: {tail}; see {log})" if tail else f" (see {log})"
                self._disqualify(host, f"its process failed {host.crashes} times{last}")
                return
            await asyncio.sleep(min(10.0, 0.5 * 2 ** (host.crashes - 1)))
            if self.stopping:
                return
            await self._launch(host)

    def _disqualify(self, host: BotHost, reason: str) -> None:
        host.disqualified = True
        self._bot_changed()
        self._disqualified_note(host.name, reason)

    def _disqualified_note(self, bot: str, reason: str) -> None:
        """Record, count and show a disqualification."""
        self._store_disqualified(bot, reason)
        self.summary.disqualified.append(bot)
        self.display.note(f"{bot} is disqualified: {reason}")

    def _skipped(self, spec: MatchSpec) -> None:
        """A match not played because a bot in it is disqualified."""
        self.summary.skipped += 1
        self.display.match_finished(spec, "skipped", "a bot is disqualified")

    def _record_failure(self, bot: str, kind: str, detail: str, key: str | None = None) -> None:
        self._store_failure(bot, kind, detail, key)
        self.display.note(f"{bot}: {kind}: {detail}")

    # -- what a run records: into the results here; a dask worker's arena overrides these
    # to send them to the one process that writes the results (capicua.arena.cluster)

    def _store_match(
        self,
        spec: MatchSpec,
        replay: replay_pb2.Replay,
        server_match: str | None,
        started: str,
        seconds: float,
    ) -> None:
        assert self.results is not None
        commit_match(self.results, spec, replay, server_match, started, seconds)

    def _store_failure(self, bot: str, kind: str, detail: str, key: str | None) -> None:
        assert self.results is not None
        self.results.record_failure(bot, kind, detail, key)

    def _store_disqualified(self, bot: str, reason: str) -> None:
        assert self.results is not None
        self.results.disqualify(bot, reason)

    def _store_abandoned(self, key: str, reason: str) -> None:
        assert self.results is not None
        self.results.record_abandoned(key, reason)

    def _committed(self, spec: MatchSpec, replay: replay_pb2.Replay) -> None:
        """A match is in the results: count it, show it, tell the caller."""
        out = replay.outcome
        self._last_commit = time.monotonic()
        self.summary.played += 1
        self.display.match_finished(
            spec, termination_name(out.termination), out.reason, result_text(spec, replay)
        )
        if self.on_progress is not None and self.results is not None:
            self.on_progress(self.results)

    # -- matches ---------------------------------------------------------------------------

    async def _worker(self, queue: asyncio.Queue[MatchSpec]) -> None:
        while not queue.empty() and not self.stop.is_set() and not self.draining:
            spec = queue.get_nowait()
            if any(self.hosts[b].disqualified for b in spec.bots):
                self._skipped(spec)
                continue
            try:
                played = await self._match(spec)
            except ArenaError as e:
                self._fail(e)
                return
            if not played:
                queue.put_nowait(spec)  # a bot was not there: try again later

    async def _match(self, spec: MatchSpec) -> bool:
        """Play one match to its end and commit it; False if its bots never all connected."""
        request = match_pb2.CreateMatchRequest(
            request_id=str(uuid.uuid4()),  # a retry of this call would send it again
            preset=spec.preset or self.t.preset,
            overrides=list(spec.overrides if spec.preset else self.t.overrides),
            seats=[
                match_pb2.SeatSpec(kind=match_pb2.SEAT_KIND_BOT, bot_id=self.hosts[b].bot_id)
                for b in spec.seats
            ],
            settings=match_pb2.MatchSettings(
                turn_timer_ms=self.t.time_limit_ms,
                on_timeout=_POLICIES[self.t.on_timeout],
                visibility=match_pb2.VISIBILITY_PUBLIC,
                tags=[_tag(self.t.name)],
            ),
            seed=spec.seed,
        )
        if self._first_create is None:
            self._first_create = time.monotonic()
        created = await self._ask(self.lobby.create_match(request, token=self.creator_token))
        name, host_token = created.match.name, created.host_token
        try:
            if not await self._wait_connected(name, spec):
                await self._cancel(name, host_token, "its bots did not connect")
                return False
            started, t0 = now(), time.monotonic()
            await self._ask(self.lobby.start_match(name, token=host_token))
            await self._follow(name)
            replay = (await self._ask(self.lobby.get_replay(name))).replay
        except asyncio.CancelledError:
            await asyncio.shield(self._abandon(spec, name, host_token))
            raise
        late = await self._late_seats(name) if self.t.on_timeout == "auto-play" else {}
        self._store_match(spec, replay, name, started, time.monotonic() - t0)
        out = replay.outcome
        termination = termination_name(out.termination)
        if out.HasField("forfeited") and termination in _FORFEIT_FAILURES:
            self._record_failure(
                spec.sides[out.forfeited], _FORFEIT_FAILURES[termination], out.reason, spec.key
            )
        for bot in dict.fromkeys(spec.seats[seat] for seat in late):  # one row per bot
            seats = [seat for seat in late if spec.seats[seat] == bot]
            timeouts = sum(late[seat][0] for seat in seats)
            auto_played = sum(late[seat][1] for seat in seats)
            self._record_failure(
                bot,
                "timeout",
                f"missed {timeouts} deadline(s) (late, disconnected or illegal answers) at "
                f"seat(s) {', '.join(map(str, seats))}; the server played {auto_played} of "
                "its turns (auto-play)",
                spec.key,
            )
        self._committed(spec, replay)
        return True

    async def _late_seats(self, name: str) -> dict[int, tuple[int, int]]:
        """Seat -> (timeouts, turns auto-played) of a finished match's late seats: under
        auto-play a late bot does not end the match, so only the match record shows it."""
        match = await self._ask(self.lobby.get_match(name))
        return {s.seat: (s.timeouts, s.auto_played) for s in match.seats if s.timeouts}

    async def _wait_connected(self, name: str, spec: MatchSpec) -> bool:
        def gone() -> bool:
            return any(self.hosts[b].disqualified for b in spec.bots)

        try:
            async with asyncio.timeout(self.connect_timeout):
                return await self._connected(name, gone) is not None
        except TimeoutError:
            pass
        match = await self._ask(self.lobby.get_match(name))
        missing = sorted({spec.seats[s.seat] for s in match.seats if not s.connected})
        for bot in missing:
            self._record_failure(
                bot, "start", f"not connected {self.connect_timeout:.0f} s after match creation"
            )
            host = self.hosts[bot]
            if host.proc is not None:  # alive but silent: restart it (counts as a crash)
                await stop_process(host.proc)
            elif host.spec.kind == "remote":
                host.crashes += 1
                if host.crashes >= self.t.max_crashes:
                    self._disqualify(host, f"not connected for {host.crashes} matches")
        return False

    async def _follow(self, name: str) -> None:
        """Wait for the match to end (a spectator stream; GetMatch if the stream breaks)."""
        try:
            async for message in self.lobby.watch_match(name):
                if message.HasField("match_ended"):
                    return
        except ServerUnavailable as e:
            raise self._rpc_error(e) from None
        except LobbyError:
            pass  # e.g. SLOW_CONSUMER: the match goes on; ask how it ends
        while True:  # the stream ended without match_ended: poll
            match = await self._ask(self.lobby.get_match(name))
            if match.state == match_pb2.MATCH_STATE_FINISHED:
                return
            await asyncio.sleep(0.2)

    async def _connected(self, name: str, gone: Callable[[], bool]) -> match_pb2.Match | None:
        """The match's record once every seat's bot is connected, pushed by the server
        (WatchMatch's match updates, no polling); None as soon as ``gone()`` says a bot
        will not come (its process ended, it was disqualified)."""
        stream = self.lobby.watch_match(name, match_updates=True)
        step: asyncio.Future[match_pb2.WatchMatchResponse] | None = None
        try:
            while not gone():
                if step is None:
                    step = asyncio.ensure_future(anext(stream))
                changed: asyncio.Future[Any] = asyncio.ensure_future(self._bots_changed.wait())
                waits: set[asyncio.Future[Any]] = {step, changed}
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                changed.cancel()
                if not step.done():
                    continue
                message = step.result()
                step = None
                if message.HasField("match") and all(s.connected for s in message.match.seats):
                    return message.match
                if message.HasField("match_ended"):
                    raise ArenaError(f"{name} ended before its bots connected")
            return None
        except LobbyError as e:
            raise self._rpc_error(e) from None
        finally:
            if step is not None:  # the stream's pending read ends first, then the stream
                step.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration, LobbyError):
                    await step
            await stream.aclose()

    def _bot_changed(self) -> None:
        """Wake what waits for bots (:meth:`_connected`)."""
        self._bots_changed.set()
        self._bots_changed = asyncio.Event()

    async def _cancel(self, name: str, host_token: str, reason: str) -> None:
        with contextlib.suppress(ArenaError):
            await self._ask(self.lobby.cancel_match(name, reason, token=host_token))

    async def _abandon(self, spec: MatchSpec, name: str, host_token: str) -> None:
        await self._cancel(name, host_token, "the arena was interrupted")
        self._store_abandoned(spec.key, "interrupted")
        self.summary.abandoned += 1


def commit_match(
    results: Results,
    spec: MatchSpec,
    replay: replay_pb2.Replay,
    server_match: str | None,
    started: str,
    seconds: float,
) -> None:
    """Write the replay of a finished scheduled match (atomically), then commit the match
    and its hands in one transaction: a match is in the results only with its replay."""
    path = write_match_replay(results.directory, spec.key, replay)
    results.record_match(
        key=spec.key,
        set_key=spec.set_key,
        seq=spec.seq,
        rotation=spec.rotation,
        seats=spec.seats,
        sides=spec.sides,
        replay=replay,
        server_match=server_match,
        replay_path=path,
        started=started,
        seconds=seconds,
    )


def result_text(spec: MatchSpec, replay: replay_pb2.Replay) -> str:
    """A finished match's score line: ``1-0``/``0-1``/``½-½`` between two sides, else
    ``NAME wins`` or ``no winner``."""
    out = replay.outcome
    winner = out.winner if out.HasField("winner") else None
    if len(spec.sides) == 2:
        return "½-½" if winner is None else ("1-0" if winner == 0 else "0-1")
    return f"{spec.sides[winner]} wins" if winner is not None else "no winner"


def _tag(name: str) -> str:
    """The server tag of a tournament's matches: ``arena:NAME`` in the allowed characters."""
    safe = "".join(c if c.isalnum() or c in "_.-" else "-" for c in name)
    return f"arena:{safe}"[:64]
