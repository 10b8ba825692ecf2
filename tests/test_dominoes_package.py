"""The PyPI ``dominoes`` package's players as capicua bots
(capicua.integrations.dominoes_package): the package's game built from a seat's view is
that seat's position (the chain, its tiles, every seat's count, the plays and passes, its
legal plays) on seeded matches, whether the view comes from the engine or from the server's
wire; it holds nothing the seat cannot see; its moves are legal over whole matches, in
process and over the protocol in a tournament; rulesets that are not its game, its
``omniscient`` player and a missing package are refused in one line."""

from __future__ import annotations

import random
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

dominoes = pytest.importorskip("dominoes", reason="the dominoes package is not installed")

from capicua.arena.config import BotSpec, TournamentError  # noqa: E402
from capicua.engine.actions import Action, ActionKind  # noqa: E402
from capicua.engine.game import Game, MatchState  # noqa: E402
from capicua.engine.observation import Observation, observe  # noqa: E402
from capicua.engine.records import Pass, Play  # noqa: E402
from capicua.engine.rules import load_preset, preset_names  # noqa: E402
from capicua.engine.tiles import Tile, full_set  # noqa: E402
from capicua.integrations import dominoes_package as dp  # noqa: E402

#: block as it is, and played clockwise (the package's numbering is then capicua's)
BLOCKS = [("block", ["target=60"]), ("block", ["target=60", "turn_order=clockwise"])]


def _tile(domino: Any) -> Tile:
    return Tile.of(domino.first, domino.second)


def _decisions(
    rules: tuple[str, list[str]], seed: int, rng: random.Random
) -> Iterator[tuple[MatchState, Observation, list[Action]]]:
    """Every decision of a seeded match played at random: the match, the view of the seat
    to act, its legal actions (the caller may look before the random move is applied)."""
    match = Game.from_preset(rules[0], rules[1]).new_match(seed)
    while not match.is_terminal():
        seat = match.current_seat
        assert seat is not None
        legal = match.legal()
        yield match, observe(match, seat), legal
        match.apply_action(rng.choice(legal))


@pytest.mark.parametrize("rules", BLOCKS)
def test_the_package_game_is_the_seats_position(rules: tuple[str, list[str]]) -> None:
    """At every decision of seeded matches: the package's board is the chain (its ends and
    length), the seat's hand is its tiles, every other hand as many tiles as the seat
    holds and all of them the tiles nobody has seen, the moves the hand's plays and passes
    from the seat that opened; the package's valid moves translate to exactly the seat's
    legal plays; and what the package infers from the passes is true of the real hands."""
    rng = random.Random(5)
    checked = 0
    for seed in (1, 2):
        for match, obs, legal in _decisions(rules, seed, rng):
            seat = obs.seat
            assert seat is not None
            game = dp.package_game(obs)
            me = dp.package_player(seat, obs.ruleset)
            assert game.turn == me and game.result is None
            assert len(game.board) == len(obs.chain)
            if obs.ends is not None:
                assert (game.board.left_end(), game.board.right_end()) == obs.ends
            assert sorted(map(_tile, game.hands[me])) == sorted(obs.tiles)
            played = {e.tile for e in obs.events if isinstance(e, Play)}
            others = [_tile(d) for p, h in enumerate(game.hands) if p != me for d in h]
            assert sorted(others) == sorted(set(full_set(6)) - played - set(obs.tiles))
            for s in range(4):
                assert len(game.hands[dp.package_player(s, obs.ruleset)]) == obs.tile_counts[s]
            moves = [e for e in obs.events if isinstance(e, Play | Pass)]
            assert [m is None for m in game.moves] == [isinstance(e, Pass) for e in moves]
            if obs.opener is not None:
                assert game.starting_player == dp.package_player(obs.opener, obs.ruleset)
            plays = {a for a in legal if a.kind is ActionKind.PLAY}
            assert {dp.capicua_action(m, legal) for m in game.valid_moves} == plays
            assert len(game.valid_moves) == len(plays)
            for s, lacks in enumerate(game.missing_values()):
                true_seat = next(q for q in range(4) if dp.package_player(q, obs.ruleset) == s)
                pips = {p for t in match.hand_of(true_seat) for p in t}
                assert not lacks & pips, "a pass read into the package's game is wrong"
            checked += 1
    assert checked > 100


def test_the_views_the_server_sends_give_the_same_game() -> None:
    """The SDK hands a bot the Observation it rebuilds from the server's View: the package's
    game from it is the one from the engine's own view."""
    from capicua.wire import codec
    from capicua.wire.views import ViewBuilder, observation_from_view

    engine = Game.from_preset("block", ["target=60"])
    views = ViewBuilder(codec.ruleset_to_proto(engine.ruleset), ["a"] * 4)
    rng = random.Random(3)
    match = engine.new_match(9)
    compared = 0
    while not match.is_terminal():
        seat = match.current_seat
        assert seat is not None
        wire = observation_from_view(views.view_of(match, seat))
        assert dp.package_game(wire) == dp.package_game(observe(match, seat))
        compared += 1
        match.apply_action(rng.choice(match.legal()))
    assert compared > 40


def _dealer(order: Sequence[Tile]) -> Any:
    """A dealer of ``order`` for the first hand and seeded deals after it."""

    def deal(hand: int, attempt: int) -> Sequence[Tile]:
        if hand == 0:
            return order
        later = list(full_set(6))
        random.Random(hand * 7 + attempt).shuffle(later)
        return later

    return deal


def test_nothing_the_seat_cannot_see_reaches_the_package() -> None:
    """Two deals that differ in two tiles of two other seats, played alike: wherever the seat
    sees the same thing in both, the package gets the same game and the bot makes the
    same choice, though the real hands differ; and the other seats' hands in the package's
    game are the unseen tiles in tile order, never the real ones."""
    engine = Game.from_preset("block", ["target=60"])
    rng = random.Random(8)
    compared = chosen = 0
    for trial in range(16):
        order = list(full_set(6))
        rng.shuffle(order)
        seat = trial % 4
        a, b = (seat + 1) % 4, (seat + 2) % 4  # two other seats
        i, j = a * 7 + rng.randrange(7), b * 7 + rng.randrange(7)
        twin_order = list(order)
        twin_order[i], twin_order[j] = twin_order[j], twin_order[i]
        match = engine.new_match(1, dealer=_dealer(order))
        twin = engine.new_match(1, dealer=_dealer(twin_order))
        while match.hand == 0 and not match.is_terminal():
            legal = match.legal()
            if match.current_seat == seat and observe(twin, seat) == observe(match, seat):
                assert match.hand_of(a) != twin.hand_of(a)
                game = dp.package_game(observe(match, seat))
                assert game == dp.package_game(observe(twin, seat))
                me = dp.package_player(seat, engine.ruleset)
                unseen = sorted(_tile(d) for p, h in enumerate(game.hands) if p != me for d in h)
                hands = [game.hands[dp.package_player(s, engine.ruleset)] for s in range(4)]
                placed = [sorted(map(_tile, h)) for s, h in enumerate(hands) if s != seat]
                assert [t for h in placed for t in h] == unseen  # in tile order, seat by seat
                compared += 1
                if len(legal) > 1 and len(observe(match, seat).chain) >= 8 and chosen < 4:
                    bots = [dp.ProbabilisticAlphabeta(sample_size=2, seed=4) for _ in range(2)]
                    assert bots[0].choose(observe(match, seat), legal) == bots[1].choose(
                        observe(twin, seat), twin.legal()
                    )
                    chosen += 1
            # the swapped tiles kept back while the seats can: the twins last longer
            keep = [x for x in legal if x.tile not in (order[i], order[j])]
            action = rng.choice(keep or legal)
            if twin.current_seat != match.current_seat or action not in twin.legal():
                break  # a swapped tile is played, or passes differ: the deals show
            match.apply_action(action)
            twin.apply_action(action)
    assert compared > 20 and chosen >= 2


@pytest.mark.parametrize("rules", BLOCKS)
def test_every_move_is_legal_over_whole_matches(rules: tuple[str, list[str]]) -> None:
    """The package's search (and its heaviest-tile player) for one side of whole matches,
    every decision from the seat's view: always legal, and a fixed seed replays them. With
    ``order = "bota_gorda"`` the search plays the heaviest tile before ``start_move``, as
    the heaviest-tile player always does."""
    engine = Game.from_preset(rules[0], rules[1])
    choices: list[list[Action]] = []
    for _ in range(2):
        made: list[Action] = []
        search = dp.ProbabilisticAlphabeta(sample_size=2, start_move=10, order="bota_gorda", seed=3)
        bots = [search, dp.BotaGorda()]
        rng = random.Random(4)
        match = engine.new_match(11)
        while not match.is_terminal():
            seat = match.current_seat
            assert seat is not None
            legal = match.legal()
            if seat % 2 == 0:
                obs = observe(match, seat)
                action = bots[seat // 2].choose(obs, legal)
                assert action in legal and action.tile is not None
                if seat == 2 or sum(isinstance(e, Play | Pass) for e in obs.events) < 10:
                    assert action.tile.pips == max(a.tile.pips for a in legal if a.tile)
                made.append(action)
            else:
                action = rng.choice(legal)
            match.apply_action(action)
        choices.append(made)
    assert len(choices[0]) > 20 and choices[0] == choices[1]


def test_only_the_package_game_is_played() -> None:
    """Every preset whose hands are not double-six, four seats in teams, seven tiles each
    is refused in one line that says what differs; the others are played."""
    played = []
    for name in preset_names():
        rules = load_preset(name)
        game = (rules.max_pip, rules.seats, rules.sides.value, rules.hand_size, rules.exclude)
        if game == (6, 4, "teams", 7, ()):
            dp.refuse_rules(rules)
            played.append(name)
            continue
        with pytest.raises(dp.RulesRefused) as refused:
            dp.refuse_rules(rules)
        line = str(refused.value)
        assert "\n" not in line and line.startswith("dominoes: the package plays double-six")
        assert f"; {name} has " in line
    assert "block" in played and "cuban" not in played
    short = load_preset("block").with_overrides(['exclude=["0-0"]', "hand_size=6"])
    with pytest.raises(dp.RulesRefused, match="block has a set of 27 tiles up to 6, 6 tiles each"):
        dp.refuse_rules(short)
    cuban = Game.from_preset("cuban").new_match(1)
    seat = cuban.current_seat
    assert seat is not None
    with pytest.raises(dp.RulesRefused, match="cuban has a set of 55 tiles up to 9, 10 tiles"):
        dp.BotaGorda().choose(observe(cuban, seat), cuban.legal())


def test_the_arena_refuses_what_it_cannot_play(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """At load time, one line each: a preset that is not the package's game, the
    ``omniscient`` player, an unknown player, options the class refuses, a missing
    package; and ``capicua arena sprt`` says the same of ``--rules``."""
    from capicua.cli import main
    from tests.arenakit import tournament
    from tests.clirunner import cli_runner

    bot = {"spec": "dominoes:probabilistic_alphabeta", "options": {"sample_size": 2}}
    with pytest.raises(TournamentError, match=r"^preset: dominoes: .*; cuban has a set of 55"):
        tournament(preset="cuban", bots={"a": bot, "b": "builtin:random"})
    with pytest.raises(TournamentError, match="omniscient is not offered: it searches every"):
        tournament(bots={"a": "dominoes:omniscient", "b": "builtin:random"})
    with pytest.raises(TournamentError, match="unknown dominoes bot 'alphabeta'; known: prob"):
        tournament(bots={"a": "dominoes:alphabeta", "b": "builtin:random"})
    bad = {"spec": "dominoes:probabilistic_alphabeta", "options": {"sample_size": 0}}
    with pytest.raises(TournamentError, match="probabilistic_alphabeta refuses them: sample_size"):
        tournament(bots={"a": bad, "b": "builtin:random"})
    result = cli_runner().invoke(
        main,
        ["arena", "sprt", "--base", "hard", "--candidate", "dominoes:bota_gorda",
         "--rules", "iq-2v2", "--out", str(tmp_path / "out"), "--max-pairs", "1"],
    )  # fmt: skip
    assert result.exit_code == 2 and not (tmp_path / "out").exists()
    assert "--rules: dominoes: the package plays double-six" in result.output
    assert "iq-2v2 has a set of 55 tiles up to 9, 10 tiles each" in result.output
    monkeypatch.setitem(sys.modules, "dominoes", None)  # as if it were not installed
    with pytest.raises(TournamentError, match=r"dominoes: bots need the dominoes package: pip "):
        BotSpec.parse("a", "dominoes:bota_gorda")


def test_dominoes_bots_in_an_arena_file(tmp_path: Path) -> None:
    """``dominoes:probabilistic_alphabeta`` runs as ``capicua bot run
    capicua.integrations.dominoes_package:ProbabilisticAlphabeta``; a real tournament over
    the protocol plays it and ``dominoes:bota_gorda`` against a built-in bot without one
    error (every move legal, as the server checks it)."""
    from capicua.arena.supervisor import bot_argv
    from tests.arenakit import standings_of_file

    spec = BotSpec.from_toml(
        "ab", {"spec": "dominoes:probabilistic_alphabeta", "options": {"sample_size": 2}}, tmp_path
    )
    assert bot_argv(spec)[3:] == [
        "bot", "run", "capicua.integrations.dominoes_package:ProbabilisticAlphabeta",
        "--option", "sample_size=2", "--log-level", "warning",
    ]  # fmt: skip
    rows = standings_of_file(
        tmp_path,
        'name = "dominoes"\npreset = "block"\noverrides = ["target=30"]\ngames = 1\n'
        '[bots]\nrandom = "builtin:random"\ngorda = "dominoes:bota_gorda"\n'
        'ab = { spec = "dominoes:probabilistic_alphabeta", options = { sample_size = 2, '
        "start_move = 12, seed = 2 } }\n",
    )
    for name in ("ab", "gorda"):
        assert rows[name]["matches"] == 4 and rows[name]["errors_total"] == 0
        assert rows[name]["think"]["decisions"] > 0
