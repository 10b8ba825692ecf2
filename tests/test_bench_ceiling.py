"""The benchmark's all-seeing ``ceiling`` player: exact on small positions, checked
against a brute force written here from the rules of ``iq-1v1`` (not from the engine), and
playable only by ``capicua bench bots``."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence

import pytest

from capicua.bench.bots import PairSpec, play_duplicate
from capicua.bench.ceiling import CeilingBot
from capicua.bots import UnknownBotError, make_bot
from capicua.cli import main
from capicua.engine.actions import End
from capicua.engine.game import Game, MatchState
from capicua.engine.observation import observe
from capicua.engine.rules import load_preset
from capicua.engine.tiles import Tile, full_set
from tests.clirunner import cli_runner

ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}

Hands = tuple[tuple[Tile, ...], tuple[Tile, ...]]


def _fits(tile: Tile, number: int) -> bool:
    return number in (tile.low, tile.high)


def _other(tile: Tile, number: int) -> int:
    return tile.high if tile.low == number else tile.low


def _block_value(hands: Hands, me: int) -> float:
    """iq-1v1 blocks: the side with fewer pips wins, equal pips: no winner."""
    mine, theirs = (sum(t.pips for t in hands[s]) for s in (me, 1 - me))
    return 0.0 if mine == theirs else (1.0 if mine < theirs else -1.0)


def _moves(hand: Sequence[Tile], left: int, right: int) -> list[tuple[Tile, End]]:
    """A seat's plays: on the left end, then the right (equal ends: once)."""
    moves = [(t, End.LEFT) for t in hand if _fits(t, left)]
    if left != right:
        moves += [(t, End.RIGHT) for t in hand if _fits(t, right)]
    return moves


def _after(
    hands: Hands, turn: int, left: int, right: int, tile: Tile, end: End
) -> tuple[Hands, int, int]:
    rest = tuple(t for t in hands[turn] if t != tile)
    new: Hands = (rest, hands[1]) if turn == 0 else (hands[0], rest)
    if end is End.LEFT:
        return new, _other(tile, left), right
    return new, left, _other(tile, right)


def brute(hands: Hands, left: int, right: int, turn: int, me: int) -> float:
    """``me``'s chance of winning the hand less its chance of losing it, the other seat
    playing uniformly at random, ``me`` playing its best: every line of play enumerated."""
    moves = _moves(hands[turn], left, right)
    if not moves:  # a pass (someone can still play: the caller checked)
        return brute(hands, left, right, 1 - turn, me)
    values = [brute_move(hands, left, right, turn, me, tile, end) for tile, end in moves]
    return max(values) if turn == me else sum(values) / len(values)


def brute_move(
    hands: Hands, left: int, right: int, turn: int, me: int, tile: Tile, end: End
) -> float:
    hands, left, right = _after(hands, turn, left, right, tile, end)
    if not hands[turn]:  # domino
        return 1.0 if turn == me else -1.0
    if not any(_fits(t, left) or _fits(t, right) for h in hands for t in h):
        return _block_value(hands, me)
    return brute(hands, left, right, 1 - turn, me)


def _small_position(game: Game, rng: random.Random, size: int) -> tuple[MatchState, Hands]:
    """A mid-hand position of iq-1v1 with ``size`` tiles a seat, seat 0 to play with a
    choice to make (the rest of the set sleeps)."""
    while True:
        tiles = list(full_set(9))
        rng.shuffle(tiles)
        hands: Hands = (tuple(tiles[:size]), tuple(tiles[size : 2 * size]))
        left, right = rng.randrange(10), rng.randrange(10)
        if len(_moves(hands[0], left, right)) < 2:
            continue
        state = game.new_position(
            seed=0, hand=0, scores=[0, 0], hands=list(hands), stock=tiles[2 * size :],
            ends=(left, right), turn=0, opener=1, last=1,
        )  # fmt: skip
        return state, hands


@pytest.mark.parametrize("size", [2, 3, 4, 5])
def test_ceiling_is_exact_against_a_brute_force(size: int) -> None:
    """Every action's value, and so the choice, is the brute force's, on random small
    positions (the brute force knows iq-1v1's rules, not the engine)."""
    game = Game(load_preset("iq-1v1"))
    rng = random.Random(size)
    for _ in range(12):
        state, hands = _small_position(game, rng, size)
        left, right = state.ends or (0, 0)
        bot = CeilingBot(0)
        bot.watch(state)
        legal = state.legal()
        expected = [
            brute_move(hands, left, right, 0, 0, a.tile, a.end)  # type: ignore[arg-type]
            for a in legal
        ]
        assert bot.values() == pytest.approx(expected)
        chosen = bot.choose(observe(state, 0), legal)
        assert expected[legal.index(chosen)] == pytest.approx(max(expected))


def test_ceiling_remembers_within_a_hand_only() -> None:
    """Its first decision values the whole rest of the hand, so the next decisions of the
    hand value nothing new; a new match starts afresh (what it remembered was another
    deal's)."""
    game = Game.from_preset("iq-1v1", ["hand_size=5"])
    state = game.new_match(3)
    bot = CeilingBot(0)
    bot.watch(state)
    rng = random.Random(1)
    searched: list[int] = []
    me = state.current_seat
    while not state.is_terminal() and state.hand == 0:
        seat = state.current_seat
        legal = state.legal()
        if seat == me:
            state.apply_action(bot.choose(observe(state, me), legal))
            searched.append(bot.positions)
        else:
            state.apply_action(legal[rng.randrange(len(legal))])
    assert len(searched) >= 2
    assert searched[0] > 0
    assert searched == [searched[0]] * len(searched)
    fresh = game.new_match(4)
    bot.watch(fresh)
    bot.values()
    assert bot.positions > 0


def test_ceiling_is_no_seat_of_a_real_match() -> None:
    """Only the benchmark builds it: the name means nothing to make_bot (CPU seats, the
    arena, ``capicua play``)."""
    with pytest.raises(UnknownBotError):
        make_bot("ceiling", 0)


def test_bench_plays_the_ceiling_against_random() -> None:
    scores, _ = play_duplicate(PairSpec("iq-1v1", "ceiling", "random"), 3, hands_per_match=1)
    assert len(scores) == 2
    result = cli_runner().invoke(
        main,
        ["bench", "bots", "--json", "--pairs", "ceiling:random", "--presets", "iq-1v1",
         "--hands", "2", "--workers", "1", "--hands-per-match", "1"],
        env=ENV,
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    (pair,) = json.loads(result.stdout.strip().splitlines()[-1])["pairs"]
    assert (pair["a"], pair["b"], pair["hands"]) == ("ceiling", "random", 2)
