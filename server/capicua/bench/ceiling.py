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
rest of the hand (a hand of ``iq-1v1`` is a few thousand positions). The search itself is
:class:`capicua.bots.exact.ExactSearch`, the one ``hard`` runs on the worlds it samples.
"""

from __future__ import annotations

from collections.abc import Sequence

from capicua.bots.exact import ExactSearch
from capicua.engine.actions import Action
from capicua.engine.game import MatchState
from capicua.engine.observation import Observation

WON, LOST, NO_WINNER = 1.0, -1.0, 0.0


class CeilingBot:
    """Exact perfect-information search against uniformly random opponents (see the
    module's docstring). :meth:`watch` gives it the live match before it chooses."""

    name = "ceiling"

    def __init__(self, seed: int | None = None) -> None:
        # (no randomness: the search is exact and ties go to the first legal action; the
        # seed is taken so the benchmark builds every level the same way)
        self.seed = seed
        self._state: MatchState | None = None
        self._search: ExactSearch | None = None  # for the watched match's hand and side

    @property
    def positions(self) -> int:
        """Positions valued so far in this hand (for tests and curiosity)."""
        return 0 if self._search is None else self._search.positions

    def watch(self, state: MatchState) -> None:
        """The match it plays in (read, never changed: it searches on clones)."""
        if state is not self._state:  # a new match: nothing remembered applies
            self._search = None
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
        return self._search_for(state).values(state)

    def _search_for(self, state: MatchState) -> ExactSearch:
        """The search of this hand for this side: what it remembered while the same side
        plays on in the same hand, else a fresh one."""
        assert state.current_seat is not None
        side = state.rules.side_of(state.current_seat)
        search = self._search
        if search is None or (search.hand, search.side) != (state.hand, side):
            hand = state.hand
            search = ExactSearch(side, hand, lambda end: _hand_value(end, side, hand))
            self._search = search
        return search


def _hand_value(state: MatchState, side: int, hand: int) -> float:
    """+1, -1 or 0: how hand ``hand`` (over in ``state``) ended for ``side``."""
    # the engine's score of the hand, kept in its log (a full HandResult would type every
    # seat's tiles at every leaf of the search)
    score = state.log.hands[hand].score if len(state.log.hands) > hand else None
    winner = None if score is None else score.winner
    if winner is None:
        return NO_WINNER
    return WON if winner == side else LOST
