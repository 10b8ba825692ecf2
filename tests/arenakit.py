"""Real arena results for tests, built quickly: scheduled matches played in-process by
built-in bots (the same replays a server would record), stored exactly as the arena does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from capicua.arena.config import Tournament, tournament_from_mapping
from capicua.arena.local import play_in_process
from capicua.arena.recorder import commit_match
from capicua.arena.schedule import schedule
from capicua.arena.store import Results


def tournament(**data: Any) -> Tournament:
    """A tournament from keyword arguments (``bots`` a mapping name -> spec)."""
    data.setdefault("preset", "block")
    data.setdefault(
        "bots", {"random": "builtin:random", "easy": "builtin:easy", "medium": "builtin:medium"}
    )
    return tournament_from_mapping(data, Path("."))


def play_results(out: Path, t: Tournament, limit: int | None = None) -> Results:
    """Play the first ``limit`` matches of ``t`` (all by default) into ``out``."""
    results = Results(out)
    results.bind(t.name, t.canonical(), t.digest(), "test")
    for b in t.bots:
        results.add_bot(b.name, b.spec)
    for m in schedule(t)[:limit]:
        rep = play_in_process(t, m, iterations=10)
        commit_match(results, m, rep, None, "2026-12-02T00:00:00Z", 0.01)
    return results
