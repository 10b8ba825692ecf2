"""Helpers for the white-box server tests: an in-process server and a subprocess one."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, closing, contextmanager
from dataclasses import dataclass
from pathlib import Path

from capicua.server.app import App, ServerConfig
from capicua.server.store import DB_NAME
from capicua.v1 import match_pb2
from tests.compliance.client import Lobby


@asynccontextmanager
async def running(data: Path | None, **config: object) -> AsyncIterator[tuple[App, Lobby]]:
    """An in-process server on a free loopback port, and a lobby client for it."""
    app = await App.start(ServerConfig(port=0, data=data, cpu_workers=1, **config))  # type: ignore[arg-type]
    lobby = Lobby(app.address)
    try:
        yield app, lobby
    finally:
        await lobby.close()
        await app.shutdown(grace=2)


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
    proc: subprocess.Popen[str]
    address: str
    stderr_path: Path

    def logs(self) -> str:
        return self.stderr_path.read_text()

    def stop(self, timeout: float = 20.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
            raise


@contextmanager
def server_process(args: Sequence[str], log_dir: Path) -> Iterator[ServerProcess]:
    """``capicua serve --port 0 ARGS`` as a subprocess; stops it (SIGTERM) on exit."""
    log_dir.mkdir(parents=True, exist_ok=True)
    stderr_path = log_dir / f"server-{os.getpid()}-{len(list(log_dir.iterdir()))}.log"
    with open(stderr_path, "w") as err:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from capicua.cli import main; main()",
                "serve",
                "--port",
                "0",
                "--cpu-workers",
                "1",
                *args,
            ],  # fmt: skip
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
        )
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(30)
    found = re.fullmatch(r"listening on (\S+)\n?", box[0] if box else "")
    if found is None:
        proc.kill()
        raise RuntimeError(f"server did not start: {box!r}\n{stderr_path.read_text()[-3000:]}")
    server = ServerProcess(proc, found.group(1), stderr_path)
    try:
        yield server
    finally:
        if proc.poll() is None:
            server.stop()
