"""The engine's speed as a deterministic number: CPU instructions per random ``block``
match, counted by valgrind's callgrind, against the budget committed in
tools/instruction_budget.json. Wall-clock speed depends on the machine's load; this count
does not (the same run twice gives the same count), so CI can stop a regression of the
match loop before it lands (.ci/run runs this on the pure and on the compiled build).

    python tools/instruction_budget.py            # check (exit 1 over budget)
    python tools/instruction_budget.py --update   # record this build's count as budget

The count is taken for 0 and for ``MATCHES`` matches in two runs, so that the interpreter's
start and the imports cancel out. It belongs to one CPython and one valgrind: on others the
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


def instructions(matches: int) -> int:
    """Instructions callgrind counts for a Python process that plays ``matches``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        done = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
            # -P: the working directory stays off sys.path, so the count does not depend on
            # where this runs (imports would list it, and a busy /tmp changes between runs)
            + [sys.executable, "-P", "-c", WORKLOAD, str(matches)],
            env=os.environ | {"PYTHONHASHSEED": "0"},  # str hashes, hence dict probes, fixed
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
    parser.add_argument("--update", action="store_true", help="record this build's count")
    args = parser.parse_args(argv)
    if shutil.which("valgrind") is None:
        print("instruction budget: valgrind is not installed (apt-get install valgrind)")
        return 1
    label = build.current().label
    per_match = (instructions(MATCHES) - instructions(0)) // MATCHES
    budgets = json.loads(BUDGET_FILE.read_text()) if BUDGET_FILE.exists() else {}
    key = platform_key()
    line = f"instruction budget ({label}, {key}): {per_match:,} instructions per block match"
    if args.update:
        budgets.setdefault(key, {})[label] = per_match
        BUDGET_FILE.write_text(json.dumps(budgets, indent=1, sort_keys=True) + "\n")
        print(f"{line}, recorded")
        return 0
    budget = budgets.get(key, {}).get(label)
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
