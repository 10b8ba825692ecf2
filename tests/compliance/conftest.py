"""The compliance suite's server: CAPICUA_COMPLIANCE_SERVER=HOST:PORT checks any running
server; otherwise a real ``capicua serve --port 0`` subprocess is started on loopback with the
SDK's ``launch_server``.

A server that restricts RegisterBot takes its admin token from
CAPICUA_COMPLIANCE_ADMIN_TOKEN.

What a run leaves on the server it checks (see README.md here): after each test, every
match the test created that is not over is cancelled with its host token, so none stays
waiting or running; the finished matches stay, as any finished match does. The bots it
registered stay too (the protocol has no call to remove a bot).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from capicua.client import launch_server
from tests.compliance.client import Lobby

START_TIMEOUT = 30.0
REGISTRATIONS = 1000  # bots the suite's own server lets one address register an hour


@pytest.fixture(scope="session")
def server_address() -> Iterator[str]:
    given = os.environ.get("CAPICUA_COMPLIANCE_SERVER")
    if given:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="capicua-compliance-") as data:
        # The suite registers more bots from one address than an open server's default
        # allows an hour (60): see README.md for a server of your own.
        args = ["--host", "127.0.0.1", "--cpu-workers", "1", "--grace", "3"]
        args += ["--max-registrations-per-hour", str(REGISTRATIONS)]
        log = Path(data) / "server.log"
        with launch_server(args, data=Path(data), log=log, timeout=START_TIMEOUT) as server:
            yield server.address


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
