"""What the ladder tests share: a small ladder file for `capicua serve --ladder`, the
`capicua` command, and a ladder directory's count of an entry's matches."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from capicua.arena.store import Results


def run_capicua(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "capicua", *args], capture_output=True, text=True, timeout=120
    )


LADDER_FILE = """\
name = "Club ladder"
preset = "iq-1v1"
overrides = ["target=20"]

[matches]
seed = 5
concurrency = 3
time_limit_ms = 5000

[entries]
random = "builtin:random"
easy = "builtin:easy"
"""


def stored(out: Path, entry: str) -> int:
    """Matches of ``entry`` in a ladder's results directory (read while it runs)."""
    results = Results(out, read_only=True)
    try:
        return sum(entry in m.sides for m in results.matches())
    finally:
        results.close()
