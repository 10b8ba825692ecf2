"""``capicua bench ladder``: a server's standing ladder under many connected entries.

A ``capicua serve --ladder FILE`` process (the ladder: the built-in ``random`` and ``easy``
as its own entries, short matches) and, in this process, N cheap bots: each registers,
joins the ladder (one match at a time) and answers every decision at once with a random
legal action, all their Play streams over a few connections. After they have joined, the
ladder plays for T seconds. Reported:

* ``matches_per_s``: the ladder's matches committed to its results in those T seconds;
* the matchmaker's decision time: one choice of the next set (:func:`choose` on the
  ladder's stored history, as the runner makes it) and one read of the roster (GetLadder
  with N entries, which the runner does before each choice), medians;
* the server's resident memory before the bots, after they joined, and at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import grpc

from capicua.arena.ladder.config import load_ladder
from capicua.arena.ladder.matchmaker import History, choose
from capicua.arena.ladder.plan import Online, stored_sets
from capicua.arena.store import Results
from capicua.bench.common import BenchError, machine_info, python_info
from capicua.bench.hold import process_sample
from capicua.bench.load import HELLO
from capicua.bench.server import child, run_on
from capicua.client import Lobby
from capicua.common.channel import aio_channel, bearer
from capicua.v1 import play_pb2, play_pb2_grpc

LADDER = "ladders/bench-ladder"
STREAMS_PER_CHANNEL = 100  # Play streams multiplexed on one connection
CALL_TIMEOUT = 60.0
JOIN_CONCURRENCY = 32  # registrations and joins in flight
CHOICES = 30  # matchmaker choices timed
ROSTER_READS = 20  # GetLadder calls timed

LADDER_FILE = """\
name = "bench ladder"
preset = "{preset}"
overrides = [{overrides}]

[matches]
seed = 1
concurrency = {concurrency}
time_limit_ms = 60000

[entries]
random = "builtin:random"
easy = "builtin:easy"
"""


@dataclass
class LadderReport:
    entries: int
    seconds: float
    preset: str
    concurrency: int
    matches: int = 0  # committed in the measured window
    matches_per_s: float = 0.0
    rated_sets: int = 0  # stored at the end
    choose_ms_p50: float = 0.0
    roster_read_ms_p50: float = 0.0
    server_rss_mb: dict[str, float] = field(default_factory=dict)
    decisions: int = 0
    errors: int = 0
    error_notes: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["python"] = python_info()
        out["machine"] = machine_info()
        return out


class Entries:
    """The cheap bots: registered, joined, each answering on its Play stream."""

    def __init__(self, address: str, report: LadderReport) -> None:
        self.address = address
        self.report = report
        self.lobby = Lobby(address, timeout=CALL_TIMEOUT)
        self.channels: list[Any] = []
        self.players: list[asyncio.Task[None]] = []
        self.rng = random.Random(1)

    def error(self, note: str) -> None:
        self.report.errors += 1
        if len(self.report.error_notes) < 20:
            self.report.error_notes.append(note)

    async def join(self, count: int, progress: Callable[[str], None]) -> None:
        gate = asyncio.Semaphore(JOIN_CONCURRENCY)
        tokens: list[str] = []

        async def one(i: int) -> None:
            async with gate:
                reply = await self.lobby.register_bot(
                    play_pb2.RegisterBotRequest(bot_id=f"cheap-{i:05d}")
                )
                await self.lobby.join_ladder(LADDER, "v1", token=reply.token)
                tokens.append(reply.token)
                if len(tokens) % 100 == 0:
                    progress(f"{len(tokens)}/{count} entries joined")

        await asyncio.gather(*(one(i) for i in range(count)))
        for start in range(0, len(tokens), STREAMS_PER_CHANNEL):
            channel = aio_channel(self.address)
            self.channels.append(channel)
            for token in tokens[start : start + STREAMS_PER_CHANNEL]:
                self.players.append(asyncio.create_task(self._play(channel, token)))

    async def _play(self, channel: Any, token: str) -> None:
        """One entry: every decision answered at once with a random legal action."""
        call = play_pb2_grpc.PlayServiceStub(channel).Play(metadata=bearer(token))
        try:
            await call.write(play_pb2.PlayRequest(hello=HELLO))
            while True:
                message = await call.read()
                if message is grpc.aio.EOF:
                    return
                if message.WhichOneof("message") == "decision":
                    request = message.decision
                    reply = play_pb2.ActionReply(
                        match=request.match,
                        turn_id=request.turn_id,
                        action_id=self.rng.randrange(len(request.legal_actions)),
                    )
                    self.report.decisions += 1
                    await call.write(play_pb2.PlayRequest(action=reply))
        except asyncio.CancelledError:
            call.cancel()
            raise
        except grpc.aio.AioRpcError as e:
            if e.code() != grpc.StatusCode.CANCELLED:
                self.error(f"Play stream failed: {e.code().name}: {e.details()}")

    async def roster_read_ms(self) -> float:
        """The median time of one GetLadder (the roster the runner reads per choice)."""
        times = []
        for _ in range(ROSTER_READS):
            t0 = time.perf_counter()
            await self.lobby.get_ladder(LADDER)
            times.append((time.perf_counter() - t0) * 1000)
        return statistics.median(times)

    async def close(self) -> None:
        for task in self.players:
            task.cancel()
        for task in self.players:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for channel in self.channels:
            await channel.close(grace=None)
        await self.lobby.close()


def committed(out: Path) -> int:
    """Matches in the ladder's results (read while the server writes them)."""
    if not (out / "results.sqlite").exists():
        return 0
    results = Results(out, read_only=True)
    try:
        return len(results.finished_keys())
    finally:
        results.close()


def choose_ms(out: Path, file: Path, names: list[str]) -> tuple[float, int]:
    """The median time of one matchmaker choice over the ladder's stored history, with
    every entry available, and the rated sets it held."""
    ladder = load_ladder(file)
    t = ladder.tournament
    results = Results(out, read_only=True)
    try:
        online = Online()
        online.catch_up(results)
        issued = [s for s, _ in stored_sets(results.matches()).values()]
    finally:
        results.close()
    history = History.of(issued)
    seq = max((s.seq for s in issued), default=-1) + 1
    skills = online.skills.skills()
    times = []
    for k in range(CHOICES):
        t0 = time.perf_counter()
        choose(seq + k, names, history, skills, t.ruleset.num_sides, ladder.matchmaking, t.seed)
        times.append((time.perf_counter() - t0) * 1000)
    rated = sum(1 for s in issued if not s.validation)
    return statistics.median(times), rated


async def _measure(
    address: str,
    pid: int,
    out: Path,
    file: Path,
    report: LadderReport,
    progress: Callable[[str], None],
) -> None:
    report.server_rss_mb["start"] = process_sample(pid, 0, 0).rss_mb
    entries = Entries(address, report)
    try:
        await entries.join(report.entries, progress)
        report.server_rss_mb["joined"] = process_sample(pid, 0, 0).rss_mb
        before, started = committed(out), time.monotonic()
        while (elapsed := time.monotonic() - started) < report.seconds:
            await asyncio.sleep(min(5.0, report.seconds - elapsed))
            progress(f"{time.monotonic() - started:.0f}/{report.seconds:.0f} s")
        report.matches = committed(out) - before
        report.matches_per_s = round(report.matches / report.seconds, 2)
        report.server_rss_mb["end"] = process_sample(pid, 0, 0).rss_mb
        report.roster_read_ms_p50 = round(await entries.roster_read_ms(), 3)
        names = ["random", "easy", *(f"cheap-{i:05d}@v1" for i in range(report.entries))]
        ms, report.rated_sets = await asyncio.to_thread(choose_ms, out, file, names)
        report.choose_ms_p50 = round(ms, 3)
    finally:
        await entries.close()


def run_ladder_bench(
    entries: int,
    seconds: float,
    *,
    preset: str = "iq-1v1",
    overrides: tuple[str, ...] = ("target=20",),
    concurrency: int = 16,
    progress: Callable[[str], None] | None = None,
) -> LadderReport:
    """Start the server with a ladder, join ``entries`` cheap bots, let it play
    ``seconds``, stop it."""
    report = LadderReport(entries, seconds, preset, concurrency)
    started = time.perf_counter()
    quiet = progress or (lambda _: None)
    with tempfile.TemporaryDirectory(prefix="capicua-ladder-bench-") as tmp:
        root = Path(tmp)
        file = root / "ladder.toml"
        text = LADDER_FILE.format(
            preset=preset,
            overrides=", ".join(f'"{o}"' for o in overrides),
            concurrency=concurrency,
        )
        file.write_text(text)
        args = [
            "-c", "from capicua.cli import main; main(prog_name='capicua')",
            "serve", "--port", "0", "--data", str(root / "data"), "--cpu-workers", "1",
            "--ladder", str(file), "--log-level", "warning", "--grace", "2",
            "--max-registrations-per-hour", str(entries + 10),
            "--max-ladder-entries", str(entries + 10),
        ]  # fmt: skip
        out = root / "data" / "ladders" / "bench-ladder"
        with child(args, root / "server.log", "server") as server:
            run_on(
                server,
                _measure(server.address, server.process.pid, out, file, report, quiet),
            )
    if report.errors and not report.matches:
        raise BenchError("the ladder played nothing: " + "; ".join(report.error_notes[:3]))
    report.wall_s = round(time.perf_counter() - started, 1)
    return report
