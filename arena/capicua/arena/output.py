"""What a run tells the person watching: the :class:`Display` protocol, the one way every
study reports its progress (the live table and the line display of
:mod:`capicua.arena.live`, an experiment's bar and an SPRT's status lines implement it),
and :class:`SilentDisplay`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from .schedule import MatchSpec


class Display(Protocol):
    """What the runner tells the person watching (see :mod:`capicua.arena.live`)."""

    def begin(self, total: int, done: int, skipped: int = 0) -> None:
        """``total`` matches in the plan (0 for an endless one), ``done`` finished before
        this run, ``skipped`` not to be played (a bot in them was disqualified): a skipped
        match is never shown as a played one."""

    def match_finished(
        self, spec: MatchSpec, termination: str, reason: str, result: str = ""
    ) -> None:
        """``result`` is the score line: ``1-0``, ``0-1``, ``½-½`` with two sides, else the
        winner's name (or ``no winner``); ``termination`` is ``skipped`` for a match not
        played because a bot in it was disqualified."""

    def note(self, text: str) -> None: ...
    def end(self) -> None: ...


class SilentDisplay:
    """No output at all (``--quiet``, ``--json`` and tests)."""

    def begin(self, total: int, done: int, skipped: int = 0) -> None:
        pass

    def match_finished(
        self, spec: MatchSpec, termination: str, reason: str, result: str = ""
    ) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def end(self) -> None:
        pass


def disqualified_lines(
    disqualified: Mapping[str, str], labels: Mapping[str, str] | None = None
) -> list[str]:
    """One line per disqualified bot, for stdout: ``disqualified: NAME: REASON`` (``labels``
    names a bot more fully, e.g. the SPRT's ``candidate`` by its spec). The same words for
    a tournament, an experiment and an SPRT, in the run that disqualified the bot and in
    every rerun of it."""
    labels = labels or {}
    return [
        f"disqualified: {labels.get(bot, bot)}: {reason}" for bot, reason in disqualified.items()
    ]
