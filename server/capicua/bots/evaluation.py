"""Scoring a simulated hand from one side's point of view.

A search bot rolls a sampled world out to the end of the hand on the engine (on a game
whose ``max_hands`` is 1, so that the match stops when the hand does) and scores the result
with the ruleset's own scoring: :func:`utility` scores the hand's end with
:func:`~capicua.engine.scoring.score_hand` (base points, finish bonuses, reply and
all-scored resets) and reads the outcome the engine computed (target and all).
"""

from __future__ import annotations

from collections.abc import Sequence

from capicua.engine.game import MatchState
from capicua.engine.records import Termination
from capicua.engine.rules import Ruleset
from capicua.engine.scoring import score_hand

#: What winning (or losing) the match is worth, in units of the target score.
MATCH_WEIGHT = 2.0


def score_edge(scores: Sequence[int], side: int) -> float:
    """``side``'s score minus the mean of the other sides' scores."""
    others = [s for i, s in enumerate(scores) if i != side]
    return scores[side] - sum(others) / len(others)


def utility(
    state: MatchState,
    side: int,
    before: Sequence[int],
    ruleset: Ruleset,
    hand_weight: float = 0.0,
) -> float:
    """The value for ``side`` of a finished simulated hand, in units of the match target:
    how much its edge over the other sides changed (points, finish bonuses and score
    resets as the ruleset applies them), plus :data:`MATCH_WEIGHT` if the hand won the
    match for it (minus, if for another side)."""
    outcome = state.outcome
    if outcome is None:
        return 0.0
    # The scores the hand left, before a shutout multiplied the winner's: judge the hand,
    # not the flag (the match's end is valued below).
    ending = state.log.ending()
    scores = state.scores if ending is None else score_hand(ruleset, *ending).scores
    value = (score_edge(scores, side) - score_edge(before, side)) / ruleset.target
    if hand_weight:
        results = state.log.results()
        winner = results[-1].winner if results else None
        if winner is not None:
            value += hand_weight if winner == side else -hand_weight
    if outcome.termination is Termination.NORMAL:
        value += MATCH_WEIGHT if outcome.winner == side else -MATCH_WEIGHT
    return value
