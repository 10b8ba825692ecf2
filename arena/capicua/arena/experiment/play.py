"""Playing an experiment's pairs: in-process on the engine, or over the protocol.

**In-process** (every seat a built-in bot): pair ``i`` is dealt from
``deal_seed(seed, i)`` (the arena's seed derivation), and each arm plays one match from it
(one hand long with ``unit = "hand"``) with fresh bots seeded per seat by
:func:`~capicua.arena.schedule.bot_seed`: the same deals, bots, bot seeds and seating in
every arm. When every seat is ``random`` the match is the engine's own random playout
(uniform over the legal actions, one generator per match seeded from the pair), the fast
path that makes thousands of hands a second. Chunks of pairs run in ``workers`` processes;
the parent commits each chunk as it comes back.

**Over the protocol** (any other bot spec, of a seat or of ``--skill``): every game of a
pair (each arm, then each skill game) becomes one arena match with its arm's rules and its
seats' bots, played by :class:`~capicua.arena.runner.Arena` on an embedded server
exactly as a tournament's matches are (bot processes, crash policy, forfeits, resume), into
``DIR/arena``. Each finished match's replay is then re-simulated by the engine
(:func:`capicua.engine.replay.verify`), so its facts come from the engine's records, not
from the server's word. A pair in which an arm did not end by the rules (a forfeit, a
cancellation) is kept but not counted.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from capicua.common.errors import CapicuaError
from capicua.common.interrupt import shielded
from capicua.engine.game import Game, MatchState
from capicua.engine.replay import verify
from capicua.wire.codec import read_replay

from ..backend import LOCAL, Backend
from ..config import Tournament
from ..errors import ArenaError
from ..local import play_spec
from ..output import SilentDisplay
from ..schedule import MatchSpec, bot_seed, deal_seed
from ..store import COUNTED, SKIPPED, Results, locked
from ..tasks import run_tasks
from .config import Experiment
from .metrics import MatchFacts, match_facts
from .store import ARENA_DIR, ExperimentStore, PairResult, disqualified_bots

MAX_CHUNK = 500  # pairs per task, at most


@dataclass
class RunSummary:
    """What one run of an experiment did."""

    total: int  # pairs in the experiment
    already: int  # recorded before this run
    played: int = 0
    interrupted: bool = False
    seconds: float = 0.0
    hands: int = 0  # hands played in this run, every arm counted


class Progress:
    """What the runner tells the person watching (see :mod:`capicua.arena.experiment.cli`)."""

    def begin(self, total: int, done: int, unit: str) -> None:
        pass

    def advance(self, n: int) -> None:
        pass

    def skip(self, n: int) -> None:
        """``n`` units will not be played (a bot in them was disqualified)."""

    def note(self, text: str) -> None:
        pass

    def end(self) -> None:
        pass


# -- one pair, in-process ---------------------------------------------------------------------

_GAMES: dict[str, list[Game]] = {}  # per process: the arms' games of an experiment


def _games(exp: Experiment) -> list[Game]:
    key = exp.digest()
    if key not in _GAMES:
        _GAMES[key] = [Game.from_preset(a.preset, a.played_overrides(exp.unit)) for a in exp.arms]
    return _GAMES[key]


def play_match(
    exp: Experiment, game: Game, seed: int, names: Sequence[str] | None = None
) -> MatchState:
    """One arm's match of the pair dealt from ``seed``, between the experiment's bots (or
    the built-in bots ``names``, one per seat: a skill game)."""
    names = [b.target for b in exp.seats] if names is None else list(names)
    if all(n == "random" for n in names):
        state = game.new_match(seed)
        state.random_playout(random.Random(bot_seed(seed, 0)))
        return state
    return play_spec(game, seed, [(n, exp.options_for(n)) for n in names])


def play_pairs(exp: Experiment, pairs: Sequence[int]) -> list[PairResult]:
    """Play every arm of ``pairs`` (a worker's task)."""
    games = _games(exp)
    out: list[PairResult] = []
    for pair in pairs:
        seed = deal_seed(exp.seed, pair)
        out.append(
            (pair, [match_facts(play_match(exp, games[p.arm], seed, p.seats)) for p in exp.plays])
        )
    return out


# -- a pool of workers ------------------------------------------------------------------------


def chunked(items: Sequence[int], workers: int) -> list[list[int]]:
    """Split ``items`` into tasks: about 20 per worker, at most :data:`MAX_CHUNK` each."""
    size = max(1, min(MAX_CHUNK, len(items) // (workers * 20) or 1))
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


# -- a whole run ------------------------------------------------------------------------------


def run_experiment(
    exp: Experiment,
    out: Path,
    progress: Progress | None = None,
    *,
    version: str = "",
    backend: Backend = LOCAL,
) -> RunSummary:
    """Play every pair of ``exp`` not yet in ``out`` and commit it; resumable at any point
    (on either backend)."""
    with locked(out):
        return _run(exp, out, progress or Progress(), version, backend)


def _run(
    exp: Experiment, out: Path, progress: Progress, version: str, backend: Backend
) -> RunSummary:
    store: ExperimentStore | None = None
    fresh = False
    try:
        with shielded():  # a database bound to this experiment, or none: never half of it
            store = ExperimentStore(out)
            fresh = store.bind(exp.name, exp.canonical(), exp.digest(), version)
        done = store.done_pairs(len(exp.plays))
        todo = [p for p in range(exp.pairs) if p not in done]
        summary = RunSummary(exp.pairs, exp.pairs - len(todo))
        start = time.perf_counter()
        if exp.in_process:
            _in_process(exp, store, todo, progress, summary, backend)
        else:
            _over_protocol(exp, out, store, todo, progress, summary, backend)
        summary.seconds = time.perf_counter() - start
        return summary
    finally:
        with shielded():
            progress.end()
            if store is not None:
                _close(store, fresh, len(exp.plays))


def _close(store: ExperimentStore, fresh: bool, games: int) -> None:
    """Close the store of a run; a new one in which nothing was recorded is removed, so
    the directory stays free for another experiment."""
    recorded = bool(store.done_pairs(games))
    store.close()
    if fresh and not recorded:
        store.discard()


def _in_process(
    exp: Experiment,
    store: ExperimentStore,
    todo: list[int],
    progress: Progress,
    summary: RunSummary,
    backend: Backend,
) -> None:
    progress.begin(summary.total, summary.already, "pairs")
    workers = max(1, min(exp.workers, os.cpu_count() or 1, len(todo) or 1))

    def commit(results: list[PairResult]) -> bool:
        summary.played += store.record(results)
        summary.hands += sum(len(f.hands) for _, arms in results for f in arms)
        progress.advance(len(results))
        return True

    task = _PairTask(exp)
    with backend.pool(workers) as (pool, slots):
        chunks = chunked(todo, slots)
        summary.interrupted = not run_tasks(task, chunks, slots, commit, pool)


class _PairTask:
    """A picklable ``play_pairs`` bound to its experiment (for the process pool)."""

    def __init__(self, exp: Experiment) -> None:
        self.exp = exp

    def __call__(self, pairs: list[int]) -> list[PairResult]:
        return play_pairs(self.exp, pairs)


# -- over the protocol ------------------------------------------------------------------------


def match_key(play: int, pair: int) -> str:
    """The arena key of game ``play`` of a pair (:attr:`Experiment.plays`' index: an arm's
    index for the arms' own games, so the keys of experiments without ``--skill`` stay)."""
    return f"a{play}-p{pair:07d}"


def parse_key(key: str) -> tuple[int, int]:
    arm, _, pair = key.partition("-")
    return int(arm[1:]), int(pair[1:])


def arena_tournament(exp: Experiment) -> Tournament:
    """The arena's view of the experiment: its bots, timing and failure policy."""
    base = exp.base
    return Tournament(
        name=exp.name,
        preset=base.preset,
        overrides=base.played_overrides(exp.unit),
        ruleset=base.ruleset,
        format="round-robin",
        candidate=None,
        games=exp.pairs,
        seed=exp.seed,
        concurrency=exp.concurrency,
        time_limit_ms=exp.time_limit_ms,
        on_timeout="forfeit",
        max_crashes=3,
        server=exp.server,
        # a built-in bot's process plays with the experiment's options for it, as it
        # would in-process (hard at fixed iterations unless [bot_options.hard] says)
        bots=tuple(
            dataclasses.replace(b, options=exp.options_for(b.target))
            if b.kind == "builtin" and exp.options_for(b.target)
            else b
            for b in exp.bots
        ),
        base_dir=exp.base_dir,
    )


def arena_matches(exp: Experiment, pairs: Iterable[int]) -> list[MatchSpec]:
    """One arena match per game of every pair (:attr:`Experiment.arena_plays`: the arms,
    then the skill games), pair by pair, with its arm's rules and its seats' bots."""
    rules = exp.base.ruleset
    out = []
    for pair in pairs:
        seed = deal_seed(exp.seed, pair)
        for k, play in enumerate(exp.arena_plays):
            a = exp.arms[play.arm]
            sides = tuple(play.seats[rules.side_seats(side)[0]] for side in range(rules.num_sides))
            out.append(
                MatchSpec(
                    key=match_key(k, pair),
                    set_key=f"p{pair:07d}",
                    seq=pair,
                    rotation=k,
                    seed=seed,
                    seats=play.seats,
                    sides=sides,
                    preset=a.preset,
                    overrides=a.played_overrides(exp.unit),
                )  # fmt: skip
            )
    return out


def replay_facts(path: Path) -> MatchFacts:
    """The facts of a stored match, from the engine's re-simulation of its replay."""
    return match_facts(verify(read_replay(path)))


def ingest(exp: Experiment, store: ExperimentStore, directory: Path) -> int:
    """Take the arena's finished matches into the experiment: every pair whose arms have
    all finished, once. Returns the pairs recorded."""
    if not (directory / "results.sqlite").is_file():
        return 0
    results = Results(directory)
    try:
        taken = store.sources()
        by_pair: dict[int, dict[int, str]] = {}
        paths: dict[str, str] = {}
        for row in results.matches():
            if row.key in taken or row.replay_path is None:
                continue
            arm, pair = parse_key(row.key)
            by_pair.setdefault(pair, {})[arm] = row.key
            paths[row.key] = row.replay_path
    finally:
        results.close()
    games = len(exp.plays)
    done = store.done_pairs(games)
    batch: list[PairResult] = []
    sources: dict[tuple[int, int], str] = {}
    for pair, keys in sorted(by_pair.items()):
        if len(keys) < games or pair in done:
            continue
        try:
            facts = [replay_facts(directory / paths[keys[k]]) for k in range(games)]
        except CapicuaError as e:  # the engine disagrees with the server's replay
            raise CapicuaError(f"pair {pair}: {e}") from None
        batch.append((pair, facts))
        sources.update({(k, pair): keys[k] for k in range(games)})
    return store.record(batch, sources) if batch else 0


class _ArenaProgress(SilentDisplay):
    """The arena's display protocol, reported as matches to an experiment's progress."""

    def __init__(self, progress: Progress) -> None:
        self.progress = progress

    def begin(self, total: int, done: int, skipped: int = 0) -> None:
        self.progress.begin(total, done, "matches")
        if skipped:
            self.progress.skip(skipped)

    def match_finished(
        self, spec: MatchSpec, termination: str, reason: str, result: str = ""
    ) -> None:
        # a skipped match (its bot is disqualified) is counted apart, not as played, and
        # said once, by the disqualification
        if termination == SKIPPED:
            self.progress.skip(1)
            return
        self.progress.advance(1)
        if termination not in COUNTED:
            self.progress.note(f"{spec.key}: {termination}: {reason}")

    def note(self, text: str) -> None:
        self.progress.note(text)


def _over_protocol(
    exp: Experiment,
    out: Path,
    store: ExperimentStore,
    todo: list[int],
    progress: Progress,
    summary: RunSummary,
    backend: Backend,
) -> None:
    directory = out / ARENA_DIR
    before = ingest(exp, store, directory)  # matches an interrupted run finished
    summary.played += before
    left = [p for p in todo if p not in store.done_pairs(len(exp.plays))]
    if not left or disqualified_bots(out):
        return  # done, or it cannot go on: the analysis names the disqualified bot
    arena = backend.arena(
        arena_tournament(exp), directory, _ArenaProgress(progress), matches=arena_matches(exp, left)
    )
    try:
        result = asyncio.run(arena.run())
        summary.interrupted = result.interrupted
    except ArenaError as e:
        raise CapicuaError(f"{e} (pairs recorded so far are kept in {out})") from None
    finally:
        added = ingest(exp, store, directory)
        summary.played += added
        facts = store.facts(len(exp.plays))
        summary.hands += sum(len(f.hands) for p in left if p in facts for f in facts[p])
