"""``capicua bench load``: hold N concurrent matches on a server process for T seconds.

A ``capicua serve`` child process on loopback; from this process, one bot per seat of the
preset (each its own connection and Play stream, the :class:`~capicua.bench.load.Load`
client of ``bench server``) plays every decision at once, and each match that ends is
replaced, so N stay in flight. Every few seconds the server's resident memory and open file
descriptors are sampled (``/proc``); the report gives them at the start, after the warm-up
and at the end, with the growth per 1,000 finished matches after the warm-up (flat memory:
close to 0), the decision latency p50/p99 and every error.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from capicua.bench.common import BenchError, machine_info, python_info
from capicua.bench.load import Load, fill, replacing
from capicua.bench.server import child, percentile, run_on, server_args
from capicua.common.interrupt import sigterm_interrupts

SAMPLE_EVERY_S = 2.0
MAX_MATCHES = 5_000


@dataclass
class Sample:
    """The server process at one moment."""

    t_s: float  # since the matches started
    finished: int  # matches finished by then
    rss_mb: float
    fds: int


@dataclass
class LoadReport:
    matches: int
    seconds: float
    warmup_s: float
    preset: str
    finished: int = 0
    decisions: int = 0
    errors: int = 0
    error_notes: list[str] = field(default_factory=list)
    decision_ms_p50: float = 0.0
    decision_ms_p99: float = 0.0
    samples: list[Sample] = field(default_factory=list)
    wall_s: float = 0.0

    def at(self, t_s: float) -> Sample | None:
        """The first sample at or after ``t_s``."""
        return next((s for s in self.samples if s.t_s >= t_s), None)

    def to_json(self) -> dict[str, Any]:
        start = self.samples[0] if self.samples else None
        warm = self.at(self.warmup_s)
        end = self.samples[-1] if self.samples else None
        growth = None
        if warm is not None and end is not None and end.finished > warm.finished:
            growth = round((end.rss_mb - warm.rss_mb) / (end.finished - warm.finished) * 1000, 2)
        return {
            "matches": self.matches,
            "seconds": self.seconds,
            "preset": self.preset,
            "finished": self.finished,
            "finished_per_s": round(self.finished / self.seconds, 2) if self.seconds else 0.0,
            "decisions": self.decisions,
            "errors": self.errors,
            "error_notes": self.error_notes,
            "decision_ms_p50": round(self.decision_ms_p50, 3),
            "decision_ms_p99": round(self.decision_ms_p99, 3),
            "rss_mb": {
                "start": start.rss_mb if start else None,
                "warm": warm.rss_mb if warm else None,
                "end": end.rss_mb if end else None,
                "per_1000_matches_after_warmup": growth,
            },
            "fds": {
                "start": start.fds if start else None,
                "warm": warm.fds if warm else None,
                "end": end.fds if end else None,
            },
            "warmup_s": self.warmup_s,
            "samples": [asdict(s) for s in self.samples],
            "wall_s": round(self.wall_s, 1),
            "python": python_info(),
            "machine": machine_info(),
        }


def process_sample(pid: int, t_s: float, finished: int) -> Sample:
    """The resident memory (VmRSS) and open descriptors of process ``pid``."""
    rss_kb = 0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            rss_kb = int(line.split()[1])
    fds = len(list(Path(f"/proc/{pid}/fd").iterdir()))
    return Sample(round(t_s, 2), finished, round(rss_kb / 1024, 1), fds)


async def _hold(
    address: str, pid: int, report: LoadReport, progress: Callable[[str], None]
) -> None:
    load = Load(address, preset=report.preset)
    try:
        await load.connect()
        started = time.monotonic()
        report.samples.append(process_sample(pid, 0.0, 0))
        async with replacing(load):
            await fill(load, report.matches)
            while (elapsed := time.monotonic() - started) < report.seconds:
                await asyncio.sleep(min(SAMPLE_EVERY_S, report.seconds - elapsed))
                elapsed = time.monotonic() - started
                report.samples.append(process_sample(pid, elapsed, load.finished))
                progress(
                    f"{elapsed:.0f}/{report.seconds:.0f} s: {load.finished} finished, "
                    f"{report.samples[-1].rss_mb} MB"
                )
        report.finished = load.finished
        report.decisions = load.decisions
        rtts = sorted(load.rtts)
        report.decision_ms_p50 = percentile(rtts, 0.5) * 1000
        report.decision_ms_p99 = percentile(rtts, 0.99) * 1000
    finally:
        report.errors = load.errors
        report.error_notes = list(load.error_notes)
        await load.close()


def run_load_bench(
    matches: int,
    seconds: float,
    *,
    preset: str = "block",
    warmup_s: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> LoadReport:
    """Start the server, hold ``matches`` concurrent matches for ``seconds``, stop it."""
    if not 1 <= matches <= MAX_MATCHES:
        raise BenchError(f"--matches: 1 to {MAX_MATCHES}, got {matches}")
    warm = min(30.0, seconds / 5) if warmup_s is None else warmup_s
    report = LoadReport(matches, seconds, warm, preset)
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="capicua-load-"))
    try:
        with sigterm_interrupts():
            per_bot = 2 * matches + 16
            with child(server_args(tmp / "data", per_bot), tmp / "server.log", "server") as server:
                quiet = progress or (lambda _: None)
                run_on(server, _hold(server.address, server.process.pid, report, quiet))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    report.wall_s = time.perf_counter() - started
    return report
