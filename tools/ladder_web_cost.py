"""What the ladder's leaderboard costs with a big store: a ladder directory of N stored
matches is built (constructed outcomes, no play: tools/ladder_set_cost.py's), served by the
leaderboard's app on this process's event loop over a real loopback socket, and each page
is fetched over HTTP ``--repeats`` times.

    python tools/ladder_web_cost.py --stored 100000 --repeats 20

prints one JSON object: the time to the first cached snapshot (the table's bootstrap, the
histories and the head-to-head matrix: the work a refresh does in its thread), each page's
median and worst time in milliseconds (urllib in a thread of the same process: its time
is counted too), and the whole NDJSON export's time. A measurement for docs and reports
(docs/ladder.md, "The leaderboard in the browser"), not a test: timings belong here, never
in the suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from ladder_set_cost import build, ladder

from capicua.arena.ladder.board import LadderBoard
from capicua.arena.ladder.web import serving


def fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=600) as r:
        body: bytes = r.read()
        return body


async def timed(url: str, repeats: int) -> dict[str, float]:
    """Median and worst milliseconds of a GET of ``url`` (urllib, in a thread: the server
    answers on this loop)."""
    spent = []
    for _ in range(repeats):
        start = time.perf_counter()
        await asyncio.to_thread(fetch, url)
        spent.append((time.perf_counter() - start) * 1000)
    return {"median_ms": round(statistics.median(spent), 2), "max_ms": round(max(spent), 2)}


async def measure(out: Path, repeats: int) -> dict[str, Any]:
    board = LadderBoard(out, "cost")
    report: dict[str, Any] = {}
    start = time.perf_counter()
    async with serving([board], "127.0.0.1", 0) as url:
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
            "api matches (100, mid-way)": f"api/ladders/cost/matches?after={snap.matches // 2}",
        }
        report["pages"] = {name: await timed(url + path, repeats) for name, path in pages.items()}
        start = time.perf_counter()
        export = await asyncio.to_thread(fetch, url + "api/ladders/cost/export.ndjson")
        lines = export.count(b"\n")
        report["export"] = {"lines": lines, "s": round(time.perf_counter() - start, 2)}
    return report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stored", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ladder"
        build(out, ladder(), args.stored, random.Random(args.stored))
        report = asyncio.run(measure(out, args.repeats))
    print(json.dumps({"stored": args.stored, "repeats": args.repeats, **report}, indent=1))


if __name__ == "__main__":
    main()
