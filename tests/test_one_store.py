"""One run loop and one results store for every study (docs/arena.md, "One run, three
studies"): each match's facts are the engine's, written once when the match is committed,
whichever backend played it; an experiment's directory is an arena results directory; the
in-process backend plays any plan (each match with its own rules), resumes it by its keys
and stops where a stopping rule says, an endless plan included.

Real play throughout: the server backend runs an embedded server and bot processes, the
in-process one the engine and the built-in bots."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from capicua.arena.config import tournament_from_mapping
from capicua.arena.facts import replay_facts
from capicua.arena.inprocess import InProcessArena, LocalPlay
from capicua.arena.local import play_in_process
from capicua.arena.runner import Arena
from capicua.arena.schedule import MatchSpec, deal_seed, schedule, sets
from capicua.arena.store import EXPERIMENT, TOURNAMENT, Results
from capicua.arena.study import Study
from capicua.cli import main
from capicua.wire.codec import read_replay, replay_to_proto
from tests.clirunner import cli_runner

BOTS = {"random": "builtin:random", "easy": "builtin:easy"}


def _tournament(tmp_path: Path, **extra: Any) -> Any:
    data = {"name": "one", "preset": "iq-1v1", "overrides": ["target=30"], "games": 2,
            "seed": 7, "concurrency": 2, "bots": BOTS, **extra}  # fmt: skip
    return tournament_from_mapping(data, tmp_path)


def _stored(out: Path) -> Results:
    return Results.open_existing(out)


def test_a_tournament_over_the_protocol_stores_the_engines_facts_of_each_match(
    tmp_path: Path,
) -> None:
    """The facts stored at each commit are the engine's re-simulation of the replay the
    server served: every hand's counts, bonuses, opener and the real choices it offered."""
    t = _tournament(tmp_path)
    summary = asyncio.run(Arena(t, tmp_path / "out").run())
    assert summary.played == len(schedule(t)) == 4
    results = _stored(tmp_path / "out")
    try:
        assert results.study() == TOURNAMENT
        stored = results.facts(2)  # the sets of two matches, by rotation
        rows = {r.key: r for r in results.matches()}
    finally:
        results.close()
    assert sorted(stored) == [0, 1]
    for seq, matches in stored.items():
        for rotation, facts in enumerate(matches):
            row = rows[f"s{seq:05d}-r{rotation}"]
            replayed = replay_facts(
                replay_to_proto(read_replay(tmp_path / "out" / str(row.replay_path)))
            )
            assert facts == replayed
            assert facts.hands and all(h.choices is not None and h.plays > 0 for h in facts.hands)


def test_the_in_process_backend_keeps_the_replay_it_built_in_the_same_form(
    tmp_path: Path,
) -> None:
    """With no server, the in-process backend writes each replay in the form a server's is
    kept in (one writer): ``replays/KEY.binpb.gz``, the bytes of the very message it built
    for the match (:func:`~capicua.arena.local.play_in_process` plays the same match)."""
    t = _tournament(tmp_path)
    out = tmp_path / "out"
    summary = asyncio.run(InProcessArena(t, out, play=LocalPlay(workers=1)).run())
    assert summary.played == len(schedule(t)) == 4
    results = _stored(out)
    try:
        rows = results.matches()
    finally:
        results.close()
    specs = {m.key: m for m in schedule(t)}
    for row in rows:
        assert row.replay_path == f"replays/{row.key}.binpb.gz"
        built = play_in_process(t, specs[row.key]).SerializeToString(deterministic=True)
        assert gzip.decompress((out / row.replay_path).read_bytes()) == built


def _two_rules_plan(pairs: int) -> list[MatchSpec]:
    """An experiment's shape: each pair one deal, played under two rulesets."""
    out = []
    for pair in range(pairs):
        for k, overrides in enumerate((("target=30",), ("target=30", "stock=draw"))):
            out.append(
                MatchSpec(key=f"a{k}-p{pair:07d}", set_key=f"p{pair:07d}", seq=pair, rotation=k,
                          seed=deal_seed(3, pair), seats=("easy", "random"),
                          sides=("easy", "random"), preset="iq-1v1", overrides=overrides)
            )  # fmt: skip
    return out


class StopAfter:
    """A stopping rule: done once ``n`` matches are stored."""

    def __init__(self, n: int) -> None:
        self.n = n

    def bind(self, out: object) -> None:
        pass

    def discard(self, out: object) -> None:
        pass

    def update(self, results: Results) -> bool:
        return len(results.finished_keys()) >= self.n


def test_the_in_process_backend_plays_a_plan_resumes_it_and_obeys_its_stopping_rule(
    tmp_path: Path,
) -> None:
    t = _tournament(tmp_path)
    plan = _two_rules_plan(6)
    out = tmp_path / "out"

    def study(stop: Any) -> Study:
        return Study(
            EXPERIMENT, "two rules", {"plan": 6}, "d1", list(sets(plan)), stop, replays=False
        )

    first = InProcessArena(t, out, study=study(StopAfter(4)), play=LocalPlay(workers=1))
    summary = asyncio.run(first.run())
    assert summary.played == 4 and not summary.interrupted  # one set (a task) at a time
    rest = InProcessArena(t, out, study=study(StopAfter(10**6)), play=LocalPlay(workers=2))
    summary = asyncio.run(rest.run())
    assert (summary.already, summary.played, summary.complete) == (4, 8, True)
    results = _stored(out)
    try:
        rows = results.matches()
        stored = results.facts(2)
    finally:
        results.close()
    assert [r.key for r in rows] == [m.key for m in plan]
    assert all(r.replay_path is None for r in rows)  # this study keeps facts only
    assert sorted(stored) == list(range(6))
    for plain, drawing in stored.values():  # each match played under its own rules
        assert plain.hands and drawing.hands
        assert all(h.draws == 0 for h in plain.hands)
    assert any(h.draws > 0 for _, drawing in stored.values() for h in drawing.hands)


def test_an_endless_plan_runs_until_its_stopping_rule(tmp_path: Path) -> None:
    """The shape of a standing ladder: a plan that never ends, whose matchmaker picks each
    next pairing from the results so far as the run pulls it (the two bots with the fewest
    matches), stopped by its rule; run again, it resumes past the keys already stored."""
    bots = {**BOTS, "easy-2": "builtin:easy"}
    t = _tournament(tmp_path, bots=bots)
    out = tmp_path / "ladder"

    def played() -> Counter[str]:
        counts: Counter[str] = Counter()
        if (out / "results.sqlite").is_file():
            results = _stored(out)
            try:
                for row in results.matches():
                    counts.update(row.sides)
            finally:
                results.close()
        return counts

    def ladder() -> Iterator[list[MatchSpec]]:
        for n in itertools.count():  # a counter: the keys stay the same on resume
            counts = played()
            sides = tuple(sorted(bots, key=lambda b: (counts[b], b))[:2])
            yield [MatchSpec(key=f"m{n:06d}", set_key=f"m{n:06d}", seq=n, rotation=0,
                             seed=deal_seed(9, n), seats=sides, sides=sides)]  # fmt: skip

    def run(n: int) -> Any:
        study = Study(TOURNAMENT, t.name, t.canonical(), t.digest(), ladder(), StopAfter(n))
        return asyncio.run(InProcessArena(t, out, study=study).run())

    summary = run(5)
    assert summary.played == 5 and summary.total is None and not summary.complete
    summary = run(9)
    assert (summary.played, summary.already) == (4, 0)  # an endless plan counts nothing ahead
    results = _stored(out)
    try:
        assert [r.key for r in results.matches()] == [f"m{n:06d}" for n in range(9)]
    finally:
        results.close()
    assert sorted(played().values()) == [6, 6, 6]  # each pick saw every commit before it


def test_an_experiment_directory_is_one_results_store(tmp_path: Path) -> None:
    """In-process, an experiment keeps its matches' facts in results.sqlite (no second
    database, no replay); the arena's own commands read the same directory."""
    res = cli_runner().invoke(main, ["experiment", "ab", "--base", "block", "--candidate-set",
                                     "block_tie=opening_side", "--hands", "30", "--bots", "easy",
                                     "--out", str(tmp_path / "x"), "--json"])  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == [".lock", "results.sqlite"]
    results = _stored(tmp_path / "x")
    try:
        assert results.study() == EXPERIMENT and results.complete_sets(2) == 30
    finally:
        results.close()
    standings = cli_runner().invoke(main, ["arena", "standings", str(tmp_path / "x"), "--json"])
    assert standings.exit_code == 0, standings.stderr
    assert json.loads(standings.stdout)["matches_total"] == 60
