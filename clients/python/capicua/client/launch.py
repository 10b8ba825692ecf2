"""Start a ``capicua serve`` of one's own: for demos, the arena's embedded server, benches
and tests.

``capicua serve --port 0`` picks a free port and prints ``listening on HOST:PORT`` on
stdout once it serves; :func:`launch_server` starts it, waits for that line (and for
nothing else: no sleep, no polling) and hands back the address::

    with launch_server(data=Path("data")) as server:
        run_bot(MyBot(), server=server.address, token=...)

The child dies with this process (``capicua.common.lifetime``) and runs in its own process group,
so that stopping it stops what it started too; its stderr goes to a log file when one is
given. :func:`launch` does the same for any command that prints that line (the benches'
echo server).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO

from capicua.common.lifetime import with_parent_death
from capicua.common.tokens import ADMIN_TOKEN_ENV, new_admin_token

from .bot import ClientError

Traceback = TracebackType | None

__all__ = ["LaunchError", "Launched", "launch", "launch_server", "new_admin_token"]

#: The line a server prints once it serves (the first of its stdout).
LISTENING = re.compile(r"listening on (\S+)\n?")


class LaunchError(ClientError):
    """The server did not start: the text ends with the last lines of its log."""


@dataclass
class Launched:
    """A child process that printed ``listening on ADDRESS``."""

    address: str  # HOST:PORT, as the child printed it
    process: subprocess.Popen[bytes]
    log: Path | None  # where its stderr goes (None: this process's stderr)
    admin_token: str | None = None  # the admin token it was given, if any
    _stopped: int | None = field(default=None, repr=False)

    def tail(self, chars: int = 2000) -> str:
        """The end of its log ("" without one)."""
        return _tail(self.log, chars)

    def stop(self, grace: float = 20.0) -> int:
        """SIGTERM its process group, SIGKILL after ``grace`` seconds; its exit code (a
        second call returns the same)."""
        if self._stopped is None:
            self._stopped = _stop(self.process, grace)
        return self._stopped

    async def aclose(self, grace: float = 20.0) -> int:
        """:meth:`stop` without blocking the event loop."""
        return await asyncio.to_thread(self.stop, grace)

    def __enter__(self) -> Launched:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: Traceback
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Launched:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: Traceback
    ) -> None:
        await self.aclose()


def launch_server(
    args: Sequence[str] = (),
    *,
    data: Path | None = None,
    admin_token: str | None = None,
    log: Path | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 60.0,
) -> Launched:
    """``capicua serve --port 0 [--data DATA] ARGS``, started with this Python, once it
    serves (``data`` None: a temporary store, gone when it stops). ``admin_token`` (e.g.
    :func:`new_admin_token`) reaches it through a pipe (:func:`_secret_pipe`), neither its
    command line, which every user of the machine can read, nor its environment, which
    every process of the user can read (``/proc/PID/environ``): a bot the server's owner
    runs is one. Raises :class:`LaunchError` if it exits or prints something else first, or
    says nothing for ``timeout`` seconds."""
    argv = [sys.executable, "-m", "capicua", "serve", "--port", "0"]
    if data is not None:
        argv += ["--data", str(data)]
    child_env = dict(os.environ if env is None else env)
    secret: list[int] = []
    if admin_token is not None:
        child_env.pop(ADMIN_TOKEN_ENV, None)  # the pipe's token, not another one
        secret.append(_secret_pipe(admin_token))
        argv += ["--admin-token-file", f"/dev/fd/{secret[0]}"]
    try:
        launched = launch(
            [*argv, *args],
            what="capicua serve",
            log=log,
            env=child_env,
            cwd=cwd,
            timeout=timeout,
            pass_fds=secret,
        )
    finally:
        for fd in secret:  # the child holds its own copy
            os.close(fd)
    launched.admin_token = admin_token
    return launched


def _secret_pipe(text: str) -> int:
    """The read end of a pipe holding ``text`` and already closed for writing: the child
    that inherits it reads ``text`` once (``--admin-token-file /dev/fd/N``), and what it
    leaves behind is an empty pipe, not a file or a variable another process could read
    later. (A token is far smaller than a pipe's buffer: the write cannot block.)"""
    read, write = os.pipe()
    try:
        os.write(write, text.encode() + b"\n")
    finally:
        os.close(write)
    return read


def launch(
    argv: Sequence[str],
    *,
    what: str,
    log: Path | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 60.0,
    stdin: bool = False,
    pass_fds: Sequence[int] = (),
) -> Launched:
    """Start ``argv`` (dying with this process, in its own process group) and wait until
    it prints ``listening on ADDRESS`` as its first line of stdout. ``stdin``: give it a
    pipe (a child that exits when it closes); else it reads nothing. ``pass_fds``: file
    descriptors it inherits (every other one is closed in it)."""
    sink: IO[bytes] | None = None
    if log is not None:
        log.parent.mkdir(parents=True, exist_ok=True)
        sink = open(log, "ab")  # noqa: SIM115 - the child holds it; closed right after
    try:
        process = subprocess.Popen(
            with_parent_death(argv),
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=sink,
            env=None if env is None else dict(env),
            cwd=cwd,
            pass_fds=tuple(pass_fds),
            start_new_session=True,  # its own process group: what it starts stops with it
        )
    except OSError as e:
        raise LaunchError(f"cannot start {what} ({argv[0]!r}): {e.strerror or e}") from None
    finally:
        if sink is not None:
            sink.close()
    line = _first_line(process, timeout)
    found = LISTENING.fullmatch(line)
    if found is None:
        _stop(process, 5.0)
        said = f"it printed {line.strip()!r}" if line else f"nothing in {timeout:g} s"
        tail = _tail(log, 2000)
        raise LaunchError(f"{what} did not start: {said}" + (f"\n{tail}" if tail else ""))
    return Launched(found.group(1), process, log)


def _first_line(process: subprocess.Popen[bytes], timeout: float) -> str:
    """The child's first stdout line ("" if it closed stdout or said nothing in time). A
    thread reads it: a pipe has no timeout of its own, and the event it waits for is the
    line itself."""
    box: list[bytes] = []
    assert process.stdout is not None
    stdout = process.stdout
    reader = threading.Thread(target=lambda: box.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return box[0].decode("utf-8", "replace") if box else ""


def _stop(process: subprocess.Popen[bytes], grace: float) -> int:
    """SIGTERM the child's process group, then SIGKILL after ``grace`` seconds."""
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
        if process.poll() is not None:
            break
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(wait)
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    return process.wait()


def _tail(log: Path | None, chars: int) -> str:
    if log is None:
        return ""
    try:
        return log.read_bytes()[-chars:].decode("utf-8", "replace")
    except OSError:
        return ""
