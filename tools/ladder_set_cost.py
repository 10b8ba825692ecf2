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

from capicua.arena.facts import MatchFacts
from capicua.arena.ladder.config import Ladder, ladder_from_mapping
from capicua.arena.ladder.matchmaker import Issued
from capicua.arena.ladder.plan import LadderPlan, specs
from capicua.arena.recorder import Finished, commit_matches
from capicua.arena.schedule import MatchSpec
from capicua.arena.store import LADDER, Results

ENTRIES = 8
LEVELS = ("random", "easy", "medium", "hard")
WHEN = "2026-12-06T00:00:00Z"


def ladder() -> Ladder:
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
