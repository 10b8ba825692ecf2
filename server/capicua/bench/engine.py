"""What ``capicua bench engine`` measures: random play through the real engine.

One *repetition* of one preset plays whole matches, each with
:meth:`~capicua.engine.game.MatchState.random_playout` (the same ``_run`` loop that
``apply`` uses), until about ``seconds`` of timed play. Only ``new_match`` plus the playout
is timed (the clock is read around each match); counting hands and moves happens between
matches, outside the timed sections, from the raw hand logs. The report gives, per preset,
the median over the repetitions of hands per second and of moves per hand.

*Moves* are plays plus passes: the turns taken at the table, which is also what the PyPI
``dominoes`` package records in ``Game.moves``. Draws, deferrals and redeal answers are not
moves (a seat that draws and then plays or passes takes one turn).

Seeds are deterministic: repetition ``r`` (from 0) has the base seed ``B = r * 1_000_000``;
its match ``i`` is dealt from seed ``B + i`` and every decision of the repetition is drawn
from one ``random.Random(B)`` created before the clock starts, as
``legal[int(rng.random() * len(legal))]``. Matches run with ``auto_forced=False``, so a
decision with a single legal option draws a number too, exactly like the loop we run
against ``dominoes``.

With ``compare``, each repetition also measures capicua's ``block`` preset and the
``dominoes`` package on the same work (4 seats in teams, double-six, 7 tiles each, nothing
left to draw, uniform random legal moves), one right after the other, so machine load
affects both alike. ``dominoes`` deals with the global :mod:`random` module, which is
seeded with ``B`` for the repetition and restored afterwards.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from capicua.bench.common import BenchError, machine_info, python_info
from capicua.engine.game import EV_PASS, EV_PLAY, Game, MatchState
from capicua.engine.rules import load_preset, preset_names

DEFAULT_SECONDS = 0.4
DEFAULT_REPEAT = 5
SEED_STRIDE = 1_000_000
COMPARE_PRESET = "block"
COMPARE_PACKAGE = "dominoes"

# Called before each measurement with (repetition, what is measured next).
Progress = Callable[[int, str], None]


@dataclass(frozen=True)
class Sample:
    """One repetition of one measurement: totals over the matches (or games) played."""

    hands: int
    moves: int
    seconds: float  # timed play only

    @property
    def hands_per_s(self) -> float:
        return self.hands / self.seconds

    @property
    def moves_per_hand(self) -> float:
        return self.moves / self.hands


@dataclass
class Series:
    """Every repetition of one measurement."""

    samples: list[Sample] = field(default_factory=list)

    @property
    def hands_per_s(self) -> float:
        return statistics.median(s.hands_per_s for s in self.samples)

    @property
    def moves_per_hand(self) -> float:
        return statistics.median(s.moves_per_hand for s in self.samples)

    @property
    def hands(self) -> int:
        return sum(s.hands for s in self.samples)


def base_seed(repetition: int) -> int:
    return repetition * SEED_STRIDE


def _count_moves(state: MatchState) -> tuple[int, int]:
    """(finished hands, their moves) of a match; only the last hand can be unfinished."""
    hands = len(state.log.results())
    moves = 0
    for log in state.log.hands[:hands]:
        for event in log.events:
            if event[0] == EV_PLAY or event[0] == EV_PASS:
                moves += 1
    return hands, moves


def measure_capicua(game: Game, seconds: float, seed: int) -> Sample:
    """Play random matches of ``game`` for about ``seconds`` of timed play (at least one)."""
    rng = random.Random(seed)
    new_match = game.new_match
    clock = time.perf_counter
    elapsed = 0.0
    hands = moves = 0
    i = 0
    while elapsed < seconds:
        t0 = clock()
        state = new_match(seed + i, auto_forced=False)
        state.random_playout(rng)
        elapsed += clock() - t0
        i += 1
        h, m = _count_moves(state)
        hands += h
        moves += m
    return Sample(hands, moves, elapsed)


def _import_dominoes() -> Any:
    try:
        import dominoes
    except ImportError:
        raise BenchError(
            "--compare needs the PyPI 'dominoes' package: pip install 'capicua[bench]'"
        ) from None
    return dominoes


def dominoes_version() -> str:
    """The installed ``dominoes`` version; :class:`BenchError` when it is missing."""
    _import_dominoes()
    try:
        return metadata.version(COMPARE_PACKAGE)
    except metadata.PackageNotFoundError:  # importable but not installed as a distribution
        return "unknown"


def measure_dominoes(seconds: float, seed: int) -> Sample:
    """Play random one-hand ``dominoes`` games for about ``seconds`` of timed play."""
    dominoes = _import_dominoes()
    new_game = dominoes.Game.new
    saved = random.getstate()
    random.seed(seed)  # dominoes shuffles with the global generator
    try:
        r = random.Random(seed).random
        clock = time.perf_counter
        elapsed = 0.0
        hands = moves = 0
        while elapsed < seconds:
            t0 = clock()
            game = new_game()
            while game.result is None:
                options = game.valid_moves
                game.make_move(*options[int(r() * len(options))])
            elapsed += clock() - t0
            hands += 1
            moves += len(game.moves)  # plays and passes (None)
    finally:
        random.setstate(saved)
    return Sample(hands, moves, elapsed)


@dataclass
class Report:
    seconds: float
    repeat: int
    presets: dict[str, Series]
    compare: tuple[str, Series, Series] | None = None  # (dominoes version, capicua, dominoes)
    wall_seconds: float = 0.0

    @property
    def ratio(self) -> float | None:
        if self.compare is None:
            return None
        _, ours, theirs = self.compare
        return ours.hands_per_s / theirs.hands_per_s

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "presets": {
                name: {
                    "hands_per_s": round(s.hands_per_s, 1),
                    "moves_per_hand": round(s.moves_per_hand, 2),
                }
                for name, s in self.presets.items()
            },
        }
        if self.compare is not None:
            version, ours, theirs = self.compare
            assert self.ratio is not None
            out["compare"] = {
                "package": COMPARE_PACKAGE,
                "version": version,
                "preset": COMPARE_PRESET,
                "capicua_hands_per_s": round(ours.hands_per_s, 1),
                "dominoes_hands_per_s": round(theirs.hands_per_s, 1),
                "ratio": round(self.ratio, 2),
                "capicua_moves_per_hand": round(ours.moves_per_hand, 2),
                "dominoes_moves_per_hand": round(theirs.moves_per_hand, 2),
                "repeats": self.repeat,
            }
        out["seconds"] = self.seconds
        out["repeat"] = self.repeat
        out["wall_s"] = round(self.wall_seconds, 1)
        out["python"] = python_info()
        out["machine"] = machine_info()
        return out


def parse_presets(text: str | None) -> list[str]:
    """``"a,b"`` as preset names (all presets for None); unknown names raise ``RulesError``."""
    if text is None:
        return preset_names()
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise BenchError("--presets: give at least one preset name")
    for name in names:
        load_preset(name)  # UnknownPresetError lists the known ones
    return list(dict.fromkeys(names))


def run_engine_bench(
    presets: Sequence[str],
    *,
    seconds: float = DEFAULT_SECONDS,
    repeat: int = DEFAULT_REPEAT,
    compare: bool = False,
    progress: Progress | None = None,
) -> Report:
    """Measure every preset ``repeat`` times, repetition by repetition (all presets, then
    the capicua/dominoes pair, then the next repetition), and return the medians."""
    if seconds <= 0 or repeat < 1:
        raise ValueError("seconds must be > 0 and repeat >= 1")
    start = time.perf_counter()
    version = dominoes_version() if compare else ""
    games = {name: Game(load_preset(name)) for name in presets}
    series = {name: Series() for name in presets}
    ours = Series()
    theirs = Series()
    block = Game(load_preset(COMPARE_PRESET)) if compare else None
    for r in range(repeat):
        seed = base_seed(r)
        for name, game in games.items():
            if progress:
                progress(r, name)
            series[name].samples.append(measure_capicua(game, seconds, seed))
        if block is not None:
            if progress:
                progress(r, f"compare: capicua {COMPARE_PRESET}")
            ours.samples.append(measure_capicua(block, seconds, seed))
            if progress:
                progress(r, f"compare: {COMPARE_PACKAGE}")
            theirs.samples.append(measure_dominoes(seconds, seed))
    report = Report(seconds, repeat, series, (version, ours, theirs) if compare else None)
    report.wall_seconds = time.perf_counter() - start
    return report


def measurement_count(presets: Sequence[str], repeat: int, compare: bool) -> int:
    """How many measurements :func:`run_engine_bench` makes (for a progress bar)."""
    return repeat * (len(presets) + (2 if compare else 0))


__all__ = [
    "BenchError",
    "Report",
    "Sample",
    "Series",
    "measure_capicua",
    "measure_dominoes",
    "run_engine_bench",
]
