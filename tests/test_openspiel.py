"""capicua rulesets as OpenSpiel games (capicua.integrations.openspiel): OpenSpiel's own
random-simulation checks (legal actions, chance outcomes summing to 1, clones, serialised
states), the same seeds played through OpenSpiel and through ``capicua play`` giving the same
matches, nothing hidden in a player's strings or tensors and nothing missing from its
information-state tensor, states that survive serialisation and pickling, resampled worlds
drawn uniformly among the consistent ones (checked against enumeration), and OpenSpiel's
IS-MCTS and the ``openspiel:`` arena bots on every preset."""

from __future__ import annotations

import collections
import itertools
import pickle
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pyspiel = pytest.importorskip("pyspiel", reason="open_spiel is not installed")

import numpy as np  # noqa: E402  (after the skip: numpy comes with open_spiel)

from capicua.engine.dealing import opener_rng  # noqa: E402
from capicua.engine.game import Phase  # noqa: E402
from capicua.engine.records import Defer, Play, RedealChoice  # noqa: E402
from capicua.engine.replay import decision_code, verify  # noqa: E402
from capicua.engine.rules import preset_names  # noqa: E402
from capicua.integrations import openspiel as cos  # noqa: E402
from capicua.integrations.views import match_text  # noqa: E402
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

#: Every preset, two hands long (a hand's end and the next deal in every match), and the
#: presets that do not draw made to draw from a stock (a short hand leaves one to draw).
EVERY = [(p, "max_hands:2") for p in preset_names()] + [
    ("iq-1v1", "stock:draw;max_hands:2"),
    ("cuban", "stock:draw;max_hands:2"),
    ("cutthroat", "stock:draw;hand_size:6;max_hands:2"),
    ("draw", "hand_size:5;max_hands:2"),
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


def test_every_explicit_knob_value_is_honoured_or_refused() -> None:
    """OpenSpiel hands a game every parameter with its default filled in, so a yes/no knob
    as a parameter of its own could not tell false from not set (jamaican-six-love loaded
    with reply_resets true): it is refused, and honoured when written in ``set``. A knob
    given twice is refused: only one value could be honoured."""
    with pytest.raises(pyspiel.SpielError, match="Unknown parameter 'set=reply_resets'"):
        pyspiel.load_game("capicua(preset=jamaican-six-love,set=reply_resets=false)")
    text = pyspiel.load_game("capicua(preset=jamaican-six-love,set=reply_resets:false)")
    assert text.engine.ruleset.reply_resets is False
    as_dict = pyspiel.load_game(
        "capicua", {"preset": "jamaican-six-love", "set": "reply_resets=false"}
    )
    assert as_dict.engine.ruleset.reply_resets is False
    assert pyspiel.load_game(str(as_dict)).engine.ruleset.reply_resets is False
    block = pyspiel.load_game("capicua(preset=block,set=win_needs_zero_opponent:true)")
    assert block.engine.ruleset.win_needs_zero_opponent is True
    numbers = pyspiel.load_game("capicua(preset=block,set=target=150,set=stock=draw)")
    assert (numbers.engine.ruleset.target, numbers.engine.ruleset.stock.value) == (150, "draw")
    for twice in ("capicua(preset=block,set=target:50,set=target=60)",
                  "capicua(preset=block,set=target:50;target:60)"):  # fmt: skip
        with pytest.raises(ValueError, match="knob 'target' is given more than once"):
            pyspiel.load_game(twice)


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
    assert ours.log.results() == engine.log.results()
    assert list(ours.scores) == list(engine.scores)
    assert state.returns() == list(engine.returns())


# -- serialisation ----------------------------------------------------------------------------


def _restored(game: Any, state: Any) -> list[Any]:
    """``state`` brought back every way OpenSpiel and Python offer."""
    text = pyspiel.serialize_game_and_state(game, state)
    return [
        game.deserialize_state(state.serialize()),
        pyspiel.deserialize_game_and_state(text)[1],
        pickle.loads(pickle.dumps(state)),
        pickle.loads(pickle.dumps(game)).deserialize_state(state.serialize()),
    ]


def _same_and_plays_on(state: Any, restored: Any, seed: int) -> None:
    """``restored`` is ``state`` (history, every player's strings and tensors, what can
    happen next) and plays on as it does for the same choices."""
    assert restored.history() == state.history()
    assert restored.current_player() == state.current_player()
    for p in range(state.num_players()):
        assert restored.information_state_string(p) == state.information_state_string(p)
        assert restored.observation_string(p) == state.observation_string(p)
        assert np.array_equal(
            restored.information_state_tensor(p), state.information_state_tensor(p)
        )
    if state.is_terminal():
        assert restored.returns() == state.returns()
        return
    if state.is_chance_node():
        assert restored.chance_outcomes() == state.chance_outcomes()
    else:
        assert restored.legal_actions() == state.legal_actions()
    ours, theirs = state.clone(), restored
    ours_rng, theirs_rng = random.Random(seed), random.Random(seed)
    for _ in range(30):
        if ours.is_terminal():
            break
        random_walk(ours, ours_rng)
        random_walk(theirs, theirs_rng)
    assert theirs.history() == ours.history() and theirs.returns() == ours.returns()
    assert theirs.is_terminal() == ours.is_terminal()


@pytest.mark.parametrize(("preset", "overrides"), EVERY)
def test_states_survive_serialisation_and_pickling(preset: str, overrides: str) -> None:
    """``game.deserialize_state(state.serialize())``, ``pyspiel.deserialize_game_and_state``
    and ``pickle`` (of the state, and of the game) give states that are the original and
    play on: at a deal's chance node, at the first decision, at the next hand's deal, at a
    decision of the second hand and at the end."""
    game = pyspiel.load_game("capicua", {"preset": preset, "set": overrides})
    again = pickle.loads(pickle.dumps(game))
    assert str(again) == str(game) and again.tiles == game.tiles
    assert again.new_initial_state().chance_outcomes() == game.new_initial_state().chance_outcomes()
    rng = random.Random(preset)
    state = game.new_initial_state()
    wanted = ["deal 0", "decide 0", "deal 1", "decide 1"]
    while not state.is_terminal():
        core = state._core
        hand = core.need.hand if core.need is not None else state.match.hand
        at = f"{'deal' if state.is_chance_node() else 'decide'} {hand}"
        if at in wanted and (at != "deal 0" or len(state.history()) > 5):
            wanted.remove(at)
            for restored in _restored(game, state):
                _same_and_plays_on(state, restored, rng.randrange(1000))
        random_walk(state, rng)
    for restored in _restored(game, state):
        _same_and_plays_on(state, restored, 0)
    assert "deal 0" not in wanted  # the others, when the match has them


# -- what a state keeps between calls -------------------------------------------------------


def _expected(state: Any, dealt: list[int]) -> tuple[int, list[int], list[int]]:
    """What the engine says of ``state`` (``dealt``: the outcomes of the deal being dealt so
    far): OpenSpiel's current player, the legal actions and the chance outcomes."""
    core, game = state._core, state.get_game()
    if core.need is not None:
        if core.need.kind == "opener":
            return -1, [], sorted(s for seats in game.engine.side_seats for s in seats)
        return -1, [], sorted(set(game.deck) - set(dealt))
    match = core.match
    if match.is_terminal():
        return -4, [], []
    ids = sorted(cos.action_id(code, game.tiles) for code in match.legal_actions())
    return match.current_seat, ids, []


def _check_answers(state: Any, dealt: list[int]) -> None:
    """Every step's questions answered as the engine says, and as pyspiel's own C++ answers
    them (which asks current_player, is_terminal, _legal_actions and chance_outcomes)."""
    player, legal, outcomes = _expected(state, dealt)
    assert state.current_player() == player
    assert state.is_chance_node() == pyspiel.State.is_chance_node(state) == (player == -1)
    assert state.is_terminal() == (player == -4)
    if player == -1:
        actions, odds = zip(*state.chance_outcomes(), strict=True)
        assert list(actions) == outcomes and set(odds) == {1 / len(outcomes)}
        legal = outcomes
    assert state.legal_actions() == pyspiel.State.legal_actions(state) == legal
    for p in range(state.num_players()):
        mine = legal if player in (p, -1) else []
        assert state.legal_actions(p) == pyspiel.State.legal_actions(state, p) == mine


@pytest.mark.parametrize(("preset", "overrides"), RULES)
def test_what_a_state_keeps_follows_every_action_and_clone(preset: str, overrides: str) -> None:
    """A state keeps its current player, the tiles a deal has left to deal and the match as
    the last chance node left it (a decision that ends a hand goes back to the match before
    it from there): after every action, in the state and in clones played on apart, every
    answer is the engine's, and the match kept at a hand's next deal is the one before the
    decision that ended the hand."""
    game = pyspiel.load_game("capicua", {"preset": preset, "set": overrides})
    rng = random.Random(preset)
    walks: list[tuple[Any, list[int]]] = [(game.new_initial_state(), [])]
    hands_ended = 0
    while walks:
        state, dealt = walks.pop()
        while not state.is_terminal():
            _check_answers(state, dealt)
            if rng.random() < 0.02 and len(walks) < 3:  # a clone, played on with other choices
                walks.append((state.clone(), list(dealt)))
            before = state.clone()
            random_walk(state, rng)
            if before.is_chance_node():
                dealt.append(state.history()[-1])
            elif state.is_chance_node():  # the decision stopped for a deal (or redeal)
                dealt.clear()
                hands_ended += 1
                assert state.match is not before.match
                assert match_text(state.match) == match_text(before.match)
                seats = range(game.num_players())
                assert [state.match.hand_of(s) for s in seats] == (
                    [before.match.hand_of(s) for s in seats]
                )
                assert state.match.legal_actions() == before.match.legal_actions()
                assert state.match.log.results() == before.match.log.results()
            if state.is_chance_node() and state._core.need.kind == "opener":
                dealt.clear()
        _check_answers(state, dealt)
        assert state.returns() == list(state.match.returns())
    assert hands_ended > 0


def test_a_chance_outcome_not_offered_is_refused_and_changes_nothing() -> None:
    """A tile already dealt, or not in the set, as a deal's outcome: one clear error, and
    the state is as before (the deal goes on)."""
    game = pyspiel.load_game("capicua", {"preset": "block", "set": "max_hands:1"})
    state = game.new_initial_state()
    state.apply_action(5)
    outcomes = state.chance_outcomes()
    for wrong in (5, game.tiles + 3):
        with pytest.raises(ValueError, match=f"capicua: {wrong} is not a chance outcome"):
            state.apply_action(wrong)
        assert state.history() == [5] and state.chance_outcomes() == outcomes
    rng = random.Random(1)
    while not state.is_terminal():
        random_walk(state, rng)
    assert sorted(state.history()[:28]) == list(game.deck)


# -- hidden information -----------------------------------------------------------------------


def _twin(state: Any, player: int, rng: random.Random) -> Any | None:
    """A state dealt like ``state`` but with two tiles ``player`` cannot see swapped: two
    seats' (or a seat's and the stock's) tiles that stay hidden until the hand ends, the
    decisions so far the same. None when the swap changes what ``player`` could see."""
    core = state._core
    match = core.match
    n = match.rules.hand_size
    key = (match.hand, match.log.hands[-1].deals[-1][0])
    order = list(core.chance.deals[key])
    mine = set(order[player * n : (player + 1) * n])
    seen = {e.tile for e in match.log.events() if isinstance(e, Play)}
    hidden = [
        i for i, t in enumerate(order) if t not in mine and match.game.table.tiles[t] not in seen
    ]
    if len(hidden) < 2:
        return None
    a, b = rng.sample(hidden, 2)
    order[a], order[b] = order[b], order[a]
    deals = {**core.chance.deals, key: order}
    events = [cos._seen_in(log, player) for log in match.log.hands]
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


#: Variants small enough to walk every state of: 2 seats drawing from a stock of two, one
#: and two tiles a hand.
TINY = [
    ("el-dominito-2p", "max_pip:2;hand_size:2;first_opener:highest_double;max_hands:1"),
    ("el-dominito-2p", "max_pip:2;hand_size:1;first_opener:highest_double;max_hands:1"),
]


def _every_state(game: Any) -> Any:
    """Every state of ``game``, depth first."""
    stack = [game.new_initial_state()]
    while stack:
        state = stack.pop()
        yield state
        if state.is_chance_node():
            stack += [state.child(a) for a, _ in state.chance_outcomes()]
        elif not state.is_terminal():
            stack += [state.child(a) for a in state.legal_actions()]


def _shared_tensors(states: Any, players: int) -> list[set[str]]:
    """The information strings that share an information-state tensor with another."""
    strings: dict[bytes, set[str]] = collections.defaultdict(set)
    for state in states:
        for p in range(players):
            key = np.asarray(state.information_state_tensor(p)).tobytes()
            strings[key].add(state.information_state_string(p))
    return [shared for shared in strings.values() if len(shared) > 1]


@pytest.mark.parametrize(("preset", "overrides"), TINY)
def test_no_two_information_states_share_a_tensor(preset: str, overrides: str) -> None:
    """Every state of a tiny drawing game: each information-state tensor belongs to one
    information string (which tiles the seat drew and the order of play are in it)."""
    game = pyspiel.load_game("capicua", {"preset": preset, "set": overrides})
    assert _shared_tensors(_every_state(game), game.num_players()) == []


def _playouts(game: Any, matches: int, rng: random.Random) -> Any:
    """Every state of ``matches`` random matches."""
    for _ in range(matches):
        state = game.new_initial_state()
        yield state
        while not state.is_terminal():
            random_walk(state, rng)
            yield state


def test_no_two_information_states_share_a_tensor_with_redeals_and_defers() -> None:
    """Cuban-style (four seats, a random opening side that may defer, redeal offers and a
    REDEAL's first deal): sampled matches find no tensor shared by two strings."""
    game = pyspiel.load_game(
        "capicua",
        {"preset": "cuban", "set": "max_pip:3;hand_size:2;redeal_min_doubles:1;max_hands:1"},
    )
    assert _shared_tensors(_playouts(game, 120, random.Random(3)), game.num_players()) == []


def test_strings_and_tensors_are_current_at_the_next_hands_deal() -> None:
    """At every chance node dealing the next hand, every seat's strings and tensors show
    the hand just over (its last play and its result) and the scores it left, and the
    deal so far: its own tiles of it and how many are dealt."""
    game = pyspiel.load_game("capicua", {"preset": "block", "set": "max_hands:3"})
    rng = random.Random(4)
    state = game.new_initial_state()
    checked = 0
    while not state.is_terminal():
        core = state._core
        if core.need is not None and core.need.hand > 0 and core.need.kind == "deal":
            done = core.shown
            last = next(
                e for e in reversed(done.log.events(core.need.hand - 1)) if isinstance(e, Play)
            )
            dealt = core.chance.deals.get((core.need.hand, 0), [])
            for p in range(game.num_players()):
                text = state.information_state_string(p)
                assert str(last) in text and f"h{core.need.hand - 1} ended" in text
                assert f"dealt {len(dealt)}/28" in text and f"scores {list(done.scores)}" in text
                assert f"scores {list(done.scores)}" in state.observation_string(p)
                observer = cos.CapicuaObserver(game, perfect_recall=True)
                observer.set_from(state, p)
                assert list(observer.dict["scores"]) == list(done.scores)
                n = game.engine.ruleset.hand_size
                assert set(np.flatnonzero(observer.dict["dealt"][0])) == set(
                    dealt[p * n : (p + 1) * n]
                )
                assert observer.dict["chance"][2] == pytest.approx(len(dealt) / 28)
                checked += 1
        random_walk(state, rng)
    assert checked > 100


# -- worlds: drawn directly, uniformly, among exactly the consistent ones --------------------------


def _consistent_orders(game: Any, state: Any, player: int, key: tuple[int, int]) -> list[Any]:
    """Every dealing order of deal ``key`` (the others as they were) that the engine,
    played with the decisions ``player`` saw, shows it exactly as ``state`` does: all
    permutations of the set tried, none left out."""
    core = state._core
    match = core.match
    seen = [cos._seen_in(log, player) for log in match.log.hands]
    want = state.information_state_string(player)
    out = []
    for order in itertools.permutations(core.chance.deals[key]):
        deals = {**core.chance.deals, key: list(order)}
        try:
            world = cos._play_world(
                game, core.position, deals, core.chance.openers, seen, player, match.current_seat
            )
        except cos.WorldMismatch:
            continue
        if world.information_state_string(player) == want:
            out.append(order)
    return out


#: Six-tile variants: two seats drawing; three seats drawing, opened by the highest double,
#: with redeal offers (one double is enough: before the first tile, who holds the highest
#: double is a sum over the tiles it may be); four seats with a random opening side, redeal
#: offers and a stock to draw from.
ENUMERATED = [
    ("el-dominito-2p", "max_pip:2;hand_size:2;first_opener:highest_double;max_hands:1", True),
    ("cutthroat", "max_pip:2;exclude:[];hand_size:1;stock:draw;first_opener:highest_double;"
     "redeal_min_doubles:1;max_hands:1", True),
    ("cuban", "max_pip:2;hand_size:1;redeal_min_doubles:1;max_hands:1;stock:draw", False),
]  # fmt: skip


@pytest.mark.parametrize(("preset", "overrides", "ask_forced"), ENUMERATED)
def test_the_worlds_drawn_are_exactly_the_consistent_ones(
    preset: str, overrides: str, ask_forced: bool
) -> None:
    """For every player (the one to act and the others) at decisions of random matches,
    every deal so far: the sampler counts exactly the dealing orders that enumeration
    finds consistent (redeal offers, draws, forced openings and the seat asked to play
    included), every order it draws is one of them, and none is drawn more often than
    chance allows (chi-square over 25 draws per order)."""
    from scipy.stats import chisquare

    game = pyspiel.load_game(
        "capicua", {"preset": preset, "set": overrides, "ask_forced": ask_forced}
    )
    rng = random.Random(1)
    checked = redeals = cases = 0
    for _ in range(8):
        state = game.new_initial_state()
        while not state.is_terminal() and checked < 8:
            if state.is_chance_node():
                random_walk(state, rng)
                continue
            match = state.match
            for player in range(game.num_players()):
                if match.phase is Phase.REDEAL and player != match.current_seat:
                    continue  # who is asked is no player's to know
                worlds = cos._worlds_of(state._core, match, player)
                for key, sampler in worlds.deals:
                    consistent = _consistent_orders(game, state, player, key)
                    assert sampler.orders == len(consistent), key
                    drawn = collections.Counter(
                        tuple(sampler.sample(rng)) for _ in range(25 * len(consistent))
                    )
                    assert set(drawn) <= set(consistent)
                    if len(consistent) > 1:
                        assert chisquare([drawn[o] for o in consistent]).pvalue > 1e-4
                    checked += 1
                    redeals += sampler.view.redealt_by is not None
                    cases += len(sampler.cases) > 1
            random_walk(state, rng)
    assert checked >= 8
    assert redeals > 0 or preset == "el-dominito-2p"
    assert cases > 0 or preset != "cutthroat"  # a forced opening tile not known yet


def test_resampling_is_uniform_over_the_consistent_worlds() -> None:
    """Through OpenSpiel's own entry point: the worlds ``resample_from_infostate`` returns
    (their whole chance history) are the consistent ones, each as often as the others."""
    from scipy.stats import chisquare

    preset, overrides, ask_forced = ENUMERATED[0]
    game = pyspiel.load_game(
        "capicua", {"preset": preset, "set": overrides, "ask_forced": ask_forced}
    )
    rng = random.Random(6)
    for _ in range(50):
        state = game.new_initial_state()
        while state.is_chance_node():
            random_walk(state, rng)
        player = state.current_player()
        if state.is_terminal():
            continue
        if len(consistent := _consistent_orders(game, state, player, (0, 0))) >= 8:
            break
    sampler = pyspiel.UniformProbabilitySampler(1, 0.0, 1.0)
    drawn = collections.Counter(
        tuple(state.resample_from_infostate(player, sampler).history()[:6])
        for _ in range(30 * len(consistent))
    )
    assert set(drawn) == set(consistent)
    assert chisquare([drawn[o] for o in consistent]).pvalue > 1e-4


# -- IS-MCTS ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("preset", "overrides"), EVERY)
def test_openspiels_ismcts_plays_on_every_preset(preset: str, overrides: str) -> None:
    """OpenSpiel's ISMCTSBot (a few simulations) plays seat 0 through two-hand matches of
    every preset, drawing ones and redeal offers included: every resample succeeds."""
    from open_spiel.python.algorithms import ismcts, mcts

    game = pyspiel.load_game("capicua", {"preset": preset, "set": overrides})
    evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=np.random.RandomState(1))
    bot = ismcts.ISMCTSBot(
        game, evaluator, uct_c=2.0, max_simulations=3, random_state=np.random.RandomState(2)
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
    assert searched > 0 and sum(state.returns()) == pytest.approx(0.0)


@pytest.mark.parametrize(("preset", "overrides"), EVERY)
def test_resampling_keeps_the_players_information_and_redraws_the_rest(
    preset: str, overrides: str
) -> None:
    """At every decision of a two-hand match, for the seat to act and for another seat:
    the resampled state shows that seat exactly what the true one does (the seat to act:
    the same legal actions too), and the tiles it cannot see are drawn anew (often
    different)."""
    game = pyspiel.load_game("capicua", {"preset": preset, "set": overrides})
    rng = random.Random(5)
    differed = positions = 0
    state = game.new_initial_state()
    while not state.is_terminal():
        if not state.is_chance_node():
            player = state.current_player()
            others = [player]
            # (a redeal offer is its seat's secret: nobody else may resample then)
            if state.match.phase is Phase.PLAY and len(state.history()) % 3 == 0:
                others.append((player + 1 + positions) % game.num_players())
            for seat in others:
                world = cos.resample(state, seat, random.Random(positions))
                assert world.match is not None
                assert world.current_player() == player
                assert world.information_state_string(seat) == state.information_state_string(seat)
                if seat == player:  # another seat's choices are its own tiles'
                    assert world.legal_actions() == state.legal_actions()
                hidden = [s for s in range(game.num_players()) if s != seat]
                differed += any(world.match.hand_of(s) != state.match.hand_of(s) for s in hidden)
                positions += 1
        random_walk(state, rng)
    assert positions > 5 and differed > positions // 4


def test_a_resampled_states_history_is_its_own() -> None:
    """A resampled state is reached by its own actions: ``history()`` and ``serialize()``
    describe the drawn world (each deal as drawn), and replaying its history from the
    start gives that world, never the true deal."""
    game = pyspiel.load_game("capicua", {"preset": "el-dominito-2p", "set": "max_hands:2"})
    rng = random.Random(8)
    state = game.new_initial_state()
    own = checked = 0
    while not state.is_terminal():
        if not state.is_chance_node():
            player = state.current_player()
            world = cos.resample(state, player, random.Random(checked))
            assert world.match is not None
            again = game.new_initial_state()
            for action in world.history():
                again.apply_action(action)
            for copy in (again, game.deserialize_state(world.serialize())):
                assert copy.history() == world.history()
                assert [copy.match.hand_of(s) for s in range(2)] == (
                    [world.match.hand_of(s) for s in range(2)]
                )
                assert copy.information_state_string(player) == (
                    state.information_state_string(player)
                )
            own += world.history() != state.history()
            checked += 1
        random_walk(state, rng)
    assert checked > 10 and own > checked // 2


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


@pytest.mark.parametrize(("preset", "overrides"), EVERY)
def test_openspiels_bots_play_from_the_views_the_server_sends(preset: str, overrides: str) -> None:
    """IS-MCTS and MCTS as capicua bots on every preset: every decision searched from a
    state rebuilt from the seat's view alone (as the SDK rebuilds it from the server's
    View), always legal."""
    from capicua.engine.game import Game
    from capicua.wire import codec
    from capicua.wire.views import ViewBuilder, observation_from_view

    engine = Game.from_preset(preset, overrides.replace(":", "=").split(";"))
    bots = [cos.ISMCTS(simulations=3, seed=3), cos.MCTS(4, worlds=2, seed=4)]
    rng = random.Random(1)
    match = engine.new_match(4)
    views = ViewBuilder(codec.ruleset_to_proto(engine.ruleset), ["a"] * engine.ruleset.seats)
    searched = 0
    while not match.is_terminal():
        seat = match.current_seat
        assert seat is not None
        legal = match.legal()
        # searched now and then: in both hands, at the opening and late in a hand
        if seat % 2 == 0 and len(legal) > 1 and len(match.log.raw_events()) % 3 == 0:
            view = observation_from_view(views.view_of(match, seat))
            action = bots[searched % 2].choose(view, legal)
            searched += 1
        else:
            action = rng.choice(legal)
        assert action in legal
        match.apply_action(action)
    assert searched >= 2


@pytest.mark.parametrize(
    ("preset", "overrides"), [("draw", "target=60"), ("el-dominito-2p", "target=60")]
)
def test_a_rebuilt_state_is_the_seats_view_and_its_legal_actions(
    preset: str, overrides: str
) -> None:
    """A state rebuilt from a seat's view shows it what the view shows, offers its legal
    actions, and survives pickling and serialisation (a search may ship it elsewhere)."""
    from capicua.engine.game import Game
    from capicua.engine.observation import observe
    from capicua.integrations.views import legal_ids

    engine = Game.from_preset(preset, [overrides])
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
            assert state.match is not None
            rebuilt = observe(state.match, seat)
            assert rebuilt.tiles == view.tiles and rebuilt.chain == view.chain
            assert rebuilt.tile_counts == view.tile_counts and rebuilt.scores == view.scores
            assert rebuilt.stock_count == view.stock_count
            for back in (
                pickle.loads(pickle.dumps(state)),
                game.deserialize_state(state.serialize()),
            ):
                assert back.history() == state.history()
                assert back.information_state_string(seat) == state.information_state_string(seat)
                assert back.legal_actions() == state.legal_actions()
            checked += 1
        match.apply_action(rng.choice(legal))
    assert checked > 20


def test_openspiel_bots_in_an_arena_file(tmp_path: Path) -> None:
    """``openspiel:ismcts`` (options: the class's keyword arguments) runs as
    ``capicua bot run capicua.integrations.openspiel:ISMCTS``; a real tournament plays it
    against a built-in bot over the protocol; unknown names are refused at load time."""
    from capicua.arena.config import TournamentError
    from capicua.arena.supervisor import bot_argv
    from tests.arenakit import standings_of_file, tournament

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
    rows = standings_of_file(
        tmp_path,
        'name = "os"\npreset = "iq-1v1"\noverrides = ["target=20"]\ngames = 2\n'
        '[bots]\nrandom = "builtin:random"\n'
        'ismcts = { spec = "openspiel:ismcts", options = { simulations = 8, seed = 2 } }\n',
    )
    assert rows["ismcts"]["matches"] == 4 and rows["ismcts"]["errors_total"] == 0
    assert rows["ismcts"]["think"]["decisions"] > 0


def test_the_sprt_of_ismcts_against_random_on_el_dominito_2p(tmp_path: Path) -> None:
    """The issue's command: IS-MCTS as an arena bot where players draw from the stock
    passes its one-hand test match and plays every pair (it could not start: no world
    consistent with the seat's information)."""
    import json

    from capicua.cli import main
    from tests.clirunner import cli_runner

    args = ["arena", "sprt", "--base", "random", "--candidate", "openspiel:ismcts",
            "--candidate-option", "simulations=10", "--rules", "el-dominito-2p",
            "--set", "target=30", "--max-pairs", "3"]  # fmt: skip
    args += ["--out", str(tmp_path / "t"), "--json"]
    result = cli_runner().invoke(main, args)
    assert result.exit_code == 0, (result.output, result.stderr)
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["pairs"] == 3 and report["complete"] and not report["disqualified"]
    assert sum(report["pentanomial"]) == 3 and report["skipped_pairs"] == 0
