"""Scoring a simulated hand from one side's point of view.

A search bot rolls a sampled world out to the end of the hand on the engine (on a game
whose ``max_hands`` is 1, so that the match stops when the hand does) and scores the result
with the ruleset's own scoring: :func:`utility` reads the hand's score as the engine
computed it with :func:`~capicua.engine.scoring.score_hand` (base points, finish bonuses,
reply and all-scored resets) and the outcome (target and all).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from capicua.engine.game import MatchState
from capicua.engine.records import Termination
from capicua.engine.rules import Ruleset

#: What winning (or losing) the match is worth, in units of the target score.
MATCH_WEIGHT: Final = 2.0
# (Final: C constants in the compiled build, not a module-dict lookup per simulated hand)
_NORMAL: Final = Termination.NORMAL


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
    # not the flag (the match's end is valued below). The engine scored the hand as it
    # ended and keeps that in the hand's log: read it (scoring it again cost a tenth of
    # every search iteration).
    score = state.log.hands[-1].score if state.log.hands else None
    scores = state.scores if score is None else score.scores
    value = (score_edge(scores, side) - score_edge(before, side)) / ruleset.target
    if hand_weight and score is not None and score.winner is not None:
        value += hand_weight if score.winner == side else -hand_weight
    if outcome.termination is _NORMAL:
        value += MATCH_WEIGHT if outcome.winner == side else -MATCH_WEIGHT
    return value
