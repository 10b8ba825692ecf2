"""Exact search over the rest of one hand in a world where every tile is known.

An expectimax on the engine itself (it plays every move: forced moves, passes, draws from
the stock the world gives, the end of the hand): the searching side takes its best action
and every other seat plays by a model of :mod:`capicua.bots.policy` (``RANDOM``: uniform
over its legal actions; ``GREEDY``: ``easy``'s rule with probability ``1 - epsilon``, else
uniform). A finished hand is valued by a function the caller gives. Positions already
valued are remembered, keyed by what the rest of the hand depends on, so one search can
value many positions of the same hand (the ceiling of ``capicua bench bots`` over a whole
hand, ``hard`` over the worlds it samples late in a hand).

``hard`` uses it on its own guesses of the hidden tiles (perfect-information Monte Carlo);
the benchmark's ``ceiling`` on the live match, which only a benchmark may read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from capicua.bots.policy import GREEDY, greedy_best
from capicua.engine.game import MatchState
from capicua.engine.handlog import EV_PLAY
from capicua.engine.tiles import Tile

#: A position within a hand: every seat's tiles, the open ends, the seat to act, the stock
#: left and the last seat that played (the locker, which some block rules score).
PositionKey = tuple[tuple[tuple[Tile, ...], ...], tuple[int, int] | None, int | None, int, int]


class TooBig(Exception):
    """The search valued more positions than it was allowed (:class:`ExactSearch`'s
    ``limit``): the position is too far from the end of the hand to be searched exactly."""


class ExactSearch:
    """The exact value of a hand's positions for ``side``.

    ``leaf`` values a state whose hand ``hand`` is over; ``models`` gives the model each
    seat not on ``side`` plays by (``RANDOM`` or ``GREEDY``, with ``epsilon``); ``limit``
    caps the positions valued (None: no cap; past it :meth:`value` raises
    :class:`TooBig`). Every value is remembered: reuse one search only while the side,
    the hand, the models and the leaf's meaning stay the same."""

    def __init__(
        self,
        side: int,
        hand: int,
        leaf: Callable[[MatchState], float],
        models: Sequence[int] = (),
        epsilon: float = 0.0,
        limit: int | None = None,
    ) -> None:
        self.side = side
        self.hand = hand
        self.leaf = leaf
        self.models = tuple(models)
        self.epsilon = epsilon
        self.limit = limit
        self.memo: dict[PositionKey, float] = {}
        self.positions = 0  # positions valued so far (for the limit, tests and curiosity)

    def values(self, state: MatchState) -> list[float]:
        """The value of each of the current seat's legal actions, in the order of
        ``state.legal_actions()``."""
        return [self.value(after(state, code)) for code in state.legal_actions()]

    def value(self, state: MatchState) -> float:
        """The value of ``state`` for the side: the leaf's once the hand is over, else the
        best of its actions where the side acts and the model's expectation elsewhere."""
        if state.is_terminal() or state.hand != self.hand:
            return self.leaf(state)
        key = position_key(state)
        known = self.memo.get(key)
        if known is not None:
            return known
        if self.limit is not None and self.positions >= self.limit:
            raise TooBig
        self.positions += 1
        seat = state.current_seat
        assert seat is not None
        legal = state.legal_actions()
        children = [self.value(after(state, c)) for c in legal]
        if state.rules.side_of(seat) == self.side:
            value = max(children)
        else:
            value = self._expectation(state, seat, legal, children)
        self.memo[key] = value
        return value

    def _expectation(
        self, state: MatchState, seat: int, legal: Sequence[int], children: Sequence[float]
    ) -> float:
        """What ``children`` are worth when ``seat`` chooses by its model."""
        uniform = sum(children) / len(children)
        model_is_greedy = seat < len(self.models) and self.models[seat] == GREEDY
        if not model_is_greedy or len(legal) == 1:
            return uniform
        ends = state.ends
        left, right = ends if ends is not None else (-1, -1)
        index = state.game.table.index
        hand = 0
        for tile in state.hand_of(seat):
            hand |= 1 << index[tile]
        best = set(greedy_best(state.game, hand, left, right, legal))
        greedy = sum(v for c, v in zip(legal, children, strict=True) if c in best) / len(best)
        return self.epsilon * uniform + (1.0 - self.epsilon) * greedy


def after(state: MatchState, code: int) -> MatchState:
    """A copy of ``state`` with ``code`` applied."""
    child = state.clone()
    child.apply(code)
    return child


def position_key(state: MatchState) -> PositionKey:
    """What the rest of the hand depends on (the scores do not change within it)."""
    seats = range(state.rules.seats)
    return (
        tuple(state.hand_of(s) for s in seats),
        state.ends,
        state.current_seat,
        state.stock_count,
        locker(state),
    )


def locker(state: MatchState) -> int:
    """The last seat that played a tile in this hand, -1 before the first."""
    for kind, seat, _, _ in reversed(state.log.raw_events()):
        if kind == EV_PLAY:
            return seat
    return -1
