"""Scoring a simulated hand from one side's point of view, and rollout policies.

A search bot rolls a sampled world out to the end of the hand on the engine
(:meth:`~capicua.engine.game.MatchState.apply` and friends, on a game whose ``max_hands``
is 1 so that the match stops when the hand does) and scores the result with the ruleset's
own scoring: :func:`utility` reads the hand's result and the match state the engine
computed (bonuses, resets, target and all).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from capicua.engine.game import MatchState
from capicua.engine.records import Termination
from capicua.engine.rules import Ruleset

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
    scores = list(state.scores)  # after the hand (the match ended with it: max_hands 1)
    if outcome.shutout is not None and outcome.winner is not None and ruleset.shutout:
        scores[outcome.winner] //= ruleset.shutout.multiplier  # judge the hand, not the flag
    value = (score_edge(scores, side) - score_edge(before, side)) / ruleset.target
    if hand_weight:
        results = state.hand_results()
        winner = results[-1].winner if results else None
        if winner is not None:
            value += hand_weight if winner == side else -hand_weight
    if outcome.termination is Termination.NORMAL:
        value += MATCH_WEIGHT if outcome.winner == side else -MATCH_WEIGHT
    return value


def random_rollout(state: MatchState, rng: random.Random) -> None:
    """Uniform random play to the end of the hand (the engine's fast path)."""
    state.random_playout(rng, hand_only=True)


def greedy_rollout(
    state: MatchState,
    rng: random.Random,
    epsilon: float = 0.2,
    greedy_seats: Sequence[bool] | None = None,
) -> None:
    """Play to the end of the hand: each seat plays its heaviest playable tile (doubles
    count a little extra), and a uniformly random one with probability ``epsilon``;
    seats with ``greedy_seats[seat]`` False play uniformly at random."""
    pips = state.game.pips
    doubles = state.game.doubles
    rand = rng.random
    seats = greedy_seats or [True] * state.rules.seats
    while not state.is_over:
        legal = state.legal_actions()
        n = len(legal)
        seat = state.current_seat
        assert seat is not None
        if n == 1 or not seats[seat] or rand() < epsilon:
            state.apply(legal[int(rand() * n)])
            continue
        best = legal[0]
        best_score = -1.0
        for c in legal:
            if c < 0:
                continue
            t = c >> 1
            s = pips[t] + (1.5 if doubles >> t & 1 else 0.0) + rand() * 0.5
            if s > best_score:
                best_score = s
                best = c
        state.apply(best)
