"""``capicua bench ladder --pages N``: what the ladder's leaderboard costs with a big store.

A ladder directory of N stored matches is built (8 built-in entries on ``iq-1v1``, each
set's winner drawn at random: constructed outcomes, no play), served by the leaderboard's
app on this process's event loop over a real loopback socket, and each page is fetched over
HTTP ``repeats`` times: the time to the first cached snapshot (the table's bootstrap, the
histories and the head-to-head matrix: the work a refresh does in its thread), each page's
median and worst milliseconds (urllib in a thread of this process: its time is counted
too), and the whole NDJSON export's time.
"""

from __future__ import annotations

import asyncio
import random
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from capicua.arena.facts import MatchFacts
from capicua.arena.ladder.board import LadderBoard
from capicua.arena.ladder.config import Ladder, ladder_from_mapping
from capicua.arena.ladder.matchmaker import Issued
from capicua.arena.ladder.plan import specs
from capicua.arena.recorder import Finished, commit_matches
from capicua.arena.schedule import MatchSpec
from capicua.arena.store import LADDER, Results
from capicua.bench.common import machine_info, python_info

ENTRIES = 8
LEVELS = ("random", "easy", "medium", "hard")
WHEN = "2026-12-06T00:00:00Z"


def cost_ladder() -> Ladder:
    """The constructed ladder: 8 built-in entries on iq-1v1 to 30."""
    entries = {f"e{i}": f"builtin:{LEVELS[i % len(LEVELS)]}" for i in range(ENTRIES)}
    data = {"name": "cost", "preset": "iq-1v1", "overrides": ["target=30"], "entries": entries}
    return ladder_from_mapping(data, Path("."))


def played(unit: list[MatchSpec], rng: random.Random) -> list[Finished]:
    """The matches of a set, each won by a side drawn at random."""
    return [
        Finished(m, MatchFacts("normal", rng.randrange(2), None, (0, 0), ()), None, None, WHEN, 0.0)
        for m in unit
    ]


def build(out: Path, lad: Ladder, stored: int, rng: random.Random) -> None:
    """A ladder directory holding ``stored`` matches: each entry's validation match, then
    rated sets between entries drawn at random."""
    results = Results(out)
    results.bind(LADDER, lad.name, lad.canonical(), lad.digest(), "cost")
    names = [b.name for b in lad.tournament.bots]
    for b in lad.tournament.bots:
        results.add_bot(b.name, b.label)
    batch: list[Finished] = []
    seq = 0
    for name in names:
        other = names[(names.index(name) + 1) % len(names)]
        batch += played(specs(lad, Issued(seq, (name, other), validation=True)), rng)
        seq += 1
    while len(batch) < stored:
        batch += played(specs(lad, Issued(seq, tuple(rng.sample(names, 2)))), rng)
        seq += 1
    commit_matches(results, batch)
    results.close()


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=600) as r:
        body: bytes = r.read()
        return body


async def _timed(url: str, repeats: int) -> dict[str, float]:
    """Median and worst milliseconds of a GET of ``url``."""
    spent = []
    for _ in range(repeats):
        start = time.perf_counter()
        await asyncio.to_thread(_fetch, url)
        spent.append((time.perf_counter() - start) * 1000)
    return {"median_ms": round(statistics.median(spent), 2), "max_ms": round(max(spent), 2)}


async def _measure(out: Path, repeats: int) -> dict[str, Any]:
    board = LadderBoard(out, "cost")
    report: dict[str, Any] = {}
    start = time.perf_counter()
    async with serving_board(board) as url:
        snap = await board.snapshot()
        report["first_snapshot_s"] = round(time.perf_counter() - start, 2)
        report["matches"] = snap.matches
        entry = snap.table.entries[0].name
        pages = {
            "table page": "ladders/cost/",
            "entry page": f"ladders/cost/entries/{entry}",
            "live page": "ladders/cost/live",
            "api table": "api/ladders/cost",
            "api entry": f"api/ladders/cost/entries/{entry}",
            "api matches (50 sets, mid-way)": f"api/ladders/cost/matches?after={snap.matches // 2}",
        }
        report["pages"] = {name: await _timed(url + path, repeats) for name, path in pages.items()}
        start = time.perf_counter()
        export = await asyncio.to_thread(_fetch, url + "api/ladders/cost/export.ndjson")
        report["export"] = {
            "lines": export.count(b"\n"),
            "s": round(time.perf_counter() - start, 2),
        }
    return report


def serving_board(board: LadderBoard) -> Any:
    from capicua.arena.ladder.web import serving

    return serving([board], "127.0.0.1", 0)


def run_pages_bench(stored: int, repeats: int = 20) -> dict[str, Any]:
    """Build a ladder of ``stored`` matches and time its pages."""
    with tempfile.TemporaryDirectory(prefix="capicua-ladder-pages-") as tmp:
        out = Path(tmp) / "ladder"
        started = time.perf_counter()
        build(out, cost_ladder(), stored, random.Random(stored))
        built_s = round(time.perf_counter() - started, 1)
        report = asyncio.run(_measure(out, repeats))
    return {
        "stored": stored, "repeats": repeats, "build_s": built_s, **report,
        "python": python_info(), "machine": machine_info(),
    }  # fmt: skip
