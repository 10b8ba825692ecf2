"""The one run loop of every study, wherever its matches are played.

:class:`TournamentRun` does what every backend does alike, for a tournament, an
experiment and an SPRT (a :class:`~capicua.arena.study.Study`): it opens the results (or
resumes them) and binds them to the study, hands out what is left of the plan (the keys
already recorded and the matches of bots disqualified earlier are skipped), turns Ctrl-C
and SIGTERM into a clean stop, tells the :class:`~capicua.arena.recorder.Recorder` and the
:class:`~capicua.arena.output.Display` what happened, asks the study's stopping rule after
every commit whether to go on, and counts it all in a :class:`Summary`. Where the matches
are played is a subclass's: :class:`capicua.arena.runner.Arena` on a server it starts or
is given, :class:`capicua.arena.cluster.DaskArena` on a dask cluster,
:class:`capicua.arena.inprocess.InProcessArena` on the engine in this process or its
workers. Each provides :meth:`open` (get ready to play), :meth:`drive` (play what it is
handed) and :meth:`shutdown` (stop what it started).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from pathlib import Path

from capicua.common import interrupt
from capicua.common.errors import CapicuaError
from capicua.common.version import version

from .config import Tournament
from .errors import ArenaError, RefusedError
from .facts import MatchFacts
from .output import Display, SilentDisplay
from .recorder import Finished, Recorder, ResultsRecorder
from .schedule import MatchSpec, remaining
from .store import SKIPPED, ConfigMismatchError, OtherResultsError, Results, Where, locked
from .study import OnProgress, Study


@dataclass
class Summary:
    """What one run did."""

    total: int | None  # matches in the plan (None: an endless plan)
    already: int  # finished before this run (resumed)
    played: int = 0  # finished in this run
    abandoned: int = 0  # cut short by an interrupt (played again on resume)
    skipped: int = 0  # not played: a bot in it was disqualified
    interrupted: bool = False
    #: bot name -> why it was disqualified (in this run or an earlier one: a rerun of a
    #: run that disqualified a bot says so again instead of resuming)
    disqualified: dict[str, str] = field(default_factory=dict)
    hands: int = 0  # hands of the matches finished in this run
    seconds: float = 0.0  # from the plan handed out to the end of the run

    @property
    def finished(self) -> int:
        """Matches of the plan finished so far, in this run or before."""
        return self.already + self.played

    @property
    def complete(self) -> bool:
        """Whether every match of the plan has finished (none skipped, none left): never,
        for an endless plan."""
        return self.total is not None and not self.interrupted and self.finished >= self.total


class TournamentRun:
    """The bookkeeping of one run; a subclass plays the matches."""

    def __init__(
        self,
        tournament: Tournament,
        out: Where,
        display: Display | None = None,
        *,
        study: Study | None = None,
        matches: Sequence[MatchSpec] | None = None,
        on_progress: OnProgress | None = None,
        lock: bool = True,
        recorder: Recorder | None = None,
        workdir: Path | None = None,
    ) -> None:
        """``tournament`` gives the bots and how matches are played (time limit, failure
        policy, concurrency, server); ``out`` where the results go (a directory, or a
        ladder's store on PostgreSQL); ``study`` what is played and when the run stops
        (default: the tournament's schedule, to its end; ``matches``: only these of it);
        ``on_progress`` runs after every commit; ``recorder`` is where the facts go
        (default: the results of ``out``, opened by :meth:`run`); ``workdir``: the
        directory of the run's own files (its bots' logs, an embedded server's data),
        ``out`` itself by default (results on PostgreSQL have none: see :attr:`out`)."""
        self.t = tournament
        self._study = study if matches is None else Study.of(tournament, matches)
        self.lock = lock
        self.given = out  # as the caller named it: what its errors say
        self.where: Where = out.resolve() if isinstance(out, Path) else out
        self._workdir = workdir.resolve() if workdir is not None else None
        self.display: Display = display or SilentDisplay()
        self.on_progress = on_progress
        self.results: Results | None = None
        self.recorder = recorder
        self.stop = asyncio.Event()
        self.draining = False  # no new match starts; those in flight finish
        self.fatal: ArenaError | None = None
        self.summary = Summary(0, 0)
        self._first_create: float | None = None  # monotonic: the first match created
        self._last_commit: float | None = None  # and the last one committed

    @property
    def out(self) -> Path:
        """The directory of the run's own files: its bots' logs, an embedded server's data
        (``workdir``, or the results directory); a run over the protocol needs one."""
        if self._workdir is not None:
            return self._workdir
        if isinstance(self.where, Path):
            return self.where
        raise RefusedError(
            f"{self.where}: results in PostgreSQL keep no bot's logs: this run plays "
            "built-in bots only (in this process)"
        )

    @property
    def study(self) -> Study:
        """What is played (made on first use: a dask worker's arena never needs it)."""
        if self._study is None:
            self._study = Study.of(self.t)
        return self._study

    @property
    def play_seconds(self) -> float:
        """Seconds from the first match's creation to the last commit (0 before any)."""
        if self._first_create is None or self._last_commit is None:
            return 0.0
        return self._last_commit - self._first_create

    @property
    def _recorder(self) -> Recorder:
        assert self.recorder is not None, "run() opens the results before anything happens"
        return self.recorder

    # -- lifecycle -----------------------------------------------------------------------

    async def run(self) -> Summary:
        """Play what is left of the plan (holding the directory's lock, unless the caller
        holds it). Ctrl-C and SIGTERM are taken from the start (a signal while the results
        open or the server starts stops the run as cleanly as one during play); the summary
        says whether one came."""
        with interrupt.signals(self._on_signal):
            if not self.lock:
                return await self._run()
            with locked(self.where):
                return await self._run()

    async def _run(self) -> Summary:
        results = self.results = self._open_results()
        if self.recorder is None:
            self.recorder = ResultsRecorder(results)
        fresh = False
        started = time.perf_counter()
        try:
            fresh = self._bind(results)
            started = time.perf_counter()  # what a study's rate counts: play and commits
            disqualified = results.disqualified()
            todo, needed = self._hand_out(results, set(disqualified))
            self.summary.disqualified = disqualified
            s = self.summary
            self.display.begin(s.total or 0, s.already, s.skipped)
            if self.study.stop.update(results):  # decided before this run (a resumed SPRT)
                self.drain()
            first = next(todo, None)
            if first is not None and not self.stop.is_set() and not self.draining:
                try:
                    await self._play(itertools.chain([first], todo), needed, set(disqualified))
                except KeyboardInterrupt:  # raised where the work was: stop as on a signal
                    self._on_signal(0)
            if self.fatal is not None:
                raise self.fatal
            return self.summary
        finally:
            self.summary.seconds = time.perf_counter() - started
            try:
                await self.shutdown()
            finally:  # even if stopping the bots or the server failed: the store is closed
                played = bool(results.finished_keys())
                results.close()
                if fresh and not played:
                    # Nothing was played: do not tie the directory to this study (a
                    # corrected file may use it).
                    results.discard()
                    self.study.stop.discard(self.where)

    def _open_results(self) -> Results:
        try:
            return Results(self.given)
        except CapicuaError as e:
            raise RefusedError(str(e)) from None
        except Exception as e:
            raise RefusedError(f"--out {self.where}: cannot open the results: {e}") from None

    def _bind(self, results: Results) -> bool:
        """Tie the results to the study (True: they are new) and name its bots."""
        s = self.study
        try:
            fresh = results.bind(s.kind, s.name, s.config, s.digest, version())
        except (ConfigMismatchError, OtherResultsError) as e:
            raise RefusedError(str(e)) from None
        s.stop.bind(self.where)
        for b in self.t.bots:
            results.add_bot(b.name, b.label)  # shown by the standings and report
        return fresh

    def _hand_out(
        self, results: Results, disqualified: set[str]
    ) -> tuple[Iterator[list[MatchSpec]], set[str]]:
        """What is left of the plan, set by set, and the bots it needs. A finite plan is
        counted first (the summary's and the display's totals; the bots of its matches
        left); an endless one is handed out as it comes, every bot not disqualified
        standing by."""
        finished = results.finished_keys()
        plan = self.study.plan
        if callable(plan):  # a continuous scheduler: it reads the results as they grow
            plan = plan(results)
        interrupted = self.summary.interrupted  # a signal while the results opened

        def playable(unit: Iterable[MatchSpec]) -> list[MatchSpec]:
            return [m for m in unit if not m.bots & disqualified]

        if not isinstance(plan, Sequence):
            self.summary = Summary(None, 0, interrupted=interrupted)
            endless = (kept for unit in plan if (kept := playable(remaining(unit, finished))))
            return endless, {b.name for b in self.t.bots} - disqualified
        # (a fresh plan with nobody disqualified is handed out as it is: an experiment's
        # plan is thousands of sets)
        todo = [rest for unit in plan if (rest := remaining(unit, finished))] if finished else plan
        units = [kept for unit in todo if (kept := playable(unit))] if disqualified else todo
        total, left = sum(map(len, plan)), sum(map(len, todo))
        self.summary = Summary(
            total, total - left, interrupted=interrupted, skipped=left - sum(map(len, units))
        )
        return iter(units), {name for unit in units for m in unit for name in m.bots}

    async def _play(
        self, todo: Iterator[list[MatchSpec]], needed: set[str], disqualified: set[str]
    ) -> None:
        if await self.open(needed, disqualified) and not self.stop.is_set():
            await self.drive(todo)

    # -- where the matches are played: the subclass's -------------------------------------

    async def open(self, needed: set[str], disqualified: set[str]) -> bool:
        """Get ready to play matches of the ``needed`` bots; False if interrupted."""
        raise NotImplementedError

    async def drive(self, todo: Iterator[list[MatchSpec]]) -> None:
        """Play what ``todo`` hands out, a duplicate set at a time, in order, until it
        ends, the run drains, or it stops (a subclass pulls the next set as it has room
        for it, never sooner: an endless plan picks each set from the results so far)."""
        raise NotImplementedError

    def drain(self) -> None:
        """Start no new match; the run ends once the matches in flight are committed (an
        SPRT that has reached a decision)."""
        self.draining = True

    def _on_signal(self, signum: int) -> None:
        """Ctrl-C or SIGTERM: the run stops (matches in flight are abandoned, not counted)."""
        if not self.stop.is_set():
            self.summary.interrupted = True
            self.display.note("interrupted: stopping (matches in flight are abandoned)")
        self.stop.set()

    def _fail(self, error: ArenaError) -> None:
        if self.fatal is None:
            self.fatal = error
        self.stop.set()

    async def shutdown(self) -> None:
        """The run is over: the display ends (a subclass stops what it started first)."""
        self.display.end()

    # -- what happened: to the recorder, the summary and the display -------------------

    def _disqualified_note(self, bot: str, reason: str) -> None:
        """Record, count and show a disqualification."""
        self._recorder.disqualified(bot, reason)
        self.summary.disqualified[bot] = reason
        self.display.note(f"{bot} is disqualified: {reason}")

    def _skipped(self, spec: MatchSpec) -> None:
        """A match not played because a bot in it is disqualified."""
        self.summary.skipped += 1
        self.display.match_finished(spec, SKIPPED, "a bot is disqualified")

    def _record_failure(self, bot: str, kind: str, detail: str, key: str | None = None) -> None:
        self._recorder.failure(bot, kind, detail, key)
        self.display.note(f"{bot}: {kind}: {detail}")

    def _abandoned(self, key: str, reason: str) -> None:
        self._recorder.abandoned(key, reason)
        self.summary.abandoned += 1

    def _commit(self, batch: Sequence[Finished]) -> None:
        """Record ``batch`` (together, or none of it), then count and show it."""
        self._recorder.matches(batch)
        self._committed(batch)

    def _committed(self, batch: Sequence[Finished]) -> None:
        """Matches are in the results: count them, ask the stopping rule, show them, tell
        the caller."""
        self._last_commit = time.monotonic()
        self.summary.played += len(batch)
        self.summary.hands += sum(len(f.facts.hands) for f in batch)
        if self.results is not None and self.study.stop.update(self.results):
            self.drain()
        for f in batch:
            facts = f.facts
            text = result_text(f.spec, facts)
            self.display.match_finished(f.spec, facts.termination, facts.reason, text)
        if self.on_progress is not None and self.results is not None:
            self.on_progress(self.results)


#: What runs on the run's event loop around it (a web server): entered before the run
#: starts, left once it has ended.
Beside = Callable[[], AbstractAsyncContextManager[object]]


def run_to_end(
    run: TournamentRun,
    error: type[CapicuaError] = ArenaError,
    kept: str = "",
    beside: Beside | None = None,
) -> Summary:
    """Run ``run`` to its end, from synchronous code: on this thread's own event loop, or,
    where one already runs (a notebook, a browser driven by Playwright's sync API), on a
    thread of its own (which takes no signals: only the main thread can). An error is
    raised as the study's ``error``; one that stopped the run once it had begun says what
    is ``kept`` (e.g. "the sets recorded so far"). ``beside``: what shares the run's loop
    (entered before the run, left after it)."""
    try:
        return _run_to_end(run, beside)
    except RefusedError as e:
        raise error(str(e)) from None
    except ArenaError as e:
        raise error(f"{e} ({kept} are kept in {run.given})" if kept else str(e)) from None


async def _with(run: TournamentRun, beside: Beside | None) -> Summary:
    if beside is None:
        return await run.run()
    async with beside():
        return await run.run()


def _run_to_end(run: TournamentRun, beside: Beside | None = None) -> Summary:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_with(run, beside))
    done: list[Summary] = []
    failed: list[BaseException] = []

    def main() -> None:
        try:
            done.append(asyncio.run(_with(run, beside)))
        except BaseException as e:  # handed to the caller's thread
            failed.append(e)

    thread = threading.Thread(target=main, name="capicua-run")
    thread.start()
    thread.join()
    if failed:
        raise failed[0]
    return done[0]


def result_text(spec: MatchSpec, facts: MatchFacts) -> str:
    """A finished match's score line: ``1-0``/``0-1``/``½-½`` between two sides, else
    ``NAME wins`` or ``no winner``."""
    winner = facts.winner
    if len(spec.sides) == 2:
        return "½-½" if winner is None else ("1-0" if winner == 0 else "0-1")
    return f"{spec.sides[winner]} wins" if winner is not None else "no winner"
