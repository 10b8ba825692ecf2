"""What a run records, and where.

A run (:class:`capicua.arena.run.TournamentRun`, whichever backend plays its matches) tells
a :class:`Recorder` every fact it produces: finished matches with their facts (and their
replays, when the study keeps them), a bot's failure, a disqualification, a match abandoned
by an interrupt. The local backends record them into the results directory
(:class:`ResultsRecorder`); a dask worker's arena sends them to the one process that writes
the results (:mod:`capicua.arena.cluster`), which records them with a
:class:`ResultsRecorder` in turn: the same facts reach the same tables on every backend.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple, Protocol

from capicua.v1 import replay_pb2

from .facts import MatchFacts
from .schedule import MatchSpec
from .store import NewMatches, Results, think_by_seat


class Finished(NamedTuple):
    """A planned match played to its end (a tuple: thousands are made a second)."""

    spec: MatchSpec
    facts: MatchFacts  # the engine's (see capicua.arena.facts)
    replay: replay_pb2.Replay | None  # None: the study keeps no replay of it
    server_match: str | None  # the server's name for it (None: played in-process)
    started: str  # when it started (UTC, ISO 8601)
    seconds: float  # how long it took


class Recorder(Protocol):
    """Where the facts of a run go."""

    def matches(self, batch: Sequence[Finished]) -> None:
        """Planned matches finished: recorded together, or none of them."""

    def failure(self, bot: str, kind: str, detail: str, key: str | None) -> None:
        """A bot failed (``kind``: crash, start, timeout...), in match ``key`` or between."""

    def disqualified(self, bot: str, reason: str) -> None:
        """A bot will play no more matches in this study."""

    def abandoned(self, key: str, reason: str) -> None:
        """A match was cut short (an interrupt): it is played again on resume."""


class ResultsRecorder:
    """The facts into a results directory (:class:`~capicua.arena.store.Results`)."""

    def __init__(self, results: Results) -> None:
        self.results = results

    def matches(self, batch: Sequence[Finished]) -> None:
        commit_matches(self.results, batch)

    def failure(self, bot: str, kind: str, detail: str, key: str | None) -> None:
        self.results.record_failure(bot, kind, detail, key)

    def disqualified(self, bot: str, reason: str) -> None:
        self.results.disqualify(bot, reason)

    def abandoned(self, key: str, reason: str) -> None:
        self.results.record_abandoned(key, reason)


def commit_matches(results: Results, batch: Sequence[Finished]) -> None:
    """Commit ``batch`` in one transaction (each match with its replay, when it has one):
    all of it is in the results, or none."""
    rows = NewMatches()
    for finished in batch:
        commit_match(results, finished, rows)
    with results.transaction():
        results.insert(rows)


def commit_match(results: Results, finished: Finished, rows: NewMatches) -> None:
    """Keep the replay of a finished match (:meth:`Results.keep_replay`: a file written
    atomically now, or rows of the batch), and add the match, its hands and think times to
    the ``rows`` its batch commits: a match is in the results only with its replay."""
    spec, replay = finished.spec, finished.replay
    path = None if replay is None else results.keep_replay(spec.key, replay, rows)
    rows.add(
        key=spec.key,
        set_key=spec.set_key,
        seq=spec.seq,
        seed=spec.seed,
        rotation=spec.rotation,
        seats=spec.seats,
        sides=spec.sides,
        facts=finished.facts,
        server_match=finished.server_match,
        replay_path=path,
        think={} if replay is None else think_by_seat(replay),
        started=finished.started,
        seconds=finished.seconds,
    )
