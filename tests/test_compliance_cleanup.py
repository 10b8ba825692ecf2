"""The compliance suite cleans up after itself: run whole against a fresh ``capicua serve``,
it leaves none of its matches waiting or running (tests/compliance/README.md).

It lives outside tests/compliance so that the suite, pointed at another server, does not
run itself again."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from capicua.v1 import game_pb2, match_pb2
from tests.compliance.client import Lobby
from tests.serverkit import server_process

ROOT = Path(__file__).resolve().parent.parent
SUITE_TIMEOUT = 600  # seconds; the suite takes about 15 s on two cores


async def listed(address: str, state: match_pb2.MatchState.ValueType) -> list[match_pb2.Match]:
    """Every public match in ``state`` (the suite creates fewer than one page of them)."""
    lobby = Lobby(address)
    try:
        page = await lobby.matches.ListMatches(
            match_pb2.ListMatchesRequest(page_size=500, state=state), timeout=10
        )
        assert not page.next_page_token
        return list(page.matches)
    finally:
        await lobby.close()


def run_suite(address: str) -> subprocess.CompletedProcess[str]:
    """``pytest tests/compliance`` against ``address``, in a process of its own (not under
    this run's xdist worker or its settings)."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "CAPICUA_COMPLIANCE_"))
    }
    env["CAPICUA_COMPLIANCE_SERVER"] = address
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:cacheprovider",
         "tests/compliance"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=SUITE_TIMEOUT,
        check=False,
    )  # fmt: skip


def test_a_compliance_run_leaves_no_match_waiting_or_running(tmp_path: Path) -> None:
    # the suite registers more bots than an open server allows one address an hour
    args = ["--data", str(tmp_path / "data"), "--max-registrations-per-hour", "1000"]
    with server_process(args, tmp_path / "logs") as server:
        done = run_suite(server.address)
        assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-2000:]
        waiting = asyncio.run(listed(server.address, match_pb2.MATCH_STATE_WAITING))
        running = asyncio.run(listed(server.address, match_pb2.MATCH_STATE_RUNNING))
        finished = asyncio.run(listed(server.address, match_pb2.MATCH_STATE_FINISHED))
    assert [m.name for m in waiting] == []
    assert [m.name for m in running] == []
    # the suite's tests leave some matches waiting on purpose: the cleanup cancelled them
    cleaned = [
        m
        for m in finished
        if m.outcome.termination == game_pb2.TERMINATION_CANCELLED
        and m.outcome.reason == "compliance suite cleanup"
    ]
    assert cleaned, [(m.name, m.outcome.reason) for m in finished]
