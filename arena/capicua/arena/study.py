"""What a run plays and when it stops. fastchess's model: one tournament loop; what changes
from one study to the next is the plan it hands out, the rule that stops it and the
analysis read from its results afterwards.

A :class:`Study` is

* a **plan**: the matches in playing order, a duplicate set (an experiment's pair) at a
  time, each a :class:`~capicua.arena.schedule.MatchSpec` with its seats, its seed and,
  when they are not the tournament's, its own rules. The run hands the sets out lazily,
  skipping the keys already in the results (resume) and the matches of bots disqualified
  earlier, so a plan is any iterable of sets, endless included (a finite one is a list);
* a **stopping rule** (:class:`StoppingRule`), told after every commit: none for a
  tournament or an experiment (:data:`PLAN_DONE`: the run ends when the plan does), the
  SPRT's (:class:`capicua.arena.sprt_runner.SprtStop`: once the test decides, no new match
  starts, those in flight are kept);
* and its identity in the results: a kind, a name, a canonical configuration and its
  digest (a resumed run must repeat them).

The analysis is not the run's: it is a pure function of the one results store, read after
the run or by ``show``/``standings``/``report`` (:func:`capicua.arena.standings.compute`,
:func:`capicua.arena.experiment.analysis.load`, the SPRT's
:class:`~capicua.arena.sprt_runner.Scoreboard`).

**A continuous scheduler** (a standing ladder: bots join and leave, a matchmaker picks the
next pairing) is a fourth kind of plan on the same loop: a generator that never ends and
chooses each next match from the results so far (it is given the run's
:class:`~capicua.arena.store.Results`, and the run pulls one match whenever a slot frees,
so each choice sees every commit before it), under no stopping rule (:data:`PLAN_DONE`
never fires on an endless plan; Ctrl-C stops it, and the same command resumes it, the
matchmaker reading the standings from the store again). Its keys must be stable for
resume: e.g. the pairing's bots and a counter per pairing. Bots joining mid-run need the
backend to start a process for a new name before its first match (the protocol backends'
:class:`~capicua.arena.supervisor.BotSupervisor` adds hosts one by one already); a bot
leaving is a bot the matchmaker no longer picks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from .config import Tournament
from .schedule import MatchSpec, schedule, sets
from .store import TOURNAMENT, Results, Where

#: A plan: its sets, or a function of the run's open results that gives them (a continuous
#: scheduler's, which chooses each next set from what the results hold by then).
Plan = Iterable[list[MatchSpec]] | Callable[[Results], Iterable[list[MatchSpec]]]


class StoppingRule(Protocol):
    """When a run stops handing out matches before its plan ends."""

    def bind(self, out: Where) -> None:
        """Record the rule's parameters in ``out``, or check a resumed run repeats them
        (raise :class:`~capicua.common.errors.CapicuaError` naming what differs)."""

    def discard(self, out: Where) -> None:
        """Take back what :meth:`bind` wrote (the run recorded nothing)."""

    def update(self, results: Results) -> bool:
        """After a commit: True once the study is done (no new match starts)."""


class PlanDone:
    """No stopping rule: the run ends when every match of the plan is played."""

    def bind(self, out: Where) -> None:
        pass

    def discard(self, out: Where) -> None:
        pass

    def update(self, results: Results) -> bool:
        return False


PLAN_DONE = PlanDone()


@dataclass(frozen=True)
class Study:
    """A plan, a stopping rule and the study's identity in the results (see the module)."""

    kind: str  # what the results hold: "tournament" (an SPRT too) or "experiment"
    name: str
    config: dict[str, Any]  # canonical: a resumed run must give the same
    digest: str
    #: the sets, in order (a list: a finite plan), or what makes them from the run's
    #: results once they are open (an endless plan that reads the results so far)
    plan: Plan
    stop: StoppingRule = PLAN_DONE
    #: the matches' replays are written (an experiment keeps only their facts)
    replays: bool = True

    @classmethod
    def of(
        cls,
        tournament: Tournament,
        matches: Iterable[MatchSpec] | None = None,
        stop: StoppingRule = PLAN_DONE,
    ) -> Study:
        """A tournament: its schedule (or ``matches``, some of it), until ``stop`` says."""
        t = tournament
        plan = list(sets(schedule(t) if matches is None else matches))
        return cls(TOURNAMENT, t.name, t.canonical(), t.digest(), plan, stop)


#: Called after each commit with the results (a live display's standings).
OnProgress = Callable[[Results], None]
