"""A server killed with SIGKILL leaves no process behind: a real ``capicua serve`` process,
killed while its CPU pool starts (right after it listens, as its forkserver starts, as
its first worker is forked) and while CPU seats are mid-decision, takes its forkserver,
its pool workers and the multiprocessing resource tracker with it. And a command started
through :func:`capicua.common.lifetime.with_parent_death` by a process that dies at once dies too.

Every process the server starts inherits its environment, so the server is started with a
unique ``CAPICUA_TEST_TAG`` and its descendants are found afterwards in ``/proc/*/environ``
(even those that were reparented). Waits are on events: each process exit is a pidfd
becoming readable, each kill moment a process showing up in ``/proc``, with a generous
bound; whatever is left at the end is killed.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import pytest

from capicua.client import launch_server
from capicua.v1 import match_pb2
from tests.compliance.client import Lobby, cpu_seat

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="uses /proc, pidfds and PR_SET_PDEATHSIG"
)

TAG = "CAPICUA_TEST_TAG"
BOUND_S = 60.0  # the bound of every wait: generous, for a busy machine
# when to kill a starting server: each moment twice (see the test)
MOMENTS = ("listening", "forkserver", "worker") * 2


def tagged(tag: str) -> set[int]:
    """The live processes whose environment carries ``TAG=tag`` (a zombie's is empty)."""
    needle = f"{TAG}={tag}".encode()
    found = set()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as f:
                environ = f.read()
        except OSError:  # gone, or not ours to read
            continue
        if needle in environ.split(b"\0"):
            found.add(int(entry.name))
    return found


def describe(pid: int) -> str:
    """One line on a process, for a failure message."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        wchan = Path(f"/proc/{pid}/wchan").read_text()
    except OSError:
        return f"{pid}: gone"
    return f"{pid}: state {stat[0]}, parent {stat[1]}, wchan {wchan}: {cmdline[:160]}"


def wait_gone(tag: str, bound: float = BOUND_S) -> set[int]:
    """Wait until no process carries ``tag`` (at most ``bound`` seconds); the ones left.

    Each wake-up is an exit (a pidfd turns readable), then /proc is scanned again: a
    process may also have started meanwhile (a fork in flight when the server died)."""
    end = time.monotonic() + bound
    while True:
        left = tagged(tag)
        remaining = end - time.monotonic()
        if not left or remaining <= 0:
            return left
        fds: list[int] = []
        try:
            for pid in left:
                try:
                    fds.append(os.pidfd_open(pid))
                except ProcessLookupError:  # exited since the scan
                    break
            else:
                select.select(fds, [], [], remaining)
        finally:
            for fd in fds:
                os.close(fd)


def children(pid: int) -> list[int]:
    """The children of ``pid``'s main thread (the server's pool starts from its main
    thread; the forkserver has only one)."""
    try:
        return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def first_child(pid: int) -> int | None:
    """One child of ``pid``'s main thread, if it has any yet."""
    return next(iter(children(pid)), None)


def is_forkserver(pid: int) -> bool:
    """Whether ``pid`` runs multiprocessing's forkserver (its workers, forked, look the same)."""
    try:
        return b"multiprocessing.forkserver" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def poll(found: Callable[[], int | None], what: str) -> int:
    """Spin until ``found()`` gives a pid (a bounded busy wait: /proc has no events, and
    the moments looked for last milliseconds)."""
    end = time.monotonic() + BOUND_S
    while time.monotonic() < end:
        pid = found()
        if pid is not None:
            return pid
        os.sched_yield()
    raise AssertionError(f"no {what} after {BOUND_S:.0f}s")


def wait_exit(pid: int) -> None:
    """Wait (bounded) for ``pid`` to exit."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        ready, _, _ = select.select([fd], [], [], BOUND_S)
        assert ready, f"{describe(pid)} did not exit in {BOUND_S:.0f}s"
    finally:
        os.close(fd)


def kill_tagged(tag: str) -> None:
    """SIGKILL every process that carries ``tag``, through a pidfd opened before checking
    the tag again (a pid reused meanwhile is not killed), and wait for them."""
    for pid in tagged(tag):
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            if pid in tagged(tag):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
        except ProcessLookupError:
            pass
        finally:
            os.close(fd)
    wait_gone(tag, bound=10)


@dataclass
class Server:
    proc: subprocess.Popen[bytes]
    address: str
    tag: str
    log: Path

    def forkserver(self) -> int | None:
        return next((c for c in children(self.proc.pid) if is_forkserver(c)), None)

    def kill(self) -> None:
        """SIGKILL: no shutdown code of the server runs."""
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(BOUND_S)
        assert self.proc.stdout is not None
        self.proc.stdout.close()

    def assert_no_orphans(self) -> None:
        left = wait_gone(self.tag)
        assert not left, (
            f"{len(left)} process(es) of the killed server {self.proc.pid} are still alive "
            f"after {BOUND_S:.0f}s:\n" + "\n".join(describe(pid) for pid in sorted(left))
        )


@pytest.fixture
def start() -> Iterator[list[Server]]:
    """Start servers with ``start`` (see :func:`launch`); whatever they leave is killed."""
    servers: list[Server] = []
    yield servers
    for server in servers:
        if server.proc.poll() is None:
            server.kill()
        kill_tagged(server.tag)


def launch(servers: list[Server], tmp_path: Path) -> Server:
    """``capicua serve --port 0 --cpu-workers 2`` with a tagged environment, listening."""
    n = len(servers)
    tag = f"orphans-{uuid.uuid4().hex}"
    log = tmp_path / f"server-{n}.log"
    args = ["--cpu-workers", "2"]
    env = {**os.environ, TAG: tag}
    launched = launch_server(args, data=tmp_path / f"data-{n}", log=log, env=env, timeout=BOUND_S)
    server = Server(launched.process, launched.address, tag, log)
    servers.append(server)
    return server


def test_a_server_killed_as_it_starts_leaves_no_process(
    start: list[Server], tmp_path: Path
) -> None:
    """Killed while its pool starts, when the parent a new process asks to die with may
    already be dead: right after ``listening on`` (the warm-up is about to start the
    pool); as soon as the forkserver runs (it makes its request after the server died,
    and still forks the worker the server asked for); as soon as the first worker exists.

    The first worker is stopped (SIGSTOP) when it shows up, until its forkserver has died
    with the server, then resumed: the interleaving of a busy machine, where a worker is
    descheduled between its fork and its pool initializer, made certain. (The forkserver
    does die: it ran its request before forking, while the server was alive.)"""
    for moment in MOMENTS:
        server = launch(start, tmp_path)
        if moment == "listening":
            server.kill()
        elif moment == "forkserver":
            poll(server.forkserver, "forkserver")
            server.kill()
        else:
            forkserver = poll(server.forkserver, "forkserver")
            worker = poll(partial(first_child, forkserver), "worker")
            os.kill(worker, signal.SIGSTOP)
            server.kill()
            wait_exit(forkserver)
            os.kill(worker, signal.SIGCONT)
        server.assert_no_orphans()


async def test_a_server_killed_mid_decision_leaves_no_process(
    start: list[Server], tmp_path: Path
) -> None:
    """Killed while four hard CPU seats play: a decision is in a worker when it dies."""
    server = launch(start, tmp_path)
    lobby = Lobby(server.address)
    try:
        hard = cpu_seat(match_pb2.CPU_LEVEL_HARD)
        match, host = await lobby.create("block", [hard] * 4, seed=5)
        started = await lobby.start(match.name, host)
        assert started.state == match_pb2.MATCH_STATE_RUNNING
        # a match of CPU seats always waits on the pool while it runs: while it is still
        # in its first hand, hard decisions (200 ms each) are being taken
        now = await lobby.get(match.name)
        assert now.state == match_pb2.MATCH_STATE_RUNNING and now.hand == 0, now
        assert len(tagged(server.tag)) >= 4  # server, tracker, forkserver, workers
        server.kill()
    finally:
        await lobby.close()
    server.assert_no_orphans()


def test_a_command_outlives_no_parent_that_died_before_it_started() -> None:
    """A process starts a command through ``with_parent_death`` and exits at once, before
    the launcher (a Python interpreter starting up) has made its request: the launcher
    must see that the parent it was started by is gone, rather than take init for it."""
    tag = f"orphans-{uuid.uuid4().hex}"
    forever = [sys.executable, "-c", "import select; select.select([], [], [])"]
    starter = (
        "import os, subprocess\n"
        "from capicua.common.lifetime import with_parent_death\n"
        f"subprocess.Popen(with_parent_death({forever!r}))\n"
        "os._exit(0)\n"
    )
    try:
        subprocess.run([sys.executable, "-c", starter], env={**os.environ, TAG: tag}, check=True)
        left = wait_gone(tag)
        assert not left, "\n".join(describe(pid) for pid in sorted(left))
    finally:
        kill_tagged(tag)
