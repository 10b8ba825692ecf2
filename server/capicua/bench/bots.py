"""``capicua bench bots``: duplicate matches between the built-in levels.

Every deal is played twice with the sides swapped (same seed; with 4 seats the seat
assignment is rotated by one, so the teams swap seats), which cancels most of the luck of
the deal. Each game plays the first ``hands_per_match`` hands of a real match (the bots see
the real ruleset, scores and target), then stops. For each pair of levels it reports:

* ``hand_win_rate``: the stronger bot's share of the *decided* hands (no-winner blocks
  left out), with a 95% Wilson interval;
* ``points_margin``: the stronger bot's hand points minus the other's, per hand, with a 95%
  normal interval over the duplicate pairs' means (the two games of a pair are correlated,
  so the pair is the unit).

A pair stops early once its win-rate interval is clear of 50% after ``min_hands`` hands.
Games run in a process pool (``workers``). See docs/bots.md.
"""

from __future__ import annotations

import math
import os
import platform
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from capicua.bench.ceiling import CeilingBot
from capicua.bench.common import BenchError
from capicua.bots import LEVELS, make_bot
from capicua.bots.base import Bot
from capicua.bots.local import play_local
from capicua.common.errors import unknown_name
from capicua.engine.actions import Action
from capicua.engine.game import Game, MatchState
from capicua.engine.observation import Observation
from capicua.engine.records import HandResult
from capicua.engine.rules import load_preset

MATCHUPS: tuple[tuple[str, str], ...] = (
    ("hard", "medium"),
    ("medium", "easy"),
    ("easy", "random"),
    ("hard", "random"),
)
PRESETS: tuple[str, ...] = ("iq-1v1", "block")
#: Players only the benchmark has: they see every hand (never a seat of a real match).
SEEING: dict[str, Callable[[int], CeilingBot]] = {CeilingBot.name: CeilingBot}
#: The players that think per move (a pair without them is a "fast" pair).
SLOW: frozenset[str] = frozenset({"hard", *SEEING})
DEFAULT_HANDS = 1000  # per pair with hard, at most
DEFAULT_MIN_HANDS = 300  # before a pair may stop early
DEFAULT_MAX_SECONDS = 450.0  # wall time after which no new game starts
DEFAULT_HANDS_PER_MATCH = 2
DEFAULT_BUDGET_MS = 100.0
DEFAULT_WORKERS = 2
FAST_BATCH = 8  # duplicate pairs per task for pairs without hard
FAST_FACTOR = 10  # pairs without hard (a thousand times cheaper) may play this many times more
Z95 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class PairSpec:
    """One comparison: bot ``a`` (the stronger) against bot ``b`` on ``preset``."""

    preset: str
    a: str
    b: str

    @property
    def label(self) -> str:
        return f"{self.a} vs {self.b} on {self.preset}"


@dataclass(frozen=True, slots=True)
class HandScore:
    """One hand from ``a``'s point of view: 1 won, 0 lost, None no winner; points margin."""

    a_won: int | None
    margin: int


@dataclass(slots=True)
class Timing:
    """What one duplicate pair cost: its seconds, and each bot's decisions and the time
    they took (in ``choose``, the engine's moves left out)."""

    seconds: float = 0.0
    decisions: list[int] = field(default_factory=lambda: [0, 0])  # a, b
    thinking: list[float] = field(default_factory=lambda: [0.0, 0.0])  # a, b

    def add(self, other: Timing) -> None:
        self.seconds += other.seconds
        for i in (0, 1):
            self.decisions[i] += other.decisions[i]
            self.thinking[i] += other.thinking[i]

    def per_second(self, i: int) -> float:
        """Bot ``i``'s (0: a, 1: b) decisions per second of its own thinking."""
        return self.decisions[i] / self.thinking[i] if self.thinking[i] > 0 else 0.0


class _Clocked:
    """A bot whose decisions are counted and timed, for the report: how fast each level
    decides at the benchmark's budget (``hard`` at fixed iterations: its search's speed)."""

    def __init__(self, bot: Bot) -> None:
        self.bot = bot
        self.name = bot.name
        self.decisions = 0
        self.seconds = 0.0

    def choose(self, observation: Observation, legal: Sequence[Action]) -> Action:
        start = time.perf_counter()
        try:
            return self.bot.choose(observation, legal)
        finally:
            self.seconds += time.perf_counter() - start
            self.decisions += 1


@dataclass(slots=True)
class PairStats:
    """Everything measured for one :class:`PairSpec`."""

    spec: PairSpec
    hands: int = 0
    decided: int = 0
    wins: int = 0
    pair_means: list[float] = field(default_factory=list)
    margin_total: int = 0
    timing: Timing = field(default_factory=Timing)
    stopped_early: bool = False
    time_limited: bool = False  # the run's time limit ended it

    @property
    def seconds(self) -> float:
        return self.timing.seconds

    def add(self, scores: Sequence[HandScore], timing: Timing) -> None:
        self.timing.add(timing)
        if not scores:
            return
        self.hands += len(scores)
        for s in scores:
            if s.a_won is not None:
                self.decided += 1
                self.wins += s.a_won
            self.margin_total += s.margin
        self.pair_means.append(sum(s.margin for s in scores) / len(scores))

    @property
    def win_rate(self) -> float:
        return self.wins / self.decided if self.decided else 0.5

    @property
    def ci95(self) -> tuple[float, float]:
        return wilson(self.wins, self.decided)

    @property
    def points_margin(self) -> float:
        return self.margin_total / self.hands if self.hands else 0.0

    @property
    def margin_ci95(self) -> tuple[float, float]:
        return normal_interval(self.pair_means)

    def clear_of_half(self) -> bool:
        lo, hi = self.ci95
        return self.decided > 0 and (lo > 0.5 or hi < 0.5)

    def to_json(self) -> dict[str, Any]:
        lo, hi = self.ci95
        mlo, mhi = self.margin_ci95
        return {
            "preset": self.spec.preset,
            "a": self.spec.a,
            "b": self.spec.b,
            "hands": self.hands,
            "decided": self.decided,
            "hand_win_rate": round(self.win_rate, 4),
            "ci95": [round(lo, 4), round(hi, 4)],
            "points_margin": round(self.points_margin, 3),
            "points_margin_ci95": [round(mlo, 3), round(mhi, 3)],
            "pairs": len(self.pair_means),
            "stopped_early": self.stopped_early,
            "time_limited": self.time_limited,
            "seconds": round(self.seconds, 1),
            "a_decisions": self.timing.decisions[0],
            "a_decisions_per_s": round(self.timing.per_second(0), 1),
            "b_decisions": self.timing.decisions[1],
            "b_decisions_per_s": round(self.timing.per_second(1), 1),
        }


def wilson(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (``(0, 1)`` for no trials)."""
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (max(0.0, centre - half), min(1.0, centre + half))


def normal_interval(values: Sequence[float], z: float = Z95) -> tuple[float, float]:
    """Mean ± z standard errors (the mean itself for fewer than two values)."""
    n = len(values)
    if n == 0:
        return (0.0, 0.0)
    mean = sum(values) / n
    if n < 2:
        return (mean, mean)
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    half = z * math.sqrt(var / n)
    return (mean - half, mean + half)


# -- playing ------------------------------------------------------------------------------


def bot_options(name: str, budget_ms: float, iterations: int | None) -> dict[str, Any]:
    """Factory options for a level in the benchmark (only ``hard`` takes any)."""
    if name.split(":")[0] != "hard":
        return {}
    opts: dict[str, Any] = {"budget_ms": budget_ms if iterations is None else None}
    if iterations is not None:
        opts["iterations"] = iterations
    # "hard:key=value,key=value" variants, for experiments
    _, _, extra = name.partition(":")
    for item in filter(None, extra.split(",")):
        key, _, value = item.partition("=")
        opts[key] = _literal(value)
    return opts


def _literal(text: str) -> Any:
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return {"none": None, "true": True, "false": False}.get(text.lower(), text)


def make_level(name: str, seed: int, budget_ms: float, iterations: int | None) -> Bot:
    seeing = SEEING.get(name)
    if seeing is not None:
        return seeing(seed)
    return make_bot(name.split(":")[0], seed, **bot_options(name, budget_ms, iterations))


def play_hands(game: Game, seed: int, bots: Sequence[Bot], hands: int) -> list[HandResult]:
    """Play the first ``hands`` hands of match ``seed`` (fewer if it ends first); each
    seat's bot sees only its observation, but a :data:`SEEING` one watches the match."""
    inner = [b.bot if isinstance(b, _Clocked) else b for b in bots]
    watchers = [b for b in inner if isinstance(b, CeilingBot)]

    def show(state: MatchState) -> None:
        for bot in watchers:
            bot.watch(state)

    state = play_local(game, seed, bots, hands=hands, on_progress=show if watchers else None)
    return state.log.results()[:hands]


def play_duplicate(
    spec: PairSpec,
    seed: int,
    *,
    hands_per_match: int = DEFAULT_HANDS_PER_MATCH,
    budget_ms: float = DEFAULT_BUDGET_MS,
    iterations: int | None = None,
) -> tuple[list[HandScore], Timing]:
    """Both games of one duplicate pair; the scores from ``a``'s side, and what they cost."""
    start = time.perf_counter()
    timing = Timing()
    ruleset = load_preset(spec.preset)
    game = Game(ruleset)
    seats = ruleset.seats
    out: list[HandScore] = []
    for shift in (0, 1):
        names = [spec.a if (s + shift) % 2 == 0 else spec.b for s in range(seats)]
        if seats % 2:
            raise BenchError(f"{spec.preset}: duplicate needs an even number of seats")
        bots = [
            _Clocked(make_level(n, seed * 1000 + s, budget_ms, iterations))
            for s, n in enumerate(names)
        ]
        a_seats = {s for s in range(seats) if (s + shift) % 2 == 0}
        a_sides = {ruleset.side_of(s) for s in a_seats}
        for res in play_hands(game, seed, bots, hands_per_match):
            if res.winner is None:
                out.append(HandScore(None, 0))
            elif res.winner in a_sides:
                out.append(HandScore(1, res.points))
            else:
                out.append(HandScore(0, -res.points))
        for s, bot in enumerate(bots):
            i = 0 if s in a_seats else 1
            timing.decisions[i] += bot.decisions
            timing.thinking[i] += bot.seconds
    timing.seconds = time.perf_counter() - start
    return out, timing


def _task(
    spec: PairSpec,
    seeds: Sequence[int],
    hands_per_match: int,
    budget_ms: float,
    iterations: int | None,
) -> list[tuple[list[HandScore], Timing]]:
    return [
        play_duplicate(
            spec, seed, hands_per_match=hands_per_match, budget_ms=budget_ms, iterations=iterations
        )
        for seed in seeds
    ]


# -- running a whole benchmark ------------------------------------------------------------


@dataclass(slots=True)
class Report:
    pairs: list[PairStats]
    max_seconds: float | None
    budget_ms: float
    iterations: int | None
    hands_per_match: int
    workers: int
    wall_seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "pairs": [p.to_json() for p in self.pairs],
            "budget_ms": self.budget_ms,
            "iterations": self.iterations,
            "hands_per_match": self.hands_per_match,
            "workers": self.workers,
            "max_seconds": self.max_seconds,
            "seconds": round(self.wall_seconds, 1),
            "python": platform.python_version(),
            "nproc": os.cpu_count() or 1,
        }


def run_bots_bench(
    specs: Sequence[PairSpec],
    *,
    hands: int = DEFAULT_HANDS,
    min_hands: int = DEFAULT_MIN_HANDS,
    budget_ms: float = DEFAULT_BUDGET_MS,
    iterations: int | None = None,
    hands_per_match: int = DEFAULT_HANDS_PER_MATCH,
    workers: int = DEFAULT_WORKERS,
    first_seed: int = 0,
    max_seconds: float | None = None,
    progress: Callable[[PairStats], None] | None = None,
) -> Report:
    """Play duplicate pairs for every spec until ``hands`` hands (pairs without ``hard``:
    :data:`FAST_FACTOR` times as many), an early stop, or ``max_seconds`` of wall time
    (no new games start after it; the ones running finish)."""
    if hands < 1 or hands_per_match < 1 or workers < 1:
        raise BenchError("hands, hands per match and workers must be at least 1")
    for spec in specs:
        if load_preset(spec.preset).seats % 2:
            raise BenchError(f"{spec.preset}: duplicate needs an even number of seats")
    start = time.perf_counter()
    stats = [PairStats(s) for s in specs]
    per_task = 2 * hands_per_match
    scheduled = [0] * len(specs)  # hands scheduled (upper bound) per spec
    next_seed = [first_seed] * len(specs)

    slow = [any(n.split(":")[0] in SLOW for n in (s.a, s.b)) for s in specs]
    caps = [hands if slow[i] else hands * FAST_FACTOR for i in range(len(specs))]

    def done(i: int) -> bool:
        st = stats[i]
        if st.hands >= min_hands and st.clear_of_half():
            st.stopped_early = st.hands < caps[i]
            return True
        return scheduled[i] >= caps[i]

    def pick() -> int | None:
        open_ = [i for i in range(len(specs)) if not done(i)]
        if not open_:
            return None
        if max_seconds is not None and time.perf_counter() - start >= max_seconds:
            for i in open_:
                stats[i].time_limited = True
            return None
        # the fast pairs first (they cost next to nothing), then the fewest hands so far
        return min(open_, key=lambda i: (slow[i], scheduled[i]))

    def claim(i: int) -> list[int]:
        """The seeds of the next task of pair ``i`` (fast pairs: several per task)."""
        room = -(-(caps[i] - scheduled[i]) // per_task)  # tasks' worth of hands left
        count = 1 if slow[i] else max(1, min(FAST_BATCH, room))
        seeds = list(range(next_seed[i], next_seed[i] + count))
        next_seed[i] += count
        scheduled[i] += per_task * count
        return seeds

    if workers == 1:
        while (i := pick()) is not None:
            for scores, cost in _task(specs[i], claim(i), hands_per_match, budget_ms, iterations):
                stats[i].add(scores, cost)
            if progress:
                progress(stats[i])
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            running: dict[Future[list[tuple[list[HandScore], Timing]]], int] = {}

            def feed() -> None:
                while len(running) < 2 * workers and (i := pick()) is not None:
                    fut = pool.submit(
                        _task, specs[i], claim(i), hands_per_match, budget_ms, iterations
                    )
                    running[fut] = i

            feed()
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    i = running.pop(fut)
                    for scores, cost in fut.result():
                        stats[i].add(scores, cost)
                    if progress:
                        progress(stats[i])
                feed()
    for st in stats:
        if st.time_limited and st.clear_of_half() and st.hands >= min_hands:
            st.time_limited = False  # it had finished anyway
    return Report(
        pairs=stats,
        max_seconds=max_seconds,
        budget_ms=budget_ms,
        iterations=iterations,
        hands_per_match=hands_per_match,
        workers=workers,
        wall_seconds=time.perf_counter() - start,
    )


# -- the command line ---------------------------------------------------------------------


def parse_pairs(text: str | None, presets: str | None) -> list[PairSpec]:
    """``--pairs A:B,...`` times ``--presets P,...`` (defaults: every matchup, both
    presets). Names are checked against the built-in bots and presets."""
    from capicua.bots import BUILTIN

    preset_list = [p.strip() for p in (presets or ",".join(PRESETS)).split(",") if p.strip()]
    if not preset_list:
        raise BenchError("--presets: no preset given")
    for p in preset_list:
        load_preset(p)  # raises a clear error for an unknown name
    if text is None:
        matchups = list(MATCHUPS)
    else:
        matchups = []
        for item in filter(None, (x.strip() for x in text.split(","))):
            a, sep, b = item.partition(":")
            if not sep or not a.strip() or not b.strip():
                raise BenchError(f"--pairs: expected A:B, got {item!r}")
            matchups.append((a.strip().lower(), b.strip().lower()))
        if not matchups:
            raise BenchError("--pairs: no pair given")
    for a, b in matchups:
        for name in (a, b):
            if name not in BUILTIN and name not in SEEING:
                known = (*LEVELS, *SEEING)
                raise BenchError(
                    f"--pairs: {unknown_name('bot', name, known, listed_as='benchmark players')}"
                )
    return [PairSpec(p, a, b) for p in preset_list for a, b in matchups]


def run_from_cli(
    *,
    hands: int | None = None,
    min_hands: int | None = None,
    budget_ms: float | None = None,
    iterations: int | None = None,
    workers: int | None = None,
    hands_per_match: int | None = None,
    presets: str | None = None,
    pairs: str | None = None,
    first_seed: int = 0,
    max_minutes: float | None = None,
    progress_to_stderr: bool = False,
) -> Report:
    """``capicua bench bots`` without the printing."""
    specs = parse_pairs(pairs, presets)
    progress = None
    if progress_to_stderr:
        from rich.console import Console

        err = Console(stderr=True, highlight=False)
        if err.is_terminal:

            def progress(st: PairStats) -> None:
                err.print(
                    f"\r{st.spec.label}: {st.hands} hands, "
                    f"{st.win_rate:.1%} of {st.decided} decided".ljust(70),
                    end="",
                    markup=False,
                )

    report = run_bots_bench(
        specs,
        hands=hands or DEFAULT_HANDS,
        min_hands=DEFAULT_MIN_HANDS if min_hands is None else min_hands,
        budget_ms=budget_ms or DEFAULT_BUDGET_MS,
        iterations=iterations,
        hands_per_match=hands_per_match or DEFAULT_HANDS_PER_MATCH,
        workers=workers or DEFAULT_WORKERS,
        first_seed=first_seed,
        max_seconds=DEFAULT_MAX_SECONDS
        if max_minutes is None
        else (max_minutes * 60 if max_minutes > 0 else None),
        progress=progress,
    )
    if progress is not None:
        Console(stderr=True).print("\r" + " " * 70 + "\r", end="")
    return report


def print_report(report: Report) -> None:
    """The human table of a report (rich)."""
    from rich import box
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console = Console(highlight=False, soft_wrap=False, width=max(console.width, 112))
    budget = f"{report.iterations} iterations" if report.iterations else f"{report.budget_ms:g} ms"
    table = Table(
        box=box.SIMPLE_HEAD,
        title=Text(
            f"Duplicate matches, first {report.hands_per_match} hand(s) of each "
            f"(hard: {budget} per move)"
        ),
        title_justify="left",
        pad_edge=False,
        collapse_padding=True,
    )
    for name, justify in (
        ("preset", "left"), ("a vs b", "left"), ("hands", "right"), ("decided", "right"),
        ("a wins", "right"), ("95% CI", "right"), ("margin/hand", "right"),
        ("95% CI ", "right"), ("s", "right"),
    ):  # fmt: skip
        table.add_column(name, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    for p in report.pairs:
        lo, hi = p.ci95
        mlo, mhi = p.margin_ci95
        verdict = "" if p.clear_of_half() and lo > 0.5 else " ?"
        if p.time_limited:
            verdict += " (time)"
        table.add_row(
            Text(p.spec.preset),
            Text(f"{p.spec.a} vs {p.spec.b}"),
            f"{p.hands}",
            f"{p.decided}",
            f"{p.win_rate:.1%}{verdict}",
            f"{lo:.1%}–{hi:.1%}",
            f"{p.points_margin:+.2f}",
            f"{mlo:+.2f}…{mhi:+.2f}",
            f"{p.seconds:.0f}",
        )
    console.print(table)
    console.print(
        f"a wins: a's share of decided hands (no-winner hands left out); '?': the interval "
        f"is not clear above 50%; '(time)': cut by the time limit. {report.workers} workers, "
        f"{report.wall_seconds:.0f} s.",
        markup=False,
    )
