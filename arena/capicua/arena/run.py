"""One run of a tournament into an output directory, wherever its matches are played.

:class:`TournamentRun` does what every backend does alike: it opens the results (or
resumes them), works out what is left of the schedule and what is skipped (a bot
disqualified earlier), turns Ctrl-C and SIGTERM into a clean stop, tells the
:class:`~capicua.arena.recorder.Recorder` and the :class:`~capicua.arena.output.Display`
what happened, and counts it in a :class:`Summary`. Where the matches are played is a
subclass's: :class:`capicua.arena.runner.Arena` on a server it starts or is given,
:class:`capicua.arena.cluster.DaskArena` on a dask cluster. Each provides :meth:`open`
(get ready to play), :meth:`drive` (play) and :meth:`shutdown` (stop what it started).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from capicua.common import interrupt
from capicua.common.errors import CapicuaError
from capicua.common.version import version
from capicua.v1 import replay_pb2

from .config import Tournament
from .errors import ArenaError
from .output import Display, SilentDisplay
from .recorder import Recorder, ResultsRecorder
from .schedule import MatchSpec, remaining, schedule
from .store import SKIPPED, ConfigMismatchError, Results, locked, termination_name


@dataclass
class Summary:
    """What one ``arena run`` did."""

    total: int  # matches in the schedule
    already: int  # finished before this run (resumed)
    played: int = 0  # finished in this run
    abandoned: int = 0  # cut short by an interrupt (played again on resume)
    skipped: int = 0  # not played: a bot in it was disqualified
    interrupted: bool = False
    #: bot name -> why it was disqualified (in this run or an earlier one: a rerun of a
    #: run that disqualified a bot says so again instead of resuming)
    disqualified: dict[str, str] = field(default_factory=dict)

    @property
    def finished(self) -> int:
        """Matches of the schedule finished so far, in this run or before."""
        return self.already + self.played

    @property
    def complete(self) -> bool:
        """Whether every match of the schedule has finished (none skipped, none left)."""
        return not self.interrupted and self.finished >= self.total


class TournamentRun:
    """The bookkeeping of one run; a subclass plays the matches."""

    def __init__(
        self,
        tournament: Tournament,
        out: Path,
        display: Display | None = None,
        *,
        on_progress: Callable[[Results], None] | None = None,
        matches: Sequence[MatchSpec] | None = None,
        lock: bool = True,
        recorder: Recorder | None = None,
    ) -> None:
        """``matches`` replaces the tournament's schedule (an experiment's or an SPRT's
        matches, which may carry their own rules); ``on_progress`` runs after every commit
        and may call :meth:`drain`; ``recorder`` is where the facts go (default: the
        results of ``out``, opened by :meth:`run`)."""
        self.t = tournament
        self.matches = list(matches) if matches is not None else None
        self.lock = lock
        self.out = out.resolve()
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
        """Play what is left of the schedule (holding the directory's lock, unless the
        caller holds it). Ctrl-C and SIGTERM are taken from the start (a signal while the
        results open or the server starts stops the run as cleanly as one during play);
        the summary says whether one came."""
        with interrupt.signals(self._on_signal):
            if not self.lock:
                return await self._run()
            with locked(self.out):
                return await self._run()

    async def _run(self) -> Summary:
        try:
            results = self.results = Results(self.out)
        except CapicuaError as e:
            raise ArenaError(str(e)) from None
        except Exception as e:
            raise ArenaError(f"--out {self.out}: cannot open the results: {e}") from None
        if self.recorder is None:
            self.recorder = ResultsRecorder(results)
        fresh = False
        try:
            try:
                fresh = results.bind(self.t.name, self.t.canonical(), self.t.digest(), version())
            except ConfigMismatchError as e:
                raise ArenaError(str(e)) from None
            for b in self.t.bots:
                results.add_bot(b.name, b.label)  # shown by the standings and report
            everything = schedule(self.t) if self.matches is None else self.matches
            todo = remaining(everything, results.finished_keys())
            self.summary = Summary(
                len(everything),
                len(everything) - len(todo),
                interrupted=self.summary.interrupted,  # a signal while the results opened
                disqualified=results.disqualified(),
            )
            disqualified = set(self.summary.disqualified)
            playable = [m for m in todo if not m.bots & disqualified]
            self.summary.skipped = len(todo) - len(playable)
            todo = playable
            self.display.begin(len(everything), self.summary.already, self.summary.skipped)
            if todo and not self.stop.is_set():
                await self._play(todo, disqualified)
            if self.fatal is not None:
                raise self.fatal
            return self.summary
        finally:
            await self.shutdown()
            played = bool(results.finished_keys())
            results.close()
            if fresh and not played:
                # Nothing was played: do not tie the directory to this configuration (a
                # corrected tournament file may use it).
                results.discard()

    async def _play(self, todo: list[MatchSpec], disqualified: set[str]) -> None:
        needed = {name for m in todo for name in m.bots} - disqualified
        if await self.open(needed, disqualified) and not self.stop.is_set():
            await self.drive(todo)

    # -- where the matches are played: the subclass's -------------------------------------

    async def open(self, needed: set[str], disqualified: set[str]) -> bool:
        """Get ready to play matches of the ``needed`` bots; False if interrupted."""
        raise NotImplementedError

    async def drive(self, todo: list[MatchSpec]) -> None:
        """Play ``todo`` until done, drained, or stopped."""
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

    def _committed(self, spec: MatchSpec, replay: replay_pb2.Replay) -> None:
        """A match is in the results: count it, show it, tell the caller."""
        out = replay.outcome
        self._last_commit = time.monotonic()
        self.summary.played += 1
        self.display.match_finished(
            spec, termination_name(out.termination), out.reason, result_text(spec, replay)
        )
        if self.on_progress is not None and self.results is not None:
            self.on_progress(self.results)


def result_text(spec: MatchSpec, replay: replay_pb2.Replay) -> str:
    """A finished match's score line: ``1-0``/``0-1``/``½-½`` between two sides, else
    ``NAME wins`` or ``no winner``."""
    out = replay.outcome
    winner = out.winner if out.HasField("winner") else None
    if len(spec.sides) == 2:
        return "½-½" if winner is None else ("1-0" if winner == 0 else "0-1")
    return f"{spec.sides[winner]} wins" if winner is not None else "no winner"
