"""``capicua match ...`` against a real server: create, join, show, list, start, watch,
replay (then ``capicua replay verify``), cancel, and the errors people see."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from click.testing import CliRunner, Result

from capicua.cli import main
from tests.serverkit import running, wait_finished


async def cli(*args: str, env: dict[str, str] | None = None) -> Result:
    """Run the CLI in a thread (the server shares this test's event loop)."""
    runner = CliRunner()
    return await asyncio.wait_for(asyncio.to_thread(runner.invoke, main, list(args), env=env), 60)


async def test_a_match_from_the_command_line(tmp_path: Path) -> None:
    async with running(None, turn_timer_ms=100) as (app, lobby):
        server = ["--server", app.address]
        registered = await cli("match", "register-bot", "cli-bot", *server)
        assert registered.exit_code == 0, registered.output
        bot_token = re.search(r"token: (\S+)", registered.output).group(1)  # type: ignore[union-attr]

        created = await cli(
            "match", "create", "--rules", "block", "--set", "target=10",
            "--seats", "open,bot:cli-bot,cpu:medium,cpu", "--tag", "cli", "--seed", "3",
            "--timer-ms", "100", *server,
        )  # fmt: skip
        assert created.exit_code == 0, created.output
        name = re.search(r"match (matches/\S+) created", created.output).group(1)  # type: ignore[union-attr]
        host = re.search(r"host token: (\S+)", created.output).group(1)  # type: ignore[union-attr]
        assert f"capicua match join {name} --seat 0" in created.output
        assert "seat 1 bot:cli-bot" in created.output and "seat 3 cpu:easy" in created.output

        joined = await cli("match", "join", name, "--seat", "0", "--name", "ana", *server)
        assert joined.exit_code == 0, joined.output
        assert "seat token: " in joined.output

        shown = await cli("match", "show", name.removeprefix("matches/"), *server)
        assert shown.exit_code == 0, shown.output
        assert "seat 0: guest:ana" in shown.output and "waiting" in shown.output

        listed = await cli("match", "list", "--tag", "cli", "--state", "waiting", *server)
        assert name in listed.output

        refused = await cli("match", "start", name, "--host-token", bot_token, *server)
        assert refused.exit_code == 2
        assert "PERMISSION_DENIED" in refused.output and "Traceback" not in refused.output

        started = await cli("match", "start", name, *server, env={"CAPICUA_TOKEN": host})
        assert started.exit_code == 0, started.output
        watched = await cli("match", "watch", name, *server)
        assert watched.exit_code == 0, watched.output
        assert "match over:" in watched.output
        await wait_finished(lobby, name)
        # nobody played seats 0 and 1: each lost one deadline, then was auto-played
        over = (await cli("match", "show", name, *server)).output
        assert re.search(r"seat 0: guest:ana ana \(not connected, 1 timeout\(s\), \d+ turn", over)
        assert re.search(r"seat 1: .*1 timeout\(s\), \d+ turn\(s\) auto-played", over)
        assert "seat 2: cpu:medium (connected)" in over, over

        out = tmp_path / "m.json.gz"
        fetched = await cli("match", "replay", name, "-o", str(out), *server)
        assert fetched.exit_code == 0, fetched.output
        verified = await cli("replay", "verify", str(out))
        assert verified.exit_code == 0 and ": OK (" in verified.output

        late = await cli("match", "cancel", name, "--host-token", host, *server)
        assert late.exit_code == 2 and "FAILED_PRECONDITION" in late.output

        bad_seats = await cli("match", "create", "--rules", "block", "--seats", "open,x", *server)
        assert bad_seats.exit_code == 2 and "--seats" in bad_seats.output
        bad_rules = await cli("match", "create", "--rules", "nope", *server)
        assert bad_rules.exit_code == 2
        assert "INVALID_ARGUMENT: preset: unknown preset 'nope'" in bad_rules.output


async def test_cancel_from_the_command_line_and_an_unreachable_server() -> None:
    async with running(None) as (app, _):
        server = ["--server", app.address]
        created = await cli("match", "create", "--rules", "cutthroat", "--private", *server)
        name = re.search(r"match (matches/\S+) created", created.output).group(1)  # type: ignore[union-attr]
        host = re.search(r"host token: (\S+)", created.output).group(1)  # type: ignore[union-attr]
        assert name not in (await cli("match", "list", *server)).output
        cancelled = await cli(
            "match", "cancel", name, "--host-token", host, "--reason", "rain", *server
        )
        assert cancelled.exit_code == 0 and "cancelled: rain" in cancelled.output
        shown = await cli("match", "show", name, *server)
        assert "finished" in shown.output and "cancelled: rain" in shown.output
    gone = await cli("match", "list", env={"CAPICUA_SERVER": app.address})
    assert gone.exit_code == 2 and "cannot reach a capicua server" in gone.output
