"""capicua rulesets as OpenSpiel games (capicua.integrations.openspiel): OpenSpiel's own
random-simulation checks (legal actions, chance outcomes summing to 1, clones, serialised
states), the same seeds played through OpenSpiel and through ``capicua play`` giving the same
matches, nothing hidden in a player's strings or tensors, and OpenSpiel's IS-MCTS playing
full matches through ``resample_from_infostate``."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pyspiel = pytest.importorskip("pyspiel", reason="open_spiel is not installed")

import numpy as np  # noqa: E402  (after the skip: numpy comes with open_spiel)

from capicua.engine.dealing import opener_rng  # noqa: E402
from capicua.engine.records import Defer, Play, RedealChoice  # noqa: E402
from capicua.engine.replay import decision_code, verify  # noqa: E402
from capicua.integrations import openspiel as cos  # noqa: E402
from capicua.wire.codec import read_replay  # noqa: E402

#: (preset, overrides) short enough for a test: every decision kind and chance node among
#: them (cuban: redeal offers, DEFER, a random opening seat; draw: drawing; cutthroat: 3
#: seats; iq-1v1: 2 seats drawing).
RULES = [
    ("block", "target:30"),
    ("cuban", "target:40"),
    ("draw", "target:30"),
    ("iq-1v1", "target:40"),
    ("cutthroat", "target:2"),
    ("dominican", "target:60"),
]


def random_walk(state: Any, rng: random.Random) -> Any:
    """One random step: a chance outcome by its probability, else a uniform legal action."""
    if state.is_chance_node():
        outcomes, odds = zip(*state.chance_outcomes(), strict=True)
        state.apply_action(rng.choices(outcomes, odds)[0])
    else:
        state.apply_action(rng.choice(state.legal_actions()))
    return state


@pytest.mark.parametrize(("preset", "overrides"), RULES)
def test_openspiels_random_simulation_checks_pass(preset: str, overrides: str) -> None:
    game = pyspiel.load_game(f"capicua(preset={preset},set={overrides})")
    pyspiel.random_sim_test(game, num_sims=2, serialize=True, verbose=False)


def test_parameters_and_their_errors() -> None:
    game = pyspiel.load_game("capicua", {"preset": "dominican", "set": "target=60;stock=draw"})
    # kept in the form a game string carries: the game loads again from its own string
    assert game.get_parameters()["set"] == "target:60;stock:draw"
    again = pyspiel.load_game(str(game))
    assert again.get_parameters() == game.get_parameters()
    assert game.num_players() == 4 and game.num_distinct_actions() == 2 * 28 + 3
    assert pyspiel.load_game("capicua(preset=iq-1v1)").num_players() == 2
    # the form: OpenSpiel hands `set=target=150` over as the parameter `set=target`
    cuban = pyspiel.load_game("capicua(preset=cuban,set=target=150,set=stock=draw)")
    assert (cuban.engine.ruleset.target, cuban.engine.ruleset.stock.value) == (150, "draw")
    assert pyspiel.load_game(str(cuban)).engine.ruleset == cuban.engine.ruleset
    with pytest.raises(pyspiel.SpielError, match="Unknown parameter 'set=nope'"):
        pyspiel.load_game("capicua(preset=block,set=nope=3)")
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        pyspiel.load_game("capicua(preset=nope)")
    with pytest.raises(ValueError, match="tagret: unknown knob"):
        pyspiel.load_game("capicua(preset=block,set=tagret:5)")


# -- the engine's matches ---------------------------------------------------------------------


def _capicua_play(tmp_path: Path, preset: str, overrides: str, seed: int) -> Path:
    out = tmp_path / f"{preset}-{seed}.json.gz"
    args = ["--rules", preset, "--bots", "medium", "--seed", str(seed), "--quiet"]
    args += [a for o in overrides.split(";") for a in ("--set", o.replace(":", "=", 1))]
    subprocess.run(
        [sys.executable, "-m", "capicua", "play", *args, "--replay", str(out)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return out


def _opener_seat(game: Any, seed: int, hand: int) -> int:
    """The engine's seeded draw of a random opening seat (engine/opening.py)."""
    rng = opener_rng(seed, hand)
    side = rng.randrange(game.engine.num_sides)
    return int(rng.choice(game.engine.side_seats[side]))


@pytest.mark.parametrize(("preset", "overrides"), RULES)
def test_the_same_seed_plays_the_same_match_as_capicua_play(
    tmp_path: Path, preset: str, overrides: str
) -> None:
    """``capicua play`` (a real process) records a match; OpenSpiel is then given its chance
    outcomes (each deal tile by tile, the random opening seat) and its decisions in order,
    and must reach the same hands, scores and returns."""
    seed = 7
    replay = read_replay(_capicua_play(tmp_path, preset, overrides, seed))
    engine = verify(replay)
    game = pyspiel.load_game("capicua", {"preset": preset, "set": overrides, "ask_forced": True})
    table = game.engine.table
    deals = {
        (record.hand, deal.attempt): [
            table.index[t] for t in (*[x for h in deal.hands for x in h], *deal.stock)
        ]
        for record in replay.hands
        for deal in record.deals
    }
    decisions = [
        e for record in replay.hands for e in record.events
        if isinstance(e, Play | Defer | RedealChoice)
    ]  # fmt: skip
    state = game.new_initial_state()
    taken = 0
    while not state.is_terminal():
        need = state._core.need
        if need is not None and need.kind == "deal":
            order = deals[need.hand, need.attempt]
            dealt = state._core.chance.deals.get((need.hand, need.attempt), [])
            state.apply_action(order[len(dealt)])
        elif need is not None:
            state.apply_action(_opener_seat(game, seed, need.hand))
        else:
            event = decisions[taken]
            taken += 1
            assert state.current_player() == event.seat
            code = decision_code(state.match, event)
            assert code is not None
            action = cos.action_id(code, game.tiles)
            assert action in state.legal_actions()
            state.apply_action(action)
    assert taken == len(decisions)
    ours = state.match
    assert ours.hand_results() == engine.hand_results()
    assert list(ours.scores) == list(engine.scores)
    assert state.returns() == list(engine.returns())


# -- hidden information -----------------------------------------------------------------------


def _twin(state: Any, player: int, rng: random.Random) -> Any | None:
    """A state dealt like ``state`` but with two tiles ``player`` cannot see swapped: two
    seats' (or a seat's and the stock's) tiles that stay hidden until the hand ends, the
    decisions so far the same. None when the swap changes what ``player`` could see."""
    core = state._core
    match = core.match
    n = match.rules.hand_size
    key = (match.hand, match.logs[-1].deals[-1][0])
    order = list(core.chance.deals[key])
    mine = set(order[player * n : (player + 1) * n])
    seen = {e.tile for e in match.hand_events() if isinstance(e, Play)}
    hidden = [
        i for i, t in enumerate(order) if t not in mine and match.game.table.tiles[t] not in seen
    ]
    if len(hidden) < 2:
        return None
    a, b = rng.sample(hidden, 2)
    order[a], order[b] = order[b], order[a]
    deals = {**core.chance.deals, key: order}
    events = [cos._seen_in(log, player) for log in match.logs]
    try:
        return cos._play_world(
            state.get_game(), core.position, deals, core.chance.openers, events, player,
            match.current_seat,
        )  # fmt: skip
    except cos.WorldMismatch:  # the swap showed (a seat could play where it passed)
        return None


@pytest.mark.parametrize(("preset", "overrides"), RULES[:4])
def test_a_players_strings_and_tensors_hold_nothing_hidden(preset: str, overrides: str) -> None:
    """Whenever two states differ only in tiles a player cannot see and the player saw the
    same events, its information state and observation (strings and tensors) are equal."""
    game = pyspiel.load_game("capicua", {"preset": preset, "set": overrides})
    rng = random.Random(11)
    compared = 0
    for _ in range(2):
        state = game.new_initial_state()
        while not state.is_terminal():
            if not state.is_chance_node():
                for player in range(game.num_players()):
                    twin = _twin(state, player, rng)
                    if twin is None:
                        continue
                    assert twin.information_state_string(player) == (
                        state.information_state_string(player)
                    )
                    assert twin.observation_string(player) == state.observation_string(player)
                    assert np.array_equal(
                        twin.information_state_tensor(player),
                        state.information_state_tensor(player),
                    )
                    assert np.array_equal(
                        twin.observation_tensor(player), state.observation_tensor(player)
                    )
                    compared += 1
            random_walk(state, rng)
    assert compared > 50


def test_the_tensors_say_what_the_player_holds_and_sees() -> None:
    game = pyspiel.load_game("capicua(preset=block)")
    state = game.new_initial_state()
    rng = random.Random(2)
    while state.is_chance_node():
        random_walk(state, rng)
    player = state.current_player()
    observer = cos.CapicuaObserver(game, perfect_recall=False)
    observer.set_from(state, player)
    index = game.engine.table.index
    held = {index[t] for t in state.match.hand_of(player)}
    assert set(np.flatnonzero(observer.dict["tiles"])) == held
    assert list(observer.dict["tile_counts"]) == list(state.match.tile_counts())
    assert observer.dict["player"][player] == 1
    assert len(state.observation_tensor(player)) == game.observation_tensor_size()
    assert len(state.information_state_tensor(player)) == game.information_state_tensor_size()


# -- IS-MCTS ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("preset", "overrides"), [("iq-1v1", "target:30"), ("cuban", "target:30")])
def test_openspiels_ismcts_plays_full_matches(preset: str, overrides: str) -> None:
    from open_spiel.python.algorithms import ismcts, mcts

    game = pyspiel.load_game("capicua", {"preset": preset, "set": overrides})
    evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=np.random.RandomState(1))
    bot = ismcts.ISMCTSBot(
        game, evaluator, uct_c=2.0, max_simulations=20, random_state=np.random.RandomState(2)
    )
    rng = random.Random(3)
    state = game.new_initial_state()
    searched = 0
    while not state.is_terminal():
        if not state.is_chance_node() and state.current_player() == 0:
            action = bot.step(state)
            assert action in state.legal_actions()
            state.apply_action(action)
            searched += 1
        else:
            random_walk(state, rng)
    assert searched > 0 and sorted(state.returns()) in ([-1.0, 1.0], [-1.0, -1.0, 1.0, 1.0])


@pytest.mark.parametrize(("preset", "overrides"), RULES[:5])
def test_resampling_keeps_the_players_information_and_redraws_the_rest(
    preset: str, overrides: str
) -> None:
    game = pyspiel.load_game("capicua", {"preset": preset, "set": overrides})
    rng = random.Random(5)
    differed = positions = 0
    state = game.new_initial_state()
    while not state.is_terminal():
        if not state.is_chance_node():
            player = state.current_player()
            world = cos.resample(state, player, random.Random(positions))
            positions += 1
            assert world.current_player() == player
            assert world.information_state_string(player) == state.information_state_string()
            others = [s for s in range(game.num_players()) if s != player]
            differed += any(world.match.hand_of(s) != state.match.hand_of(s) for s in others)
        random_walk(state, rng)
    assert positions > 5 and differed > positions // 4


def test_bench_openspiel_prints_json() -> None:
    from capicua.cli import main
    from tests.clirunner import cli_runner

    result = cli_runner().invoke(
        main, ["bench", "openspiel", "--json", "--seconds", "0.05", "--repeat", "1",
               "--presets", "iq-1v1"]
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    import json

    row = json.loads(result.stdout.splitlines()[-1])["presets"]["iq-1v1"]
    assert row["openspiel_hands_per_s"] > 0 and row["engine_hands_per_s"] > 0
    assert row["clones_per_s"] > 0 and row["openspiel_states_per_s"] > row["openspiel_hands_per_s"]


# -- OpenSpiel's bots as capicua bots ---------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "preset", "overrides"),
    [("ismcts", "iq-1v1", []), ("ismcts", "cuban", ["target=40"]), ("mcts", "draw", ["target=40"])],
)
def test_openspiels_bots_play_from_the_views_the_server_sends(
    kind: str, preset: str, overrides: list[str]
) -> None:
    """IS-MCTS as a capicua bot: every decision searched from a state rebuilt from the
    seat's view alone (as the SDK rebuilds it from the server's View), always legal."""
    from capicua.engine.game import Game
    from capicua.wire import codec
    from capicua.wire.views import ViewBuilder, observation_from_view

    engine = Game.from_preset(preset, overrides)
    bot = cos.ISMCTS(simulations=8, seed=3) if kind == "ismcts" else cos.MCTS(8, worlds=2)
    rng = random.Random(1)
    match = engine.new_match(4)
    views = ViewBuilder(codec.ruleset_to_proto(engine.ruleset), ["a"] * engine.ruleset.seats)
    searched = 0
    while not match.is_terminal():
        seat = match.current_seat
        assert seat is not None
        legal = match.legal()
        if seat % 2 == 0 and len(legal) > 1:
            action = bot.choose(observation_from_view(views.view_of(match, seat)), legal)
            searched += 1
        else:
            action = rng.choice(legal)
        assert action in legal
        match.apply_action(action)
    assert searched > 5


def test_a_rebuilt_state_is_the_seats_view_and_its_legal_actions() -> None:
    from capicua.engine.game import Game
    from capicua.engine.observation import observe
    from capicua.integrations.views import legal_ids

    engine = Game.from_preset("draw", ["target=60"])
    game = cos.CapicuaGame(ruleset=engine.ruleset)
    rng = random.Random(2)
    match = engine.new_match(8)
    checked = 0
    while not match.is_terminal():
        seat = match.current_seat
        legal = match.legal()
        if len(legal) > 1:
            view = observe(match, seat)
            state = cos.from_view(game, view, rng)
            assert state.current_player() == seat
            assert state.legal_actions() == sorted(legal_ids(legal, engine.ruleset))
            rebuilt = observe(state.match, seat)
            assert rebuilt.tiles == view.tiles and rebuilt.chain == view.chain
            assert rebuilt.tile_counts == view.tile_counts and rebuilt.scores == view.scores
            assert rebuilt.stock_count == view.stock_count
            checked += 1
        match.apply_action(rng.choice(legal))
    assert checked > 20


def test_openspiel_bots_in_an_arena_file(tmp_path: Path) -> None:
    """``openspiel:ismcts`` (options: the class's keyword arguments) runs as
    ``capicua bot run capicua.integrations.openspiel:ISMCTS``; a real tournament plays it
    against a built-in bot over the protocol; unknown names are refused at load time."""
    from capicua.arena.config import TournamentError
    from capicua.arena.supervisor import bot_argv
    from capicua.cli import main
    from tests.arenakit import tournament
    from tests.clirunner import cli_runner

    t = tournament(
        preset="iq-1v1",
        overrides=["target=20"],
        games=2,
        bots={"ismcts": {"spec": "openspiel:ismcts", "options": {"simulations": 8}},
              "random": "builtin:random"},
    )  # fmt: skip
    argv = bot_argv(next(b for b in t.bots if b.name == "ismcts"))
    assert argv[3:] == ["bot", "run", "capicua.integrations.openspiel:ISMCTS", "--option",
                        "simulations=8", "--log-level", "warning"]  # fmt: skip
    with pytest.raises(TournamentError, match="openspiel:ismcts refuses them: simulations"):
        tournament(bots={"a": {"spec": "openspiel:ismcts", "options": {"simulations": 0}},
                         "b": "builtin:random"})  # fmt: skip
    with pytest.raises(TournamentError, match="refuses them: .*unexpected keyword"):
        tournament(bots={"a": {"spec": "openspiel:mcts", "options": {"depth": 3}},
                         "b": "builtin:random"})  # fmt: skip
    with pytest.raises(TournamentError, match="unknown OpenSpiel bot 'cfr'; known: ismcts, mcts"):
        tournament(bots={"a": "openspiel:cfr", "b": "builtin:random"})
    file = tmp_path / "t.toml"
    file.write_text(
        'name = "os"\npreset = "iq-1v1"\noverrides = ["target=20"]\ngames = 2\n'
        '[bots]\nrandom = "builtin:random"\n'
        'ismcts = { spec = "openspiel:ismcts", options = { simulations = 8, seed = 2 } }\n'
    )
    out = str(tmp_path / "out")
    result = cli_runner().invoke(main, ["arena", "run", str(file), "--out", out, "--json"])
    assert result.exit_code == 0, result.output
    import json

    standings = json.loads(result.stdout.splitlines()[-1])
    rows = {row["name"]: row for row in standings["bots"]}
    assert rows["ismcts"]["matches"] == 4 and rows["ismcts"]["errors_total"] == 0
    assert rows["ismcts"]["think"]["decisions"] > 0
