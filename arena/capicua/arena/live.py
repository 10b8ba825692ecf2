"""The live terminal view of ``capicua arena run``: a progress bar with ETA, the current
standings and per-bot error counts, redrawn as matches finish (``rich``)."""

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
from .store import Results


class LiveDisplay:
    """A :class:`capicua.arena.runner.Display` on a terminal (stderr by default)."""

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
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.task = self.progress.add_task(title, total=1)
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

    def begin(self, total: int, done: int) -> None:
        self.progress.update(self.task, total=total, completed=done)
        self.live.start()

    def refresh(self, results: Results) -> None:
        """Recompute the standings (at most once a second: a big tournament's ratings
        take a moment, and the play must not wait for the display)."""
        now = time.monotonic()
        if now - self._refreshed < 1.0 and self.progress.tasks[0].remaining:
            return
        self._refreshed = now
        self.table = self.standings(results)
        self.live.update(self._render())

    def match_finished(self, spec: MatchSpec, termination: str, reason: str) -> None:
        self.progress.advance(self.task)
        if termination not in ("normal", "hand_limit"):
            self.notes.append(f"{spec.key} ({' v '.join(spec.sides)}): {termination}: {reason}")
        self.live.update(self._render())

    def note(self, text: str) -> None:
        self.notes.append(text)
        self.live.update(self._render())

    def end(self) -> None:
        self.live.stop()
        if not self.console.is_terminal:
            self.console.print(Group(self.progress, *(Text(n) for n in self.notes)))
