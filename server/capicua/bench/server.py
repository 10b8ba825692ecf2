"""``capicua bench server``: the match server under load, over real loopback gRPC.

The server runs as its own process (``capicua serve --port 0 --data TMP``) and so does a
trivial grpc.aio echo server; this process is the load generator, never the server's: the
Play load client of :mod:`capicua.bench.load`. Four bots are registered, one per seat of
``block``; each has one Play stream on its own connection, holds its seat in every match,
and answers every ``DecisionRequest`` at once with a uniformly random legal action. Matches
are created through the lobby with the four seats reserved for the bots and a one-hour turn
timer, then started.

1. **Round trips**, ``repeat`` times (interleaved):

   - *decision*: one match at a time (a finished match is replaced at once) until
     ``rtt_samples`` samples are taken. A sample, at the client, is the time from writing
     an answer to reading that match's next ``DecisionRequest`` (which usually goes to the
     next seat's bot, on another stream);
   - *raw echo*: one bidi stream of the echo server: write a message the size of the median
     ``DecisionRequest`` (measured just before), read it back; ``rtt_samples`` times;
   - *raw echo throughput*: :data:`ECHO_STREAMS` such streams (over four connections, like
     the bots) at once: round trips per second in total.

2. **Throughput** at each concurrency level *C*: *C* matches run at once (each finished
   match is replaced at once by a new one). After a warm-up that lasts until *C* matches
   have finished (so that the matches, all started together, no longer end together),
   ``repeat`` consecutive windows of ``seconds`` each count the decisions answered and the
   matches finished (normally) in them. Then the matches left are cancelled (not counted).

Medians over the repetitions (windows) are reported, with ratios against the echo measured
in the same run, and the server process's CPU time per decision in each phase (from
``/proc``: on a busy machine the round trips move with the other jobs, this much less).
Errors (in-stream errors, failed calls, broken streams, matches that end other than
normally or by our own cancel) are summed over the whole run: the goal is zero.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from capicua.bench.common import BenchError, machine_info, python_info
from capicua.bench.load import PRESET, TIMER_MS, Load, fill, replacing, wait_until
from capicua.client.launch import Launched, LaunchError, launch
from capicua.common import interrupt
from capicua.common.channel import aio_channel
from capicua.common.interrupt import sigterm_interrupts

DEFAULT_CONCURRENCY = (1, 64, 512)
DEFAULT_SECONDS = 10.0
DEFAULT_REPEAT = 3
DEFAULT_RTT_SAMPLES = 2000
ECHO_STREAMS = 64
ECHO_SECONDS = 2.0  # the echo throughput window (at most --seconds)
CONNECTIONS = 4  # the echo throughput spreads its streams over this many channels
START_TIMEOUT = 60.0  # the server or the echo process printing its address
ECHO_SERVICE = "capicua.bench.Echo"
ECHO_METHOD = f"/{ECHO_SERVICE}/Echo"


# -- results -------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 < q <= 1) of ``values`` (0.0 when empty)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


def _cpu_us(values: Sequence[float | None]) -> float | None:
    """The median of the measured CPU seconds per decision, in µs (None: none measured)."""
    known = [v for v in values if v is not None]
    return round(statistics.median(known) * 1e6, 1) if known else None


def process_cpu_s(pid: int) -> float | None:
    """The CPU time (user and system, every thread) process ``pid`` used so far, in
    seconds, from ``/proc``; None where it cannot be read (not Linux, or the process is
    gone). Unlike a round trip it hardly moves with what else the machine runs, so it
    shows a change of the server's work per decision on a busy machine."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2 :].split()  # from field 3 on (the name may hold spaces)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class CpuMeter:
    """The server process's CPU seconds per decision the load client saw answered, between
    :meth:`start` and :meth:`per_decision`."""

    def __init__(self, pid: int | None, load: Load) -> None:
        self.pid = pid
        self.load = load
        self._cpu: float | None = None
        self._decisions = 0

    def start(self) -> None:
        self._cpu = None if self.pid is None else process_cpu_s(self.pid)
        self._decisions = self.load.decisions

    def per_decision(self) -> float | None:
        now = None if self.pid is None else process_cpu_s(self.pid)
        decisions = self.load.decisions - self._decisions
        if now is None or self._cpu is None or decisions <= 0:
            return None
        return (now - self._cpu) / decisions


@dataclass
class RoundTrips:
    """One repetition of the round-trip measurements (times in seconds)."""

    decision: list[float]
    echo: list[float]
    payload_bytes: int  # the median DecisionRequest message size, echoed
    echo_per_s: float  # echo round trips per second over ECHO_STREAMS streams
    server_cpu: float | None = None  # the server's CPU seconds per decision (None: unknown)


@dataclass
class Window:
    """One timed window at one concurrency level."""

    seconds: float
    decisions: int
    matches: int
    rtts: list[float] = field(default_factory=list, repr=False)
    server_cpu: float | None = None  # the server's CPU seconds per decision (None: unknown)

    @property
    def decisions_per_s(self) -> float:
        return self.decisions / self.seconds if self.seconds > 0 else 0.0

    @property
    def matches_per_s(self) -> float:
        return self.matches / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Level:
    """The windows of one concurrency level, and its errors (warm-up and cancel included)."""

    concurrency: int
    windows: list[Window]
    errors: int
    warmup_seconds: float

    def to_json(self, echo_per_s: float) -> dict[str, Any]:
        ws = self.windows
        decisions = _median([w.decisions_per_s for w in ws])
        return {
            "matches_per_s": round(_median([w.matches_per_s for w in ws]), 2),
            "decisions_per_s": round(decisions, 1),
            "errors": self.errors,
            "matches": sum(w.matches for w in ws),
            "decisions": sum(w.decisions for w in ws),
            "decision_rtt_us_p50": round(_median([percentile(w.rtts, 0.5) for w in ws]) * 1e6, 1),
            "decision_rtt_us_p99": round(_median([percentile(w.rtts, 0.99) for w in ws]) * 1e6, 1),
            "vs_raw_echo": round(decisions / echo_per_s, 3) if echo_per_s > 0 else 0.0,
            "server_cpu_us_per_decision": _cpu_us([w.server_cpu for w in ws]),
            "warmup_s": round(self.warmup_seconds, 1),
        }


@dataclass
class Report:
    concurrency: list[int]
    seconds: float
    repeat: int
    rtt_samples: int
    round_trips: list[RoundTrips] = field(default_factory=list)
    levels: dict[int, Level] = field(default_factory=dict)
    latency_errors: int = 0
    decisions_per_match: float = 0.0
    error_notes: list[str] = field(default_factory=list)
    wall_seconds: float = 0.0

    def _rt(self, fn: Callable[[RoundTrips], float]) -> float:
        return _median([fn(r) for r in self.round_trips])

    @property
    def errors(self) -> int:
        return self.latency_errors + sum(lv.errors for lv in self.levels.values())

    def to_json(self) -> dict[str, Any]:
        echo50 = self._rt(lambda r: percentile(r.echo, 0.5)) * 1e6
        echo99 = self._rt(lambda r: percentile(r.echo, 0.99)) * 1e6
        dec50 = self._rt(lambda r: percentile(r.decision, 0.5)) * 1e6
        dec99 = self._rt(lambda r: percentile(r.decision, 0.99)) * 1e6
        echo_per_s = self._rt(lambda r: r.echo_per_s)
        out: dict[str, Any] = {
            "raw_echo_rtt_us_p50": round(echo50, 1),
            "raw_echo_rtt_us_p99": round(echo99, 1),
            "decision_rtt_us_p50": round(dec50, 1),
            "decision_rtt_us_p99": round(dec99, 1),
            "rtt_ratio_p50": round(dec50 / echo50, 2) if echo50 > 0 else 0.0,
            "rtt_ratio_p99": round(dec99 / echo99, 2) if echo99 > 0 else 0.0,
            "payload_bytes": round(self._rt(lambda r: r.payload_bytes)),
            "server_cpu_us_per_decision": _cpu_us([r.server_cpu for r in self.round_trips]),
            "raw_echo_per_s": round(echo_per_s, 1),
            "raw_echo_streams": ECHO_STREAMS,
            "concurrency": {
                str(c): self.levels[c].to_json(echo_per_s)
                for c in self.concurrency
                if c in self.levels
            },
            "decisions_per_match": round(self.decisions_per_match, 1),
            "errors": self.errors,
            "preset": PRESET,
            "seconds": self.seconds,
            "repeat": self.repeat,
            "rtt_samples": self.rtt_samples,
            "wall_s": round(self.wall_seconds, 1),
            "python": python_info(),
            "machine": machine_info(),
        }
        if self.error_notes:
            out["error_notes"] = self.error_notes[:5]
        return out


def parse_concurrency(text: str | None, option: str = "--concurrency") -> list[int]:
    """``"1,64,512"`` as a list of levels (the default levels for None); a refusal names
    ``option``."""
    if text is None:
        return list(DEFAULT_CONCURRENCY)
    levels: list[int] = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            continue
        if not item.isdigit() or int(item) < 1:
            raise BenchError(f"{option}: {item!r} is not a positive whole number")
        levels.append(int(item))
    if not levels:
        raise BenchError(f"{option}: give at least one level")
    return list(dict.fromkeys(levels))


# -- processes -----------------------------------------------------------------------------


@contextlib.contextmanager
def child(args: Sequence[str], log: Path, what: str) -> Iterator[Launched]:
    """Run ``python ARGS`` until the block ends, once its first stdout line names its
    address (the SDK's :func:`~capicua.client.launch`: it dies with this process, and
    stopping it stops its process group)."""
    argv = [sys.executable, *args]
    try:
        # stdin: the echo server exits when it closes
        launched = launch(argv, what=f"the {what}", log=log, timeout=START_TIMEOUT, stdin=True)
    except LaunchError as e:
        raise BenchError(str(e)) from None
    with launched:
        yield launched


def run_on(server: Launched, main: Coroutine[Any, Any, None]) -> None:
    """``asyncio.run(main)`` against ``server``; a gRPC failure becomes a BenchError that
    shows the end of the server's log."""
    try:
        asyncio.run(main)
    except grpc.RpcError as e:
        raise BenchError(f"the benchmark failed: {e}\n{server.tail()}") from None


def server_args(data: Path, max_matches_per_bot: int) -> list[str]:
    """``capicua serve`` on a free loopback port with the benchmark's settings."""
    return [
        "-c",
        "from capicua.cli import main; main(prog_name='capicua')",
        "serve",
        "--port", "0",
        "--data", str(data),
        "--cpu-workers", "1",  # no CPU seats are played
        "--turn-timer-ms", str(TIMER_MS),
        "--max-matches-per-bot", str(max_matches_per_bot),
        "--max-matches-per-creator", str(max_matches_per_bot),  # the first bot creates all
        "--grace", "2",
    ]  # fmt: skip


ECHO_ARGS = ["-c", "from capicua.bench.server import echo_main; echo_main()"]


async def _echo(request_iterator: Any, context: Any) -> Any:
    async for message in request_iterator:
        yield message


def echo_main() -> None:
    """The echo server process: a grpc.aio server with one bidi method that sends every
    message back (raw bytes, no protobuf). Prints ``listening on HOST:PORT``; stops when
    stdin closes or on SIGTERM/SIGINT."""

    async def main() -> None:
        server = grpc.aio.server()
        handler = grpc.method_handlers_generic_handler(
            ECHO_SERVICE, {"Echo": grpc.stream_stream_rpc_method_handler(_echo)}
        )
        server.add_generic_rpc_handlers((handler,))
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        print(f"listening on 127.0.0.1:{port}", flush=True)
        loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        threading.Thread(
            target=lambda: (sys.stdin.read(), loop.call_soon_threadsafe(stop.set)), daemon=True
        ).start()
        with interrupt.signals(lambda _: stop.set()):
            await stop.wait()
        await server.stop(0.5)

    asyncio.run(main())


# -- the measurements ----------------------------------------------------------------------


async def measure_round_trips(
    load: Load, echo_address: str, samples: int, echo_seconds: float, server_pid: int | None
) -> RoundTrips:
    """Decision round trips (one match at a time), then the echo with the same size."""
    errors0 = load.errors
    cpu = CpuMeter(server_pid, load)
    async with replacing(load):
        await fill(load, 1)
        load.rtts, load.sizes = [], []
        cpu.start()
        await wait_until(load, lambda: len(load.rtts) >= samples or load.errors > errors0)
        decision, sizes = load.rtts[:samples], load.sizes[:samples]
        server_cpu = cpu.per_decision()
    if not decision:
        raise BenchError("no decision round trip was measured: " + "; ".join(load.error_notes))
    size = round(statistics.median(sizes))
    echo = await echo_rtts(echo_address, size, samples)
    echo_per_s = await echo_throughput(echo_address, size, ECHO_STREAMS, echo_seconds)
    return RoundTrips(decision, echo, size, echo_per_s, server_cpu)


async def measure_level(
    load: Load,
    concurrency: int,
    *,
    seconds: float,
    windows: int,
    progress: Callable[[str], None],
    server_pid: int | None = None,
) -> Level:
    """``concurrency`` matches at once: warm up until that many have finished, then count
    ``windows`` consecutive windows of ``seconds`` each."""
    errors0 = load.errors
    cpu = CpuMeter(server_pid, load)
    out: list[Window] = []
    async with replacing(load):
        started = time.perf_counter()
        await fill(load, concurrency)
        target = load.finished + concurrency
        progress(f"{concurrency} concurrent matches: warm-up ({concurrency} to finish)")
        await wait_until(load, lambda: load.finished >= target)
        warmup = time.perf_counter() - started
        for w in range(windows):
            progress(f"{concurrency} concurrent matches: window {w + 1}/{windows}")
            load.rtts = []
            decisions0, finished0 = load.decisions, load.finished
            cpu.start()
            t0 = time.perf_counter()
            await asyncio.sleep(seconds)
            elapsed = time.perf_counter() - t0
            rtts, load.rtts = load.rtts, []  # later samples belong to no window
            decisions, finished = load.decisions - decisions0, load.finished - finished0
            out.append(Window(elapsed, decisions, finished, rtts, cpu.per_decision()))
    return Level(concurrency, out, load.errors - errors0, warmup)


async def echo_rtts(address: str, size: int, samples: int) -> list[float]:
    """Round trips of a ``size``-byte message on one bidi stream of the echo server."""
    channel = aio_channel(address)
    try:
        call = channel.stream_stream(ECHO_METHOD)()
        payload = os.urandom(size)
        clock = time.perf_counter
        for _ in range(20):  # warm up the stream
            await call.write(payload)
            await call.read()
        out = []
        for _ in range(samples):
            t = clock()
            await call.write(payload)
            back = await call.read()
            out.append(clock() - t)
            if back != payload:
                raise BenchError("the echo server sent back something else")
        await call.done_writing()
        return out
    finally:
        await channel.close(grace=None)


async def echo_throughput(address: str, size: int, streams: int, seconds: float) -> float:
    """Round trips per second in total over ``streams`` echo streams at once."""
    channels = [aio_channel(address) for _ in range(min(CONNECTIONS, streams))]
    payload = os.urandom(size)
    count = 0
    measuring = False
    stop = False

    async def loop(channel: Any) -> None:
        nonlocal count
        call = channel.stream_stream(ECHO_METHOD)()
        while not stop:
            await call.write(payload)
            await call.read()
            if measuring:
                count += 1
        call.cancel()

    tasks = [asyncio.create_task(loop(channels[i % len(channels)])) for i in range(streams)]
    try:
        await asyncio.sleep(min(0.5, seconds / 4))  # every stream under way
        measuring = True
        started = time.perf_counter()
        await asyncio.sleep(seconds)
        measuring = False
        elapsed = time.perf_counter() - started
        stop = True
        await asyncio.gather(*tasks)
        return count / elapsed
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for channel in channels:
            await channel.close(grace=None)


async def _run(
    server: Launched, echo_address: str, report: Report, progress: Callable[[str], None]
) -> None:
    load = Load(server.address)
    pid = server.process.pid
    try:
        await load.connect()
        errors0 = load.errors
        for r in range(report.repeat):
            progress(f"round trips {r + 1}/{report.repeat}")
            report.round_trips.append(
                await measure_round_trips(
                    load, echo_address, report.rtt_samples, min(ECHO_SECONDS, report.seconds), pid
                )
            )
        report.latency_errors = load.errors - errors0
        for c in report.concurrency:
            report.levels[c] = await measure_level(
                load,
                c,
                seconds=report.seconds,
                windows=report.repeat,
                progress=progress,
                server_pid=pid,
            )
    finally:
        played = load.finished_decisions
        report.decisions_per_match = statistics.mean(played) if played else 0.0
        report.error_notes = list(load.error_notes)
        await load.close()


def run_server_bench(
    concurrency: Sequence[int] = DEFAULT_CONCURRENCY,
    *,
    seconds: float = DEFAULT_SECONDS,
    repeat: int = DEFAULT_REPEAT,
    rtt_samples: int = DEFAULT_RTT_SAMPLES,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Start the server and the echo server as child processes, load them from this one,
    and stop both (also on errors, Ctrl+C and SIGTERM)."""
    levels = list(concurrency)
    if not levels or min(levels) < 1:
        raise BenchError("--concurrency: give positive levels")
    report = Report(levels, seconds, repeat, rtt_samples)
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="capicua-bench-"))
    try:
        with sigterm_interrupts():
            per_bot = max(1000, 2 * max(levels) + 16)
            with (
                child(server_args(tmp / "data", per_bot), tmp / "server.log", "server") as server,
                child(ECHO_ARGS, tmp / "echo.log", "echo server") as echo,
            ):
                run_on(
                    server,
                    _run(server, echo.address, report, progress or (lambda _: None)),
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report.wall_seconds = time.perf_counter() - started
    return report


def measurement_count(concurrency: Sequence[int], repeat: int) -> int:
    """Progress steps of a run: the round trips per repetition, and per level its warm-up
    and its windows."""
    return repeat + len(concurrency) * (1 + repeat)
