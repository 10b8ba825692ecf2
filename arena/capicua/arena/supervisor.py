"""The bots' processes of an arena run: start them, watch them, restart them, stop them.

Every child asks the kernel to kill it when the arena dies (so ``kill -9`` leaves no
orphan), and lives in its own process group so its own children are stopped with it. A bot
process that exits is a crash: it is reported, restarted with backoff, and after
``max_crashes`` crashes the bot is disqualified (the match loop then skips its matches).
The supervisor knows processes, not matches: what a crash or a disqualification means for
the results is the caller's (``on_failure``, ``on_disqualified``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from capicua.common.lifetime import with_parent_death
from capicua.common.tokens import ADMIN_TOKEN_ENV

from .config import LIBRARY_BOTS, BotSpec, Tournament
from .errors import ArenaError

#: The variables that point a client at TLS: a bot of the embedded server has none.
_TLS_ENV = ("CAPICUA_TLS", "CAPICUA_TLS_CA", "CAPICUA_TLS_CERT", "CAPICUA_TLS_KEY")


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
    """SIGTERM the child's process group, then SIGKILL after ``grace`` seconds.

    (Not :mod:`capicua.client.launch`'s helper: that one stops a blocking ``Popen``, and a
    bot is an asyncio child whose end the supervisor awaits.)"""
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


def log_tail(path: Path, lines: int = 3) -> str:
    """The last non-blank ``lines`` of a log, on one line ("" if unreadable)."""
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
    if spec.kind in LIBRARY_BOTS:
        bot_class = LIBRARY_BOTS[spec.kind].classes[spec.target]
        return [*_python(), "bot", "run", bot_class, *spec.option_args(), *quiet]
    if spec.kind == "stdio":
        return [*_python(), "bot", "stdio", *quiet, "--", *spec.argv()]
    if spec.kind == "cmd":
        return spec.argv()
    raise ValueError(f"{spec.kind}: bots have no process")


def bot_env(address: str, token: str, *, plaintext: bool) -> dict[str, str]:
    """The environment of a bot process: this one's, pointed at ``address`` with ``token``
    (what every client of docs/writing-a-bot.md reads), without the admin's token (a bot
    is no admin) and, for a ``plaintext`` server, without the TLS settings."""
    env = dict(os.environ)
    if plaintext:
        for name in _TLS_ENV:
            env.pop(name, None)
    env.pop(ADMIN_TOKEN_ENV, None)
    env["CAPICUA_SERVER"] = address
    env["CAPICUA_TOKEN"] = token
    return env


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

    @property
    def gone(self) -> bool:
        """Its process is not running, or has crashed since it started."""
        return self.proc is None or self.proc.returncode is not None or bool(self.crashes)


class BotSupervisor:
    """The processes of a tournament's bots, one per bot (``remote:`` bots have none)."""

    def __init__(
        self,
        tournament: Tournament,
        logs: Path,
        *,
        on_failure: Callable[[str, str, str], None],
        on_disqualified: Callable[[str, str], None],
    ) -> None:
        """``logs`` is where each bot's stderr goes (``NAME.log``); ``on_failure(bot, kind,
        detail)`` hears of a crash or a start that failed, ``on_disqualified(bot, reason)``
        of a bot that will not play again."""
        self.t = tournament
        self.logs = logs
        self.on_failure = on_failure
        self.on_disqualified = on_disqualified
        self.hosts: dict[str, BotHost] = {}
        self.address = ""  # the server the bots play on (set by serve())
        self.plaintext = True  # the bots reach it without TLS (the embedded server)
        self.stopping = False
        # set (and replaced) when a bot process ends or a bot is disqualified: what waits
        # for bots to connect wakes up to check them
        self._changed = asyncio.Event()

    def log(self, name: str) -> Path:
        """Where a bot's stderr goes."""
        return self.logs / f"{name}.log"

    def __getitem__(self, name: str) -> BotHost:
        return self.hosts[name]

    def add(self, spec: BotSpec, bot_id: str, *, disqualified: bool = False) -> BotHost:
        """Take a bot of the tournament in (not started)."""
        host = self.hosts[spec.name] = BotHost(spec, bot_id, disqualified=disqualified)
        return host

    def serve(self, address: str, *, plaintext: bool) -> None:
        """The server every bot started from now on plays on."""
        self.address, self.plaintext = address, plaintext

    def disqualified(self, bots: frozenset[str] | set[str]) -> bool:
        """Whether any of ``bots`` is disqualified."""
        return any(self.hosts[b].disqualified for b in bots)

    async def start(self, host: BotHost) -> None:
        """Start a registered bot's process (``host.token`` set) and watch it."""
        await self._launch(host)
        host.monitor = asyncio.create_task(self._monitor(host))

    def _env(self, host: BotHost, cwd: Path) -> dict[str, str]:
        env = bot_env(self.address, host.token, plaintext=self.plaintext)
        env["CAPICUA_BOT_NAME"] = host.name
        # the bot's own directory first (its python: module imports from there), then the
        # tournament file's, whose modules every bot could import before bots had a dir
        paths = dict.fromkeys((str(cwd), str(self.t.base_dir), env.get("PYTHONPATH")))
        env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        return env

    async def _launch(self, host: BotHost) -> None:
        cwd = host.spec.workdir(self.t.base_dir)
        try:
            host.proc = await spawn(
                bot_argv(host.spec), env=self._env(host, cwd), cwd=cwd, log=self.log(host.name)
            )
        except ArenaError as e:
            host.proc = None
            self.on_failure(host.name, "start", str(e))

    async def _monitor(self, host: BotHost) -> None:
        """Restart a bot whose process ends; disqualify it after ``max_crashes``."""
        log = self.log(host.name)
        while not self.stopping:
            if host.proc is not None:
                code = await host.proc.wait()
                self.changed()
                if self.stopping:
                    return
                detail = f"exited with code {code}"
                tail = log_tail(log)
                self.on_failure(host.name, "crash", f"{detail}: {tail}" if tail else detail)
            host.crashes += 1
            if host.crashes >= self.t.max_crashes:
                tail = log_tail(log, 1)
                last = f" (last: {tail}; see {log})" if tail else f" (see {log})"
                times = "once" if host.crashes == 1 else f"{host.crashes} times"
                self.disqualify(host, f"its process failed {times}{last}")
                return
            await asyncio.sleep(min(10.0, 0.5 * 2 ** (host.crashes - 1)))
            if self.stopping:
                return
            await self._launch(host)

    async def not_connected(self, name: str) -> None:
        """A bot did not connect to its match in time: a live process is restarted (its
        monitor counts a crash); a remote bot counts one toward its disqualification."""
        host = self.hosts[name]
        if host.proc is not None:  # alive but silent: restart it (counts as a crash)
            await stop_process(host.proc)
        elif host.spec.kind == "remote":
            host.crashes += 1
            if host.crashes >= self.t.max_crashes:
                self.disqualify(host, f"not connected for {host.crashes} matches")

    def disqualify(self, host: BotHost, reason: str) -> None:
        host.disqualified = True
        self.changed()
        self.on_disqualified(host.name, reason)

    def changed(self) -> None:
        """Wake what waits for bots (:meth:`wait_changed`)."""
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_changed(self) -> None:
        """Until a bot process ends or a bot is disqualified."""
        await self._changed.wait()

    async def stop(self) -> None:
        """Stop every bot process (no restart from now on)."""
        self.stopping = True
        for host in self.hosts.values():
            if host.monitor is not None:
                host.monitor.cancel()
        await asyncio.gather(
            *(stop_process(h.proc) for h in self.hosts.values() if h.proc is not None)
        )
