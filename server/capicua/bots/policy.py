"""Cheap play policies on the engine's bitmasks: the models a search bot uses for how seats
play inside a simulated world (and how likely another seat's observed choice was).

Two models:

* ``RANDOM``: uniform over the legal plays;
* ``GREEDY``: ``easy``'s rule (pips shed, plus 2 per tile kept that fits the new ends, plus 3
  for a double), played with probability ``1 - epsilon``, else a uniformly random play.

:class:`Simulator` plays a position to the end of the hand with a model per seat. It knows
every seat's tiles because the position is a sampled world (the bot's own guess), and
follows them through the engine's event log, so forced moves, passes and draws the engine
applies by itself are accounted for.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from capicua.engine.game import EV_DRAW, EV_PLAY, Game, MatchState
from capicua.engine.tiles import iter_bits

RANDOM = 0
GREEDY = 1
FOLLOW = 2  # as in capicua.bots.easy
DOUBLE = 3


def candidates(game: Game, hand: int, left: int, right: int) -> list[int]:
    """The play codes a seat holding ``hand`` has on ends ``left``/``right`` (-1: an
    opening with any tile), in the engine's order."""
    suit = game.suit
    if left < 0:
        return [t << 1 for t in iter_bits(hand)]
    if left == right:
        return [t << 1 for t in iter_bits(hand & suit[left])]
    return [t << 1 for t in iter_bits(hand & suit[left])] + [
        (t << 1) | 1 for t in iter_bits(hand & suit[right])
    ]


def greedy_score(game: Game, hand: int, left: int, right: int, code: int) -> int:
    """``easy``'s score of play ``code`` from ``hand`` on ends ``left``/``right``."""
    t = code >> 1
    if left < 0:
        nl, nr = game.low[t], game.high[t]
    elif code & 1:
        nl, nr = left, game.other[t * game.width + right]
    else:
        nl, nr = game.other[t * game.width + left], right
    suit = game.suit
    follow = (hand & ~(1 << t) & (suit[nl] | suit[nr])).bit_count()
    return game.pips[t] + FOLLOW * follow + (DOUBLE if game.doubles >> t & 1 else 0)


def greedy_best(game: Game, hand: int, left: int, right: int, codes: Sequence[int]) -> list[int]:
    """The plays of ``codes`` with the best greedy score (DEFER and other specials are
    never best unless alone)."""
    best: list[int] = []
    top = -1
    for c in codes:
        if c < 0:
            continue
        s = greedy_score(game, hand, left, right, c)
        if s > top:
            top = s
            best = [c]
        elif s == top:
            best.append(c)
    return best or list(codes)


def play_probability(
    game: Game, model: int, hand: int, left: int, right: int, code: int, epsilon: float
) -> float:
    """The chance that a seat holding ``hand`` plays ``code`` on ``left``/``right`` under
    ``model`` (1 when it had a single option)."""
    codes = candidates(game, hand, left, right)
    n = len(codes)
    if n <= 1:
        return 1.0
    if model == RANDOM:
        return 1.0 / n
    best = greedy_best(game, hand, left, right, codes)
    return epsilon / n + ((1.0 - epsilon) / len(best) if code in best else 0.0)


class Simulator:
    """Plays a simulated position on, one model per seat, following each seat's tiles."""

    __slots__ = ("game", "epsilon", "hands", "_pos")

    def __init__(self, game: Game, epsilon: float) -> None:
        self.game = game
        self.epsilon = epsilon
        self.hands: list[int] = []
        self._pos = 0

    def start(self, state: MatchState, hands: Sequence[int]) -> None:
        """Follow ``state``, whose seats hold ``hands`` (masks) as of its current events."""
        self.hands = list(hands)
        self._pos = len(state.raw_events())

    def sync(self, state: MatchState) -> None:
        """Account for the events since the last call (plays and draws)."""
        events = state.raw_events()
        hands = self.hands
        for i in range(self._pos, len(events)):
            kind, seat, t, _end = events[i]
            if kind == EV_PLAY:
                hands[seat] &= ~(1 << t)
            elif kind == EV_DRAW:
                hands[seat] |= 1 << t
        self._pos = len(events)

    def step(self, state: MatchState, model: int, rand: Callable[[], float]) -> None:
        """Apply one move of the seat to act, chosen by ``model``."""
        self.sync(state)
        legal = state.legal_actions()
        if len(legal) == 1 or model == RANDOM or rand() < self.epsilon:
            state.apply(legal[int(rand() * len(legal))])
            return
        seat = state.current_seat
        assert seat is not None
        ends = state.ends
        left, right = ends if ends is not None else (-1, -1)
        best = greedy_best(self.game, self.hands[seat], left, right, legal)
        state.apply(best[int(rand() * len(best))] if len(best) > 1 else best[0])

    def run(self, state: MatchState, models: Sequence[int], rng: random.Random) -> None:
        """Play to the end of the simulated match (one hand); the engine's fast path when
        every seat plays at random."""
        if all(m == RANDOM for m in models):
            state.random_playout(rng, hand_only=True)
            return
        rand = rng.random
        while not state.is_over:
            seat = state.current_seat
            assert seat is not None
            self.step(state, models[seat], rand)
