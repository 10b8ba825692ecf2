"""What an arena run records, and where.

A run (:class:`capicua.arena.run.TournamentRun`: the local arena and the dask head) tells a
:class:`Recorder` every fact it produces: a finished match with its replay, a bot's
failure, a disqualification, a match abandoned by an interrupt. The local backend records
them into the results directory (:class:`ResultsRecorder`); a dask worker's arena sends
them to the one process that writes the results (:mod:`capicua.arena.cluster`), which
records them with a :class:`ResultsRecorder` in turn: the same facts reach the same
tables on both backends.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from capicua.v1 import replay_pb2

from .schedule import MatchSpec
from .store import Results, write_match_replay


@dataclass(frozen=True)
class Finished:
    """A scheduled match played to its end."""

    spec: MatchSpec
    replay: replay_pb2.Replay
    server_match: str | None  # the server's name for it (None: played in-process)
    started: str  # when it started (UTC, ISO 8601)
    seconds: float  # how long it took


class Recorder(Protocol):
    """Where the facts of a run go."""

    def match(self, finished: Finished) -> None:
        """A scheduled match finished."""

    def failure(self, bot: str, kind: str, detail: str, key: str | None) -> None:
        """A bot failed (``kind``: crash, start, timeout...), in match ``key`` or between."""

    def disqualified(self, bot: str, reason: str) -> None:
        """A bot will play no more matches in this tournament."""

    def abandoned(self, key: str, reason: str) -> None:
        """A match was cut short (an interrupt): it is played again on resume."""


class ResultsRecorder:
    """The facts into a results directory (:class:`~capicua.arena.store.Results`)."""

    def __init__(self, results: Results) -> None:
        self.results = results

    def match(self, finished: Finished) -> None:
        f = finished
        commit_match(self.results, f.spec, f.replay, f.server_match, f.started, f.seconds)

    def failure(self, bot: str, kind: str, detail: str, key: str | None) -> None:
        self.results.record_failure(bot, kind, detail, key)

    def disqualified(self, bot: str, reason: str) -> None:
        self.results.disqualify(bot, reason)

    def abandoned(self, key: str, reason: str) -> None:
        self.results.record_abandoned(key, reason)


def commit_match(
    results: Results,
    spec: MatchSpec,
    replay: replay_pb2.Replay,
    server_match: str | None,
    started: str,
    seconds: float,
) -> None:
    """Write the replay of a finished scheduled match (atomically), then commit the match
    and its hands in one transaction: a match is in the results only with its replay."""
    path = write_match_replay(results.directory, spec.key, replay)
    results.record_match(
        key=spec.key,
        set_key=spec.set_key,
        seq=spec.seq,
        rotation=spec.rotation,
        seats=spec.seats,
        sides=spec.sides,
        replay=replay,
        server_match=server_match,
        replay_path=path,
        started=started,
        seconds=seconds,
    )
