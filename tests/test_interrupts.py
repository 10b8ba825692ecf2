"""Ctrl-C at any moment, one rule for every command that runs for more than a moment: the
last line on stderr is ``capicua: interrupted; <what running it again does>``, the exit
code 130, no traceback anywhere, nothing half-made is left (no empty output directory, no
empty logs, no server or bot process), and running the same command again does what the
line says (resumes, or starts afresh).

Real processes and real signals. Each SIGINT is sent on an event: at once (while Python
starts and imports the command), once a line is printed, or once a file exists (the
output directory's lock, the embedded server's log, a bot's log: the run's start, before
its first result); never after a sleep."""

from __future__ import annotations

import asyncio
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from capicua.common.interrupt import BEFORE_START
from capicua.v1 import match_pb2
from tests.clientkit import Proc, until
from tests.compliance.client import OPEN, cpu_seat
from tests.serverkit import running
from tests.test_arena_run import BASE, EVENT_BOUND_S, GATE_BOT, count_matches, write_toml
from tests.test_experiment import recorded_pairs
from tests.tooling import alive, cpython_start_interrupted, descendants, in_our_code

PY = sys.executable
LINE = "capicua: interrupted; "


def capicua(*args: str, cwd: Path, **options: Any) -> Proc:
    """``python -m capicua ARGS``: the real entry point, its guard included."""
    return Proc([PY, "-m", "capicua", *args], cwd=cwd, **options)


@dataclass(frozen=True)
class Moment:
    """When Ctrl-C comes: at once, or once a line matching ``line`` is printed (on
    ``stream``), or once a file matching ``file`` (a glob, in the command's directory)
    exists."""

    name: str
    line: str | None = None
    stream: str = "err"
    file: str | None = None

    def __str__(self) -> str:
        return self.name


AT_ONCE = Moment("at once")


async def interrupt(proc: Proc, moment: Moment, cwd: Path) -> str | None:
    """Ctrl-C at ``moment``; the command's last line, checked against the rule (None: at
    once, the signal landed while CPython itself started, before a line of capicua ran)."""
    if moment.line is not None:
        await proc.wait_for(moment.line, stream=moment.stream, timeout=EVENT_BOUND_S)
    elif moment.file is not None:
        pattern = moment.file

        def there() -> bool:
            return any(cwd.glob(pattern)) or proc.proc.poll() is not None

        await until(there, EVENT_BOUND_S, moment.name)
    assert proc.proc.poll() is None, f"ended before {moment}\n{proc.report()}"
    proc.proc.send_signal(signal.SIGINT)
    code = await proc.wait(EVENT_BOUND_S)
    said = proc.stdout + proc.stderr
    if moment is AT_ONCE and (cpython_start_interrupted(proc.stderr) or code == -signal.SIGINT):
        # CPython's own start (or its default handler, before any Python code ran)
        assert not in_our_code(proc.stderr), proc.report()
        return None
    for noise in ("Traceback", "Exception ignored", "was never retrieved", "aclose()"):
        assert noise not in said, proc.report()
    assert code == 130, proc.report()
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(LINE), proc.report()
    return last


async def ctrl_c(
    args: Sequence[str],
    moment: Moment,
    cwd: Path,
    ready: Callable[[Proc], Awaitable[None]] | None = None,
    **options: object,
) -> tuple[Proc, str | None]:
    """``capicua ARGS`` in ``cwd``, interrupted at ``moment`` (after ``ready(proc)``, when
    given, has returned): the ended process and its last line (see :func:`interrupt`)."""
    proc = capicua(*args, cwd=cwd, **options)
    try:
        if ready is not None:
            await ready(proc)
        return proc, await interrupt(proc, moment, cwd)
    finally:
        proc.kill()


def before_start(last: str | None) -> bool:
    """Whether the line is the one of a command stopped before it changed anything."""
    return last is None or last == LINE + BEFORE_START


def left_in(directory: Path) -> str:
    """What a run left in ``directory``: each file with its size, and what a non-empty log
    says (the part of a failure report that names why the directory was kept)."""
    if not directory.exists():
        return f"{directory}: gone"
    lines = [f"{directory} holds:"]
    for path in sorted(directory.rglob("*")):
        size = path.stat().st_size if path.is_file() else "dir"
        lines.append(f"  {path.relative_to(directory)}: {size}")
        if path.suffix == ".log" and path.is_file() and path.stat().st_size:
            lines.append("    " + path.read_text(errors="replace")[-1500:].replace("\n", "\n    "))
    return "\n".join(lines)


def nothing_recorded(out: str) -> str:
    return f"{LINE}nothing was recorded (no {out} is left): the same command starts afresh"


# -- arena run ------------------------------------------------------------------------------


def gated(tmp_path: Path) -> Path:
    """Two matches of ``random`` against ``gate``, one at a time: the gate bot holds the
    first one (after the one-hand check of every bot) until ``gate-open`` exists, so no
    result is recorded before the test says."""
    (tmp_path / "gatebot.py").write_text(GATE_BOT)
    bots = {"random": "builtin:random", "gate": "python:gatebot:Gate"}
    data = {**BASE, "concurrency": 1, "time_limit_ms": 3_600_000, "bots": bots}
    return write_toml(tmp_path / "t.toml", data)


START_OF_A_RUN = [
    AT_ONCE,
    Moment("its directory is made", file="out/.lock"),
    Moment("its server starts", file="out/logs/server.log"),
    Moment("its bots start: 0 of 2 played", file="out/logs/gate.log"),
]


@pytest.mark.parametrize("moment", START_OF_A_RUN, ids=str)
async def test_arena_run_interrupted_before_a_result_leaves_nothing(
    tmp_path: Path, moment: Moment
) -> None:
    file = gated(tmp_path)
    run, last = await ctrl_c(["arena", "run", str(file), "--out", "out"], moment, tmp_path)
    left = left_in(tmp_path / "out")
    assert before_start(last) or last == nothing_recorded("out"), f"{run.report()}\n{left}"
    assert not (tmp_path / "out").exists(), left  # no empty directory, no empty logs
    if moment.file is None:
        return
    (tmp_path / "gate-open").write_text("")  # the same command starts afresh
    again = capicua("arena", "run", str(file), "--out", "out", "--json", cwd=tmp_path)
    try:
        assert await again.wait(EVENT_BOUND_S) == 0, again.report()
    finally:
        again.kill()
    assert count_matches(tmp_path / "out") == 2


async def test_a_directory_holding_a_file_of_its_own_is_left_as_it_was(tmp_path: Path) -> None:
    """Only what a run made is taken back: a directory that holds anything else keeps it."""
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ".gitkeep").write_text("")
    bots = Moment("its bots start", file="out/logs/gate.log")
    _, last = await ctrl_c(["arena", "run", str(gated(tmp_path)), "--out", "out"], bots, tmp_path)
    assert last == f"{LINE}the same command resumes: what out holds is kept"
    assert (tmp_path / "out" / ".gitkeep").exists()


async def test_arena_demo_interrupted_anywhere_says_how_to_resume(tmp_path: Path) -> None:
    """The README's first command: before its first result nothing is left (the next demo
    takes the same name); after it, the line names the command that resumes it, and that
    command resumes."""
    demo = ["arena", "demo", "--games", "1"]
    moments = [
        Moment("its header", line=r"results in arena-demo-1$"),
        Moment("its bots start", file="arena-demo-1/logs/hard.log"),
    ]
    for moment in moments:
        run, last = await ctrl_c(demo, moment, tmp_path)
        assert last == nothing_recorded("arena-demo-1"), run.report()
        assert list(tmp_path.iterdir()) == []
    _, last = await ctrl_c(demo, Moment("its first result", line=r"^match 1/"), tmp_path)
    resume = "capicua arena demo --out arena-demo-1 --games 1"
    assert last is not None and last.endswith(f": {resume} resumes, in arena-demo-1"), last
    count = re.search(r"; (\d+) matches played", last)
    assert count is not None, last
    played = int(count.group(1))
    resumed = Moment("resumed", line=r"^playing \d+ of \d+ matches")
    again, last = await ctrl_c(resume.split()[1:], resumed, tmp_path)
    begun = next(line for line in again.err if line.startswith("playing "))
    left, total = map(int, re.findall(r"\d+", begun)[:2])
    assert left == total - played and f"({played} kept from an earlier run)" in begun
    assert last is not None and last.endswith(f"{resume} resumes, in arena-demo-1")


async def test_ctrl_c_again_after_the_line_keeps_its_exit_code(tmp_path: Path) -> None:
    """Once the line is printed the command is on its way out: another SIGINT while Python
    finalizes (a second Ctrl-C, or the first one still pending) ends it with the same code
    and no second line, never as killed by SIGINT (-2)."""
    proc = capicua("arena", "demo", "--games", "1", cwd=tmp_path)
    try:
        await proc.wait_for(r"results in arena-demo-1$", timeout=EVENT_BOUND_S)
        proc.proc.send_signal(signal.SIGINT)
        await proc.wait_for(re.escape(LINE), timeout=EVENT_BOUND_S)
        sent = 0
        while proc.proc.poll() is None and sent < 200:  # as many as land before the end
            proc.proc.send_signal(signal.SIGINT)
            sent += 1
            await asyncio.sleep(0.002)  # a burst of Ctrl-C, not a wait for an event
        code = await proc.wait(EVENT_BOUND_S)
    finally:
        proc.kill()
    assert code == 130, proc.report()
    assert [line for line in proc.err if line.startswith(LINE)] == [
        nothing_recorded("arena-demo-1")
    ]
    assert "Traceback" not in proc.stderr, proc.report()


def test_an_interrupt_caught_inside_a_source_string_still_exits_130(tmp_path: Path) -> None:
    """Under ``python -m`` CPython kills the process with SIGINT at its very end when a
    KeyboardInterrupt ever ended an ``exec`` of a string (dataclasses build their methods
    that way while modules load), even one caught and answered with an exit code: the
    demo printed its line and still ended -2 when Ctrl-C landed there. The interrupt's
    exit keeps 130. (Deterministic: the KeyboardInterrupt is raised inside the string.)"""
    (tmp_path / "landed_in_exec.py").write_text(
        "from capicua.common import interrupt\n"
        "try:\n"
        "    exec('raise KeyboardInterrupt', {})\n"
        "except KeyboardInterrupt as e:\n"
        "    interrupt.exit_interrupted(e)\n"
    )
    done = subprocess.run(
        [PY, "-m", "landed_in_exec"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 130, (done.returncode, done.stderr)
    assert done.stderr == LINE + BEFORE_START + "\n", done.stderr


# -- experiments and SPRTs -----------------------------------------------------------------


EXPERIMENT = ["experiment", "ab", "--base", "dominican", "--candidate-set",
              "finish_bonus.capicua.effect=add:25", "--bots", "medium", "--hands", "3000",
              "--workers", "1", "--out", "x"]  # fmt: skip


@pytest.mark.parametrize(
    "moment",
    [AT_ONCE, Moment("its directory is made", file="x/.lock"), Moment("its header", r"in x$")],
    ids=str,
)
async def test_an_experiment_interrupted_before_its_first_pairs_leaves_nothing(
    tmp_path: Path, moment: Moment
) -> None:
    run, last = await ctrl_c(EXPERIMENT, moment, tmp_path)
    nothing_left_or_resumable(run, last, tmp_path / "x", "the same command resumes, in x")


def nothing_left_or_resumable(run: Proc, last: str | None, out: Path, resume: str) -> None:
    """An experiment interrupted before its first pairs leaves nothing. Play starts right
    after its header with nothing to hold it, and a fast build (the compiled one plays a few
    hundred hands while a loaded test process reads a line) may record pairs before the
    signal lands: then the directory stays, and the line counts what it holds and says how
    to resume it."""
    if before_start(last) or last == nothing_recorded(out.name):
        assert not out.exists(), run.report()
        return
    kept = recorded_pairs(out)
    assert last is not None and kept > 0, run.report()
    assert last.startswith(f"{LINE}{kept} pairs played") and last.endswith(resume), last


async def test_an_experiment_interrupted_after_some_pairs_resumes(tmp_path: Path) -> None:
    async def some_pairs(_: Proc) -> None:
        await until(lambda: recorded_pairs(tmp_path / "x") > 0, EVENT_BOUND_S, "a pair")

    _, last = await ctrl_c(EXPERIMENT, Moment("some pairs recorded"), tmp_path, some_pairs)
    assert last is not None and last.endswith(": the same command resumes, in x"), last
    kept = recorded_pairs(tmp_path / "x")
    assert f"{kept} pairs played" in last  # the pairs it says are those on disk
    resumed = Moment("resumed", line=rf"^resuming: {kept} of 3000 pairs already recorded$")
    await ctrl_c(EXPERIMENT, resumed, tmp_path)


async def test_a_measurement_without_out_leaves_no_experiment_directory(tmp_path: Path) -> None:
    args = ["experiment", "measure", "--rules", "block", "--bots", "medium", "--hands", "3000"]
    made = Moment("its directory is made", file="experiment-1/.lock")
    run, last = await ctrl_c(args, made, tmp_path)
    resume = "the same command with --out experiment-1 resumes, in experiment-1"
    nothing_left_or_resumable(run, last, tmp_path / "experiment-1", resume)
    if not (tmp_path / "experiment-1").exists():
        assert list(tmp_path.iterdir()) == []


SPRT = ["arena", "sprt", "--base", "random", "--candidate", "random", "--rules", "iq-1v1",
        "--set", "target=30", "--max-pairs", "20000", "--out", "s"]  # fmt: skip


async def test_an_sprt_interrupted_at_its_start_or_after_some_pairs(tmp_path: Path) -> None:
    run, last = await ctrl_c(SPRT, Moment("its header", r"^SPRT"), tmp_path)
    resumes = rf"{LINE}[\d,]+ pairs counted: the same command resumes, in s"
    if last == nothing_recorded("s"):
        assert not (tmp_path / "s").exists(), run.report()
    else:  # random bots play fast: pairs may be recorded before the signal lands
        assert last is not None and re.fullmatch(resumes, last), run.report()
        assert count_matches(tmp_path / "s") > 0
        shutil.rmtree(tmp_path / "s")

    async def two_pairs(_: Proc) -> None:
        await until(lambda: count_matches(tmp_path / "s") >= 4, EVENT_BOUND_S, "two pairs")

    _, last = await ctrl_c(SPRT, Moment("some pairs recorded"), tmp_path, two_pairs)
    assert last is not None and re.fullmatch(resumes, last), last


# -- clients of a server -------------------------------------------------------------------


async def test_match_watch_leaves_the_match_as_it_was() -> None:
    async with running(None) as (app, lobby):
        seats = [cpu_seat(), cpu_seat()]
        match, host = await lobby.create("iq-1v1", seats, overrides=["target=100000"])
        watching = ["match", "watch", match.name, "--server", app.address]
        for moment in (AT_ONCE, Moment("it waits", line=r"^waiting: not started", stream="out")):
            _, last = await ctrl_c(watching, moment, Path.cwd())
            assert before_start(last) or last == (
                f"{LINE}the match is not affected: the same command watches it from where it is now"
            )
        await lobby.start(match.name, host)
        _, last = await ctrl_c(watching, Moment("a play", r" plays ", stream="out"), Path.cwd())
        assert last is not None and "the match is not affected" in last
        assert (await lobby.get(match.name)).state == match_pb2.MATCH_STATE_RUNNING
        await lobby.cancel_created()


async def test_bot_human_interrupted_at_its_prompt_takes_its_seat_back() -> None:
    async with running(None) as (app, lobby):
        # A target no match reaches: a hand in which all of the seat's moves are forced
        # (the server plays them while no client asks for forced moves) can win the whole
        # match before the first prompt (CI saw one: 230 points in the first hand).
        match, host = await lobby.create(
            "iq-1v1", [OPEN, cpu_seat()], overrides=["target=100000"], timer_ms=600_000
        )
        joined = await lobby.join_match(
            match_pb2.JoinMatchRequest(name=match.name, seat=0), token=""
        )
        await lobby.start(match.name, host)
        human = ["bot", "human", "--server", app.address, "--token", joined.seat_token]
        # the table's last line: the prompt after it ends no line
        prompt = Moment("its prompt", line="^╰", stream="out")
        _, last = await ctrl_c(human, prompt, Path.cwd(), hold_stdin=True)
        assert last == (
            f"{LINE}your seat waits for you until its turn's deadline (then the match's "
            "timeout policy plays it): the same command takes it back"
        )

        async def play_a_move(again: Proc) -> None:
            await again.wait_for(prompt.line or "", stream="out", timeout=EVENT_BOUND_S)
            again.send("1\n")

        played = Moment("its move played", line=r"seat 0 \(you\) plays", stream="out")
        await ctrl_c(human, played, Path.cwd(), play_a_move, hold_stdin=True)
        await lobby.cancel_created()


# -- the server and the in-process commands -----------------------------------------------------


@pytest.mark.parametrize("suspend", [False, True], ids=["temporary", "suspend"])
async def test_serve_says_what_serving_again_does(tmp_path: Path, suspend: bool) -> None:
    args = ["serve", "--port", "0", "--cpu-workers", "1", "--log-level", "warning"]
    if suspend:
        args += ["--data", str(tmp_path / "data"), "--on-stop", "suspend"]
    _, last = await ctrl_c(args, Moment("listening", r"^listening on ", "out"), tmp_path)
    said = (
        f"the same command serves {tmp_path / 'data'} again and resumes the suspended matches"
        if suspend
        else "the store was temporary: the same command starts an empty server"
    )
    assert last == LINE + said


async def test_play_writes_no_replay_when_interrupted(tmp_path: Path) -> None:
    args = ["play", "--rules", "block", "--set", "target=100000", "--bots", "medium",
            "--quiet", "--replay", "r.json"]  # fmt: skip
    for moment in (AT_ONCE, Moment("a hand", line=r"^hand 1: ")):
        _, last = await ctrl_c(args, moment, tmp_path)
        assert before_start(last) or last == (
            f"{LINE}nothing was written: the same command plays the same match from its start"
        )
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "moment",
    [
        AT_ONCE,
        Moment("its server starts", line=r"embedded server at", stream="out"),
        Moment("it waits for the other person", line=r"^waiting for seat 2", stream="out"),
    ],
    ids=str,
)
async def test_play_human_stops_its_server_wherever_interrupted(
    tmp_path: Path, moment: Moment
) -> None:
    args = ["play", "--rules", "iq-2v2", "--human", "0,2", "--bots", "easy"]
    children: set[int] = set()

    async def started(run: Proc) -> None:
        if moment.line is not None:
            await run.wait_for(moment.line, stream="out", timeout=EVENT_BOUND_S)
        children.update(descendants(run.proc.pid))

    run, last = await ctrl_c(args, moment, tmp_path, started, hold_stdin=True)
    assert before_start(last) or last == (
        f"{LINE}the match ran on a server of its own, now stopped: the same command starts a "
        "new one"
    ), run.report()
    await until(lambda: not any(alive(p) for p in children), 30, "its server gone")


async def test_bench_arena_leaves_no_temporary_directory(tmp_path: Path) -> None:
    args = ["bench", "arena", "--mode", "grpc", "--concurrency", "1", "--games", "1",
            "--repeat", "1"]  # fmt: skip
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    for moment in (AT_ONCE, Moment("its bots start", file="tmp/capicua-bench-arena-*/out/logs/*")):
        _, last = await ctrl_c(args, moment, tmp_path, env={"TMPDIR": str(temporary)})
        assert before_start(last) or last == (
            f"{LINE}nothing was measured or kept: the same command measures again"
        )
        assert not any(temporary.glob("capicua-bench-*")), list(temporary.iterdir())
