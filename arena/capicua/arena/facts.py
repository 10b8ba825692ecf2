"""The facts of a finished match, as the engine recorded them: what the results store keeps
of every match, written once when the match is committed.

A match played in-process gives them from its own state (:func:`match_facts`); a match
played on a server gives them from the engine's re-simulation of the replay the server
served (:func:`replay_facts`), so they are the engine's, not the server's word. Every
analysis (standings, an experiment's metrics, the SPRT's pair scores) reads these.
"""

from __future__ import annotations

from typing import NamedTuple

from capicua.engine.game import MatchState
from capicua.engine.records import HandEnd, Termination
from capicua.engine.replay import verify
from capicua.v1 import replay_pb2
from capicua.wire.codec import replay_from_proto


class HandFacts(NamedTuple):
    """One finished hand of a match, as the engine recorded it."""

    hand: int
    blocked: bool
    winner: int | None  # side, None for a tied block
    opener_side: int
    points: int  # base with bonuses applied, before any reset
    bonuses: tuple[str, ...]
    reset: str | None  # "reply", "all_scored" or None
    plays: int
    passes: int
    draws: int
    defers: int
    redeals: int
    choices: int | None = None  # turns with more than one legal action (None: not recorded)
    options: int | None = None  # legal actions those turns offered, in all
    awarded: int | None = None  # what the winner's score gained (0 after a reply reset)


class MatchFacts(NamedTuple):
    """One finished match and its finished hands."""

    termination: str
    winner: int | None
    shutout: str | None
    scores: tuple[int, ...]
    hands: tuple[HandFacts, ...]
    ranking: tuple[int, ...] = ()  # sides from first to last
    forfeited: int | None = None
    reason: str = ""

    @property
    def counted(self) -> bool:
        """Whether it ended by the rules (not by a forfeit or a cancellation)."""
        return Termination(self.termination).counted

    @property
    def first_opener_side(self) -> int | None:
        return self.hands[0].opener_side if self.hands else None


def match_facts(state: MatchState) -> MatchFacts:
    """The facts of a finished match, from the engine's own records."""
    side = state.game.side
    hands = []
    # each hand's summary and score, not its result: a result builds every seat's tiles,
    # which no fact needs (an experiment commits thousands of matches a second)
    for log in state.log.hands:
        s, score = log.summary(), log.score
        if s is None or score is None:  # a hand cut short by a forfeit
            continue
        hands.append(
            HandFacts(
                s.hand,
                s.end is HandEnd.BLOCK,
                s.winner,
                side[s.opener],
                s.points,
                s.bonuses,
                None if s.reset is None else s.reset.value,
                s.plays,
                s.passes,
                s.draws,
                s.defers,
                s.redeals,
                s.choices,
                s.options,
                score.awarded,
            )  # fmt: skip
        )
    out = state.outcome
    if out is None:
        raise ValueError("match_facts: the match is not over")
    return MatchFacts(
        out.termination.value, out.winner, out.shutout, out.scores, tuple(hands),
        out.ranking, out.forfeited, out.reason,
    )  # fmt: skip


def replay_facts(replay: replay_pb2.Replay) -> MatchFacts:
    """The facts of a match a server played, from the engine's re-simulation of its replay
    (raises :class:`~capicua.engine.replay.ReplayMismatch` where the engine disagrees)."""
    return match_facts(verify(replay_from_proto(replay)))
