"""``capicua bot human``: a seat played from the terminal, driven here by piped input. The
match is made the way people make it (``capicua match create`` prints how to join each open
seat, ``capicua match join`` prints a seat token), with two humans and two cheap CPUs."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re

from click.testing import CliRunner, Result
from rich.console import Console

from capicua.cli import main
from capicua.client.human import HumanBot
from capicua.engine.records import Termination
from tests.clientkit import Proc, bot_cmd, plays_of, sample_decision, until
from tests.serverkit import running, wait_finished


async def cli(*args: str) -> Result:
    result = await asyncio.wait_for(asyncio.to_thread(CliRunner().invoke, main, list(args)), 60)
    assert result.exit_code == 0, result.output
    return result


def found(pattern: str, text: str) -> str:
    hit = re.search(pattern, text)
    assert hit is not None, f"no {pattern!r} in:\n{text}"
    return hit.group(1)


async def test_two_humans_and_two_cpus_play_from_piped_input() -> None:
    async with running(None) as (app, lobby):
        server = ["--server", app.address]
        created = await cli(
            "match", "create", "--rules", "block", "--set", "target=10",
            "--seats", "open,cpu:easy,open,cpu:easy", "--timer-ms", "30000", "--seed", "2",
            *server,
        )  # fmt: skip
        name = found(r"match (matches/\S+) created", created.output)
        host = found(r"host token: (\S+)", created.output)
        humans = []
        for seat, player, keys in [(0, "ana", "hello\n0\n99\n9-9:L\n"), (2, "bea", "")]:
            join = f"capicua match join {name} --seat {seat}"
            assert join in created.output  # the printed way to take the open seat
            joined = await cli(
                "match", "join", name, "--seat", str(seat), "--name", player,
                "--accept-chosen-seed", *server,
            )  # fmt: skip
            token = found(r"seat token: (\S+)", joined.output)
            humans.append(Proc(bot_cmd("human", app.address, token), stdin=keys + "1\n" * 200))
        try:
            streams = app.hub.streams
            await until(lambda: len(streams) == 2, 30, "both humans connected")
            await cli("match", "start", name, "--host-token", host, *server)
            codes = [await h.wait(60) for h in humans]
            finished = await wait_finished(lobby, name)
            replay = await lobby.replay(name)
        finally:
            for h in humans:
                h.kill()

    assert codes == [0, 0], "\n".join(h.report() for h in humans)
    assert replay.outcome is not None and replay.outcome.termination is Termination.NORMAL
    assert finished.outcome.reason == replay.outcome.reason
    assert plays_of(replay, 0) and plays_of(replay, 2)
    ana, bea = (h.stdout for h in humans)
    for shown in (ana, bea):
        assert "your hand:" in shown and "chain:" in shown and "ends:" in shown
        assert "score: team 0+2" in shown and " 1) " in shown and "your move [1-" in shown
        assert f"{name}: block" in shown and "match over: " in shown
    assert "you are seat 0 (team 0+2)" in ana and "you are seat 2 (team 0+2)" in bea
    assert "seat 2 bea (partner)" in ana and "seat 0 ana (partner)" in bea
    assert "'hello' is not one of your moves (choose 1-" in ana
    assert "there is no move 0: choose 1-" in ana and "there is no move 99: choose 1-" in ana
    assert "'9-9:L' is not one of your moves" in ana
    assert "seat 0 (you) plays" in ana and "seat 2 (you) plays" in bea
    assert "Traceback" not in ana + bea + humans[0].stderr + humans[1].stderr


def test_typed_moves() -> None:
    decision = sample_decision()
    human = HumanBot(console=Console(file=io.StringIO()))
    legal = decision.legal_actions
    assert human.pick(decision, "1") == (0, "")
    assert human.pick(decision, f" {legal[-1]} ") == (len(legal) - 1, "")
    assert human.pick(decision, str(legal[0]).lower()) == (0, "")
    assert human.pick(decision, "")[1].startswith("type a move number 1-")
    n = len(legal)
    assert human.pick(decision, f"{n + 1}")[1] == f"there is no move {n + 1}: choose 1-{n}"


async def test_stopping_at_the_prompt_ends_its_line() -> None:
    # Ctrl+C at "your move [1-3]: " used to leave the shell's prompt on the same line.
    out = io.StringIO()
    read_end, write_end = os.pipe()
    with os.fdopen(read_end) as stdin, os.fdopen(write_end, "w"):
        human = HumanBot(console=Console(file=out, width=100), stdin=stdin)
        asking = asyncio.ensure_future(human.decide(sample_decision()))
        await until(lambda: out.getvalue().endswith("s left): "), what="the prompt")
        asking.cancel()  # what stopping the session does to a pending decision
        with contextlib.suppress(asyncio.CancelledError):
            await asking
        assert out.getvalue().endswith("s left): \n")
