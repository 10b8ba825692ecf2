"""``capicua bench arena``: finished matches per second of a whole tournament.

The work: a round robin of four ``random`` bots on ``block`` (``games`` duplicate sets per
pairing, so 12 matches per game), played at each concurrency in two ways:

* ``in-process``: the engine and the bots in worker processes of this machine
  (``concurrency`` processes, each playing whole matches; no server, no network): the
  ceiling the rules engine sets;
* ``grpc``: the real arena: an embedded ``capicua serve`` subprocess, one bot subprocess per
  bot, every decision a round trip on a Play stream, every replay fetched and committed to
  SQLite. The clock runs from the first match's creation to the last match's commit, so the
  start of the processes is not counted (it is reported apart).

Each (mode, concurrency) is repeated ``repeat`` times, the median reported; the ratio of
the gRPC rate to the in-process rate at the same concurrency is measured in the same run.

With ``--backend dask`` (:func:`run_backends`) the same tournament is played by the local
backend and by the dask backend on a LocalCluster of each worker count (each worker its
own server and bot processes, ``concurrency`` matches in flight per worker), alternating
within each repetition; reported: finished matches and decisions per second of playing
time (from the first match's creation to the last commit, so the start of workers,
servers and bots is not counted), medians.
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from capicua.arena import config as _config
from capicua.arena import local as _local
from capicua.arena import runner as _runner
from capicua.arena import schedule as _schedule
from capicua.arena.config import Tournament
from capicua.arena.run import Summary, TournamentRun
from capicua.arena.schedule import MatchSpec
from capicua.common.interrupt import Interrupted
from capicua.engine.game import Game

DEFAULT_CONCURRENCY = (1, 2, 8)
DEFAULT_GAMES = 4
DEFAULT_REPEAT = 3
PRESET = "block"
BOTS = ("random-1", "random-2", "random-3", "random-4")


def bench_tournament(games: int, concurrency: int, preset: str = PRESET) -> Tournament:
    return _config.tournament_from_mapping(
        {
            "name": "bench",
            "preset": preset,
            "games": games,
            "matches": {"seed": 1, "concurrency": concurrency, "time_limit_ms": 30_000},
            "bots": {name: "builtin:random" for name in BOTS},
        },
        Path.cwd(),
    )


@dataclass
class Sample:
    matches: int
    seconds: float  # playing time (see the module docs)
    startup_seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.matches / self.seconds if self.seconds > 0 else 0.0


@dataclass
class Row:
    mode: str
    concurrency: int
    samples: list[Sample] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "concurrency": self.concurrency,
            "matches": self.samples[0].matches if self.samples else 0,
            "matches_per_s": round(statistics.median(s.rate for s in self.samples), 2),
            "runs": [round(s.rate, 2) for s in self.samples],
            "startup_s": round(statistics.median(s.startup_seconds for s in self.samples), 2),
        }


def _play_chunk(t: Tournament, chunk: list[MatchSpec]) -> int:
    game = Game(t.ruleset)
    for m in chunk:
        _local.play_in_process(t, m, game)
    return len(chunk)


def run_in_process(t: Tournament, concurrency: int) -> Sample:
    """Every match of ``t`` in ``concurrency`` worker processes (started before the clock)."""
    matches = _schedule.schedule(t)
    chunks = [matches[i::concurrency] for i in range(concurrency)]
    with ProcessPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(_play_chunk, [t] * concurrency, [[]] * concurrency))  # warm up
        start = time.perf_counter()
        done = sum(pool.map(_play_chunk, [t] * concurrency, chunks))
        seconds = time.perf_counter() - start
    return Sample(done, seconds)


def _complete(arena: TournamentRun) -> Summary:
    """The summary of a whole run of ``arena`` (an interrupted run stops the benchmark:
    its rate would be no measurement)."""
    summary = asyncio.run(arena.run())
    if summary.interrupted:
        raise Interrupted()
    return summary


def run_grpc(t: Tournament, concurrency: int) -> Sample:
    """The real arena into a temporary directory."""
    with tempfile.TemporaryDirectory(prefix="capicua-bench-arena-") as tmp:
        start = time.perf_counter()
        arena = _runner.Arena(t, Path(tmp) / "out")
        summary = _complete(arena)
        total = time.perf_counter() - start
        if summary.played != summary.total:
            raise RuntimeError(f"bench arena: only {summary.played} of {summary.total} played")
        playing = arena.play_seconds
        return Sample(summary.played, playing, startup_seconds=total - playing)


def run(
    concurrency: tuple[int, ...] = DEFAULT_CONCURRENCY,
    games: int = DEFAULT_GAMES,
    repeat: int = DEFAULT_REPEAT,
    modes: tuple[str, ...] = ("in-process", "grpc"),
    preset: str = PRESET,
) -> dict[str, Any]:
    """Measure every (mode, concurrency); returns the JSON report."""
    rows: list[Row] = []
    wall = time.perf_counter()
    for mode in modes:
        for c in concurrency:
            row = Row(mode, c)
            t = bench_tournament(games, c, preset)
            for _ in range(repeat):
                row.samples.append(run_in_process(t, c) if mode == "in-process" else run_grpc(t, c))
            rows.append(row)
    rates = {(r.mode, r.concurrency): statistics.median(s.rate for s in r.samples) for r in rows}
    out = [r.as_json() for r in rows]
    for item in out:
        base = rates.get(("in-process", item["concurrency"]))
        if item["mode"] == "grpc" and base:
            item["ratio_to_in_process"] = round(item["matches_per_s"] / base, 3)
    by_mode: dict[str, dict[str, float]] = {}
    for (mode, c), rate in rates.items():
        by_mode.setdefault(mode, {})[str(c)] = round(rate, 2)
    return {
        "preset": preset,
        "bots": list(BOTS),
        "matches_per_s": by_mode,
        "games": games,
        "repeat": repeat,
        "rows": out,
        "seconds": round(time.perf_counter() - wall, 1),
    }


# -- local vs dask ----------------------------------------------------------------------------

DEFAULT_WORKERS = (1, 2)
DASK_CONCURRENCY = 8


@dataclass
class Rate:
    matches: int
    decisions: int
    seconds: float

    def as_json(self) -> dict[str, float]:
        return {
            "matches_per_s": round(self.matches / self.seconds, 2) if self.seconds else 0.0,
            "decisions_per_s": round(self.decisions / self.seconds, 1) if self.seconds else 0.0,
        }


def _decisions(out: Path) -> int:
    """Decisions the bots made in a run (the think-time rows the results keep per seat)."""
    with sqlite3.connect(out / "results.sqlite") as db:
        return int(db.execute("SELECT coalesce(sum(decisions), 0) FROM think").fetchone()[0])


def run_backend(t: Tournament, workers: int | None) -> Rate:
    """One run of ``t``: the local backend (``workers`` None) or dask on a LocalCluster."""
    from capicua.arena.cluster import DaskArena

    with tempfile.TemporaryDirectory(prefix="capicua-bench-arena-") as tmp:
        out = Path(tmp) / "out"
        arena = _runner.Arena(t, out) if workers is None else DaskArena(t, out, workers=workers)
        summary = _complete(arena)
        if summary.played != summary.total:
            raise RuntimeError(f"bench arena: only {summary.played} of {summary.total} played")
        return Rate(summary.played, _decisions(out), arena.play_seconds)


def run_backends(
    workers: tuple[int, ...] = DEFAULT_WORKERS,
    games: int = DEFAULT_GAMES,
    repeat: int = DEFAULT_REPEAT,
    concurrency: int = DASK_CONCURRENCY,
    preset: str = PRESET,
) -> dict[str, Any]:
    """The local backend and dask at each worker count, ``repeat`` times alternating;
    medians. The last line of ``--json`` is ``{"local": {...}, "dask": {"1": {...}}}``."""
    t = bench_tournament(games, concurrency, preset)
    runs: dict[str, list[Rate]] = {}
    for _ in range(repeat):
        runs.setdefault("local", []).append(run_backend(t, None))
        for n in workers:
            runs.setdefault(str(n), []).append(run_backend(t, n))

    def median(rates: list[Rate]) -> dict[str, float]:
        per_run = [r.as_json() for r in rates]
        return {k: statistics.median(x[k] for x in per_run) for k in per_run[0]}

    report: dict[str, Any] = {
        "local": median(runs["local"]),
        "dask": {str(n): median(runs[str(n)]) for n in workers},
    }
    return report
