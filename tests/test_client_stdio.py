"""The stdio bridge (``capicua bot stdio -- COMMAND``) against a real server: the Perl
example plays a full match; a child that crashes, hangs or prints garbage is reported
clearly (which request, what it printed) and its seat falls to the match's timeout policy
(auto-play) while the match still finishes."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from capicua.client.stdio import StdioBot
from capicua.engine.records import Termination
from tests.clientkit import REPO, Proc, bot_cmd, plays_of, sample_decision, until
from tests.compliance.client import Lobby, bot_seat, cpu_seat
from tests.serverkit import running, wait_finished
from tests.tooling import missing_tool

EXAMPLE = REPO / "clients" / "stdio" / "random_bot.pl"


@pytest.fixture(autouse=True)
def _perl() -> None:
    if shutil.which("perl") is None:
        missing_tool("perl is not installed (the stdio examples and test children use it)")


async def test_the_perl_example_plays_a_full_match() -> None:
    async with running(None) as (app, lobby):
        bot_id, token = await lobby.register("perl")
        seats = [cpu_seat(), bot_seat(bot_id), cpu_seat(), bot_seat(bot_id)]
        match, host = await lobby.create(
            "block", seats, overrides=["target=20"], seed=6, timer_ms=20_000
        )
        args = bot_cmd("stdio", app.address, token, "--matches", "1", "--ask-forced")
        bridge = Proc([*args, "--", "perl", str(EXAMPLE)], env={"BOT_VERBOSE": "1"})
        try:
            await bridge.wait_for("connected to")
            await lobby.start(match.name, host)
            assert await bridge.wait(60) == 0, bridge.report()
            replay = await lobby.replay(match.name)
        finally:
            bridge.kill()
    assert replay.outcome is not None and replay.outcome.termination is Termination.NORMAL
    said = [line for line in bridge.err if ": hand " in line and "playing" in line]
    assert said, "the child's stderr reaches ours"
    assert len(said) == len(plays_of(replay, 1)) + len(plays_of(replay, 3))  # ask_forced
    assert "ERROR" not in bridge.stderr and "not answering" not in bridge.stderr


# Children that go wrong: (name, perl program, bridge options, what the report says).
BROKEN = [
    (
        "crash",
        'my $l = <STDIN>; print STDERR "boom\\n"; exit 3',
        ["--max-restarts", "1"],
        r"the child exited with code 3 while deciding turn \d+ of matches/\S+ \(seat 0\); "
        r"not answering it \(the match's timeout policy applies\)",
    ),
    (
        "hang",
        "while (<STDIN>) { sleep 1000 }",
        ["--max-restarts", "1", "--timeout-ms", "300"],
        r"the child did not answer turn \d+ of matches/\S+ \(seat 0\) within 0\.3 s; "
        r"killing it \(it hangs\)",
    ),
    (
        # a child that hangs in a process of its own: killing the child alone would leave
        # that process running, holding the pipes (and the bridge's exit) open
        "hang-in-a-grandchild",
        'while (<STDIN>) { system("sleep", "1000") }',
        ["--max-restarts", "1", "--timeout-ms", "300"],
        r"the child did not answer turn \d+ of matches/\S+ \(seat 0\) within 0\.3 s; "
        r"killing it \(it hangs\)",
    ),
    (
        "garbage",
        '$| = 1; while (<STDIN>) { print "hello there\\n" }',
        ["--matches", "1"],
        r'the child answered turn \d+ of matches/\S+ \(seat 0\) with "hello there": not JSON',
    ),
]


async def _until_it_gives_up(lobby: Lobby, bot_id: str, bridge: Proc) -> None:
    """The bridge gives up at the first request after its child's second failure. On a
    busy machine the server may auto-play the rest of the match before such a request
    reaches the bridge (it drops requests for turns already played): then a further match
    brings it one."""
    for seed in range(3):
        if bridge.proc.poll() is not None:
            return
        seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
        match, host = await lobby.create("block", seats, seed=seed, timer_ms=400)
        await lobby.start(match.name, host)
        await wait_finished(lobby, match.name, timeout=60)


@pytest.mark.parametrize(
    ("name", "program", "options", "report"), BROKEN, ids=[b[0] for b in BROKEN]
)
async def test_a_broken_child_is_reported_and_its_seat_auto_played(
    name: str, program: str, options: list[str], report: str
) -> None:
    async with running(None) as (app, lobby):
        bot_id, token = await lobby.register(name)
        seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
        match, host = await lobby.create(
            "block", seats, overrides=["target=40"], seed=2, timer_ms=400
        )
        args = bot_cmd("stdio", app.address, token, "--ask-forced", *options)
        bridge = Proc([*args, "--", "perl", "-e", program])
        try:
            await bridge.wait_for("connected to")
            await lobby.start(match.name, host)
            await bridge.wait_for(report, timeout=30)
            finished = await wait_finished(lobby, match.name, timeout=60)
            if name != "garbage":
                await _until_it_gives_up(lobby, bot_id, bridge)
            code = await bridge.wait(30)
            replay = await lobby.replay(match.name)
        finally:
            bridge.kill()
    assert finished.outcome.termination == 1  # NORMAL: the server played the seat
    assert replay.outcome is not None and replay.outcome.termination is Termination.NORMAL
    assert plays_of(replay, 0), "seat 0 was auto-played"
    if name == "garbage":
        assert code == 0, bridge.report()  # the child lives on; --matches 1 ends the bridge
    else:
        assert "restarting the child" in bridge.stderr, bridge.report()
        assert code == 2, bridge.report()
        assert "capicua: error: the child `perl -e" in bridge.stderr
        assert "failed 2 times (limit: 1 restarts); giving up" in bridge.stderr
    if name == "crash":
        assert "boom" in bridge.stderr  # the child's own stderr comes through
    assert "Traceback" not in bridge.stderr, bridge.report()  # e.g. "Event loop is closed"


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie waiting to be reaped counts)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


async def test_a_hung_child_is_killed_with_the_processes_it_started(tmp_path: Path) -> None:
    # A wrapper (sh) whose own child hangs and holds its stdin and stdout: killing the
    # wrapper alone left `sleep` running after the bridge, and the pipes open.
    pidfile = tmp_path / "grandchild"
    script = f'read line; sleep 1000 & echo $! > "{pidfile}"; wait'
    bot = StdioBot(["sh", "-c", script], timeout_ms=500, max_restarts=0)
    try:
        assert await bot.decide(sample_decision()) is None
        pid = int(pidfile.read_text())
        await until(lambda: _gone(pid), timeout=10, what="the grandchild to be killed")
        proc = bot.proc
        assert proc is not None and proc.returncode is not None
        assert proc.stdin is not None and proc.stdin.is_closing()
    finally:
        await bot.close()


async def test_a_missing_program_is_a_clear_error() -> None:
    args = bot_cmd("stdio", "127.0.0.1:9", "t0k3n", "--", "no-such-program-here")
    proc = Proc(args)
    assert await proc.wait(30) == 2
    assert "capicua: error: cannot find 'no-such-program-here' on the PATH" in proc.stderr
    await asyncio.sleep(0)


async def test_an_illegal_id_from_the_child_is_explained_and_asked_again() -> None:
    # Answers 99 to a new request, and 0 to one sent again with the server's reason.
    program = (
        '$| = 1; while (my $l = <STDIN>) { print STDERR "retry: $1\\n" '
        'if $l =~ /"previous_error":"([^"]*)"/; '
        'print $l =~ /previous_error/ ? "{\\"action_id\\":0}\\n" : "{\\"action_id\\":99}\\n" }'
    )
    async with running(None) as (app, lobby):
        bot_id, token = await lobby.register("stubborn")
        seats = [bot_seat(bot_id), cpu_seat(), cpu_seat(), cpu_seat()]
        match, host = await lobby.create(
            "block", seats, overrides=["target=10"], seed=3, timer_ms=20_000
        )
        args = bot_cmd("stdio", app.address, token, "--matches", "1")
        bridge = Proc([*args, "--", "perl", "-e", program])
        try:
            await bridge.wait_for("connected to")
            await lobby.start(match.name, host)
            assert await bridge.wait(60) == 0, bridge.report()
            replay = await lobby.replay(match.name)
        finally:
            bridge.kill()
    assert replay.outcome is not None and replay.outcome.termination is Termination.NORMAL
    illegal = [line for line in bridge.err if "illegal action: action_id: 99 is not one" in line]
    retries = [line for line in bridge.err if line.startswith("retry: action_id: 99 is not one")]
    assert illegal and len(retries) == len(illegal), bridge.report()
