"""The compliance suite's server: CAPICUA_COMPLIANCE_SERVER=HOST:PORT checks any running
server; otherwise a real ``capicua serve --port 0`` subprocess is started on loopback (its
address is read from the ``listening on HOST:PORT`` line it prints).

A server that restricts RegisterBot takes its admin token from
CAPICUA_COMPLIANCE_ADMIN_TOKEN.

What a run leaves on the server it checks (see README.md here): after each test, every
match the test created that is not over is cancelled with its host token, so none stays
waiting or running; the finished matches stay, as any finished match does. The bots it
registered stay too (the protocol has no call to remove a bot).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from tests.compliance.client import Lobby

START_TIMEOUT = 30.0


def _first_line(proc: subprocess.Popen[str], timeout: float) -> str:
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    return box[0] if box else ""


@pytest.fixture(scope="session")
def server_address() -> Iterator[str]:
    given = os.environ.get("CAPICUA_COMPLIANCE_SERVER")
    if given:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="capicua-compliance-") as data:
        log = open(Path(data) / "server.log", "w")  # noqa: SIM115
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from capicua.cli import main; main()",
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--data",
                data,
                "--cpu-workers",
                "1",
                "--grace",
                "3",
            ],  # fmt: skip
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        try:
            line = _first_line(proc, START_TIMEOUT)
            found = re.fullmatch(r"listening on (\S+)\n?", line)
            if found is None:
                proc.kill()
                log.close()
                raise RuntimeError(
                    f"capicua serve did not start ({line!r}):\n"
                    + (Path(data) / "server.log").read_text()[-3000:]
                )
            yield found.group(1)
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
            log.close()


@pytest.fixture(scope="session")
def admin_token() -> str | None:
    return os.environ.get("CAPICUA_COMPLIANCE_ADMIN_TOKEN") or None


@pytest.fixture
async def lobby(server_address: str) -> AsyncIterator[Lobby]:
    client = Lobby(server_address)
    try:
        yield client
    finally:
        try:
            # failed tests too: a shared server must not fill up with waiting matches
            await client.cancel_created()
        finally:
            await client.close()
