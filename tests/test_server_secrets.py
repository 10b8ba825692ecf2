"""Secrets: the admin token stays out of the process list, and a finished match's host and
seat tokens stop working (its bots' tokens go on)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from pathlib import Path

import grpc
import pytest

from capicua.v1 import match_pb2
from tests.compliance.client import OPEN, Bot, auth, cpu_seat, expect_error
from tests.serverkit import running, server_process, wait_finished

ADMIN = "admin_test_s3cret_value_1234567890"


def _capicua(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from capicua.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )


def _secret_file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "admin.token"
    path.write_text(text)
    path.chmod(mode)
    return path


async def test_the_admin_token_file_keeps_the_token_out_of_the_process_list(
    tmp_path: Path,
) -> None:
    secret = _secret_file(tmp_path, ADMIN + "\n")
    with server_process(["--admin-token-file", str(secret)], tmp_path / "logs") as server:
        cmdline = Path(f"/proc/{server.proc.pid}/cmdline").read_bytes()
        assert ADMIN.encode() not in cmdline
        assert "warning" not in server.logs()
        address = ["--server", server.address]
        refused = _capicua("match", "register-bot", "nobody", *address)
        assert refused.returncode == 2 and "UNAUTHENTICATED" in refused.stderr
        by_file = _capicua(
            "match", "register-bot", "by-file", "--admin-token-file", str(secret), *address
        )
        assert by_file.returncode == 0, by_file.stderr
        assert "warning" not in by_file.stderr
        by_env = _capicua(
            "match", "register-bot", "by-env", *address, env={"CAPICUA_ADMIN_TOKEN": ADMIN}
        )
        assert by_env.returncode == 0 and "warning" not in by_env.stderr
        in_argv = _capicua("match", "register-bot", "by-argv", "--admin-token", ADMIN, *address)
        assert in_argv.returncode == 0
        assert "--admin-token on the command line is visible to every local user" in (
            in_argv.stderr
        )


@pytest.mark.parametrize(
    ("content", "mode", "expected"),
    [
        ("", 0o600, "its first line is empty"),
        ("\n" + ADMIN, 0o600, "its first line is empty"),
    ],
)
def test_a_bad_admin_token_file_is_refused(
    tmp_path: Path, content: str, mode: int, expected: str
) -> None:
    secret = _secret_file(tmp_path, content, mode)
    done = _capicua("serve", "--port", "0", "--admin-token-file", str(secret))
    assert done.returncode == 2 and expected in done.stderr


def test_admin_token_file_problems_are_said(tmp_path: Path) -> None:
    missing = _capicua("serve", "--port", "0", "--admin-token-file", str(tmp_path / "none"))
    assert missing.returncode == 2 and "cannot read it" in missing.stderr
    secret = _secret_file(tmp_path, ADMIN)
    both = _capicua(
        "serve", "--port", "0", "--admin-token", ADMIN, "--admin-token-file", str(secret)
    )
    assert both.returncode == 2 and "give one of them" in both.stderr
    # readable by others: served, with a warning (checked on a command that stops at once)
    secret.chmod(0o644)
    loose = _capicua(
        "match", "register-bot", "x", "--admin-token-file", str(secret), "--server", "127.0.0.1:1"
    )
    assert "can be read by other users (mode 644); chmod 600 it" in loose.stderr


async def test_a_finished_matchs_host_and_seat_tokens_are_revoked(tmp_path: Path) -> None:
    async with running(None) as (app, lobby):
        bot_id, bot_token = await lobby.register()
        baseline = len(app.tokens)
        match, host = await lobby.create("block", [OPEN, cpu_seat(), cpu_seat(), cpu_seat()])
        joined = await lobby.matches.JoinMatch(match_pb2.JoinMatchRequest(name=match.name))
        seat_token = joined.seat_token
        assert len(app.tokens) == baseline + 2  # the host token and the seat token
        player = Bot(lobby.address, seat_token)
        run = asyncio.create_task(player.run([match.name]))
        while player.welcome is None:
            await asyncio.sleep(0.01)
        await lobby.start(match.name, host)
        await asyncio.wait_for(run, 60)
        await wait_finished(lobby, match.name)
        assert len(app.tokens) == baseline, "a finished match leaves no token behind"

        why = f"authorization: this token was revoked: {match.name} is over"
        again = Bot(lobby.address, seat_token)
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await again.run(timeout=10)
        assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION and e.value.details() == why
        cancel = match_pb2.CancelMatchRequest(name=match.name)
        refused = await expect_error(
            lobby.matches.CancelMatch(cancel, metadata=auth(host)),
            grpc.StatusCode.FAILED_PRECONDITION,
            "MATCH_FINISHED",
        )
        assert refused.details() == why
        # the bot's token is not the match's: it still works
        bot = Bot(lobby.address, bot_token)
        stream = asyncio.create_task(bot.run(timeout=30))
        for _ in range(500):
            if bot.welcome is not None:
                break
            await asyncio.sleep(0.01)
        assert bot.welcome is not None and bot.welcome.principal == f"bots/{bot_id}"
        stream.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await stream
