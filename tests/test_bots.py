"""The built-in bots: legal in every preset, hard reproducible and blind to hidden tiles,
and the shape of ``capicua bench bots`` (never its speed or strength)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from click.testing import Result

from capicua.bench.bots import (
    FAST_FACTOR,
    PairSpec,
    make_level,
    play_duplicate,
    run_bots_bench,
    wilson,
)
from capicua.bots import BUILTIN, LEVELS, Bot, HardBot, UnknownBotError, make_bot
from capicua.bots.hard import _Node, pick_root
from capicua.bots.local import play_local
from capicua.cli import main
from capicua.engine.actions import Action, ActionKind
from capicua.engine.game import Game, MatchState
from capicua.engine.observation import Observation, observe
from capicua.engine.rules import load_preset, preset_names
from capicua.engine.tiles import Tile, full_set
from tests.clirunner import cli_runner

TINY_HARD: dict[str, Any] = {"budget_ms": None, "iterations": 12}
ENV = {"COLUMNS": "200", "NO_COLOR": "1", "FORCE_COLOR": None, "TTY_COMPATIBLE": None}


def _bot(name: str, seed: int) -> Bot:
    return make_bot(name, seed, **(TINY_HARD if name == "hard" else {}))


def test_registry_has_every_level() -> None:
    assert set(LEVELS) <= set(BUILTIN)
    for name in LEVELS:
        bot = make_bot(name, 1, **(TINY_HARD if name == "hard" else {}))
        assert isinstance(bot, Bot)
        assert bot.name == name
    with pytest.raises(UnknownBotError):
        make_bot("grandmaster")


@pytest.mark.parametrize(
    ("name", "options", "error", "message"),
    [
        ("hard", {"depht": 3}, TypeError, "hard: unknown option 'depht' (known: batch, budget_ms"),
        (
            "hard",
            {"iterations": "many"},
            ValueError,
            "hard: iterations must be an integer, got 'many'",
        ),
        ("hard", {"epsilon": None}, ValueError, "hard: epsilon must be a number, got None"),
        ("hard", {"search": "deep"}, ValueError, "hard: search must be one of tree, flat"),
        ("hard", {"budget_ms": 0}, ValueError, "hard: needs a time budget, an iteration budget"),
        ("random", {"iterations": 5}, TypeError, "random: takes no options, got iterations"),
        ("medium", {"depth": 2}, TypeError, "medium: takes no options, got depth"),
    ],
)
def test_a_bad_option_is_refused_by_name_before_the_bot_is_built(
    name: str, options: dict[str, Any], error: type[Exception], message: str
) -> None:
    # in the same words in the compiled build, whose classes check their arguments' types
    # themselves as they are called
    with pytest.raises(error) as raised:
        make_bot(name, 1, **options)
    assert str(raised.value).startswith(message)


@pytest.mark.parametrize("preset", preset_names())
def test_every_bot_plays_legally_in_every_seat(preset: str) -> None:
    """A short match per preset with each level taking turns in every seat (play_local
    raises if a bot returns an action that is not legal)."""
    ruleset = load_preset(preset, ["max_hands=2"])
    game = Game(ruleset)
    levels = ["hard", "medium", "easy", "random"]
    for shift in range(len(levels)):
        names = [levels[(s + shift) % len(levels)] for s in range(ruleset.seats)]
        state = play_local(game, 11 + shift, [_bot(n, s) for s, n in enumerate(names)])
        assert state.is_terminal()


def test_bots_answer_redeal_and_defer() -> None:
    """cuban offers redeals and lets the opening side defer: every level copes."""
    ruleset = load_preset("cuban", ["max_hands=3", "redeal_min_doubles=2"])
    game = Game(ruleset)
    kinds: set[ActionKind] = set()
    for seed in range(6):
        bots = [_bot(LEVELS[(seed + s) % 4], s) for s in range(4)]
        state = game.new_match(seed)
        while not state.is_terminal():
            seat = state.current_seat
            assert seat is not None
            legal = state.legal()
            action = bots[seat].choose(observe(state, seat), legal)
            assert action in legal
            if len(legal) > 1:
                kinds.add(action.kind)
            state.apply_action(action)
    assert ActionKind.PLAY in kinds
    assert kinds & {ActionKind.REDEAL, ActionKind.KEEP}


def _decision(preset: str, seed: int, overrides: tuple[str, ...] = ()) -> MatchState:
    """A match at a decision with several legal plays, some tiles already played."""
    game = Game(load_preset(preset, overrides))
    state = game.new_match(seed)
    rng = random.Random(seed)
    while True:
        legal = state.legal_actions()
        assert not state.is_terminal()
        if len(legal) > 1 and len(state.log.raw_events()) >= 4:
            return state
        state.apply(legal[rng.randrange(len(legal))])


@pytest.mark.parametrize("preset", ["iq-1v1", "block", "el-dominito-2p"])
def test_hard_is_reproducible_with_seed_and_iterations(preset: str) -> None:
    state = _decision(preset, 3)
    seat = state.current_seat
    assert seat is not None
    obs = observe(state, seat)
    legal = state.legal()
    first = HardBot(7, budget_ms=None, iterations=60).choose(obs, legal)
    bot = HardBot(7, budget_ms=None, iterations=60)
    assert bot.choose(obs, legal) == first
    assert bot.choose(obs, legal) == first  # a second call on the same position too
    for search in ("flat", "tree"):
        again = HardBot(7, budget_ms=None, iterations=40, search=search)
        assert again.choose(obs, legal) == again.choose(obs, legal)


@pytest.mark.parametrize("preset", ["iq-1v1", "cuban", "draw", "iq-ffa"])
def test_hard_rollout_options_play_whole_matches(preset: str) -> None:
    """The experiment options for my side's rollouts (``own_rollout``, ``own_epsilon``)
    play legal matches with any number of seats and either kind of stock."""
    ruleset = load_preset(preset, ["max_hands=2"])
    game = Game(ruleset)
    for options in (
        {"own_rollout": "aware"},
        {"own_epsilon": 0.0},
        {"final": "mean"},
        {"final": "lcb"},
        {"keys": "own"},
    ):
        bots: list[Bot] = [
            HardBot(s, budget_ms=None, iterations=12, **options)
            if s % 2 == 0
            else _bot("random", s)
            for s in range(ruleset.seats)
        ]
        assert play_local(game, 5, bots).is_terminal()
    with pytest.raises(ValueError, match="own_rollout"):
        HardBot(1, budget_ms=None, iterations=12, own_rollout="perfect")
    with pytest.raises(ValueError, match="final"):
        HardBot(1, budget_ms=None, iterations=12, final="best")


def test_hard_final_choice_rules() -> None:
    """The three ways to pick the root action from the same statistics: the most visited
    (10), the best mean (12, seen only 4 times) and the best lower bound of the mean (11:
    0.15 - 2 * 0.3 / sqrt(60) beats 0.10 - 2 * 0.3 / 10 and 0.30 - 2 * 0.3 / 2)."""
    root = _Node()
    root.visits = {10: 100, 11: 60, 12: 4, 13: 0}
    root.totals = {10: 10.0, 11: 9.0, 12: 1.2, 13: 0.0}
    codes = [13, 10, 11, 12]
    assert codes[pick_root(codes, root, "visits", 0.3)] == 10
    assert codes[pick_root(codes, root, "mean", 0.3)] == 12
    assert codes[pick_root(codes, root, "lcb", 0.3)] == 11
    # a tie in visits goes to the better mean; never to an action not visited
    root.visits[11] = 100
    root.totals[11] = 15.0
    assert codes[pick_root(codes, root, "visits", 0.3)] == 11


def _dealt(order: list[Tile]) -> Any:
    def dealer(hand: int, attempt: int) -> list[Tile]:
        return order

    return dealer


def test_hard_never_reads_hidden_state() -> None:
    """Two deals that differ only in tiles seat 1 cannot see (seat 0's hand and the
    sleeping stock swap tiles) give seat 1 the same observation, so hard (fixed seed and
    iterations) must choose the same action in both."""
    game = Game(load_preset("iq-1v1"))
    tiles = list(full_set(9))
    mine = [Tile.parse(t) for t in ("2-9", "5-9", "7-9", "1-3", "0-4", "2-6", "3-8", "4-5")]
    mine += [Tile(6, 7), Tile(0, 0)]
    opener = [Tile(9, 9)]
    rest = [t for t in tiles if t not in mine and t not in opener]
    hidden_a = opener + rest[:9]  # seat 0 opens 9-9, then 9 unknown tiles
    hidden_b = opener + rest[9:18]
    stock_a = [t for t in rest if t not in hidden_a]
    stock_b = [t for t in rest if t not in hidden_b]
    a = game.new_match(1, dealer=_dealt(hidden_a + mine + stock_a))
    b = game.new_match(1, dealer=_dealt(hidden_b + mine + stock_b))
    assert a.current_seat == b.current_seat == 1
    obs_a, obs_b = observe(a, 1), observe(b, 1)
    assert obs_a == obs_b
    assert a.hand_of(0) != b.hand_of(0)
    legal = a.legal()
    assert legal == b.legal() and len(legal) == 3
    choice_a = HardBot(5, budget_ms=None, iterations=80).choose(obs_a, legal)
    choice_b = HardBot(5, budget_ms=None, iterations=80).choose(obs_b, legal)
    assert choice_a == choice_b


def test_hard_needs_only_the_observation() -> None:
    """hard works from an Observation alone: no state exists when it decides."""
    state = _decision("block", 5)
    seat = state.current_seat
    assert seat is not None
    obs: Observation = observe(state, seat)
    legal: list[Action] = state.legal()
    del state
    action = HardBot(1, budget_ms=None, iterations=30).choose(obs, legal)
    assert action in legal


def test_hard_time_budget_is_respected_roughly() -> None:
    """A time-budgeted decision returns a legal action (its duration is not asserted)."""
    state = _decision("iq-1v1", 9)
    seat = state.current_seat
    assert seat is not None
    bot = HardBot(None, budget_ms=5)
    assert bot.choose(observe(state, seat), state.legal()) in state.legal()
    assert bot.last_iterations >= 1


def test_duplicate_pair_swaps_sides() -> None:
    spec = PairSpec("block", "easy", "random")
    scores, _ = play_duplicate(spec, 4, hands_per_match=1)
    assert len(scores) == 2
    # the same bot on both sides: the two games of a pair are mirror images
    same = PairSpec("iq-1v1", "easy", "easy")
    mirror, _ = play_duplicate(same, 4, hands_per_match=1)
    assert mirror[0].margin == -mirror[1].margin


def test_wilson_interval() -> None:
    lo, hi = wilson(70, 100)
    assert 0.6 < lo < 0.7 < hi < 0.8
    assert wilson(0, 0) == (0.0, 1.0)


def test_bench_caps_hands_per_pair() -> None:
    """Pairs with hard stop at ``hands``; pairs of the fast bots may play FAST_FACTOR
    times as many; a pair whose interval clears 50% stops once it has ``min_hands``."""
    report = run_bots_bench(
        [PairSpec("iq-1v1", "hard", "random"), PairSpec("iq-1v1", "easy", "easy")],
        hands=4,
        min_hands=10**6,
        iterations=3,
        workers=1,
        hands_per_match=1,
    )
    hard, fast = report.pairs
    assert hard.hands == 4
    assert fast.hands == 4 * FAST_FACTOR
    assert not hard.stopped_early and not fast.stopped_early
    early = run_bots_bench(
        [PairSpec("block", "medium", "random")], hands=200, min_hands=2, workers=1
    )
    assert early.pairs[0].hands < 200 * FAST_FACTOR
    assert early.pairs[0].stopped_early


def _bench(*args: str) -> Result:
    return cli_runner().invoke(main, ["bench", "bots", *args], env=ENV, catch_exceptions=False)


def test_bench_bots_json_shape() -> None:
    result = _bench(
        "--json", "--hands", "2", "--budget-ms", "2", "--workers", "1",
        "--hands-per-match", "1", "--presets", "iq-1v1,block",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout.strip().splitlines()[-1])
    pairs = out["pairs"]
    assert [(p["preset"], p["a"], p["b"]) for p in pairs] == [
        (preset, a, b)
        for preset in ("iq-1v1", "block")
        for a, b in (("hard", "medium"), ("medium", "easy"), ("easy", "random"), ("hard", "random"))
    ]
    for p in pairs:
        assert {"preset", "a", "b", "hands", "hand_win_rate", "ci95", "points_margin"} <= set(p)
        assert p["hands"] == (2 if "hard" in (p["a"], p["b"]) else 2 * FAST_FACTOR)
        assert 0.0 <= p["hand_win_rate"] <= 1.0
        lo, hi = p["ci95"]
        assert 0.0 <= lo <= hi <= 1.0
        assert isinstance(p["points_margin"], (int, float))
        # each bot's decisions, and how many it makes per second of its own thinking
        for bot in ("a", "b"):
            assert p[f"{bot}_decisions"] > 0
            assert p[f"{bot}_decisions_per_s"] > 0


def test_bench_bots_times_each_bots_decisions() -> None:
    """A duplicate pair counts every decision each bot was asked for (the engine's forced
    moves are not decisions) and the time it spent in them, per side."""
    spec = PairSpec("iq-1v1", "hard", "random")
    scores, timing = play_duplicate(spec, 5, hands_per_match=1, iterations=3)
    asked = [0, 0]
    for shift in (0, 1):
        game = Game(load_preset("iq-1v1"))
        names = [spec.a if (s + shift) % 2 == 0 else spec.b for s in range(2)]
        bots = [make_level(n, 5 * 1000 + s, 100.0, 3) for s, n in enumerate(names)]
        state = game.new_match(5)
        while not state.is_terminal() and state.hand < 1:
            seat = state.current_seat
            assert seat is not None
            asked[0 if names[seat] == spec.a else 1] += 1
            state.apply_action(bots[seat].choose(observe(state, seat), state.legal()))
    assert len(scores) == 2
    assert timing.decisions == asked
    assert all(t > 0 for t in timing.thinking)
    assert timing.seconds >= sum(timing.thinking)


def test_bench_bots_table_and_errors() -> None:
    result = _bench(
        "--hands", "2", "--iterations", "5", "--workers", "1", "--hands-per-match", "1",
        "--presets", "block", "--pairs", "medium:easy",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "medium vs easy" in result.stdout
    bad = _bench("--pairs", "hard:grandmaster")
    assert bad.exit_code == 2
    assert "grandmaster" in bad.stderr
    odd = _bench("--presets", "cutthroat", "--pairs", "easy:random")
    assert odd.exit_code == 2
    assert "even number of seats" in odd.stderr


def test_utility_scores_the_hand_and_the_match() -> None:
    """The search's reward: the change in the score edge over the target, plus a large
    term when the hand decides the match."""
    from capicua.bots.evaluation import MATCH_WEIGHT, utility
    from capicua.bots.inference import one_hand_game

    ruleset = load_preset("iq-1v1")
    game = one_hand_game(ruleset)
    hands = [[Tile(3, 5)], [Tile(0, 0), Tile(1, 1)]]  # seat 0 goes out on 5|3 ends

    def finish(scores: list[int]) -> float:
        state = game.new_position(
            seed=0, hand=0, scores=scores, hands=hands, stock=[], ends=(5, 3), turn=0, last=1
        )
        state.apply(state.legal_actions()[0])
        assert state.is_terminal()
        return utility(state, 0, scores, ruleset)

    # 2 pips left with the opponent, doubled by the capicua (3-5 fits both ends): 4 points
    assert finish([0, 10]) == pytest.approx(4 / 100)
    assert finish([98, 10]) == pytest.approx(4 / 100 + MATCH_WEIGHT)
