"""Issue 6's combined test: one match on one server with a Python SDK bot, the Node example
bot, a stdio bot (the Perl example through ``capicua bot stdio``) and a CPU seat, each bot
on its own Play stream."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Sequence

import pytest

from capicua.client import Bot, Session
from capicua.engine.actions import Action
from capicua.engine.observation import Observation
from capicua.engine.records import Termination
from tests.clientkit import REPO, Proc, bot_cmd, plays_of, until
from tests.compliance.client import bot_seat, cpu_seat
from tests.serverkit import running, wait_finished
from tests.tooling import missing_tool

NODE_BOT = REPO / "clients" / "node" / "examples" / "random_bot.js"
PERL_BOT = REPO / "clients" / "stdio" / "random_bot.pl"
TIMER_MS = 30_000


class CountingBot(Bot):
    def __init__(self) -> None:
        self.calls = 0

    def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        self.calls += 1
        return legal_actions[-1]


def _tools() -> None:
    if not NODE_BOT.exists():
        pytest.skip(f"{NODE_BOT.relative_to(REPO)} is missing (the Node client is not there yet)")
    if shutil.which("node") is None:
        missing_tool("node is not installed (the Node client's example bot needs it)")
    if not (REPO / "clients" / "node" / "node_modules" / "@grpc" / "grpc-js").is_dir():
        missing_tool("clients/node/node_modules is missing: run `npm ci --prefix clients/node`")
    if shutil.which("perl") is None:
        missing_tool("perl is not installed (the stdio example bot needs it)")


async def test_python_node_stdio_and_cpu_seats_play_one_match() -> None:
    _tools()
    async with running(None) as (app, lobby):
        py_id, py_token = await lobby.register("python")
        node_id, node_token = await lobby.register("node")
        stdio_id, stdio_token = await lobby.register("stdio")
        seats = [bot_seat(py_id), bot_seat(node_id), bot_seat(stdio_id), cpu_seat()]
        match, host = await lobby.create(
            "block", seats, overrides=["target=30"], seed=9, timer_ms=TIMER_MS
        )
        python_bot = CountingBot()
        python = asyncio.create_task(
            Session(
                python_bot, server=app.address, token=py_token, matches=1, ask_forced=True
            ).run()
        )
        node = Proc(
            ["node", str(NODE_BOT), "--ask-forced", "--matches", "1"],
            env={"CAPICUA_SERVER": app.address, "CAPICUA_TOKEN": node_token},
        )
        stdio = Proc(
            [*bot_cmd("stdio", app.address, stdio_token, "--matches", "1", "--ask-forced"),
             "--", "perl", str(PERL_BOT)],
            env={"BOT_VERBOSE": "1"},
        )  # fmt: skip
        try:
            principals = {f"bots/{b}" for b in (py_id, node_id, stdio_id)}
            streams = app.hub.streams
            await until(
                lambda: principals <= {p for p, s in streams.items() if s.ask_forced},
                30,
                f"three bots connected\n{node.report()}\n{stdio.report()}",
            )
            await lobby.start(match.name, host)
            finished = await wait_finished(lobby, match.name, timeout=60)
            summary = await asyncio.wait_for(python, 30)
            assert await stdio.wait(30) == 0, stdio.report()
            assert await node.wait(30) == 0, node.report()
            replay = await lobby.replay(match.name)  # verified by the engine
        finally:
            python.cancel()
            node.stop()
            stdio.kill()

    assert replay.outcome is not None and replay.outcome.termination is Termination.NORMAL
    assert finished.outcome.reason == replay.outcome.reason
    assert summary.outcomes[match.name] == replay.outcome
    # Every seat played, and the server never timed out a remote seat (it counts each
    # timer that ran out in the seat's status): every bot answered each of its turns.
    assert all(plays_of(replay, seat) for seat in range(4)), replay
    late = [(s.seat, s.timeouts, s.auto_played) for s in finished.seats if s.timeouts]
    assert late == [], f"(seat, timeouts, auto-played): {late}"
    assert python_bot.calls == len(plays_of(replay, 0))  # ask_forced: every play asked
    perl_said = [line for line in stdio.err if ": hand " in line]
    assert len(perl_said) == len(plays_of(replay, 2)), stdio.report()
