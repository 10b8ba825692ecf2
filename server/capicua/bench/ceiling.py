"""``ceiling``: a player that sees every hand, for ``capicua bench bots`` only.

It measures how much of a hand a perfect player could win against ``random``, so that
``hard``'s share of decided hands has something to be compared with: the gap between the
two is what the hidden tiles cost, not a weakness of the search. It reads the live match
(every seat's tiles and the stock), which no seat of a real match may do, so it lives in the
benchmark package: the server and the bots below it cannot import it (the layer contracts
of pyproject.toml), and ``make_bot`` does not know its name.

The search is exact: an expectimax over the rest of the hand, in which its own side takes
the best action and every other seat picks uniformly among its legal actions (what
``random`` does), with the engine itself playing the moves (forced moves, passes, draws
from the stock it sees, the end of the hand). A finished hand is worth +1 won, -1 lost and
0 with no winner, so it maximises the chance of winning the hand less the chance of losing
it: the measure ``bench bots`` reports. Positions already valued are remembered for the
rest of the hand (a hand of ``iq-1v1`` is a few thousand positions).
"""

from __future__ import annotations

from collections.abc import Sequence

from capicua.engine.actions import Action
from capicua.engine.game import MatchState
from capicua.engine.handlog import EV_PLAY
from capicua.engine.observation import Observation
from capicua.engine.tiles import Tile

WON, LOST, NO_WINNER = 1.0, -1.0, 0.0

#: A position within a hand: every seat's tiles, the open ends, the seat to act, the stock
#: left and the last seat that played (the locker, which some block rules score).
PositionKey = tuple[tuple[tuple[Tile, ...], ...], tuple[int, int] | None, int | None, int, int]


class CeilingBot:
    """Exact perfect-information search against uniformly random opponents (see the
    module's docstring). :meth:`watch` gives it the live match before it chooses."""

    name = "ceiling"

    def __init__(self, seed: int | None = None) -> None:
        # (no randomness: the search is exact and ties go to the first legal action; the
        # seed is taken so the benchmark builds every level the same way)
        self.seed = seed
        self._state: MatchState | None = None
        self._memo: dict[PositionKey, float] = {}
        self._memo_for: tuple[int, int] = (-1, -1)  # (hand, side) of the watched match
        self.positions = 0  # positions valued so far in this hand (for tests and curiosity)

    def watch(self, state: MatchState) -> None:
        """The match it plays in (read, never changed: it searches on clones)."""
        if state is not self._state:  # a new match: nothing remembered applies
            self._memo_for = (-1, -1)
        self._state = state

    def choose(self, observation: Observation, legal: Sequence[Action]) -> Action:
        if len(legal) == 1:
            return legal[0]
        values = self.values()
        best = max(range(len(legal)), key=lambda i: values[i])  # ties: the first
        return legal[best]

    def values(self) -> list[float]:
        """The exact value of each of the current seat's legal actions, in the order of
        ``state.legal_actions()``: its side's chance of winning the hand less its chance
        of losing it, with every other seat playing uniformly at random."""
        state = self._state
        if state is None or state.current_seat is None:
            raise RuntimeError("ceiling: watch() the match before choosing")
        side = state.rules.side_of(state.current_seat)
        self._remember_for(state, side)
        hand = state.hand
        return [self._value(_after(state, code), side, hand) for code in state.legal_actions()]

    def _remember_for(self, state: MatchState, side: int) -> None:
        """Keep the remembered values while the same side plays on in the same hand."""
        owner = (state.hand, side)
        if owner != self._memo_for:
            self._memo = {}
            self._memo_for = owner
            self.positions = 0

    def _value(self, state: MatchState, side: int, hand: int) -> float:
        if state.is_terminal() or state.hand != hand:
            return _hand_value(state, side, hand)
        key = _position_key(state)
        known = self._memo.get(key)
        if known is not None:
            return known
        seat = state.current_seat
        assert seat is not None
        children = [self._value(_after(state, c), side, hand) for c in state.legal_actions()]
        if state.rules.side_of(seat) == side:
            value = max(children)
        else:
            value = sum(children) / len(children)
        self._memo[key] = value
        self.positions += 1
        return value


def _after(state: MatchState, code: int) -> MatchState:
    child = state.clone()
    child.apply(code)
    return child


def _hand_value(state: MatchState, side: int, hand: int) -> float:
    """+1, -1 or 0: how hand ``hand`` (over in ``state``) ended for ``side``."""
    # the engine's score of the hand, kept in its log (a full HandResult would type every
    # seat's tiles at every leaf of the search)
    score = state.log.hands[hand].score if len(state.log.hands) > hand else None
    winner = None if score is None else score.winner
    if winner is None:
        return NO_WINNER
    return WON if winner == side else LOST


def _position_key(state: MatchState) -> PositionKey:
    """What the rest of the hand depends on (the scores do not: only who wins it counts)."""
    seats = range(state.rules.seats)
    return (
        tuple(state.hand_of(s) for s in seats),
        state.ends,
        state.current_seat,
        state.stock_count,
        _locker(state),
    )


def _locker(state: MatchState) -> int:
    """The last seat that played a tile in this hand, -1 before the first."""
    for kind, seat, _, _ in reversed(state.log.raw_events()):
        if kind == EV_PLAY:
            return seat
    return -1
