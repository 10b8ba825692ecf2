"""Playing an experiment: a study of the one run (:mod:`capicua.arena.study`).

Its plan is every game of every pair as a match with its arm's rules and its seats' bots
(:func:`plan`): pair ``i`` is dealt from ``deal_seed(seed, i)`` (the arena's seed
derivation) and each arm plays one match from it (one hand long with ``unit = "hand"``),
then each skill game, with the same deals, bots and seating in every arm; a pair is a
duplicate set of the results store, its games the set's rotations. No stopping rule: the
run ends when every pair is played.

When every bot is a built-in one the matches are played by the in-process backend (fresh
bots seeded per seat by :func:`~capicua.arena.schedule.bot_seed`; seats all ``random`` are
the engine's own random playout, thousands of hands a second), a task of pairs at a time in
``workers`` processes, each task committed whole, facts only. Any other bot makes every
match an arena match on a server (bot processes, crash policy, forfeits), its replay kept;
either way each match's facts are the engine's (over the protocol, from its re-simulation
of the server's replay) and are written once, when the match is committed. A pair in which
an arm did not end by the rules (a forfeit, a cancellation) is kept but not counted.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from capicua.engine.game import Game, MatchState

from ..backend import LOCAL, Backend
from ..config import Tournament
from ..inprocess import LocalPlay
from ..local import play_spec
from ..output import Display
from ..run import run_to_end
from ..schedule import MatchSpec, deal_seed, sets
from ..store import DB_NAME, EXPERIMENT, Results, locked
from ..study import Study
from . import legacy
from .config import Experiment, ExperimentError


@dataclass
class RunSummary:
    """What one run of an experiment did, in pairs."""

    total: int  # pairs in the experiment
    already: int  # recorded before this run
    played: int = 0
    interrupted: bool = False
    seconds: float = 0.0
    hands: int = 0  # hands played in this run, every arm counted


def play_match(
    exp: Experiment, game: Game, seed: int, names: Sequence[str] | None = None
) -> MatchState:
    """One arm's match of the pair dealt from ``seed``, between the experiment's bots (or
    the built-in bots ``names``, one per seat: a skill game), as the in-process backend
    plays it."""
    names = [b.target for b in exp.seats] if names is None else list(names)
    return play_spec(game, seed, [(n, exp.options_for(n)) for n in names], playout=True)


def match_key(play: int, pair: int) -> str:
    """The key of game ``play`` of a pair (:attr:`Experiment.plays`' index: an arm's index
    for the arms' own games, so that the keys of experiments without ``--skill`` stay)."""
    return f"a{play}-p{pair:07d}"


def arena_tournament(exp: Experiment) -> Tournament:
    """The run's view of the experiment: its bots, timing and failure policy."""
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
        # a built-in bot plays with the experiment's options for it, in-process as in its
        # own process (hard at fixed iterations unless [bot_options.hard] says)
        bots=tuple(
            dataclasses.replace(b, options=exp.options_for(b.target))
            if b.kind == "builtin" and exp.options_for(b.target)
            else b
            for b in exp.bots
        ),
        base_dir=exp.base_dir,
    )


def plan(exp: Experiment, pairs: Iterable[int]) -> list[MatchSpec]:
    """One match per game of every pair (:attr:`Experiment.arena_plays`: the arms, then the
    skill games), pair by pair, with its arm's rules and its seats' bots."""
    rules = exp.base.ruleset
    first = [rules.side_seats(side)[0] for side in range(rules.num_sides)]  # a seat per side
    games = [
        (
            k,
            play.seats,
            tuple(play.seats[seat] for seat in first),
            exp.arms[play.arm].preset,
            exp.arms[play.arm].played_overrides(exp.unit),
        )
        for k, play in enumerate(exp.arena_plays)
    ]
    out = []
    for pair in pairs:
        seed = deal_seed(exp.seed, pair)
        for k, seats, sides, preset, overrides in games:
            out.append(
                MatchSpec(
                    key=match_key(k, pair),
                    set_key=f"p{pair:07d}",
                    seq=pair,
                    rotation=k,
                    seed=seed,
                    seats=seats,
                    sides=sides,
                    preset=preset,
                    overrides=overrides,
                )  # fmt: skip
            )
    return out


def study(exp: Experiment) -> Study:
    """The experiment as a study: its pairs' games, to the end; replays kept over the
    protocol only (in-process, thousands of matches a second keep their facts)."""
    return Study(
        EXPERIMENT, exp.name, exp.canonical(), exp.digest(),
        list(sets(plan(exp, range(exp.pairs)))),
        replays=not exp.in_process,
    )  # fmt: skip


def run_experiment(
    exp: Experiment, out: Path, display: Display | None = None, *, backend: Backend = LOCAL
) -> RunSummary:
    """Play every pair of ``exp`` not yet in ``out`` and commit it; resumable at any point
    (on either backend)."""
    games = len(exp.plays)
    with locked(out):
        earlier = _earlier_layout(exp, out, games)
        if earlier is not None:
            return earlier
        before = _pairs(out, games)
        local = None
        if exp.in_process:
            workers = max(1, min(exp.workers, os.cpu_count() or 1, exp.pairs))
            local = LocalPlay(workers, playout=True, sets_per_task=None)
        run = backend.arena(
            arena_tournament(exp), out, display, study=study(exp), in_process=local, lock=False
        )
        summary = run_to_end(run, ExperimentError, "pairs recorded so far")
        after = _pairs(out, games)
    return RunSummary(
        exp.pairs, before, after - before, summary.interrupted, summary.seconds, summary.hands
    )


def _pairs(out: Path, games: int) -> int:
    """The pairs recorded whole in ``out``."""
    if not (out / DB_NAME).is_file():
        return 0
    results = Results.open_existing(out)
    try:
        return results.complete_sets(games)
    finally:
        results.close()


def _earlier_layout(exp: Experiment, out: Path, games: int) -> RunSummary | None:
    """An experiment written before the one results store, in ``out``: its summary when
    there is nothing more to play in it (complete, or a bot was disqualified), else an
    error naming the version that wrote it; None for any other directory."""
    if not legacy.holds(out):
        return None
    try:
        old = legacy.OldResults(out)
    except legacy.StoreError as e:
        raise ExperimentError(str(e)) from None
    try:
        if old.digest != exp.digest():
            raise ExperimentError(
                f"{out} holds a different experiment, written by capicua "
                f"{old.info['capicua_version']}; use another --out"
            )
        done = len(old.done_pairs(games))
        if done < exp.pairs and not old.disqualified():
            raise ExperimentError(legacy.refusal(out, old, done, exp.pairs))
    finally:
        old.close()
    return RunSummary(exp.pairs, done)
