"""The Python SDK (``capicua.client``) against a real server over loopback: a full match
with sync and async bots, a client killed and restarted mid-match taking its seat back,
bots from the command line, signals, and bots that fail to load. What the SDK does with each
message and ending of its stream (refusals, withdrawals, status codes, reconnection) is
tested against a scripted stream in tests/test_client_stream.py."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from capicua.client import (
    Bot,
    Session,
    Summary,
    current_decision,
)
from capicua.engine.actions import Action
from capicua.engine.observation import Observation
from capicua.engine.records import HandResult, Outcome, Termination
from tests.clientkit import Proc, bot_cmd, plays_of, until
from tests.compliance.client import bot_seat, cpu_seat
from tests.serverkit import running, wait_finished

SHORT = ["target=15"]  # one or two hands of block dominoes


class SyncBot(Bot):
    """Plays the first legal action from a worker thread; records the hooks."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int, int]] = []  # (match, seat, turn_id)
        self.threads: set[str] = set()
        self.started: list[tuple[str, int]] = []
        self.hands: list[tuple[str, int]] = []
        self.ended: dict[str, Outcome] = {}

    def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        decision = current_decision()
        assert decision is not None and decision.seat == observation.seat
        assert observation.to_act == observation.seat and list(legal_actions)
        assert decision.time_left() is not None
        self.calls.append((decision.match, decision.seat, decision.turn_id))
        self.threads.add(threading.current_thread().name)
        return legal_actions[0]

    def on_match_started(self, match: str, seat: int, observation: Observation) -> None:
        assert observation.seat == seat and observation.tiles
        self.started.append((match, seat))

    def on_hand_ended(self, match: str, result: HandResult) -> None:
        self.hands.append((match, result.hand))

    def on_match_ended(self, match: str, outcome: Outcome) -> None:
        self.ended[match] = outcome


class AsyncBot(Bot):
    """``async def choose`` returning action text; async hooks."""

    def __init__(self) -> None:
        self.calls = 0
        self.ended: list[str] = []

    async def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> str:
        await asyncio.sleep(0)
        self.calls += 1
        return str(legal_actions[-1])

    async def on_match_ended(self, match: str, outcome: Outcome) -> None:
        self.ended.append(match)


def session(bot: Bot, address: str, token: str, **options: Any) -> asyncio.Task[Summary]:
    return asyncio.create_task(Session(bot, server=address, token=token, **options).run())


async def test_sync_and_async_bots_play_a_full_match() -> None:
    async with running(None) as (app, lobby):
        sync_id, sync_token = await lobby.register("sync")
        async_id, async_token = await lobby.register("async")
        seats = [bot_seat(sync_id), bot_seat(async_id), bot_seat(sync_id), cpu_seat()]
        match, host = await lobby.create("block", seats, overrides=SHORT, seed=11)
        sync_bot, async_bot = SyncBot(), AsyncBot()
        runs = [
            session(sync_bot, app.address, sync_token, matches=1),
            session(async_bot, app.address, async_token, matches=1, ask_forced=True),
        ]
        asks = app.hub.streams
        await until(lambda: getattr(asks.get(f"bots/{async_id}"), "ask_forced", False), 10)
        await lobby.start(match.name, host)
        summaries = await asyncio.wait_for(asyncio.gather(*runs), 60)

        replay = await lobby.replay(match.name)  # verified by the engine
        assert replay.outcome is not None and replay.outcome.termination is Termination.NORMAL
        for summary in summaries:
            assert list(summary.outcomes) == [match.name]
        assert sync_bot.ended[match.name] == replay.outcome
        assert async_bot.ended == [match.name]
        assert sorted(sync_bot.started) == [(match.name, 0), (match.name, 2)]
        # once per hand, though the bot holds two seats
        assert sync_bot.hands == [(match.name, h.hand) for h in replay.hands]
        assert {seat for _, seat, _ in sync_bot.calls} == {0, 2}
        assert all(name.startswith("capicua-bot") for name in sync_bot.threads)
        assert async_bot.calls > 0
        turns = [turn for _, _, turn in sync_bot.calls]
        assert turns == sorted(set(turns)), "each decision is asked once"
        assert len(plays_of(replay, 1)) == async_bot.calls  # ask_forced: every play asked


async def test_a_killed_client_restarts_and_takes_its_seat_back(tmp_path: Path) -> None:
    async with running(None) as (app, lobby):
        bot_id, token = await lobby.register("phoenix")
        seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
        # far longer than a new client takes to start, even on a loaded machine: the test
        # never waits for it, and the server counts it running out (asserted below)
        timer_ms = 120_000
        match, host = await lobby.create(
            "block", seats, overrides=["target=25"], seed=8, timer_ms=timer_ms
        )
        args = bot_cmd(
            "run", app.address, token, "tests.clientkit:RecordingBot", "--ask-forced",
            "--matches", "1",
        )  # fmt: skip
        first = Proc(args, env={"CLIENTKIT_HANG_AT": "3"})
        second: Proc | None = None
        try:
            await first.wait_for("connected to")
            await lobby.start(match.name, host)
            hang = await first.wait_for(r"^hang ", stream="out")
            hung_turn = int(hang.split()[2])
            first.kill()
            second = Proc(args)
            resumed = await second.wait_for(rf"^answer {match.name} {hung_turn} ", stream="out")
            assert await second.wait(60) == 0, second.report()
            finished = await wait_finished(lobby, match.name)
            replay = await lobby.replay(match.name)
        finally:
            first.kill()
            if second is not None:
                second.kill()

    # The new client answered the hung turn itself: the server never let seat 0's timer
    # run out (it counts each one) nor played a turn for it.
    [seat] = [s for s in finished.seats if s.seat == 0]
    assert (seat.timeouts, seat.auto_played) == (0, 0)
    assert resumed.split()[3]
    assert replay.outcome is not None and replay.outcome.termination is Termination.NORMAL
    answers = [
        line.split()[3] for p in (first, second) for line in p.out if line.startswith("answer ")
    ]
    # Every play of seat 0 is an answer of ours, in order: the server never played it.
    assert plays_of(replay, 0) == answers


async def test_builtin_and_engine_bots_from_the_command_line() -> None:
    async with running(None) as (app, lobby):
        builtin_id, builtin_token = await lobby.register("builtin")
        engine_id, engine_token = await lobby.register("engine")
        seats = [bot_seat(builtin_id), bot_seat(engine_id), cpu_seat(), cpu_seat()]
        match, host = await lobby.create("block", seats, overrides=SHORT, seed=12)
        procs = [
            Proc(bot_cmd("builtin", app.address, builtin_token, "medium", "--matches", "1")),
            # any class with choose(observation, legal), e.g. an engine bot, runs as is
            Proc(
                bot_cmd(
                    "run",
                    app.address,
                    engine_token,
                    "capicua.bots.base:RandomBot",
                    "--matches",
                    "1",
                )
            ),  # fmt: skip
        ]
        bad = Proc(bot_cmd("run", app.address, engine_token, "no_such_module:Bot"))
        try:
            for p in procs:
                await p.wait_for("connected to")
            await lobby.start(match.name, host)
            codes = [await p.wait(60) for p in procs]
            replay = await lobby.replay(match.name)
            assert await bad.wait(30) == 2
        finally:
            for p in (*procs, bad):
                p.kill()
    assert codes == [0, 0], "\n".join(p.report() for p in procs)
    assert replay.outcome is not None and replay.outcome.termination is Termination.NORMAL
    assert "1 match(es) played; stopping" in procs[0].stderr
    assert "capicua: error: 'no_such_module:Bot': cannot import no_such_module" in bad.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_signal_stops_a_bot_cleanly(signum: int) -> None:
    """SIGTERM is a normal stop (exit 0); Ctrl-C stops as cleanly, then says so and what
    running the bot again does (exit 130), as every command does."""
    async with running(None) as (app, lobby):
        _, token = await lobby.register("stoppable")
        proc = Proc(bot_cmd("builtin", app.address, token, "random"))
        try:
            await proc.wait_for("connected to")
            proc.proc.send_signal(signum)
            code = await proc.wait(15)
        finally:
            proc.kill()
    assert f"{signal.Signals(signum).name}: stopping" in proc.stderr
    assert "session ended after 0 match(es)" in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    if signum == signal.SIGTERM:
        assert code == 0 and "interrupted" not in proc.stderr, proc.report()
    else:
        assert code == 130, proc.report()
        assert last == (
            "capicua: interrupted; the server keeps the bot's seats until their turns' "
            "deadlines (then each match's timeout policy plays them): the same command plays "
            "them again"
        )


# A bot file whose own code fails while it is loaded: (source, class, the one-line error).
FAILING_BOTS = [
    ("def broken(:\n", "Bot", "its module failed to import: SyntaxError: invalid syntax"),
    (
        "raise RuntimeError('no config')\n",
        "Bot",
        "its module failed to import: RuntimeError: no config",
    ),
    (
        "class Bot:\n    def __init__(self):\n        raise KeyError('weights')\n",
        "Bot",
        "Bot() failed: KeyError: 'weights'",
    ),
    (
        "class Bot:\n    def __init__(self):\n        len(5)\n",
        "Bot",
        "Bot() failed: TypeError: object of type 'int' has no len()",
    ),
]


@pytest.mark.parametrize(("source", "cls", "said"), FAILING_BOTS)
async def test_a_bot_failing_to_load_shows_its_own_code_then_one_line(
    tmp_path: Path, source: str, cls: str, said: str
) -> None:
    path = tmp_path / "failing_bot.py"
    path.write_text(source)
    proc = Proc(bot_cmd("run", "127.0.0.1:9", "t0k3n", f"{path}:{cls}"))
    try:
        assert await proc.wait(30) == 2, proc.report()
    finally:
        proc.kill()
    last = proc.err[-1]
    assert last.startswith(f"capicua: error: '{path}:{cls}': {said}")
    assert str(path) in proc.stderr  # where it failed, in the bot's file
    for ours in ("click", "capicua/client", "importlib"):  # and none of the loader's frames
        assert ours not in proc.stderr, proc.report()


async def test_a_class_needing_arguments_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "needy_bot.py"
    path.write_text("class Bot:\n    def __init__(self, depth):\n        pass\n")
    proc = Proc(bot_cmd("run", "127.0.0.1:9", "t0k3n", f"{path}:Bot"))
    assert await proc.wait(30) == 2, proc.report()
    assert proc.err == [
        f"capicua: error: '{path}:Bot': cannot create Bot() with no arguments: "
        "Bot.__init__() missing 1 required positional argument: 'depth'"
    ]
