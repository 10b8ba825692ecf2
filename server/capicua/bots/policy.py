"""Cheap play policies on the engine's bitmasks: the models a search bot uses for how seats
play inside a simulated world (and how likely another seat's observed choice was).

Two models of the other seats:

* ``RANDOM``: uniform over the legal plays;
* ``GREEDY``: ``easy``'s rule (pips shed, plus 2 per tile kept that fits the new ends, plus 3
  for a double), played with probability ``1 - epsilon``, else a uniformly random play.

and two for the searching bot's own side in rollouts (``OWN``: ``GREEDY`` with its own
random share; ``AWARE``: the same, plus a bonus for a play that may leave the next seat
nothing to play, by the searching seat's own knowledge: the tiles it has not seen, less
the numbers that seat passed on, before the decision or during the rollout).

:class:`Simulator` plays a position to the end of the hand with a model per seat. It knows
every seat's tiles because the position is a sampled world (the bot's own guess), and
follows them through the engine's event log, so forced moves, passes and draws the engine
applies by itself are accounted for.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Final

from capicua.engine.game import (
    EV_DRAW,
    EV_PASS,
    EV_PLAY,
    Game,
    MatchState,
    ends_after_code,
    playable_by_end,
)

# Final: the compiled build reads these as C constants (any other module global is a
# lookup in the module's dict, every move of every rollout).
RANDOM: Final = 0
GREEDY: Final = 1
OWN: Final = 2
AWARE: Final = 3
FOLLOW_WEIGHT: Final = 2  # as in capicua.bots.easy
DOUBLE_WEIGHT: Final = 3
TEMPO_WEIGHT: Final = 20.0  # AWARE: the next seat must pass (times the chance)


def greedy_score(game: Game, hand: int, left: int, right: int, code: int) -> int:
    """``easy``'s score of play ``code`` from ``hand`` on ends ``left``/``right``."""
    t = code >> 1
    nl, nr = ends_after_code(game, left, right, code)
    suit = game.suit
    follow = (hand & ~(1 << t) & (suit[nl] | suit[nr])).bit_count()
    return game.pips[t] + FOLLOW_WEIGHT * follow + (DOUBLE_WEIGHT if game.doubles >> t & 1 else 0)


def greedy_best(
    game: Game,
    hand: int,
    left: int,
    right: int,
    codes: Sequence[int],
    bonus: Callable[[int], float] | None = None,
) -> list[int]:
    """The plays of ``codes`` with the best greedy score, plus ``bonus(code)`` when given
    (DEFER and other specials, negative codes, are never best unless alone). A hot path of
    the rollouts: one loop, no score list."""
    best: list[int] = []
    top = -1.0  # every score is at least 0
    for c in codes:
        if c < 0:
            continue
        # (a float either way: the compiled build keeps one representation per variable)
        s = greedy_score(game, hand, left, right, c) + (bonus(c) if bonus is not None else 0.0)
        if s > top:
            top = s
            best = [c]
        elif s == top:
            best.append(c)
    return best or list(codes)


def aware_best(
    game: Game,
    hand: int,
    possible: int,
    count: int,
    left: int,
    right: int,
    codes: Sequence[int],
) -> list[int]:
    """The plays of ``codes`` with the best ``AWARE`` score: the greedy score, plus
    :data:`TEMPO_WEIGHT` times the chance that the next seat, holding ``count`` tiles drawn
    from ``possible`` (the tiles it may hold, as the searching seat knows it), has nothing
    for the new ends."""
    suit = game.suit
    room = possible.bit_count()

    def tempo(c: int) -> float:
        nl, nr = ends_after_code(game, left, right, c)
        u = (possible & (suit[nl] | suit[nr])).bit_count()
        return TEMPO_WEIGHT * (1.0 - u / room) ** count if u else TEMPO_WEIGHT

    return greedy_best(game, hand, left, right, codes, tempo)


def play_odds(
    game: Game, hand: int, left: int, right: int, code: int, epsilon: float
) -> tuple[float, float]:
    """The chances that a seat holding ``hand`` plays ``code`` on ``left``/``right``
    under ``RANDOM`` and under ``GREEDY`` (each 1 when it had a single option). Soft
    inference weighs both models for every play in every sampled world, so this is
    :func:`~capicua.engine.game.plays_on` and :func:`greedy_best` counted over the hand's
    bits, without their lists: the number of plays, how many share the best greedy score,
    and whether ``code`` is one of them."""
    on_left, on_right = playable_by_end(game, hand, left, right)
    either = on_left | on_right
    if not (on_left and on_right) and not either & (either - 1):
        return 1.0, 1.0  # at most one play
    plays = ties = 0
    top = -1  # every score is at least 0
    mine = -2  # the score of code; never the best until code is seen
    for end in range(2):
        tiles = on_right if end else on_left
        while tiles:
            low = tiles & -tiles
            tiles ^= low
            c = (low.bit_length() - 1) << 1 | end
            score = greedy_score(game, hand, left, right, c)
            plays += 1
            if score > top:
                top = score
                ties = 1
            elif score == top:
                ties += 1
            if c == code:
                mine = score
    return 1.0 / plays, epsilon / plays + ((1.0 - epsilon) / ties if mine == top else 0.0)


class Simulator:
    """Plays a simulated position on, one model per seat, following each seat's tiles."""

    __slots__ = ("game", "epsilon", "own_epsilon", "hands", "possible", "_pos", "_next", "_ends")

    def __init__(self, game: Game, epsilon: float, own_epsilon: float | None = None) -> None:
        self.game = game
        self.epsilon = epsilon  # GREEDY's random share
        self.own_epsilon = epsilon if own_epsilon is None else own_epsilon  # OWN's, AWARE's
        self.hands: list[int] = []
        self.possible: list[int] | None = None  # AWARE: tiles each seat may hold
        self._pos = 0
        self._ends = (-1, -1)
        self._next = game.next_seat

    def start(
        self, state: MatchState, hands: Sequence[int], possible: Sequence[int] | None = None
    ) -> None:
        """Follow ``state``, whose seats hold ``hands`` (masks) as of its current events;
        ``possible``: the tiles each seat may hold as the searching seat knows it (for
        ``AWARE``; kept up to date with the plays and passes that follow)."""
        self.hands = list(hands)
        self._pos = len(state.log.raw_events())
        self.possible = None if possible is None else list(possible)
        ends = state.ends
        self._ends = ends if ends is not None else (-1, -1)

    def sync(self, state: MatchState) -> None:
        """Account for the events since the last call (plays and draws; for ``AWARE``,
        also what each play and pass tells about the tiles each seat may hold)."""
        events = state.log.raw_events()
        hands = self.hands
        possible = self.possible
        g = self.game
        left, right = self._ends
        for i in range(self._pos, len(events)):
            kind, seat, t, end = events[i]
            if kind == EV_PLAY:
                hands[seat] &= ~(1 << t)
                if possible is not None:
                    for s in range(len(possible)):
                        possible[s] &= ~(1 << t)
                    left, right = ends_after_code(g, left, right, (t << 1) | end)
            elif kind == EV_DRAW:
                hands[seat] |= 1 << t
            elif kind == EV_PASS and possible is not None and left >= 0:
                possible[seat] &= ~(g.suit[left] | g.suit[right])
        self._ends = (left, right)
        self._pos = len(events)

    def step(self, state: MatchState, model: int, rand: Callable[[], float]) -> None:
        """Apply one move of the seat to act, chosen by ``model``."""
        self.sync(state)
        legal = state.legal_actions()
        eps = self.epsilon if model == GREEDY else self.own_epsilon
        if len(legal) == 1 or model == RANDOM or rand() < eps:
            state.apply(legal[int(rand() * len(legal))])
            return
        seat = state.current_seat
        assert seat is not None
        ends = state.ends
        left, right = ends if ends is not None else (-1, -1)
        if model == AWARE and self.possible is not None:
            nxt = self._next[seat]
            best = aware_best(
                self.game,
                self.hands[seat],
                self.possible[nxt],
                self.hands[nxt].bit_count(),
                left,
                right,
                legal,
            )
        else:
            best = greedy_best(self.game, self.hands[seat], left, right, legal)
        state.apply(best[int(rand() * len(best))] if len(best) > 1 else best[0])

    def run(self, state: MatchState, models: Sequence[int], rng: random.Random) -> None:
        """Play to the end of the simulated match (one hand); the engine's fast path when
        every seat plays at random."""
        if all(m == RANDOM for m in models):
            state.random_playout(rng, hand_only=True)
            return
        rand = rng.random
        while not state.is_terminal():
            seat = state.current_seat
            assert seat is not None
            self.step(state, models[seat], rand)
