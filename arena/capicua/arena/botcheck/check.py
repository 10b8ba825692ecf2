"""Running a check: the rows chosen, a server of the check's own (or the remote one), every
row side by side within its time, and everything stopped and removed afterwards."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from capicua.client.commands import find_command
from capicua.client.lobby import Lobby, LobbyError, ServerUnavailable, TokenRefused
from capicua.common.errors import CapicuaError

from .harness import RPC_TIMEOUT_S, CheckError, LocalServer, RowFailed, SetupFailed
from .report import FAILED, PASSED, SKIPPED, RowResult
from .rows import DEFAULT_TIMER_MS, ROWS, Context, Row, Setup, own_server

#: Rows that take longest (a server restart each) start first.
_FIRST = ("stopping", "killed")
#: Rows run at once, at most: each has a bot process of its own.
CONCURRENCY = 8
#: Seconds a row's clean-up may take (stopping its bot, its server).
CLOSE_TIMEOUT_S = 30.0
#: prctl(2)'s option that sets whether a process is dumpable.
_PR_SET_DUMPABLE = 4


@dataclass
class Options:
    """What ``capicua bot check`` was asked."""

    command: list[str] = field(default_factory=list)  # the bot's command (local)
    remote: str | None = None  # the bot_id of a bot already on --server
    server: str | None = None  # the remote server
    token: str | None = None  # who creates the remote bot's matches
    rows: list[str] | None = None  # a subset of the rows, by name
    timeout: float = 60.0  # seconds per row
    timer_ms: int = DEFAULT_TIMER_MS  # the decision rows' turn timer
    cwd: Path = field(default_factory=Path.cwd)  # where the command runs
    logs: Path | None = None  # keep each row's bot log here (default: removed)


def select(names: Sequence[str] | None) -> list[Row]:
    """The rows named (all by default), in the table's order; CheckError naming an unknown
    one."""
    if not names:
        return list(ROWS)
    known = {row.name: row for row in ROWS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise CheckError(
            f"--rows: no row {', '.join(map(repr, unknown))}; the rows are {', '.join(known)}"
        )
    return [row for row in ROWS if row.name in names]


def validate(options: Options) -> list[Row]:
    """The rows to run, once the options make sense (CheckError otherwise)."""
    if options.remote is None and not options.command:
        raise CheckError("give the bot's command after --, or --remote BOT_ID --server ADDR")
    if options.remote is not None and options.command:
        raise CheckError("give either a command (after --) or --remote BOT_ID, not both")
    if options.remote is not None and not options.server:
        raise CheckError("--remote needs --server HOST:PORT: the server the bot plays on")
    if options.remote is None and (options.server or options.token):
        raise CheckError(
            "--server and --token go with --remote BOT_ID: a local check starts a server of its own"
        )
    if options.command:
        try:
            find_command(list(options.command))
        except CapicuaError as e:
            raise CheckError(f"the bot's command: {e}") from None
    return select(options.rows)


async def check(options: Options) -> list[RowResult]:
    """Run the chosen rows; their verdicts in the table's order."""
    rows = validate(options)
    _undumpable()
    with tempfile.TemporaryDirectory(prefix="capicua-bot-check-") as tmp:
        root = Path(tmp)
        setup = Setup(
            command=list(options.command) if options.command else None,
            cwd=options.cwd,
            root=root,
            logs=options.logs or root / "logs",
            timer_ms=options.timer_ms,
        )
        try:
            await _connect(setup, options, rows)
            order = sorted(rows, key=lambda r: r.name not in _FIRST)
            done = await _run_all(order, setup, options.timeout)
        finally:
            await _disconnect(setup)
            _drop_empty_logs(setup.logs)
    verdicts = {r.name: r for r in done}
    return [verdicts[row.name] for row in rows]


def run(options: Options) -> list[RowResult]:
    """:func:`check` from plain code."""
    return asyncio.run(check(options))


def _undumpable() -> None:
    """Make this process non-dumpable (Linux; elsewhere nothing): another process of the
    same user, a bot under check included, may then no longer read its environment, memory
    or open files under ``/proc/PID`` (the bots' real tokens, the servers' admin tokens,
    whatever the user's environment holds); root still may. The bots and servers it starts
    are dumpable again (every exec resets it): they hold no secret in their environment or
    command line."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)


async def _connect(setup: Setup, options: Options, rows: Sequence[Row]) -> None:
    """The check's own servers (local): the shared one and those of the rows that stop
    theirs, all started before any bot, so that no bot runs while a server reads its admin
    token; or the remote server's lobby."""
    if setup.command is not None:
        setup.server = LocalServer(setup.root / "server", setup.logs / "server.log")
        setup.own_servers = {r.name: own_server(setup, r.name) for r in rows if r.own_server}
        servers = [setup.server, *setup.own_servers.values()]
        await asyncio.gather(*(server.start() for server in servers))
        return
    assert options.server is not None and options.remote is not None
    setup.remote_bot = options.remote.removeprefix("bots/")
    setup.remote_token = options.token
    setup.remote_lobby = Lobby(options.server, token=options.token, timeout=RPC_TIMEOUT_S)
    try:
        await setup.remote_lobby.wait_ready(RPC_TIMEOUT_S)
    except ServerUnavailable:
        raise CheckError(f"cannot reach a capicua server at {options.server}") from None


async def _disconnect(setup: Setup) -> None:
    """Stop the check's servers (those no row took too), or close the remote lobby."""
    for server in [setup.server, *setup.own_servers.values()]:
        if server is not None:
            await server.close()
    if setup.remote_lobby is not None:
        await setup.remote_lobby.close()


def _drop_empty_logs(logs: Path) -> None:
    """Remove the logs that stayed empty (a quiet server's, a silent bot's): a kept log
    says something."""
    if not logs.is_dir():
        return
    for log in logs.glob("*.log"):
        with contextlib.suppress(OSError):
            if log.stat().st_size == 0:
                log.unlink()


async def _run_all(rows: Sequence[Row], setup: Setup, timeout: float) -> list[RowResult]:
    """Every row, CONCURRENCY at a time; a CheckError in one (the check cannot go on)
    stops the others, cleaned up, and is raised."""
    slots = asyncio.Semaphore(CONCURRENCY)
    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(_run(row, setup, timeout, slots)) for row in rows]
    except* CheckError as errors:
        raise errors.exceptions[0] from None
    return [task.result() for task in tasks]


async def _run(row: Row, setup: Setup, timeout: float, slots: asyncio.Semaphore) -> RowResult:
    """One row within ``timeout`` seconds, cleaned up whatever happens."""
    if row.local_only and setup.command is None:
        return RowResult(row.name, SKIPPED, "skipped: needs a local bot (-- COMMAND)")
    async with slots:
        ctx = Context(row.name, setup)
        started = time.monotonic()
        try:
            async with asyncio.timeout(timeout):
                status, detail = PASSED, await row.run(ctx)
        except RowFailed as e:
            status, detail = FAILED, str(e)
        except SetupFailed as e:
            status, detail = FAILED, f"the check could not set the row up (not the bot): {e}"
        except TimeoutError:
            status, detail = FAILED, _timed_out(ctx, timeout)
        except TokenRefused as e:  # the check's own setup, not the bot: stop it all
            raise CheckError(_refused(setup, e)) from None
        except LobbyError as e:
            status, detail = FAILED, f"the server refused to set the row up: {e}"
        except CheckError:
            raise
        except Exception as e:  # the check's own fault: say so, and go on with the others
            status, detail = FAILED, f"the check itself failed (not the bot): {e!r}"
        finally:
            await asyncio.wait_for(ctx.close(), CLOSE_TIMEOUT_S)
        return RowResult(row.name, status, detail, time.monotonic() - started)


def _timed_out(ctx: Context, timeout: float) -> str:
    """A row out of time: what it waited for, after the first problem the bot showed
    before, its likeliest cause."""
    said = f"did not finish in {timeout:g} s: waiting for {ctx.waiting}"
    cause = ctx.first_problem()
    return f"{cause}; then the row {said}" if cause else said


def _refused(setup: Setup, error: TokenRefused) -> str:
    """Why a remote bot's matches cannot be created, and what to do about it."""
    if setup.server is not None:
        return f"the check's own server refused it: {error}"
    bot = f"bots/{setup.remote_bot}"
    return (
        f"the server refused to create a match reserving {bot} ({error.details}): give "
        f"--token (the server's admin token, or the token of a bot {bot} lets reserve it "
        "and choose its seeds), or let anyone do both (some rows deal a chosen hand): "
        "capicua match bot-access --bot-token ITS_TOKEN '*' --accept-chosen-seeds"
    )
