"""The engine's speed as a deterministic number: CPU instructions per random ``block``
match, counted by valgrind's callgrind, against the budget committed in
tools/instruction_budget.json; and the same for a one-hand ``block`` match played through
OpenSpiel (``capicua.integrations.openspiel``) by ``capicua bench openspiel``'s loop.
Wall-clock speed depends on the machine's load; this count does not (the same run twice
gives the same count), so CI can stop a regression of the match loop or of the OpenSpiel
wrapper before it lands (.ci/run runs this on the pure and on the compiled build).

    python tools/instruction_budget.py            # check (exit 1 over budget)
    python tools/instruction_budget.py --update   # record this build's counts as budgets
    python tools/instruction_budget.py --workload openspiel   # one of them

Each count is taken for 0 and for N matches in two runs, so that the interpreter's start
and the imports cancel out. It belongs to one CPython and one valgrind: on others the
check says so and records nothing unless told to (--update).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from capicua.common import build

BUDGET_FILE = Path(__file__).with_name("instruction_budget.json")
MATCHES = 20
TOLERANCE = 0.03  # over the budget by more than this fails
WORKLOAD = """
import random, sys
from capicua.engine.game import Game
from capicua.engine.rules import load_preset
game = Game(load_preset("block"))
rng = random.Random(0)
for i in range(int(sys.argv[1])):
    game.new_match(i, auto_forced=False).random_playout(rng)
"""


# The bench's own loop (a chance outcome drawn by its probability, else a uniform legal
# action) over one-hand matches: what an algorithm walking the game pays per hand.
OPENSPIEL_WORKLOAD = """
import random, sys
from capicua.bench.openspiel import _pyspiel, _random_step
game = _pyspiel().load_game("capicua", {"preset": "block", "set": "max_hands:1"})
rng = random.Random(0)
for _ in range(int(sys.argv[1])):
    state = game.new_initial_state()
    while not state.is_terminal():
        _random_step(state, rng)
"""


@dataclass(frozen=True)
class Workload:
    name: str
    source: str
    matches: int
    unit: str  # what one of the matches is, for the line printed

    def key(self, label: str) -> str:
        """Its budget's key in the file: the build's label (the engine's, as first kept)."""
        return label if self.name == "engine" else f"{self.name} {label}"


WORKLOADS = {
    "engine": Workload("engine", WORKLOAD, MATCHES, "block match"),
    "openspiel": Workload(
        "openspiel", OPENSPIEL_WORKLOAD, 100, "one-hand block match through OpenSpiel"
    ),
}


def instructions(matches: int, workload: str = WORKLOAD) -> int:
    """Instructions callgrind counts for a Python process that plays ``matches``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
            # -P: the working directory stays off sys.path, so the count does not depend on
            # where this runs (imports would list it, and a busy /tmp changes between runs)
            + [sys.executable, "-P", "-c", workload, str(matches)],
            # str hashes (hence dict probes) fixed; numpy's (OpenSpiel's) BLAS threads off:
            # their start-up counts differently from run to run
            env=os.environ | {"PYTHONHASHSEED": "0", "OPENBLAS_NUM_THREADS": "1"},
            capture_output=True,
            text=True,
        )
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"instruction budget: callgrind failed: {done.stderr.strip()[-300:]}")
    return int(found.group(1))


def platform_key() -> str:
    valgrind = subprocess.run(["valgrind", "--version"], capture_output=True, text=True)
    return (
        f"{platform.python_implementation()} {platform.python_version()}, {valgrind.stdout.strip()}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help="record this build's counts")
    parser.add_argument(
        "--workload", choices=[*WORKLOADS, "all"], default="all", help="which to count"
    )
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("instruction budget: valgrind is not installed (apt-get install valgrind)")
        return 1
    chosen = list(WORKLOADS.values()) if args.workload == "all" else [WORKLOADS[args.workload]]
    return max(check(workload, args.update) for workload in chosen)


def check(workload: Workload, update: bool) -> int:
    """Count ``workload`` and compare it with its budget (or record it): 1 when over."""
    label = build.current().label
    n = workload.matches
    per_match = (instructions(n, workload.source) - instructions(0, workload.source)) // n
    budgets = json.loads(BUDGET_FILE.read_text()) if BUDGET_FILE.exists() else {}
    key, name = platform_key(), workload.key(label)
    line = f"instruction budget ({label}, {key}): {per_match:,} instructions per {workload.unit}"
    if update:
        budgets.setdefault(key, {})[name] = per_match
        BUDGET_FILE.write_text(json.dumps(budgets, indent=1, sort_keys=True) + "\n")
        print(f"{line}, recorded")
        return 0
    budget = budgets.get(key, {}).get(name)
    if budget is None:
        print(f"{line}; no budget recorded for this platform and build (--update records one)")
        return 0
    if per_match > budget * (1 + TOLERANCE):
        print(f"{line}, over the budget of {budget:,} by {per_match / budget - 1:.1%}")
        return 1
    print(f"{line}, within the budget of {budget:,} ({per_match / budget - 1:+.1%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
