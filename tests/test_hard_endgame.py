"""``hard`` late in a hand: every sampled world solved exactly (``endgame``), checked
against the benchmark's all-seeing ``ceiling`` where the seat can know every tile, and
the tree search kept where the rest of the hand is too big to solve."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pytest

from capicua.bench.ceiling import CeilingBot
from capicua.bots import Bot, HardBot, make_bot
from capicua.bots.exact import ExactSearch
from capicua.bots.local import play_local
from capicua.bots.policy import GREEDY, RANDOM
from capicua.engine.actions import Action
from capicua.engine.game import Game, MatchState
from capicua.engine.observation import Observation, observe
from capicua.engine.rules import load_preset

#: Double-three, five tiles a seat: nothing sleeps, so the seat to play can tell every
#: hidden tile (the other hand is the set less its own tiles and the chain).
KNOWN = ["max_pip=3", "hand_size=5"]


def _decisions(game: Game, seed: int) -> list[MatchState]:
    """The positions of the first hand of match ``seed`` (random play) where seat 0 has a
    choice."""
    state = game.new_match(seed)
    rng = random.Random(seed)
    found: list[MatchState] = []
    while not state.is_terminal() and state.hand == 0:
        legal = state.legal_actions()
        if state.current_seat == 0 and len(legal) > 1:
            found.append(state.clone())
        state.apply(legal[rng.randrange(len(legal))])
    return found


def test_hard_plays_the_exact_best_when_every_tile_is_known() -> None:
    """Where nothing sleeps, every world ``hard`` samples is the real one, so with
    ``endgame`` it plays a move the all-seeing ceiling values best (the hand's win
    weighed far above its points, as the ceiling plays for)."""
    game = Game.from_preset("iq-1v1", KNOWN)
    checked = 0
    for seed in range(30):
        for state in _decisions(game, seed):
            ceiling = CeilingBot(0)
            ceiling.watch(state)
            values = ceiling.values()
            bot = HardBot(
                seed, budget_ms=None, iterations=4, endgame=10_000,
                opponents="random", hand_weight=100.0,
            )  # fmt: skip
            chosen = bot.choose(observe(state, 0), state.legal())
            assert bot.last_search == "exact"
            assert values[state.legal().index(chosen)] == pytest.approx(max(values))
            checked += 1
    assert checked >= 20


def test_hard_searches_the_tree_where_the_hand_is_too_big_to_solve() -> None:
    """At a hand's first decisions on the real set a world has far more positions than a
    small ``endgame`` allows: the tree search decides, with the whole iteration budget."""
    game = Game.from_preset("iq-1v1")
    state = _decisions(game, 4)[0]
    bot = HardBot(1, budget_ms=None, iterations=30, endgame=50)
    assert bot.choose(observe(state, 0), state.legal()) in state.legal()
    assert (bot.last_search, bot.last_iterations) == ("tree", 30)
    late = _decisions(game, 4)[-1]
    assert bot.choose(observe(late, 0), late.legal()) in late.legal()
    assert bot.last_search == "exact"


def test_exact_search_weighs_a_greedy_seat_by_its_rule() -> None:
    """A seat modelled as greedy with no random share plays only easy's best moves, so the
    expectation over it is the average over those alone; with a random share of 1 it is
    the uniform one."""
    game = Game.from_preset("iq-1v1", KNOWN)
    state = _decisions(game, 4)[0]
    leaf = _won_or_lost(0)
    uniform = ExactSearch(0, 0, leaf, [RANDOM, RANDOM]).values(state)
    assert ExactSearch(0, 0, leaf, [RANDOM, GREEDY], epsilon=1.0).values(state) == uniform
    greedy = ExactSearch(0, 0, leaf, [RANDOM, GREEDY], epsilon=0.0)
    assert greedy.values(state) != uniform
    assert all(abs(v) <= 1.0 for v in greedy.values(state))


def _won_or_lost(side: int) -> Callable[[MatchState], float]:
    def leaf(state: MatchState) -> float:
        score = state.log.hands[0].score
        if score is None or score.winner is None:
            return 0.0
        return 1.0 if score.winner == side else -1.0

    return leaf


@pytest.mark.parametrize("preset", ["iq-1v1", "cuban", "draw", "iq-ffa"])
def test_hard_plays_whole_matches_with_endgame(preset: str) -> None:
    """With any number of seats, teams, a drawn or sleeping stock and deferred openings,
    the exact search's worlds play legal matches to their end (the engine checks every
    move), some decisions by it."""
    ruleset = load_preset(preset, ["max_hands=2"])
    game = Game(ruleset)
    hard = [HardBot(s, budget_ms=None, iterations=40, endgame=300) for s in range(0, 4, 2)]
    searched: list[str] = []

    class Watched:
        name = "hard"

        def __init__(self, bot: HardBot) -> None:
            self.bot = bot

        def choose(self, observation: Observation, legal: Sequence[Action]) -> Action:
            action = self.bot.choose(observation, legal)
            searched.append(self.bot.last_search)
            return action

    bots: list[Bot] = [
        Watched(hard[s // 2]) if s % 2 == 0 else make_bot("random", s) for s in range(ruleset.seats)
    ]
    assert play_local(game, 5, bots).is_terminal()
    assert "exact" in searched
