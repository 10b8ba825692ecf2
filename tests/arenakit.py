"""Real arena results for tests, built quickly: scheduled matches played in-process by
built-in bots (the same replays a server would record), stored exactly as the arena does;
and the layout every report page written from results shares (:func:`assert_in_layout`);
a tournament file played for real (:func:`standings_of_file`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from capicua.arena.config import Tournament, tournament_from_mapping
from capicua.arena.facts import replay_facts
from capicua.arena.local import play_in_process
from capicua.arena.recorder import Finished, commit_matches
from capicua.arena.schedule import MatchSpec, schedule
from capicua.arena.store import TOURNAMENT, Results


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
    results.bind(TOURNAMENT, t.name, t.canonical(), t.digest(), "test")
    for b in t.bots:
        results.add_bot(b.name, b.spec)
    for m in schedule(t)[:limit]:
        record(results, t, m)
    return results


def record(results: Results, t: Tournament, match: MatchSpec) -> None:
    """Play ``match`` of ``t`` in-process (``hard`` at 10 iterations) and commit it, with
    its replay, as the arena does."""
    rep = play_in_process(t, match, iterations=10)
    finished = Finished(match, replay_facts(rep), rep, None, "2026-12-02T00:00:00Z", 0.01)
    commit_matches(results, [finished])


def assert_in_layout(html: str, heading: str, footer: str) -> None:
    """``html`` is a page in the layout every report shares (templates/base.html.j2) with
    its one style sheet, not a page of its own: ``heading`` (as escaped markup) in the
    header, one nav, one main, and a footer starting with ``footer``."""
    from capicua.arena.report import asset

    assert f"<style>{asset('report.css')}</style>" in html
    assert html.count("<style") == 1
    assert f"<header><h1>{heading}</h1>" in html
    for part in ("<nav>", "<main>", "</main>", f"<footer>{footer}"):
        assert html.count(part) == 1, part


def standings_of_file(tmp_path: Path, text: str) -> dict[str, dict[str, Any]]:
    """Play the tournament file ``text`` for real (``capicua arena run --json``: an
    embedded server, every bot its own process) in ``tmp_path``; its standings' row of
    each bot, by name."""
    from capicua.cli import main
    from tests.clirunner import cli_runner

    file = tmp_path / "t.toml"
    file.write_text(text)
    out = str(tmp_path / "out")
    result = cli_runner().invoke(main, ["arena", "run", str(file), "--out", out, "--json"])
    assert result.exit_code == 0, result.output
    standings = json.loads(result.stdout.splitlines()[-1])
    return {row["name"]: row for row in standings["bots"]}
