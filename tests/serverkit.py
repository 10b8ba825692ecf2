"""Helpers for the white-box server tests: an in-process server and a subprocess one."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog

from capicua.client import Launched, launch_server
from capicua.server.app import App, ServerConfig, configure_logging
from capicua.server.store import DB_NAME
from capicua.v1 import match_pb2
from tests.compliance.client import Lobby


@asynccontextmanager
async def running(data: Path | None, **config: Any) -> AsyncIterator[tuple[App, Lobby]]:
    """An in-process server on a free loopback port (or ``port=``), and a lobby client for
    it."""
    app = await App.start(ServerConfig(data=data, **{"port": 0, "cpu_workers": 1, **config}))
    lobby = Lobby(app.address)
    try:
        yield app, lobby
    finally:
        await lobby.close()
        await app.shutdown(grace=2)


class Logs:
    """The server's JSON log lines, as ``capicua serve`` writes them."""

    def __init__(self) -> None:
        self.out = io.StringIO()

    def lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.out.getvalue().splitlines() if line]

    def of(self, event: str) -> list[dict[str, Any]]:
        return [line for line in self.lines() if line["event"] == event]

    def one(self, event: str) -> dict[str, Any]:
        found = self.of(event)
        assert len(found) == 1, (event, self.lines())
        return found[0]


@contextmanager
def captured_logs() -> Iterator[Logs]:
    """The in-process servers' log lines while in the block."""
    saved = structlog.get_config()
    captured = Logs()
    configure_logging("info", captured.out)
    try:
        yield captured
    finally:
        structlog.configure(**saved)


def has_ipv6_loopback() -> bool:
    """Whether this machine can send from ``::1`` (a container may have no IPv6 at all)."""
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@asynccontextmanager
async def sending_from(source: str, port: int) -> AsyncIterator[str]:
    """A relay on a free loopback port whose connections reach the server on ``port`` of
    the loopback address of ``source``'s family, each from the address ``source`` (bound
    before connecting): a gRPC client of the address yielded is seen by the server as a
    caller from ``source``, which Python's gRPC cannot choose itself. Real TCP both ways;
    the bytes pass untouched."""
    server = "::1" if ":" in source else "127.0.0.1"
    writers: list[asyncio.StreamWriter] = []  # closed at the end, whatever the client did

    async def relay(down: asyncio.StreamReader, back: asyncio.StreamWriter) -> None:
        writers.append(back)
        try:
            up, out = await asyncio.open_connection(server, port, local_addr=(source, 0))
        except OSError:
            back.close()
            return
        writers.append(out)
        await asyncio.gather(_pipe(down, out), _pipe(up, back))

    listener = await asyncio.start_server(relay, "127.0.0.1", 0)
    try:
        yield f"127.0.0.1:{listener.sockets[0].getsockname()[1]}"
    finally:
        listener.close()
        for writer in writers:
            writer.close()
        await listener.wait_closed()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until either side ends, then close both ways (gRPC needs no half-close)."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def wait_finished(lobby: Lobby, name: str, timeout: float = 30.0) -> match_pb2.Match:
    for _ in range(int(timeout / 0.02)):
        match = await lobby.get(name)
        if match.state == match_pb2.MATCH_STATE_FINISHED:
            return match
        await asyncio.sleep(0.02)
    raise AssertionError(f"{name} did not finish in {timeout}s")


def journal_rows(data: Path, table: str, name: str) -> int:
    """How many rows of journal ``table`` (``live_actions``, ``live_creators``...) the store
    under ``data`` holds on disk for match ``name``, read as another process would."""
    uri = f"{(data / DB_NAME).as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as db:
        query = f"SELECT count(*) FROM {table} WHERE match_id = ?"
        return int(db.execute(query, (name.removeprefix("matches/"),)).fetchone()[0])


@dataclass
class ServerProcess:
    """A ``capicua serve`` subprocess, as the SDK's ``launch_server`` started it."""

    launched: Launched

    @property
    def proc(self) -> subprocess.Popen[bytes]:
        return self.launched.process

    @property
    def address(self) -> str:
        return self.launched.address

    @property
    def stderr_path(self) -> Path:
        assert self.launched.log is not None
        return self.launched.log

    def logs(self) -> str:
        return self.stderr_path.read_text()

    def events(self) -> list[dict[str, Any]]:
        """The server's log, line by line: every line is a JSON object (a line that is not
        fails the test, shown with its neighbours)."""
        lines = self.logs().splitlines()
        events = []
        for number, line in enumerate(lines):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError:
                shown = "\n".join(lines[max(0, number - 5) : number + 20])
                raise AssertionError(f"log line {number + 1} is not JSON:\n{shown}") from None
            assert isinstance(event, dict), line
            events.append(event)
        return events

    def stop(self, timeout: float = 90.0) -> int:
        """SIGTERM, and its exit code. A stop that hangs fails the test with the end of the
        server's log: the server bounds its own stop (it logs what hung and exits once the
        stop overran ``--grace`` by 30 s, or faulthandler does at twice that), and one still
        running after ``timeout`` (above that bound) is killed."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.launched.stop(grace=0)
            raise AssertionError(f"the server did not stop:\n{self._log_end()}") from None
        self.launched.stop()  # it has exited: this closes its pipes
        log = self.logs()
        if '"server_stop_overran"' in log or re.search(r"^Timeout \(", log, re.MULTILINE):
            raise AssertionError(f"the server's stop hung:\n{self._log_end()}")
        return code

    def _log_end(self, chars: int = 12_000) -> str:
        return self.logs()[-chars:]


@contextmanager
def server_process(
    args: Sequence[str], log_dir: Path, admin_token: str | None = None
) -> Iterator[ServerProcess]:
    """``capicua serve --port 0 --cpu-workers 1 ARGS`` as a subprocess (with ``admin_token``
    through a pipe, if given); stops it (SIGTERM) on exit."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"server-{os.getpid()}-{len(list(log_dir.iterdir()))}.log"
    launched = launch_server(
        ["--cpu-workers", "1", *args], log=log, timeout=30, admin_token=admin_token
    )
    server = ServerProcess(launched)
    try:
        yield server
    finally:
        server.stop()  # also when the test stopped or killed it: its pipes are closed
