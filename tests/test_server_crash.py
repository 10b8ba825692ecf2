"""A server killed with SIGKILL loses no unfinished match: a real ``capicua serve`` process,
killed mid-match and restarted on the same ``--data``, resumes every match from its journal
(the match is its seed plus its decisions), or, when the journal does not replay, records
it as finished with the reason, never unknown."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import grpc

from capicua.server.store import DB_NAME
from capicua.server.turns import RESUME_TURN_GAP
from capicua.v1 import game_pb2, match_pb2
from tests.compliance.client import OPEN, Bot, Lobby, auth, bot_seat, cpu_seat, expect_error
from tests.serverkit import ServerProcess, journal_rows, server_process

HOUR_MS = 3_600_000


def _kill(server: ServerProcess) -> None:
    proc = server.proc
    proc.kill()  # SIGKILL: no shutdown code runs
    proc.wait(10)


async def test_a_killed_server_resumes_its_matches(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with server_process(["--data", str(data)], tmp_path / "logs") as first:
        lobby = Lobby(first.address)
        bot_id, token = await lobby.register()
        absent, _ = await lobby.register("absent")  # never connects: its match waits on it
        seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
        running, host = await lobby.create("block", seats, seed=11, timer_ms=HOUR_MS)
        seats = [bot_seat(absent), cpu_seat(), cpu_seat(), cpu_seat()]
        broken, broken_host = await lobby.create("block", seats, seed=12, timer_ms=HOUR_MS)
        waiting, waiting_host = await lobby.create("block", [OPEN] * 4)
        await lobby.start(running.name, host)
        await lobby.start(broken.name, broken_host)
        # answers its first five decisions, quits on receiving the sixth
        before = Bot(first.address, token, seed=1, quit_on_decision=6)
        await before.run(timeout=60)
        # Every action applied before the sixth request is journaled by now; an
        # acknowledged create is on disk before its reply, and its commit takes every
        # journal write made before it (the store's group commit): so are those actions.
        await lobby.create("block", [OPEN] * 4)
        assert journal_rows(data, "live_actions", running.name) >= 5  # its five answers, at least
        _kill(first)
        await lobby.close()

    # Spoil the second match's journal: its first action is one no position allows.
    with sqlite3.connect(data / DB_NAME) as db:
        db.execute(
            "INSERT OR REPLACE INTO live_actions (match_id, seq, code) VALUES (?, 1, 999999)",
            (broken.name.removeprefix("matches/"),),
        )

    with server_process(["--data", str(data)], tmp_path / "logs") as second:
        lobby = Lobby(second.address)
        try:
            assert (await lobby.get(waiting.name)).state == match_pb2.MATCH_STATE_WAITING
            assert (await lobby.get(running.name)).state == match_pb2.MATCH_STATE_RUNNING
            spoiled = await lobby.get(broken.name)
            assert spoiled.state == match_pb2.MATCH_STATE_FINISHED
            assert spoiled.outcome.termination == game_pb2.TERMINATION_CANCELLED
            assert spoiled.outcome.reason.startswith(
                "the server restarted and could not resume it: ValueError: journaled action 1"
            )

            # The same bot token plays on; it is asked again where it stopped.
            after = Bot(second.address, token, seed=2)
            await after.run([running.name], timeout=60)
            asked_before = [d for d in before.decisions if d.match == running.name]
            asked_after = [d for d in after.decisions if d.match == running.name]
            assert asked_after[0].view == asked_before[-1].view
            # its own ids go on past the gap: 5 decisions answered and journaled before
            assert [d.turn_id for d in asked_before] == [1, 2, 3, 4, 5, 6]
            assert asked_after[0].turn_id == RESUME_TURN_GAP + 5 + 1
            ended = after.ended[running.name].outcome
            assert ended.termination == game_pb2.TERMINATION_NORMAL
            # The replay holds the whole match: the moves from before the kill too.
            replay = await lobby.replay(running.name)
            assert replay.outcome is not None
            assert replay.outcome.termination.value == "normal"

            # The host token of the waiting match still works; an unknown one does not.
            cancel = match_pb2.CancelMatchRequest(name=waiting.name)
            done = await lobby.matches.CancelMatch(cancel, metadata=auth(waiting_host))
            assert done.match.outcome.termination == game_pb2.TERMINATION_CANCELLED
            await expect_error(
                lobby.matches.CancelMatch(cancel, metadata=auth("host_nope")),
                grpc.StatusCode.UNAUTHENTICATED,
                "BAD_TOKEN",
            )
        finally:
            await lobby.close()
        assert '"event": "matches_restored"' in second.logs()


async def test_a_suspending_stop_leaves_matches_to_resume(tmp_path: Path) -> None:
    """``--on-stop suspend``: SIGTERM (a deploy, say) stops the server gracefully without
    ending its matches; the next start on the same --data resumes them where they were."""
    data = tmp_path / "data"
    args = ["--data", str(data), "--on-stop", "suspend"]
    with server_process(args, tmp_path / "logs") as first:
        lobby = Lobby(first.address)
        bot_id, token = await lobby.register()
        seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
        running, host = await lobby.create("block", seats, seed=21, timer_ms=HOUR_MS)
        waiting, waiting_host = await lobby.create("block", [OPEN] * 4)
        await lobby.start(running.name, host)
        before = Bot(first.address, token, seed=1, quit_on_decision=4)
        await before.run(timeout=60)
        await lobby.close()
        assert first.stop() == 0  # SIGTERM: a graceful stop
        assert '"event": "match_suspended"' in first.logs()
        assert '"event": "match_finished"' not in first.logs()

    with server_process(args, tmp_path / "logs") as second:
        lobby = Lobby(second.address)
        try:
            assert (await lobby.get(waiting.name)).state == match_pb2.MATCH_STATE_WAITING
            assert (await lobby.get(running.name)).state == match_pb2.MATCH_STATE_RUNNING
            after = Bot(second.address, token, seed=2)
            await after.run([running.name], timeout=60)
            asked_before = [d for d in before.decisions if d.match == running.name]
            asked_after = [d for d in after.decisions if d.match == running.name]
            assert asked_after[0].view == asked_before[-1].view
            assert after.ended[running.name].outcome.termination == game_pb2.TERMINATION_NORMAL
            replay = await lobby.replay(running.name)
            assert replay.outcome is not None
            assert replay.outcome.termination.value == "normal"
            cancel = match_pb2.CancelMatchRequest(name=waiting.name)
            done = await lobby.matches.CancelMatch(cancel, metadata=auth(waiting_host))
            assert done.match.outcome.termination == game_pb2.TERMINATION_CANCELLED
        finally:
            await lobby.close()


def test_suspend_needs_a_lasting_store() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "capicua", "serve", "--port", "0", "--on-stop", "suspend"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2 and "--on-stop suspend needs --data" in r.stderr
