"""``capicua match ...`` against a real server: create, join, show, list, start, watch,
replay (then ``capicua replay verify``), cancel, the errors people see, where each kind
of token comes from, ``--json``, and what watch says while a match waits."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

from click.testing import CliRunner, Result

from capicua.cli import main
from tests.clientkit import Proc, bot_cmd, capicua_args
from tests.compliance.client import OPEN, bot_seat, cpu_seat
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
        bot_token = _found(r"token: (\S+)", registered.output)

        assert "reservable by: nobody but itself and the admin" in registered.output
        seats = ["--seats", "open,bot:cli-bot,cpu:medium,cpu"]
        refused = await cli("match", "create", "--rules", "block", *seats, *server)
        assert refused.exit_code == 2 and "Traceback" not in refused.output, refused.output
        assert "PERMISSION_DENIED: seats[1].bot_id: bots/cli-bot does not let" in refused.output
        created = await cli(
            "match", "create", "--rules", "block", "--set", "target=10", *seats, "--tag", "cli",
            "--seed", "3", "--timer-ms", "100", "--bot-token", bot_token, *server,
        )  # fmt: skip
        assert created.exit_code == 0, created.output
        name = _found(r"match (matches/\S+) created", created.output)
        host = _found(r"host token: (\S+)", created.output)
        assert f"capicua match join {name} --seat 0" in created.output
        assert "seat 1 bot:cli-bot" in created.output and "seat 3 cpu:easy" in created.output

        assert "seed: chosen by its creator" in created.output
        refused = await cli("match", "join", name, "--seat", "0", "--name", "ana", *server)
        assert refused.exit_code == 2 and "Traceback" not in refused.output
        assert "join with accept_chosen_seed" in refused.output
        joined = await cli(
            "match", "join", name, "--seat", "0", "--name", "ana", "--accept-chosen-seed", *server
        )
        assert joined.exit_code == 0, joined.output
        assert "seat token: " in joined.output

        shown = await cli("match", "show", name.removeprefix("matches/"), *server)
        assert shown.exit_code == 0, shown.output
        assert "seat 0: guest:ana" in shown.output and "waiting" in shown.output

        listed = await cli("match", "list", "--tag", "cli", "--state", "waiting", *server)
        assert name in listed.output

        refused = await cli("match", "start", name, "--host-token", bot_token, *server)
        assert refused.exit_code == 2 and "Traceback" not in refused.output
        assert "the token from --host-token is a bot token" in refused.output

        started = await cli("match", "start", name, *server, env={"CAPICUA_HOST_TOKEN": host})
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
        assert f"this token was revoked: {name} is over" in late.output

        bad_seats = await cli("match", "create", "--rules", "block", "--seats", "open,x", *server)
        assert bad_seats.exit_code == 2 and "--seats" in bad_seats.output
        bad_rules = await cli("match", "create", "--rules", "nope", *server)
        assert bad_rules.exit_code == 2
        assert "INVALID_ARGUMENT: preset: unknown preset 'nope'" in bad_rules.output


async def test_cancel_from_the_command_line_and_an_unreachable_server() -> None:
    async with running(None) as (app, _):
        server = ["--server", app.address]
        created = await cli("match", "create", "--rules", "cutthroat", "--private", *server)
        name = _found(r"match (matches/\S+) created", created.output)
        host = _found(r"host token: (\S+)", created.output)
        assert name not in (await cli("match", "list", *server)).output
        cancelled = await cli(
            "match", "cancel", name, "--host-token", host, "--reason", "rain", *server
        )
        assert cancelled.exit_code == 0 and "cancelled: rain" in cancelled.output
        shown = await cli("match", "show", name, *server)
        assert "finished" in shown.output and "cancelled: rain" in shown.output
    gone = await cli("match", "list", env={"CAPICUA_SERVER": app.address})
    assert gone.exit_code == 2 and "cannot reach a capicua server" in gone.output


def _found(pattern: str, text: str) -> str:
    hit = re.search(pattern, text)
    assert hit is not None, f"no {pattern!r} in:\n{text}"
    return hit.group(1)


async def test_each_kind_of_token_is_read_from_its_own_place() -> None:
    """A bot token exported for a bot never seats it or starts a match by accident; a
    token of the wrong kind is refused before it is sent, naming its kind and source; a
    refusal by the server names the token's source and the kind wanted."""
    async with running(None) as (app, lobby):
        server = ["--server", app.address]
        bot_id, bot_token = await lobby.register("kinds")
        _, other_host = await lobby.create("block", [OPEN] * 4)
        created = await cli("match", "create", "--rules", "block", *server)
        name = _found(r"match (matches/\S+) created", created.output)
        host = _found(r"host token: (\S+)", created.output)
        exported = {"CAPICUA_BOT_TOKEN": bot_token, "CAPICUA_TOKEN": bot_token}

        # join reads no variable: with a bot token exported, it still prints a seat token
        joined = await cli("match", "join", name, "--seat", "0", *server, env=exported)
        assert joined.exit_code == 0, joined.output
        seat_token = _found(r"seat token: (\S+)", joined.output)
        assert f"capicua bot human --token {seat_token}" in joined.output
        assert (await lobby.get(name)).seats[0].bot_id == ""
        as_bot = await cli("match", "join", name, "--seat", "1", "--bot-token", bot_token, *server)
        assert as_bot.exit_code == 0 and f"seat 1 of {name} for bots/{bot_id}" in as_bot.output
        wrong = await cli("match", "join", name, "--bot-token", host, *server)
        assert wrong.exit_code == 2
        assert "error: the token from --bot-token is a host token; join takes a bot token" in (
            wrong.output
        )

        # start reads $CAPICUA_HOST_TOKEN, and never $CAPICUA_TOKEN
        missing = await cli("match", "start", name, *server, env={"CAPICUA_TOKEN": host})
        assert missing.exit_code == 2
        assert "no host token: give --host-token or set CAPICUA_HOST_TOKEN" in missing.output
        assert "$CAPICUA_TOKEN is only read by bots" in missing.output
        kinds = await cli("match", "start", name, *server, env={"CAPICUA_HOST_TOKEN": seat_token})
        assert kinds.exit_code == 2
        assert "the token from $CAPICUA_HOST_TOKEN is a seat token; start and cancel take" in (
            kinds.output
        )
        denied = await cli("match", "start", name, *server, env={"CAPICUA_HOST_TOKEN": other_host})
        assert denied.exit_code == 2
        assert (
            f"PERMISSION_DENIED: authorization: not the host token of {name} (the token from "
            "$CAPICUA_HOST_TOKEN); start and cancel take the host token" in denied.output
        )
        unknown = await cli("match", "cancel", name, "--host-token", "made-up", *server)
        assert unknown.exit_code == 2
        assert "UNAUTHENTICATED: authorization: unknown token (the token from --host-token)" in (
            unknown.output
        )
        for refused in (wrong, missing, kinds, denied, unknown):
            assert "Traceback" not in refused.output and refused.output.count("\n") == 1
        started = await cli("match", "start", name, *server, env={"CAPICUA_HOST_TOKEN": host})
        assert started.exit_code == 0, started.output


async def test_list_and_show_print_json() -> None:
    """``--json``: capicua.v1.Match in protobuf's JSON mapping, .proto field names, every
    field present."""
    async with running(None) as (app, lobby):
        server = ["--server", app.address]
        bot_id, _ = await lobby.register("json")
        match, _ = await lobby.create("cuban", [bot_seat(bot_id), OPEN, OPEN, OPEN], tags=["js"])
        listed = await cli("match", "list", "--tag", "js", "--json", *server)
        assert listed.exit_code == 0, listed.output
        matches = json.loads(listed.stdout)
        assert [m["name"] for m in matches] == [match.name]
        assert matches[0]["state"] == "MATCH_STATE_WAITING" and matches[0]["hand"] == 0
        assert matches[0]["settings"]["tags"] == ["js"]
        shown = await cli("match", "show", match.name, "--json", *server)
        assert shown.exit_code == 0, shown.output
        one = json.loads(shown.stdout)
        assert one["name"] == match.name and one["ruleset"]["name"] == "cuban"
        assert one["seats"][0]["bot_id"] == bot_id and one["seats"][0]["connected"] is False
        assert [s["kind"] for s in one["seats"][1:]] == ["SEAT_KIND_OPEN"] * 3
        none = await cli("match", "list", "--tag", "no-such-tag", "--json", *server)
        assert none.exit_code == 0 and json.loads(none.stdout) == []
        gone = await cli("match", "show", "matches/0000000000000000", "--json", *server)
        assert gone.exit_code == 2 and "NOT_FOUND" in gone.output and not gone.stdout


async def test_watch_says_what_the_match_waits_for() -> None:
    """The stream is silent while a match waits: watch asks GetMatch and says why, each
    time the answer changes: not started, which seats are not connected."""
    async with running(None) as (app, lobby):
        first, first_token = await lobby.register("early")
        late, late_token = await lobby.register("late")
        seats = [bot_seat(first), cpu_seat(), bot_seat(late), cpu_seat()]
        match, host = await lobby.create("block", seats, overrides=["target=10"], timer_ms=60_000)
        name = match.name
        watch = Proc(capicua_args("match", "watch", name, "--server", app.address))
        bots: list[Proc] = []
        try:
            start = rf"waiting: not started \(the host starts it: capicua match start {name}\)"
            await watch.wait_for(
                f"{start}; not connected: seat 0 bot:{first}, seat 2 bot:{late}$", stream="out"
            )
            bots.append(Proc(bot_cmd("builtin", app.address, first_token, "easy")))
            await watch.wait_for(f"{start}; not connected: seat 2 bot:{late}$", stream="out")
            await lobby.start(name, host)
            await watch.wait_for(
                rf"^waiting: not connected: seat 2 bot:{late} \(its turn waits 60 s, then the "
                r"server plays it\)$",
                stream="out",
            )
            bots.append(Proc(bot_cmd("builtin", app.address, late_token, "easy")))
            assert await watch.wait(60) == 0, watch.report()
        finally:
            for p in (watch, *bots):
                p.kill()
    assert "match over: " in watch.stdout and "hand 1: seat" in watch.stdout
    assert watch.stdout.count("waiting: ") == 3, watch.report()
