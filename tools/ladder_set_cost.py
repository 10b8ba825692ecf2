"""What choosing a ladder's next set costs as its results grow: a results store is built
with N stored matches (constructed outcomes, no play), then the ladder's plan is resumed
on it (the first set: what a resumed run pays once) and asked for further sets, each
committed before the next is asked for (as a run does), timing only the asking.

    python tools/ladder_set_cost.py --stored 100 1000 5000 --sets 30

prints one line per N: the resume's first set and the mean of the sets after it, in
milliseconds. A measurement for docs and reports (docs/ladder.md, "Cost per set"), not a
test: timings belong here, never in the suite.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from capicua.arena.ladder.plan import LadderPlan
from capicua.arena.recorder import commit_matches
from capicua.arena.store import Results
from capicua.bench.ladder_pages import build, played
from capicua.bench.ladder_pages import cost_ladder as ladder


def measure(stored: int, sets: int) -> tuple[float, float]:
    """(ms for the resume's first set, mean ms per set after it)."""
    rng = random.Random(stored)
    lad = ladder()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "ladder"
        build(out, lad, stored, rng)
        results = Results(out)
        try:
            plan = LadderPlan(lad)(results)
            start = time.perf_counter()
            unit = next(plan)
            first = time.perf_counter() - start
            spent = 0.0
            for _ in range(sets):
                commit_matches(results, played(unit, rng))
                start = time.perf_counter()
                unit = next(plan)
                spent += time.perf_counter() - start
        finally:
            results.close()
    return first * 1000, spent / sets * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stored", type=int, nargs="+", default=[100, 1000, 5000])
    parser.add_argument("--sets", type=int, default=30)
    args = parser.parse_args()
    for stored in args.stored:
        first, per_set = measure(stored, args.sets)
        print(f"{stored:>6} stored matches: first set {first:8.2f} ms, then {per_set:8.2f} ms/set")


if __name__ == "__main__":
    main()
