"""RULES.md "Decisions on what the seeds leave open" (1-11) and "A hand, step by step",
each checked on crafted deals played through the engine."""

from __future__ import annotations

import random
from collections.abc import Callable
from hashlib import sha256

import pytest

from capicua.engine.actions import End, IllegalActionError
from capicua.engine.game import Game, Phase
from capicua.engine.observation import PlacedTile, observe
from capicua.engine.records import (
    Deal,
    Defer,
    Draw,
    HandEnd,
    Pass,
    Play,
    RedealChoice,
    Reset,
    Termination,
)
from capicua.engine.rules import Points, Ruleset, TurnOrder, load_preset
from capicua.engine.tiles import Tile, full_set
from tests.scenario import (
    FINISH_CASES,
    block_deal,
    deal,
    drew,
    finish_deal,
    legal,
    match,
    next_seat,
    passed,
    phase,
    play,
    played,
    random_side_seat,
    rules,
    seed_offering,
)

# -- decisions 1 and 9: key bone and the three capicúas -------------------------------------

# (preset, expected bonus for each finish case; None = no bonus), and how the bonus changes
# the hand's base.
BONUS_TABLE: dict[str, tuple[str, Callable[[int], int], set[str]]] = {
    # 1. key bone: both_ends without restrictions, +1.
    "jamaican-six-love": ("key_bone", lambda b: b + 1, {"distinct", "double", "equal"}),
    # 9. IQ: any final tile fitting both ends, doubles included, x2.
    "iq-2v2": ("capicua", lambda b: 2 * b, {"distinct", "double", "equal"}),
    "iq-1v1": ("capicua", lambda b: 2 * b, {"distinct", "double", "equal"}),
    # 9. Ludoteka excludes doubles.
    "ludoteka-cuban": ("capicua", lambda b: 2 * b, {"distinct", "equal"}),
    # 9. Dominican also needs two different open ends.
    "dominican": ("capicua", lambda b: b + 30, {"distinct"}),
}


@pytest.mark.parametrize("case", FINISH_CASES)
@pytest.mark.parametrize("preset", sorted(BONUS_TABLE))
def test_finish_bonus_variants(preset: str, case: str) -> None:
    r = rules(preset, "hand_size=3")
    seed = seed_offering(r, 0) if r.first_opener.value == "random_side" else 0
    d, moves = finish_deal(r, case)
    state = match(r, [d], seed=seed)
    play(state, *moves[:-1])
    before = state.ends
    final = moves[-1].split(":")[1]
    if case == "double" or case == "equal":
        assert before == (1, 1)
        assert legal(state) == {f"{final}:L"}
    elif case == "distinct":
        assert before == (1, 2)
        assert legal(state) == {"1-2:L", "1-2:R"}
    else:
        assert before == (1, 2)
        assert legal(state) == {"1-3:L"}
    play(state, moves[-1])
    (res,) = state.log.results()
    assert (res.end, res.seat, res.winner) == (HandEnd.DOMINO, 0, 0)
    assert res.base > 0
    name, effect, applies = BONUS_TABLE[preset]
    if case in applies:
        assert res.bonuses == (name,)
        assert res.points == effect(res.base)
    else:
        assert res.bonuses == ()
        assert res.points == res.base
    assert state.scores[0] == res.points


def test_key_bone_knob_is_unrestricted_both_ends_add_1() -> None:
    (bonus,) = load_preset("jamaican-six-love").finish_bonus
    assert (bonus.name, bonus.test.value, str(bonus.effect)) == ("key_bone", "both_ends", "add:1")
    assert not bonus.no_double and not bonus.distinct_ends


# -- decision 2: six-love replies -------------------------------------------------------------


def test_six_love_reply_is_a_win_while_an_opponent_has_points() -> None:
    r = rules("jamaican-six-love", "hand_size=2", "target=3")
    # A (side 0) wins, wins again (no reply: B has 0), B wins (reply), B wins (no reply now),
    # A wins (reply), then A three times to 3-0.
    deals = [
        block_deal(r, 0, 0),
        block_deal(r, 0, 0),
        block_deal(r, 0, 1),
        block_deal(r, 1, 1),
        block_deal(r, 1, 0),
        block_deal(r, 0, 0),
        block_deal(r, 0, 0),
        block_deal(r, 0, 0),
    ]
    state = match(r, deals)
    play(state, "0:6-6:L", "0:6-6:L", "0:6-6:L", "1:6-6:L", "1:6-6:L")
    results = state.log.results()
    assert [h.winner for h in results] == [0, 0, 1, 1, 0]
    assert [h.awarded for h in results] == [1, 1, 0, 1, 0]
    assert [h.reset for h in results] == [None, None, Reset.REPLY, None, Reset.REPLY]
    assert [h.scores for h in results] == [(1, 0), (2, 0), (0, 0), (0, 1), (0, 0)]
    play(state, "0:6-6:L", "0:6-6:L", "0:6-6:L")
    # 2. with replies resetting, reaching the target always finds the opponent at 0.
    assert state.outcome is not None
    assert state.outcome.termination is Termination.NORMAL
    assert state.outcome.winner == 0
    assert state.outcome.scores == (3, 0)


# -- decision 3: shutouts look at the score at match end -----------------------------------


def test_pollona_after_cutthroat_reset_brought_losers_back_to_zero() -> None:
    r = rules("cutthroat", "hand_size=2", "target=2", 'shutout={name="pollona", multiplier=2}')
    # Seats 0, 1, 2 each win once (all scored: reset), then seat 0 wins twice.
    openers_lows = [(0, 0), (0, 1), (1, 2), (2, 0), (0, 0)]
    state = match(r, [block_deal(r, o, low) for o, low in openers_lows])
    play(state, *(f"{o}:6-6:L" for o, _ in openers_lows))
    results = state.log.results()
    assert [h.winner for h in results] == [0, 1, 2, 0, 0]
    assert results[2].reset is Reset.ALL_SCORED
    assert state.outcome is not None
    assert state.outcome.winner == 0
    assert state.outcome.shutout == "pollona"
    assert state.outcome.scores == (4, 0, 0)


def test_shutout_after_a_six_love_reply_wiped_the_losers_points() -> None:
    r = rules(
        "jamaican-six-love", "hand_size=2", "target=2", 'shutout={name="pollona", multiplier=2}'
    )
    # B wins first (0-1), A replies (0-0), then A wins twice.
    deals = [block_deal(r, 0, 1), block_deal(r, 1, 0), block_deal(r, 0, 0), block_deal(r, 0, 0)]
    state = match(r, deals)
    play(state, "0:6-6:L", "1:6-6:L", "0:6-6:L", "0:6-6:L")
    assert [h.scores for h in state.log.results()] == [(0, 1), (0, 0), (1, 0), (2, 0)]
    assert state.outcome is not None
    assert state.outcome.shutout == "pollona"
    assert state.outcome.scores == (4, 0)


# -- decision 4: "either partner may open" ---------------------------------------------------


def _no_redeal_seed(game: Game, seat: int) -> int:
    r = game.ruleset
    for seed in range(1000):
        if random_side_seat(r, seed, 0) == seat and game.new_match(seed).phase is Phase.PLAY:
            return seed
    raise AssertionError("no seed")


@pytest.mark.parametrize("offered", [0, 1, 2, 3])
def test_cuban_offered_seat_plays_any_tile_or_defers_then_partner_must_open(offered: int) -> None:
    game = Game(load_preset("cuban"))
    seed = _no_redeal_seed(game, offered)
    state = game.new_match(seed, auto_forced=False)
    assert state.offered == state.current_seat == offered
    assert legal(state) == {f"{t}:L" for t in state.hand_of(offered)} | {"defer"}
    state.apply_action(state.parse("defer"))
    mate = (offered + 2) % 4
    assert state.current_seat == mate
    assert legal(state) == {f"{t}:L" for t in state.hand_of(mate)}
    with pytest.raises(IllegalActionError):
        state.apply_action(state.parse("defer"))
    tile = max(state.hand_of(mate))
    state.apply_action(state.parse(f"{tile}:L"))
    assert state.opener == mate
    assert state.log.events() == [Defer(offered), Play(mate, tile, End.LEFT)]
    for seat in (None, 0, 1, 2, 3):
        assert Defer(offered) in observe(state, seat).events


def test_individual_sides_cannot_defer() -> None:
    r = rules("cuban", "sides=individual", "redeal_min_doubles=0")
    for seed in range(20):
        state = Game(r).new_match(seed, auto_forced=False)
        assert state.current_seat == random_side_seat(r, seed, 0)
        assert "defer" not in legal(state)
        assert legal(state) == {f"{t}:L" for t in state.hand_of(state.current_seat)}


def test_individual_winning_side_cannot_defer() -> None:
    r = rules("jamaican", "sides=individual", "hand_size=2")
    assert r.next_opener.value == "winning_side"
    state = match(r, [block_deal(r, 0, 2)])
    play(state, "0:6-6:L")
    assert state.log.results()[0].winner == 2
    assert state.current_seat == 2
    assert legal(state) == {f"{t}:L" for t in state.hand_of(2)}


# -- decision 5: rotate after a hand with no winner --------------------------------------


def test_rotate_after_tied_block_next_seat_after_opener_opens_any_tile() -> None:
    r = rules("block", "hand_size=2")
    assert r.no_winner_opener.value == "rotate"
    # Seat 1 opens 6-6; seats 0 and 1 (different sides) tie on 3 pips: no winner.
    tied = deal(r, "0-1 0-2", "6-6 0-3", "3-4 2-5", "4-5 3-5")
    nxt = deal(r, "0-1 0-2", "0-3 1-2", "6-6 5-5", "3-4 2-5")  # 6-6 with seat 2
    state = match(r, [tied, nxt])
    play(state, "1:6-6:L")
    (res,) = state.log.results()
    assert res.winner is None
    # Counter-clockwise: after seat 1 comes seat 0, which opens with any tile.
    assert state.current_seat == state.offered == 0
    assert legal(state) == {"0-1:L", "0-2:L"}


def test_rotate_counts_from_the_seat_that_played_the_first_tile_after_a_defer() -> None:
    r = rules("cuban", "hand_size=2", "redeal_min_doubles=0")
    seed = seed_offering(r, 1)
    # Seat 1 defers to seat 3, which opens 6-6; seats 3 and 2 tie on 3 pips.
    tied = deal(r, "3-4 2-5", "4-5 3-5", "0-1 0-2", "6-6 0-3")
    state = match(r, [tied, tied], seed=seed)
    play(state, "1:defer", "3:6-6:L")
    (res,) = state.log.results()
    assert (res.winner, res.opener) == (None, 3)
    # The seat after seat 3 counter-clockwise is 2 (not 0, the seat after the offered 1).
    assert state.current_seat == 2
    assert legal(state) == {"0-1:L", "0-2:L"}


# -- decision 6: El Dominito ---------------------------------------------------------------


def test_el_dominito_domino_out_scores_every_hand_including_partner() -> None:
    r = rules("el-dominito", "hand_size=2")
    d = deal(r, "6-6 2-6", "0-1 0-3", "0-2 1-5", "0-4 1-1")
    state = match(r, [d])
    play(state, "0:6-6:L", "0:2-6:L")
    (res,) = state.log.results()
    assert (res.end, res.winner) == (HandEnd.DOMINO, 0)
    assert res.pips == (0, 4, 8, 6)
    assert res.base == 18


def test_el_dominito_block_scores_the_opponents_pips() -> None:
    r = rules("el-dominito", "hand_size=2")
    state = match(r, [block_deal(r, 0, 2)])
    play(state, "0:6-6:L")
    (res,) = state.log.results()
    assert (res.end, res.winner) == (HandEnd.BLOCK, 0)
    assert res.base == res.pips[1] + res.pips[3] == 31


@pytest.mark.parametrize(
    ("opener", "low", "winner", "next_offered"),
    [
        # Seat 0 locks, its side wins (seat 2 holds fewest): the locker opens.
        (0, 2, 0, 0),
        # Seat 0 locks, side 1 wins: the seat after the locker (counter-clockwise) opens.
        (0, 1, 1, 3),
        # Seat 3 locks, side 0 wins: the seat after seat 3 is seat 2.
        (3, 0, 0, 2),
    ],
)
def test_el_dominito_locker_if_won(opener: int, low: int, winner: int, next_offered: int) -> None:
    r = rules("el-dominito", "hand_size=2")
    state = match(r, [block_deal(r, opener, low), block_deal(r, (opener + 1) % 4, low)])
    play(state, f"{opener}:6-6:L")
    (res,) = state.log.results()
    assert (res.end, res.winner, res.seat) == (HandEnd.BLOCK, winner, opener)
    assert state.offered == state.current_seat == next_offered
    # Any tile (6-6 is not forced), and no deferring.
    assert legal(state) == {f"{t}:L" for t in state.hand_of(next_offered)}


# -- decision 7: Ludoteka = Cuban's target and direction -------------------------------------


def test_ludoteka_target_and_direction_as_cuban() -> None:
    lud = load_preset("ludoteka-cuban")
    cub = load_preset("cuban")
    assert (lud.target, lud.turn_order) == (cub.target, cub.turn_order)
    assert (lud.target, lud.turn_order) == (100, TurnOrder.COUNTERCLOCKWISE)
    seed = seed_offering(lud, 2)
    state = Game(lud).new_match(seed, auto_forced=False)
    assert state.current_seat == 2
    state.apply_action(state.parse(f"{max(state.hand_of(2))}:L"))
    assert state.current_seat == 1


# -- decision 8: the random opening side comes from the seed ----------------------------------


@pytest.mark.parametrize("preset", ["cuban", "ludoteka-cuban"])
def test_random_side_follows_the_seed_formula(preset: str) -> None:
    r = load_preset(preset)
    game = Game(r)
    seen = set()
    for seed in range(40):
        state = game.new_match(seed, auto_forced=False)
        assert state.offered == random_side_seat(r, seed, 0), seed
        seen.add(state.offered)
    assert seen == {0, 1, 2, 3}


def test_random_side_uses_the_hand_index_when_drawn_again() -> None:
    r = rules("cuban", "hand_size=2", "redeal_min_doubles=0", "no_winner_opener=same_as_first")
    # Find a seed whose hand-1 draw differs from hand 0's, so the test can tell them apart.
    seed = next(s for s in range(100) if random_side_seat(r, s, 0) != random_side_seat(r, s, 1))
    first = random_side_seat(r, seed, 0)
    # The offered seat opens 6-6; it and the next seat tie on 3 pips: no winner.
    hands = ["3-4 2-5", "4-5 3-5", "1-5 2-4", "1-3 2-3"]
    hands[first] = "6-6 0-3"
    hands[next_seat(r, first)] = "0-1 0-2"
    tied = deal(r, *hands)
    state = match(r, [tied, tied], seed=seed)
    play(state, f"{first}:6-6:L")
    assert state.log.results()[0].winner is None
    assert state.offered == random_side_seat(r, seed, 1)
    assert "defer" in legal(state)


# -- decision 10: highest tile when no double was dealt --------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "highest"),
    [
        ("3-6", "4-5", "3-6"),  # 9 pips each: the larger half wins
        ("4-5", "3-6", "3-6"),
        ("2-6", "4-5", "4-5"),  # pips first: 9 beats 8 even with a smaller half
        ("0-5", "1-4", "0-5"),
        ("5-6", "4-6", "5-6"),
    ],
)
def test_highest_tile_opens_when_no_double_was_dealt(a: str, b: str, highest: str) -> None:
    r = rules("block", "hand_size=1")
    state = match(r, [deal(r, "0-1", a, "0-2", b)])
    seat = 1 if highest == a else 3
    assert state.current_seat == seat
    assert legal(state) == {f"{highest}:L"}


def test_a_double_beats_any_other_tile_for_the_opening() -> None:
    r = rules("block", "hand_size=1")
    state = match(r, [deal(r, "5-6", "0-0", "4-6", "3-6")])
    assert state.current_seat == 1
    assert legal(state) == {"0-0:L"}


# -- decision 11: forced moves --------------------------------------------------------------


def test_single_options_are_asked_without_auto_forced_and_applied_with_it() -> None:
    r = rules("puerto-rican", "hand_size=2")
    d = deal(r, "6-6 2-6", "0-1 0-3", "0-2 1-5", "0-4 1-1")
    asked = match(r, [d], auto_forced=False)
    assert asked.current_seat == 0
    assert legal(asked) == {"6-6:L"}
    assert asked.log.events() == []

    auto = match(r, [d], auto_forced=True)
    # 6-6 was forced, seats 3, 2, 1 passed, and 2-6 was seat 0's only play: the hand is over.
    assert auto.log.events(0) == [
        played(0, "6-6:L"),
        passed(3),
        passed(2),
        passed(1),
        played(0, "2-6:L"),
    ]
    assert auto.log.results()[0].winner == 0

    # A forced opening is played for seat 0; every seat sees it in its event stream.
    d = deal(r, "6-6 0-1", "0-2 1-2", "0-3 1-3", "5-6 4-6")
    state = match(r, [d], auto_forced=True)
    assert state.current_seat == 3
    assert legal(state) == {"5-6:L", "4-6:L"}
    for seat in (None, 0, 1, 2, 3):
        assert observe(state, seat).events == (played(0, "6-6:L"),)

    per_seat = match(r, [d], auto_forced=[False, True, True, True])
    assert per_seat.current_seat == 0 and legal(per_seat) == {"6-6:L"}


def test_passes_are_never_a_decision() -> None:
    r = rules("block", "hand_size=3")
    # Seat 0 opens 6-6; seats 3, 2 and 1 hold no 6 and pass by themselves.
    d = deal(r, "6-6 5-6 4-6", "0-1 0-2 1-2", "0-3 1-3 2-3", "0-4 1-4 2-4")
    state = match(r, [d])
    play(state, "0:6-6:L")
    assert state.current_seat == 0
    assert state.log.events() == [played(0, "6-6:L"), passed(3), passed(2), passed(1)]
    for seat in range(4):
        assert passed(1) in observe(state, seat).events


# -- step 1: the deal -----------------------------------------------------------------------


def _reference_deal(r: Ruleset, seed: int, hand: int, attempt: int) -> list[Tile]:
    tiles = [t for t in full_set(r.max_pip) if t not in r.exclude]
    key = int.from_bytes(sha256(f"{seed}:{hand}:{attempt}".encode()).digest()[:8], "big")
    random.Random(key).shuffle(tiles)
    return tiles


def _flat(d: Deal) -> list[Tile]:
    return [t for h in d.hands for t in h] + list(d.stock)


@pytest.mark.parametrize("preset", ["draw", "cutthroat", "iq-2v2"])
def test_later_deals_do_not_depend_on_how_earlier_hands_were_played(preset: str) -> None:
    r = load_preset(preset)
    seed = 11
    seen = []
    for play_seed in range(3):
        state = Game(r).new_match(seed)
        while state.hand < 2 and not state.is_terminal():
            state.random_playout(random.Random(play_seed), hand_only=True)
        if state.is_terminal():
            continue
        seen.append([_flat(state.log.record(h).deals[0]) for h in (1, 2)])
        assert seen[-1] == [_reference_deal(r, seed, h, 0) for h in (1, 2)]
    assert len(seen) >= 2


def test_a_redeal_is_the_seeded_attempt_1_deal() -> None:
    r = rules("block", "redeal_min_doubles=2")
    game = Game(r)
    seed = next(s for s in range(200) if game.new_match(s, auto_forced=False).phase is Phase.REDEAL)
    state = game.new_match(seed, auto_forced=False)
    state.apply_action(state.parse("redeal"))
    deals = state.log.record(0).deals
    assert [d.attempt for d in deals] == [0, 1]
    assert _flat(deals[0]) == _reference_deal(r, seed, 0, 0)
    assert _flat(deals[1]) == _reference_deal(r, seed, 0, 1)
    assert state.attempt == 1
    state.random_playout(random.Random(0), hand_only=True)
    if not state.is_terminal():
        assert state.hand == 1
        assert state.attempt == 0
        assert _flat(state.log.record(1).deals[0]) == _reference_deal(r, seed, 1, 0)


# -- step 2: the redeal offer ---------------------------------------------------------------


def _cuban_doubles_deal(holders: tuple[int, int]) -> list[Tile]:
    """A full cuban deal: ``holders[0]`` gets 0-0..4-4, ``holders[1]`` 5-5..9-9."""
    r = load_preset("cuban")
    singles = [t for t in full_set(9) if not t.is_double]
    hands: list[list[Tile]] = [[] for _ in range(4)]
    hands[holders[0]] = [Tile(i, i) for i in range(5)]
    hands[holders[1]] = [Tile(i, i) for i in range(5, 10)]
    for h in hands:
        while len(h) < r.hand_size:
            h.append(singles.pop(0))
    return deal(r, *hands)


def test_cuban_redeal_offer_in_turn_order_keep_private_redeal_public() -> None:
    r = load_preset("cuban")
    seed = seed_offering(r, 0)
    first = _cuban_doubles_deal((1, 3))
    again = _cuban_doubles_deal((2, 1))  # would qualify again: no second offer
    state = match(r, [first], redeals={0: again}, seed=seed)
    # Counter-clockwise from the offered seat 0: seat 3, then seat 1.
    assert state.phase is Phase.REDEAL
    assert state.current_seat == 3
    assert legal(state) == {"redeal", "keep"}
    play(state, "3:keep")
    assert state.current_seat == 1
    assert observe(state, 3).events == (RedealChoice(3, False),)
    for seat in (None, 0, 1, 2):
        assert observe(state, seat).events == ()
    play(state, "1:redeal")
    assert state.attempt == 1
    assert phase(state) is Phase.PLAY
    assert state.current_seat == state.offered == 0
    assert "defer" in legal(state)
    for seat in (None, 0, 1, 2):
        assert observe(state, seat).events == (RedealChoice(1, True),)
        assert observe(state, seat).attempt == 1
    assert observe(state, 3).events == (RedealChoice(3, False), RedealChoice(1, True))
    record = state.log.record(0)
    assert [d.attempt for d in record.deals] == [0, 1]
    assert record.deals[1].hands[1] == tuple(again[10:20])
    assert state.hand_of(2) == tuple(sorted(again[20:30]))


def test_a_keep_leaves_no_trace_in_other_seats_views() -> None:
    r = load_preset("cuban")
    state = match(r, [_cuban_doubles_deal((1, 3))], seed=seed_offering(r, 0))
    assert state.current_seat == 3
    # Seats 0 and 2 and spectators may not learn that seat 3 was offered or kept.
    before = {seat: observe(state, seat) for seat in (None, 0, 2)}
    play(state, "3:keep")
    assert state.current_seat == 1
    for seat, view in before.items():
        assert observe(state, seat) == view


def test_first_redeal_ends_the_offers() -> None:
    r = load_preset("cuban")
    seed = seed_offering(r, 0)
    state = match(
        r, [_cuban_doubles_deal((1, 3))], redeals={0: _cuban_doubles_deal((1, 3))}, seed=seed
    )
    play(state, "3:redeal")
    assert state.phase is Phase.PLAY
    assert state.current_seat == 0
    assert [e for e in state.log.events() if isinstance(e, RedealChoice)] == [RedealChoice(3, True)]


def test_no_offer_below_the_threshold() -> None:
    r = load_preset("cuban")
    seed = seed_offering(r, 0)
    d = _cuban_doubles_deal((1, 3))
    # Swap one double of seat 3 for a single of seat 0: seat 3 has 4 doubles, seat 1 still 5.
    d[0], d[30] = d[30], d[0]
    state = match(r, [d], seed=seed)
    assert state.phase is Phase.REDEAL and state.current_seat == 1
    play(state, "1:keep")
    assert phase(state) is Phase.PLAY and state.current_seat == 0


def test_redeal_resolves_a_card_dependent_opening_again() -> None:
    r = rules("block", "hand_size=3", "redeal_min_doubles=2")
    # Seat 1 holds 6-6 (opener-to-be) and 5-5; seat 3 holds 4-4 and 3-3.
    first = deal(r, "0-1 0-2 1-2", "6-6 5-5 0-3", "1-3 2-3 0-4", "4-4 3-3 1-4")
    # After the redeal seat 2 holds 6-6, and nobody else holds a 6.
    again = deal(r, "0-1 0-2 1-2", "0-3 1-3 2-3", "6-6 0-4 1-4", "2-4 3-4 0-5")
    state = match(r, [first], redeals={0: again})
    # Counter-clockwise from seat 1: seat 1, 0, 3: seat 1 first.
    assert state.current_seat == 1
    play(state, "1:keep", "3:redeal")
    assert state.offered == state.current_seat == 2
    assert legal(state) == {"6-6:L"}


@pytest.mark.parametrize("max_hands", [1, 2])
def test_a_redeal_is_not_a_hand(max_hands: int) -> None:
    r = rules("block", "hand_size=2", "redeal_min_doubles=2", f"max_hands={max_hands}")
    first = deal(r, "6-6 5-5", "0-1 0-2", "3-4 2-5", "4-5 3-5")
    again = block_deal(r, 0, 1)
    state = match(r, [first], redeals={0: again})
    play(state, "0:redeal", "0:6-6:L")
    assert len(state.log.results()) == 1
    assert [d.attempt for d in state.log.record(0).deals] == [0, 1]
    if max_hands == 1:
        assert state.outcome is not None
        assert state.outcome.termination is Termination.HAND_LIMIT
    else:
        assert not state.is_terminal()
        assert state.hand == 1


# -- step 4: legal actions -------------------------------------------------------------------


def test_first_tile_is_one_action_laid_low_half_left() -> None:
    r = rules("block", "hand_size=2")
    # Seat 1 wins hand 0 (block); as winner it opens hand 1 with any tile.
    state = match(r, [block_deal(r, 0, 1), deal(r, "0-1 0-2", "6-3 2-5", "6-6 1-2", "0-3 1-3")])
    play(state, "0:6-6:L")
    assert state.current_seat == 1
    assert legal(state) == {"3-6:L", "2-5:L"}
    with pytest.raises(IllegalActionError):
        state.apply_action(state.parse("3-6:R"))
    play(state, "1:6-3:L")
    assert state.ends == (3, 6)
    assert observe(state).chain == (PlacedTile(Tile(3, 6), 3, 6, False),)


@pytest.mark.parametrize(("end", "ends"), [("L", (6, 6)), ("R", (3, 3))])
def test_tile_fitting_both_ends_is_two_actions(end: str, ends: tuple[int, int]) -> None:
    r = rules("block", "hand_size=3")
    d = deal(r, "6-6 4-6 3-4", "3-6 0-1 1-1", "2-3 0-2 1-2", "2-6 0-5 1-5")
    state = match(r, [d])
    play(state, "0:6-6:L", "3:2-6:L", "2:2-3:L")
    assert state.ends == (3, 6)
    assert state.current_seat == 1
    assert legal(state) == {"3-6:L", "3-6:R"}
    play(state, f"1:3-6:{end}")
    assert state.ends == ends


def test_equal_ends_offer_one_placement_on_the_left() -> None:
    r = rules("block", "hand_size=2")
    d = deal(r, "6-6 2-5", "0-1 0-2", "3-4 1-2", "5-6 0-3")
    state = match(r, [d])
    play(state, "0:6-6:L")
    assert state.ends == (6, 6)
    assert legal(state) == {"5-6:L"}
    with pytest.raises(IllegalActionError):
        state.apply_action(state.parse("5-6:R"))
    play(state, "3:5-6:L")
    assert state.ends == (5, 6)


# -- step 5: the draw stock -------------------------------------------------------------------


def _draw_rules(*extra: str) -> Ruleset:
    return rules("draw", "seats=2", "sides=individual", "hand_size=2", *extra)


def test_draw_until_playable_then_must_play_only_drawer_sees_tiles() -> None:
    r = _draw_rules()
    d = deal(r, "6-6 0-0", "1-2 1-3", stock="0-1 0-2 5-6 4-6")
    state = match(r, [d])
    play(state, "0:6-6:L")
    assert state.current_seat == 1
    assert state.log.events() == [
        played(0, "6-6:L"),
        drew(1, "0-1"),
        drew(1, "0-2"),
        drew(1, "5-6"),
    ]
    assert legal(state) == {"5-6:L"}
    assert state.tile_counts() == (1, 5)
    assert state.stock_count == 28 - 4 - 3
    hidden = (played(0, "6-6:L"), Draw(1, None), Draw(1, None), Draw(1, None))
    assert observe(state, 0).events == hidden
    assert observe(state, None).events == hidden
    assert observe(state, 1).events == tuple(state.log.events())
    assert Tile(5, 6) in observe(state, 1).tiles
    assert observe(state, 0).tile_counts == (1, 5)
    assert observe(state, 0).stock_count == 21


def test_draws_emptying_the_stock_then_nobody_can_play_block_at_once() -> None:
    sixes = [f'"{a}-6"' for a in range(6)]
    r = _draw_rules(f"exclude=[{', '.join(sixes)}]")
    d = deal(r, "6-6 0-1", "1-2 0-2")
    state = match(r, [d])
    play(state, "0:6-6:L")
    events = state.log.events(0)
    assert events[0] == played(0, "6-6:L")
    assert all(isinstance(e, Draw) and e.seat == 1 for e in events[1:])
    assert len(events) == 1 + (r.set_size - 4)
    assert not any(isinstance(e, Pass) for e in events)
    (res,) = state.log.results()
    assert (res.end, res.seat) == (HandEnd.BLOCK, 0)
    assert res.pips[1] == 5 + sum(t.pips for t in d[4:])


def test_draws_emptying_the_stock_then_a_pass_if_someone_can_play() -> None:
    sixes = [f'"{a}-6"' for a in range(5)]
    r = _draw_rules(f"exclude=[{', '.join(sixes)}]")
    d = deal(r, "6-6 5-6", "1-2 0-2")
    state = match(r, [d])
    play(state, "0:6-6:L")
    events = state.log.events(0)
    assert events[-1] == passed(1)
    assert sum(isinstance(e, Draw) for e in events) == r.set_size - 4
    assert state.current_seat == 0
    play(state, "0:5-6:L")
    assert state.log.results()[0].end is HandEnd.DOMINO


# -- step 6: a block is detected at once -----------------------------------------------------


def test_block_detected_right_after_the_locking_play() -> None:
    r = rules("block", "hand_size=2")
    # 6-6, then seat 3 plays 5-6: nobody holds a 5 or a 6 any more.
    d = deal(r, "6-6 0-1", "0-2 1-2", "0-3 1-3", "5-6 0-4")
    state = match(r, [d])
    play(state, "0:6-6:L", "3:5-6:L")
    assert state.log.events(0) == [played(0, "6-6:L"), played(3, "5-6:L")]
    (res,) = state.log.results()
    assert (res.end, res.seat) == (HandEnd.BLOCK, 3)
    assert res.pips == (1, 5, 7, 4)
    assert res.winner == 0
    assert r.block_points is Points.OPPONENTS_PIPS
    assert res.base == 5 + 4
