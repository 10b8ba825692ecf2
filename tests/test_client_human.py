"""``capicua bot human`` and ``capicua play --human``: seats played from the terminal,
driven here by piped input. With ``bot human`` the match is made the way people make it
(``capicua match create`` prints how to join each open seat, ``capicua match join`` prints a
seat token), with two humans and two cheap CPUs; ``play --human`` does all of it in one
command, a second person joining from another process with the command it prints. Every
transcript shows every move of the match, as its replay has them."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
import sys
from pathlib import Path

from click.testing import CliRunner, Result
from rich.console import Console

from capicua.cli import main
from capicua.client.human import HumanBot
from capicua.engine.display import event_text
from capicua.engine.records import Pass, Play, Replay, Termination
from capicua.wire.codec import read_replay
from tests.clientkit import Proc, bot_cmd, plays_of, sample_decision, until
from tests.serverkit import running, wait_finished

PY = sys.executable
#: A move as a transcript shows it: ``  seat 0 (you) plays 3-6 on the left (your only move)``.
MOVE = re.compile(r"^  (seat \d+)(?: \(you\))? (plays \S+ on the \w+|passes)(?: \(.*\))?$")


def shown_moves(transcript: str) -> list[str]:
    """Every play and pass a transcript shows, as the engine writes them."""
    found = (MOVE.match(line) for line in transcript.splitlines())
    return [f"{m.group(1)} {m.group(2)}" for m in found if m]


def replay_moves(replay: Replay) -> list[str]:
    """Every play and pass of a match (no preset here draws)."""
    events = (e for hand in replay.hands for e in hand.events)
    return [event_text(e) for e in events if isinstance(e, Play | Pass)]


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
    # every move, those played before a person's first turn included (the opening)
    assert shown_moves(ana) == shown_moves(bea) == replay_moves(replay)


async def test_a_person_plays_the_cpu_in_one_command(tmp_path: Path) -> None:
    """``capicua play --human 0``: an embedded server, the CPU in the other seat, every
    move shown; a play of the person's own that was forced says so."""
    path = tmp_path / "match.json"
    person = Proc(
        [PY, "-m", "capicua", "play", "--rules", "iq-1v1", "--set", "target=30",
         "--human", "0", "--bots", "easy", "--seed", "3", "--replay", str(path)],
        stdin="1\n" * 400,
    )  # fmt: skip
    try:
        assert await person.wait(120) == 0, person.report()
    finally:
        person.kill()
    shown = person.stdout
    assert "iq-1v1 on an embedded server at 127.0.0.1:" in shown
    assert "you are seat 0; CPUs: seat 1 easy" in shown and "match over: " in shown
    assert f"replay written to {path}" in shown
    assert shown_moves(shown) == replay_moves(read_replay(path))
    yours = [line for line in shown.splitlines() if "seat 0 (you) plays" in line]
    forced = [line for line in yours if line.endswith(" (your only move)")]
    assert forced and len(yours) == shown.count("your move [") + len(forced), shown
    assert person.stderr == ""


async def test_two_people_in_two_terminals_against_two_cpus() -> None:
    """``play --human 0,2`` prints the command that plays seat 2 from another terminal and
    starts the match once that person is connected."""
    args = ["play", "--rules", "iq-2v2", "--set", "target=10", "--human", "0,2", "--bots", "easy"]
    wide = {"COLUMNS": "200"}  # no line wraps
    ana = Proc([PY, "-m", "capicua", *args], stdin="1\n" * 300, env=wide)
    bea: Proc | None = None
    try:
        line = await ana.wait_for(r"^  capicua bot human --server \S+ --token \S+$", stream="out")
        await ana.wait_for(r"^waiting for seat 2 to connect$", stream="out")
        bea = Proc([PY, "-m", *line.split()], stdin="1\n" * 300, env=wide)
        codes = [await ana.wait(120), await bea.wait(120)]
    finally:
        for p in (ana, bea):
            if p is not None:
                p.kill()
    assert codes == [0, 0], "\n".join(p.report() for p in (ana, bea) if p is not None)
    assert "CPUs: seat 1 easy, seat 3 easy" in ana.stdout
    assert "you are seat 0 (team 0+2)" in ana.stdout and "you are seat 2 (team 0+2)" in bea.stdout
    assert "seat 2 person (partner)" in ana.stdout and "seat 0 person (partner)" in bea.stdout
    assert "match over: " in ana.stdout and "match over: " in bea.stdout
    assert shown_moves(ana.stdout) == shown_moves(bea.stdout) != []


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
