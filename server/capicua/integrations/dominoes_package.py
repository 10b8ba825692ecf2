"""The PyPI ``dominoes`` package's players as capicua bots: ``dominoes:NAME`` in an arena file
(``pip install 'capicua[bench]'``, which pins the package).

The package plays one hand of its own game: double-six, four players in two teams of
partners sitting opposite, seven tiles each (every tile dealt, so nothing to draw), play
going round the table, a player who cannot play passes, the hand over at a domino out or
when nobody can play. That is a hand of capicua's ``block`` preset; what differs (the
package's scoring, a single hand against a match to 100) is in docs/research.md. A ruleset
whose hands are not that game is refused with one line (:func:`refuse_rules`).

**Only the seat's view.** A player of the package is called with a ``dominoes.Game``; this
module builds it from the seat's :class:`~capicua.engine.observation.Observation` alone
(:func:`package_game`): the seat's own tiles, the chain played again from the hand's plays
and passes (the package infers what a passing player lacks from them), and for every other
seat as many tiles as it holds, taken in tile order from the tiles nobody has seen. Those
hands are placeholders: the package's probabilistic player reads from the others' hands
only which tiles they hold between them and how many each holds (its own comments say so),
and deals them anew for every sample. ``omniscient``, which searches the true hands, is
not offered: a capicua bot never sees them.

**Seats and ends.** The package's players are numbered in turn order with partners
opposite (0 and 2 against 1 and 3), so a seat is its own number under ``clockwise`` and
``-seat mod 4`` under ``counterclockwise``: the teams are kept. Both lay the first tile with
its lower half on the left and call the ends left and right alike, so the package's board
is capicua's chain and its ``(tile, left)`` moves are capicua's ``tile:L`` / ``tile:R``.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import dominoes

from capicua.common.errors import CapicuaError
from capicua.engine.actions import Action, ActionKind, End
from capicua.engine.game import Phase
from capicua.engine.observation import Observation
from capicua.engine.records import Pass, Play
from capicua.engine.rules import Ruleset, Sides, TurnOrder
from capicua.engine.tiles import Tile, full_set

#: The package's game: the set, the seats, the tiles each.
MAX_PIP, SEATS, HAND_SIZE = 6, 4, 7

#: The package's players that order moves by a heuristic (and so may order a search's).
ORDERINGS: dict[str, Callable[[Any], None]] = {
    "identity": dominoes.players.identity,
    "bota_gorda": dominoes.players.bota_gorda,
    "double": dominoes.players.double,
}

#: The package's players draw from the ``random`` module's shared generator: one decision
#: at a time seeds it (the SDK runs decisions of different matches in threads), so a bot's
#: seed replays its choices.
_PACKAGE_RANDOM = threading.Lock()


class RulesRefused(CapicuaError, ValueError):
    """A ruleset whose hands are not the package's game."""


def refuse_rules(rules: Ruleset) -> None:
    """Raise :class:`RulesRefused` (one line, naming what differs) unless a hand of ``rules``
    is the package's game: double-six, four seats in two teams, seven tiles each."""
    differs = []
    if rules.max_pip != MAX_PIP or rules.exclude:
        differs.append(f"a set of {rules.set_size} tiles up to {rules.max_pip}")
    if rules.seats != SEATS or rules.sides is not Sides.TEAMS:
        differs.append(f"{rules.seats} seats, {rules.sides.value}")
    if rules.hand_size != HAND_SIZE:
        differs.append(f"{rules.hand_size} tiles each")
    if differs:
        raise RulesRefused(
            f"dominoes: the package plays double-six with four seats in two teams and seven "
            f"tiles each; {rules.name} has {', '.join(differs)}"
        )


def package_player(seat: int, rules: Ruleset) -> int:
    """The package's number of capicua's ``seat``: its place in turn order from seat 0."""
    return seat if rules.turn_order is TurnOrder.CLOCKWISE else -seat % SEATS


def package_game(obs: Observation) -> Any:
    """The package's ``dominoes.Game`` at ``obs``'s decision, from that view alone (the
    module's docstring says how); its ``valid_moves`` are the seat's plays."""
    rules, seat = obs.ruleset, obs.seat
    refuse_rules(rules)
    assert seat is not None and obs.to_act == seat, "a seat's view at its own decision"
    board = dominoes.Board()
    moves: list[tuple[Any, bool] | None] = []
    starting = package_player(seat, rules)  # before the first tile: this seat opens
    for event in obs.events:  # a deferral or a redeal answer is no move of the package's
        if isinstance(event, Play):
            if not moves:
                starting = package_player(event.seat, rules)
            move = (_domino(event.tile), event.end is End.LEFT)
            board.add(*move)
            moves.append(move)
        elif isinstance(event, Pass):
            moves.append(None)
    me = package_player(seat, rules)
    hands = _hands(obs, me)
    game = dominoes.Game(board, hands, moves, me, (), starting, None)
    if moves:
        game._update_valid_moves()  # the package's own rule, as its make_move applies it
    else:
        game.valid_moves = tuple((d, True) for d in hands[me])  # an opening: any tile
    return game


def _hands(obs: Observation, me: int) -> list[Any]:
    """Every player's hand: the seat's own, and for each other seat as many tiles as it
    holds of those nobody has seen, in tile order (placeholders, see the docstring)."""
    assert obs.seat is not None
    played = {e.tile for e in obs.events if isinstance(e, Play)}
    unseen = iter(sorted(set(full_set(MAX_PIP)) - played - set(obs.tiles)))
    hands: list[Any] = [None] * SEATS
    for seat, count in enumerate(obs.tile_counts):
        player = package_player(seat, obs.ruleset)
        tiles = obs.tiles if player == me else [next(unseen) for _ in range(count)]
        hands[player] = dominoes.Hand([_domino(t) for t in tiles])
    return hands


def _domino(tile: Tile) -> Any:
    return dominoes.Domino(tile.low, tile.high)


def capicua_action(move: tuple[Any, bool], legal: Sequence[Action]) -> Action:
    """The package's move ``(domino, left)`` as the legal capicua action it is."""
    domino, left = move
    tile = Tile.of(domino.first, domino.second)
    end = End.LEFT if left else End.RIGHT
    action = Action.play(tile, end)
    if action not in legal:
        raise ValueError(f"dominoes: the package's move {tile}:{end.letter} is not legal here")
    return action


class _PackageBot:
    """A player of the package as a capicua bot: each decision, the package's game built
    from the seat's view (:func:`package_game`), the player's first preference played. A
    single legal action is played without asking; a redeal offer is kept (the package has
    none); an opening that may be deferred is played (the package cannot defer)."""

    name: ClassVar[str]

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def player(self) -> Callable[[Any], None]:
        """The package's player for one decision."""
        raise NotImplementedError

    def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        refuse_rules(observation.ruleset)
        if len(legal_actions) == 1:
            return legal_actions[0]
        if observation.phase is Phase.REDEAL:
            return Action(ActionKind.KEEP)
        game = package_game(observation)
        player = self.player()
        with _PACKAGE_RANDOM:
            random.seed(self.rng.getrandbits(64))
            # in a random order, as the package's own deal leaves a hand: a player that does
            # not search (before start_move) keeps this order, a search's ties too, and
            # capicua's sorted hand would make that the lowest tile every time
            game.valid_moves = tuple(random.sample(game.valid_moves, len(game.valid_moves)))
            player(game)
        return capicua_action(game.valid_moves[0], legal_actions)


class ProbabilisticAlphabeta(_PackageBot):
    """The package's ``probabilistic_alphabeta``: ``sample_size`` times it deals the unseen
    tiles anew among the other hands (as the plays and passes allow), solves the hand with
    alpha-beta as if those were the hands, and plays the move found best most often.
    Before move ``start_move`` of the hand (passes count) it does not search.
    ``order``: one of the package's heuristic players (:data:`ORDERINGS`), applied first, as
    the package composes its players: it orders the moves each alpha-beta explores, and it
    decides before ``start_move`` and between moves the search found best as often
    (``identity``: the hand's order, a random one). The package's own default, every
    possible deal, is out of reach early in a hand (hundreds of millions of them):
    ``sample_size`` is a number here."""

    name: ClassVar[str] = "probabilistic_alphabeta"

    def __init__(
        self, sample_size: int = 8, start_move: int = 0, order: str = "identity", seed: int = 0
    ) -> None:
        if sample_size < 1 or start_move < 0:
            raise ValueError("sample_size must be at least 1 and start_move at least 0")
        if order not in ORDERINGS:
            raise ValueError(f"order: expected one of {', '.join(ORDERINGS)}, got {order!r}")
        super().__init__(seed)
        self.sample_size, self.start_move, self.order = sample_size, start_move, order

    def player(self) -> Callable[[Any], None]:
        order = ORDERINGS[self.order]
        search = dominoes.players.probabilistic_alphabeta(
            start_move=self.start_move, sample_size=self.sample_size, player=order
        )

        def play(game: Any) -> None:
            order(game)  # the search's sort is stable: its ties keep this order
            search(game)

        return play


class BotaGorda(_PackageBot):
    """The package's ``bota_gorda``: the tile with the most pips first."""

    name: ClassVar[str] = "bota_gorda"

    def player(self) -> Callable[[Any], None]:
        return ORDERINGS["bota_gorda"]


__all__ = [
    "ORDERINGS",
    "BotaGorda",
    "ProbabilisticAlphabeta",
    "RulesRefused",
    "capicua_action",
    "package_game",
    "package_player",
    "refuse_rules",
]
