"""What the ladder tests share: a small ladder file for `capicua serve --ladder`, the
`capicua` command, and a ladder directory's count of an entry's matches."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from typing import Any

from capicua.arena.store import Results, Where
from capicua.client import Bot


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


def stored(out: Where, entry: str) -> int:
    """Matches of ``entry`` in a ladder's results (read while it runs)."""
    results = Results(out, read_only=True)
    try:
        return sum(entry in m.sides for m in results.matches())
    finally:
        results.close()


def committed(out: Where) -> set[tuple[tuple[int, int], str | None]]:
    """A ladder's committed matches: ((set number, rotation), server match id)."""
    results = Results(out, read_only=True)
    try:
        return {((m.seq, m.rotation), m.server_match) for m in results.matches()}
    finally:
        results.close()


class Counting(Bot):
    """Plays its first legal action; counts the matches it holds at once."""

    def __init__(self, bot_id: str) -> None:
        self.bot_id = bot_id
        self.now: set[str] = set()
        self.most = 0
        self.ended: list[str] = []

    def choose(self, observation: Any, legal_actions: Sequence[Any]) -> Any:
        return legal_actions[0]

    def on_match_started(self, match: str, seat: int, observation: Any) -> None:
        self.now.add(match)
        self.most = max(self.most, len(self.now))

    def on_match_ended(self, match: str, outcome: Any) -> None:
        self.now.discard(match)
        self.ended.append(match)
