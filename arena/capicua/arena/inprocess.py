"""The in-process backend: a study's matches played by the engine and the built-in bots in
this process (one worker) or in worker processes (a process pool here, or a dask cluster's
workers), no server involved. It is a backend of the one run
(:class:`~capicua.arena.run.TournamentRun`) like the server and dask ones: the same plan,
resume, stopping rule, recorder and display.

The unit handed to a worker is a task of whole duplicate sets (an experiment's pairs); it
returns each match's facts (and its replay, when the study keeps them), and every task's
matches are committed in one transaction, so that thousands of short matches a second are
not thousands of transactions. A run cut by Ctrl-C loses at most the tasks in flight.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from capicua.common.lifetime import die_with_creator
from capicua.engine.game import Game
from capicua.v1 import replay_pb2

from .config import Tournament
from .errors import ArenaError
from .facts import MatchFacts, match_facts
from .local import Player, builtin_options, play_spec, scheduled_replay
from .output import Display
from .recorder import Finished
from .run import TournamentRun
from .schedule import MatchSpec
from .store import Where, now

#: Sets in one task at most (an experiment's chunk of pairs).
MAX_SETS = 500
#: Playing in this process, the loop takes signals at least this often (seconds).
BREATHE_S = 0.05

#: ``pool(workers)``: where tasks run (:meth:`capicua.arena.backend.Backend.pool`).
Pool = Callable[[int], contextlib.AbstractContextManager[tuple[Executor | None, int]]]


@dataclass(frozen=True)
class LocalPlay:
    """How a study's matches are played in-process."""

    workers: int = 1  # processes (1: this one)
    #: bot name -> its factory options, over the tournament's (``hard`` plays a fixed
    #: number of iterations unless they say otherwise: capicua.arena.local.HARD_DEFAULTS)
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: seats all ``random`` play the engine's own random playout (an experiment)
    playout: bool = False
    #: duplicate sets per task (None: about 20 tasks per worker, at most MAX_SETS sets)
    sets_per_task: int | None = 1


class Played(NamedTuple):
    """One match a task played: what its commit needs, small to send back."""

    facts: MatchFacts
    replay: bytes | None  # capicua.v1.Replay, serialized (None: not kept)
    seconds: float


#: Per process: the games of the rules a task met (building one parses its ruleset).
_GAMES: dict[tuple[str, tuple[str, ...]], Game] = {}


class MatchTask:
    """Plays a list of matches in a worker (picklable: sent with every task)."""

    def __init__(
        self, tournament: Tournament, players: Mapping[str, Player], *, replays: bool,
        playout: bool,
    ) -> None:  # fmt: skip
        self.rules = (tournament.preset, tuple(tournament.overrides))
        self.tag = tournament.name
        self.players = dict(players)
        self.replays = replays
        self.playout = playout

    def __call__(self, specs: Sequence[MatchSpec]) -> list[Played]:
        return [self._play(spec) for spec in specs]

    def _play(self, spec: MatchSpec) -> Played:
        rules = (spec.preset, spec.overrides) if spec.preset else self.rules
        game = _GAMES.get(rules)
        if game is None:
            game = _GAMES[rules] = Game.from_preset(*rules)
        start = time.perf_counter()
        players = [self.players[name] for name in spec.seats]
        state = play_spec(game, spec.seed, players, playout=self.playout)
        replay = (
            scheduled_replay(state, spec, self.tag).SerializeToString() if self.replays else None
        )
        return Played(match_facts(state), replay, time.perf_counter() - start)


def _worker_init() -> None:
    """Workers leave Ctrl-C to the parent, which stops cleanly and keeps what is done, and
    die with it if it is killed (no orphan keeps playing)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_creator()  # race-free even if the parent died before this call


def _local_pool(workers: int) -> contextlib.AbstractContextManager[tuple[Executor | None, int]]:
    return contextlib.nullcontext((None, workers))


class InProcessArena(TournamentRun):
    """A study's matches played in-process by its built-in bots (see the module)."""

    def __init__(
        self,
        tournament: Tournament,
        out: Where,
        display: Display | None = None,
        *,
        play: LocalPlay = LocalPlay(),
        pool: Pool = _local_pool,
        **run: Any,
    ) -> None:
        """``play``: how the matches are played; ``pool``: where (the other arguments are
        :class:`~capicua.arena.run.TournamentRun`'s)."""
        super().__init__(tournament, out, display, **run)
        self.play = play
        self.pool = pool
        self._stack = contextlib.ExitStack()
        # the pool is entered and left on this one thread: a dask client's context
        # variables must be reset where they were set (and off this loop: it blocks)
        self._keeper = ThreadPoolExecutor(1, thread_name_prefix="capicua-pool")
        self._executor: Executor | None = None
        self._slots = 1
        self._breathed = 0.0

    async def open(self, needed: set[str], disqualified: set[str]) -> bool:
        """Every bot must be a built-in one; the workers start (a dask cluster on the
        keeper's thread: its client is not one of this loop's)."""
        for name in sorted(needed):
            bot = self.t.bot(name)
            if bot.kind != "builtin":
                raise ArenaError(f"bots.{name}: only builtin: bots can play in-process")
        loop = asyncio.get_running_loop()
        executor, slots = await loop.run_in_executor(
            self._keeper, self._stack.enter_context, self.pool(self.play.workers)
        )
        if executor is None and slots > 1:
            executor = ProcessPoolExecutor(max_workers=slots, initializer=_worker_init)
            self._stack.callback(executor.shutdown, wait=True, cancel_futures=True)
        self._executor, self._slots = executor, max(1, slots)
        return True

    async def shutdown(self) -> None:
        """The workers stop (a pool waits for the tasks it runs: they are not kept)."""
        try:
            await asyncio.get_running_loop().run_in_executor(self._keeper, self._stack.close)
        finally:
            self._keeper.shutdown()
            await super().shutdown()

    def _task(self) -> MatchTask:
        players: dict[str, Player] = {}
        for bot in self.t.bots:
            options = {**bot.options, **self.play.options.get(bot.name, {})}
            players[bot.name] = (bot.target, builtin_options(bot.target, options))
        return MatchTask(self.t, players, replays=self.study.replays, playout=self.play.playout)

    async def drive(self, todo: Iterator[list[MatchSpec]]) -> None:
        """Play ``todo`` task by task; each task's matches are committed together."""
        tasks = self._tasks(todo)
        self._first_create = time.monotonic()
        if self._executor is None:
            await self._inline(self._task(), tasks)
        else:
            await self._pooled(self._task(), tasks, self._executor)

    def _tasks(self, todo: Iterator[list[MatchSpec]]) -> Iterator[list[list[MatchSpec]]]:
        """``todo`` in tasks of whole sets, as many sets each as the study plays at once."""
        first = next(todo, None)
        if first is None:
            return
        size = self.play.sets_per_task or self._sets_per_task(len(first))
        task: list[list[MatchSpec]] = []
        for unit in itertools.chain([first], todo):
            task.append(unit)
            if len(task) == size:
                yield task
                task = []
        if task:
            yield task

    def _sets_per_task(self, per_set: int) -> int:
        """About 20 tasks per worker (so that the workers stay busy to the end and a Ctrl-C
        loses little), at most :data:`MAX_SETS` sets each, from the sets left (the plan's
        matches left, ``per_set`` a set)."""
        s = self.summary
        sets_left = max(1, ((s.total or 0) - s.finished - s.skipped) // per_set)
        return max(1, min(MAX_SETS, sets_left // (self._slots * 20) or 1))

    async def _inline(self, task: MatchTask, tasks: Iterator[list[list[MatchSpec]]]) -> None:
        """One worker: this process plays, set by set, and lets the loop take a signal
        every :data:`BREATHE_S` (the task in progress is lost when one comes)."""
        for units in tasks:
            if self.stop.is_set() or self.draining:
                return
            played: list[Played] = []
            for unit in units:
                played += task(unit)
                await self._breathe()
                if self.stop.is_set():
                    return
            self._commit(self._finished(_matches(units), played))

    async def _breathe(self) -> None:
        if time.monotonic() - self._breathed >= BREATHE_S:
            await asyncio.sleep(0)
            self._breathed = time.monotonic()

    async def _pooled(
        self, task: MatchTask, tasks: Iterator[list[list[MatchSpec]]], executor: Executor
    ) -> None:
        """Twice as many tasks in flight as the workers run at once, results committed in
        the order they finish; after a drain those in flight finish and are kept, after a
        signal they are dropped."""
        running: dict[asyncio.Future[list[Played]], list[MatchSpec]] = {}
        stopper = asyncio.ensure_future(self.stop.wait())

        def fill() -> None:
            while len(running) < 2 * self._slots and not self.draining:
                units = next(tasks, None)
                if units is None:
                    return
                specs = _matches(units)
                future: Future[list[Played]] = executor.submit(task, specs)
                running[asyncio.wrap_future(future)] = specs

        try:
            fill()
            while running:
                waits: set[asyncio.Future[Any]] = {stopper, *running}
                done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if stopper in done:
                    return
                for future in done:
                    specs = running.pop(future)
                    self._commit(self._finished(specs, future.result()))
                fill()
        finally:
            stopper.cancel()
            for future in running:
                future.cancel()

    def _finished(self, specs: Sequence[MatchSpec], played: Sequence[Played]) -> list[Finished]:
        """A task's matches as the recorder takes them (a task plays its specs in order)."""
        started = now()
        return [
            Finished(
                spec,
                p.facts,
                None if p.replay is None else replay_pb2.Replay.FromString(p.replay),
                None,
                started,
                p.seconds,
            )  # fmt: skip
            for spec, p in zip(specs, played, strict=True)
        ]


def _matches(units: list[list[MatchSpec]]) -> list[MatchSpec]:
    """The matches of a task's sets, in order."""
    return [spec for unit in units for spec in unit]
