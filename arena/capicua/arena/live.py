"""What ``capicua arena run`` shows while it plays: on a terminal a live view (a progress bar
with ETA, the current standings and per-bot error counts, redrawn as matches finish, with
``rich``); off one a line per finished match and the standings every N matches.

The standings shown while playing are a preview (fewer bootstrap samples, so that play
does not wait for them): when the run ends they leave the screen, and the final table,
computed once from the results, is the only one that stays. A match not played because a
bot in it was disqualified is counted as skipped, never as played."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from .schedule import MatchSpec
from .store import COUNTED, SKIPPED, Results


class LiveDisplay:
    """A :class:`capicua.arena.output.Display` on a terminal (stderr by default)."""

    def __init__(
        self,
        title: str,
        standings: Callable[[Results], RenderableType],
        console: Console | None = None,
    ) -> None:
        self.console = console or Console(stderr=True)
        self.standings = standings
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("matches"),
            TextColumn("{task.fields[skipped]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.task = self.progress.add_task(title, total=1, skipped="")
        self.skipped = 0
        self.notes: deque[str] = deque(maxlen=6)
        self.table: RenderableType = Text("")
        self._refreshed = -1e9
        # Off a terminal (a log file, CI), Live can only print its last frame when it
        # stops, and that frame's standings repeat the table printed after it: print the
        # progress line and the notes instead (see end()).
        self.live = Live(
            self._render(),
            console=self.console,
            refresh_per_second=4,
            transient=not self.console.is_terminal,
        )

    def _render(self) -> RenderableType:
        notes = [Text(n, style="yellow") for n in self.notes]
        return Group(self.progress, self.table, *notes)

    def begin(self, total: int, done: int, skipped: int = 0) -> None:
        # an endless plan (a ladder) has no total: the bar pulses, with no ETA
        self.progress.update(self.task, total=total or None, completed=done)
        self._skip(skipped)
        self.live.start()

    def _skip(self, n: int) -> None:
        self.skipped += n
        if self.skipped:
            self.progress.update(self.task, skipped=f"({self.skipped:,} skipped)")

    def refresh(self, results: Results) -> None:
        """Recompute the standings (at most once a second: a big tournament's ratings
        take a moment, and the play must not wait for the display)."""
        now = time.monotonic()
        if now - self._refreshed < 1.0 and self.progress.tasks[0].remaining != 0:
            return
        self._refreshed = now
        self.table = self.standings(results)
        self.live.update(self._render())

    def match_finished(
        self, spec: MatchSpec, termination: str, reason: str, result: str = ""
    ) -> None:
        if termination == SKIPPED:
            self._skip(1)
        else:
            self.progress.advance(self.task)
        if termination not in COUNTED:
            self.notes.append(f"{spec.key} ({' v '.join(spec.sides)}): {termination}: {reason}")
        self.live.update(self._render())

    def note(self, text: str) -> None:
        self.notes.append(text)
        self.live.update(self._render())

    def end(self) -> None:
        # the last preview of the standings goes: the final table is printed after the run,
        # from the results, and a second table of the same matches with other intervals
        # would say two things at once
        self.table = Text("")
        self.live.update(self._render())
        self.live.stop()
        if not self.console.is_terminal:
            self.console.print(Group(self.progress, *(Text(n) for n in self.notes)))


class LineDisplay:
    """A :class:`capicua.arena.output.Display` off a terminal (a pipe, nohup, CI): a line per
    finished match, as cutechess-cli and fastchess print them, and the standings every
    ``report_every`` matches (``refresh`` is the runner's progress callback)."""

    def __init__(
        self,
        standings: Callable[[Results], RenderableType],
        console: Console | None = None,
        report_every: int = 0,
    ) -> None:
        self.console = console or Console(stderr=True, soft_wrap=True, highlight=False)
        self.standings = standings
        self.report_every = report_every
        self.total = 0
        self.done = 0
        self.skipped = 0
        self._since_report = 0

    def begin(self, total: int, done: int, skipped: int = 0) -> None:
        self.total, self.done, self.skipped = total, done, skipped
        left = total - done - skipped
        kept = f" ({done} kept from an earlier run)" if done else ""
        gone = f" ({skipped} skipped: a bot was disqualified)" if skipped else ""
        if not total:  # an endless plan (a ladder): no count of what is left
            self.console.print(f"playing until stopped{kept}", markup=False)
            return
        self.console.print(f"playing {left} of {total} matches{kept}{gone}", markup=False)

    def match_finished(
        self, spec: MatchSpec, termination: str, reason: str, result: str = ""
    ) -> None:
        if termination == SKIPPED:  # not played: not numbered among the played ones
            self.skipped += 1
            self.console.print(f"skipped: {' vs '.join(spec.sides)} ({reason})", markup=False)
            return
        self.done += 1
        self._since_report += 1
        of = f"/{self.total}" if self.total else ""
        text = f"match {self.done}{of}: {' vs '.join(spec.sides)}"
        text += f" {result}" if result else ""
        text += f" ({termination}" + (f": {reason}" if termination not in COUNTED else "") + ")"
        self.console.print(text, markup=False)

    def refresh(self, results: Results) -> None:
        # the last one would repeat the final table printed after the run
        due = self.report_every and self._since_report >= self.report_every
        if due and (not self.total or self.done + self.skipped < self.total):
            self._since_report = 0
            self.console.print(self.standings(results))

    def note(self, text: str) -> None:
        self.console.print(text, markup=False, style="yellow")

    def end(self) -> None:
        pass
