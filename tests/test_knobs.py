"""Every value of every knob in RULES.md, each shown by a scenario played through the engine."""

from __future__ import annotations

import random

import pytest

from capicua.engine.game import Game, Phase
from capicua.engine.records import HandEnd, Pass, Play, Reset, Termination
from capicua.engine.rules import Ruleset
from capicua.engine.tiles import Tile, full_set
from tests.scenario import (
    block_deal,
    deal,
    drew,
    finish_deal,
    legal,
    match,
    next_seat,
    passed,
    play,
    played,
    random_side_seat,
    rules,
    seed_offering,
)

# -- the set: max_pip and exclude -------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "max_pip", "size"),
    [("block", 6, 28), ("iq-2v2", 9, 55), ("cuban", 9, 55), ("cutthroat", 6, 27)],
)
def test_max_pip_and_exclude_give_the_set(preset: str, max_pip: int, size: int) -> None:
    r = rules(preset)
    assert r.max_pip == max_pip
    for seed in range(5):
        d = Game(r).new_match(seed).log.record(0).deals[0]
        dealt = [t for h in d.hands for t in h] + list(d.stock)
        assert len(dealt) == len(set(dealt)) == size
        assert set(dealt) == set(full_set(max_pip)) - set(r.exclude)
        assert all(len(h) == r.hand_size for h in d.hands)


def test_exclude_removes_the_tile_from_play() -> None:
    r = rules("block", 'exclude=["6-6"]', "hand_size=2")
    game = Game(r)
    assert len(game.deck) == 27
    for seed in range(10):
        d = game.new_match(seed).log.record(0).deals[0]
        assert Tile(6, 6) not in [t for h in d.hands for t in h] + list(d.stock)
    # With 6-6 gone, 5-5 is the top double.
    state = match(r, [deal(r, "0-1 0-2", "1-2 0-3", "5-5 5-6", "4-4 4-6")])
    assert state.current_seat == 2
    assert legal(state) == {"5-5:L"}
    with pytest.raises(ValueError):
        deal(r, "6-6 0-1", "0-2 1-2", "0-3 1-3", "0-4 1-4")
    with pytest.raises(ValueError):  # the engine refuses a dealer that deals an excluded tile
        Game(r).new_match(0, dealer=lambda h, a: list(full_set(6)))


def test_double_nine_top_double_opens() -> None:
    r = rules("block", "max_pip=9", "hand_size=2")
    state = match(r, [deal(r, "8-9 7-9", "6-6 0-1", "9-9 0-2", "8-8 0-3")])
    assert state.current_seat == 2
    assert legal(state) == {"9-9:L"}


# -- seats, sides, hand_size ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "overrides", "seats"),
    [
        ("draw", ("seats=2", "sides=individual"), 2),
        ("cutthroat", (), 3),
        ("block", (), 4),
        ("iq-1v1", (), 2),
        ("iq-2v2", (), 4),
    ],
)
def test_seats_deal_and_turns(preset: str, overrides: tuple[str, ...], seats: int) -> None:
    r = rules(preset, *overrides)
    assert r.seats == seats
    for seed in range(8):
        state = Game(r).new_match(seed)
        assert len(state.log.record(0).deals[0].hands) == seats
        assert len(state.tile_counts()) == seats
        rng = random.Random(seed)
        state.random_playout(rng, hand_only=True)
        turns = [e.seat for e in state.log.events(0) if isinstance(e, Play | Pass)]
        assert set(turns) == set(range(seats)) or state.log.results()[0].end is HandEnd.BLOCK
        for a, b in zip(turns, turns[1:], strict=False):
            assert b == next_seat(r, a), (seed, turns)


@pytest.mark.parametrize(
    ("sides", "num_sides", "winner", "base"), [("teams", 2, 0, 2 + 4), ("individual", 4, 2, 7)]
)
def test_sides_decide_who_scores(sides: str, num_sides: int, winner: int, base: int) -> None:
    r = rules("block", f"sides={sides}", "hand_size=1")
    assert r.num_sides == num_sides
    assert [r.side_of(s) for s in range(4)] == ([0, 1, 0, 1] if sides == "teams" else [0, 1, 2, 3])
    # Seat 2 opens 6-6, its only tile, and is out at once.
    state = match(r, [deal(r, "0-1", "0-2", "6-6", "0-4")])
    play(state, "2:6-6:L")
    (res,) = state.log.results()
    assert (res.end, res.seat, res.winner) == (HandEnd.DOMINO, 2, winner)
    assert res.base == base  # opponents: seats 1 and 3, or every other seat
    assert state.scores == [base if s == winner else 0 for s in range(num_sides)]


@pytest.mark.parametrize("hand_size", [1, 5, 7, 14])
def test_hand_size(hand_size: int) -> None:
    r = rules("draw", "seats=2", "sides=individual", f"hand_size={hand_size}")
    state = Game(r).new_match(3, auto_forced=False)
    assert state.tile_counts() == (hand_size, hand_size)
    assert state.stock_count == 28 - 2 * hand_size
    assert len(state.log.record(0).deals[0].stock) == 28 - 2 * hand_size


# -- stock ------------------------------------------------------------------------------------


@pytest.mark.parametrize("stock", ["sleeping", "draw"])
def test_stock_sleeping_passes_draw_draws(stock: str) -> None:
    r = rules("block", "seats=2", "sides=individual", "hand_size=2", f"stock={stock}")
    d = deal(r, "6-6 4-6", "1-2 1-3", stock="0-1 5-6")
    state = match(r, [d])
    play(state, "0:6-6:L")
    if stock == "sleeping":
        assert state.log.events() == [played(0, "6-6:L"), passed(1)]
        assert state.current_seat == 0
        assert state.stock_count == 24
    else:
        assert state.log.events() == [played(0, "6-6:L"), drew(1, "0-1"), drew(1, "5-6")]
        assert state.current_seat == 1
        assert legal(state) == {"5-6:L"}
        assert state.stock_count == 22


# -- turn order -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("order", "seq"),
    [
        ("clockwise", [(0, "6-6"), (1, "1-6"), 2, 3, 0, (1, "1-1")]),
        ("counterclockwise", [(0, "6-6"), 3, 2, (1, "1-6"), 0, 3, 2, (1, "1-1")]),
    ],
)
def test_turn_order(order: str, seq: list[int | tuple[int, str]]) -> None:
    r = rules("block", f"turn_order={order}", "hand_size=2")
    # Only seat 1 can answer 6-6; after 1-6 only seat 1 (1-1) can play.
    d = deal(r, "6-6 0-5", "1-6 1-1", "2-2 2-3", "3-3 3-4")
    state = match(r, [d])
    play(state, "0:6-6:L", "1:1-6:L", "1:1-1:L")
    expected = [played(x[0], f"{x[1]}:L") if isinstance(x, tuple) else passed(x) for x in seq]
    assert state.log.events(0) == expected


# -- first_opener -----------------------------------------------------------------------------


def test_first_opener_highest_double_beats_bigger_tiles() -> None:
    r = rules("block", "hand_size=2")
    state = match(r, [deal(r, "5-6 4-6", "1-1 0-1", "3-3 0-2", "2-2 0-3")])
    assert state.current_seat == 2
    assert legal(state) == {"3-3:L"}


def test_first_opener_tile() -> None:
    r = rules("block", "hand_size=2", "first_opener=tile:3-4")
    state = match(r, [deal(r, "6-6 5-5", "1-1 0-1", "3-4 0-2", "2-2 0-3")])
    assert state.current_seat == 2
    assert legal(state) == {"3-4:L"}


def test_first_opener_tile_not_dealt_falls_back_to_highest_double() -> None:
    r = rules("el-dominito-2p")
    assert r.first_opener_text == "tile:6-6"
    # 6-6 is in the stock: the highest dealt double (5-5, seat 1) opens with it.
    d = deal(r, "0-1 0-2 0-3 1-2 1-3 2-3 4-4", "5-5 0-4 1-4 2-4 3-4 0-5 1-5", stock="6-6")
    state = match(r, [d])
    assert state.current_seat == 1
    assert legal(state) == {"5-5:L"}
    # No double dealt at all: the highest tile.
    d = deal(r, "0-1 0-2 0-3 1-2 1-3 2-3 4-6", "0-4 1-4 2-4 3-4 0-5 1-5 3-6", stock="6-6")
    state = match(r, [d])
    assert state.current_seat == 0
    assert legal(state) == {"4-6:L"}


def test_first_opener_random_side() -> None:
    r = rules("block", "first_opener=random_side", "hand_size=2")
    d = block_deal(r, 0, 0)
    for seat in range(4):
        seed = seed_offering(r, seat)
        state = match(r, [d], seed=seed)
        assert state.current_seat == state.offered == seat
        assert legal(state) == {f"{t}:L" for t in state.hand_of(seat)} | {"defer"}


def test_first_opener_random_side_with_individual_sides() -> None:
    r = rules("cutthroat", "first_opener=random_side")
    seen = set()
    for seed in range(30):
        state = Game(r).new_match(seed, auto_forced=False)
        seat = random_side_seat(r, seed, 0)
        assert state.offered == state.current_seat == seat
        assert legal(state) == {f"{t}:L" for t in state.hand_of(seat)}
        seen.add(seat)
    assert seen == {0, 1, 2}


# -- next_opener (after a hand with a winner) --------------------------------------------------


def _out_by_seat_3(r: Ruleset) -> list[Tile]:
    """hand_size=2, counter-clockwise: seat 0 opens 6-6, seat 3 plays 5-6, everyone else
    passes and seat 3 goes out with 0-5 (no finish bonus: 0-5 fits one end)."""
    return deal(r, "6-6 0-1", "0-3 1-3", "0-2 1-2", "5-6 0-5")


@pytest.mark.parametrize(
    ("next_opener", "seat", "defer"),
    [("winner", 3, False), ("winning_side", 3, True), ("highest_double", 1, False)],
)
def test_next_opener_after_a_domino(next_opener: str, seat: int, defer: bool) -> None:
    r = rules("block", "hand_size=2", f"next_opener={next_opener}")
    nxt = deal(r, "0-1 0-2", "6-6 5-5", "1-2 0-3", "3-4 2-5")
    state = match(r, [_out_by_seat_3(r), nxt])
    play(state, "0:6-6:L", "3:5-6:L", "3:0-5:L")
    assert state.log.results()[0].seat == 3
    assert state.current_seat == seat
    mine = {f"{t}:L" for t in state.hand_of(seat)}
    if next_opener == "highest_double":
        assert legal(state) == {"6-6:L"}
    else:
        assert legal(state) == mine | ({"defer"} if defer else set())


@pytest.mark.parametrize(
    ("seat0", "seat2", "seat"),
    [
        ("0-2 0-3", "1-2 0-1", 2),  # 5 against 4: seat 2
        ("0-1 0-2", "0-3 1-2", 0),  # 3 against 6: seat 0
        ("0-1 0-2", "1-2 0-0", 0),  # 3 against 3: the lower seat
    ],
)
def test_next_opener_winner_after_a_block_is_the_side_seat_with_fewest_pips(
    seat0: str, seat2: str, seat: int
) -> None:
    r = rules("block", "hand_size=2")
    # Seat 1 opens 6-6 and keeps 5-5; side 0 wins the block.
    state = match(r, [deal(r, seat0, "6-6 5-5", seat2, "3-4 2-5")])
    play(state, "1:6-6:L")
    res = state.log.results()[0]
    assert (res.end, res.winner) == (HandEnd.BLOCK, 0)
    assert state.current_seat == state.offered == seat
    assert legal(state) == {f"{t}:L" for t in state.hand_of(seat)}


# -- no_winner_opener ---------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["rotate", "same_as_first"])
def test_no_winner_opener(value: str) -> None:
    r = rules("block", "hand_size=2", f"no_winner_opener={value}")
    tied = deal(r, "0-1 0-2", "6-6 0-3", "3-4 2-5", "4-5 3-5")  # seats 0 and 1 tie on 3
    nxt = deal(r, "0-1 0-2", "0-3 1-2", "6-6 5-5", "3-4 2-5")
    state = match(r, [tied, nxt])
    play(state, "1:6-6:L")
    assert state.log.results()[0].winner is None
    if value == "rotate":
        assert state.current_seat == 0
        assert legal(state) == {"0-1:L", "0-2:L"}
    else:
        assert state.current_seat == 2
        assert legal(state) == {"6-6:L"}


# -- block_opener ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "low", "seat"),
    [
        ("as_next", 2, 2),  # winner: the winning side's seat with the fewest pips
        ("locker_if_won", 2, 0),  # the locker (seat 0), its side won
        ("as_next", 1, 1),
        ("locker_if_won", 1, 3),  # the locker's side lost: the seat after it
    ],
)
def test_block_opener(value: str, low: int, seat: int) -> None:
    r = rules("el-dominito", "hand_size=2", f"block_opener={value}")
    state = match(r, [block_deal(r, 0, low), block_deal(r, 1, 1)])
    play(state, "0:6-6:L")
    assert state.log.results()[0].seat == 0
    assert state.current_seat == seat
    assert legal(state) == {f"{t}:L" for t in state.hand_of(seat)}


def test_block_opener_does_not_apply_to_a_domino_out() -> None:
    r = rules("el-dominito", "hand_size=2")
    state = match(r, [_out_by_seat_3(r)])
    play(state, "0:6-6:L", "3:5-6:L", "3:0-5:L")
    assert state.current_seat == 3


# -- redeal_min_doubles -------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "offers"), [(0, []), (2, [1, 3]), (3, [1])])
def test_redeal_min_doubles(n: int, offers: list[int]) -> None:
    r = rules("block", "hand_size=3", f"redeal_min_doubles={n}")
    d = deal(r, "0-1 0-2 1-2", "6-6 5-5 4-4", "0-3 1-3 2-3", "3-3 2-2 0-4")
    state = match(r, [d])
    asked = []
    while state.phase is Phase.REDEAL:
        asked.append(state.current_seat)
        assert legal(state) == {"redeal", "keep"}
        state.apply_action(state.parse("keep"))
    assert asked == offers
    assert state.current_seat == 1 and legal(state) == {"6-6:L"}


# -- block_winner and block_tie ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "winner", "base"), [("lowest_seat", 0, 12), ("lowest_side", 1, 18)]
)
def test_block_winner(value: str, winner: int, base: int) -> None:
    r = rules("block", "hand_size=2", f"block_winner={value}")
    # Seat 0 keeps 1 pip (the fewest), but side 0 totals 1 + 17 = 18 against 5 + 7 = 12.
    state = match(r, [deal(r, "6-6 0-1", "0-2 0-3", "4-5 3-5", "1-2 1-3")])
    play(state, "0:6-6:L")
    res = state.log.results()[0]
    assert res.pips == (1, 5, 17, 7)
    assert (res.winner, res.base) == (winner, base)


@pytest.mark.parametrize("tie", ["no_winner", "opening_side"])
@pytest.mark.parametrize(
    ("preset", "hands", "opener", "winner"),
    [
        # teams, lowest_side: 9 + 6 against 10 + 5, seat 1 opened.
        ("dominican", ("0-2 3-4", "6-6 5-5", "0-3 1-2", "0-1 0-4"), 1, 1),
        # teams, lowest_seat: seats 0 and 1 tie on 3, seat 1 opened.
        ("block", ("0-1 0-2", "6-6 0-3", "3-4 2-5", "4-5 3-5"), 1, 1),
        # 3 individual seats: seats 0 and 1 tie on 4, seat 0 opened.
        ("cutthroat", ("6-6 0-4", "0-1 0-3", "3-4 2-5"), 0, 0),
        # 3 individual seats: seats 1 and 2 tie on 4, seat 0 (10) opened: no winner.
        ("cutthroat", ("6-6 5-5", "0-1 0-3", "0-2 1-1"), 0, None),
    ],
)
def test_block_tie(
    tie: str, preset: str, hands: tuple[str, ...], opener: int, winner: int | None
) -> None:
    r = rules(preset, "hand_size=2", f"block_tie={tie}")
    state = match(r, [deal(r, *hands)])
    play(state, f"{opener}:6-6:L")
    res = state.log.results()[0]
    assert res.end is HandEnd.BLOCK and res.opener == opener
    expected = winner if tie == "opening_side" else None
    assert res.winner == expected
    if expected is None:
        assert (res.base, res.awarded) == (0, 0)
        assert state.scores == [0] * r.num_sides
    else:
        assert res.awarded == res.base > 0
        assert state.scores[expected] == res.base


# -- domino_points and block_points ------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "base"), [("one", 1), ("opponents_pips", 2 + 4), ("all_pips", 1 + 2 + 4)]
)
def test_domino_points(value: str, base: int) -> None:
    r = rules("block", "hand_size=1", f"domino_points={value}", "block_points=one")
    state = match(r, [deal(r, "0-1", "0-2", "6-6", "0-4")])
    play(state, "2:6-6:L")
    res = state.log.results()[0]
    assert (res.end, res.winner, res.base, res.awarded) == (HandEnd.DOMINO, 0, base, base)


@pytest.mark.parametrize(
    ("value", "base"), [("one", 1), ("opponents_pips", 14 + 17), ("all_pips", 1 + 14 + 6 + 17)]
)
def test_block_points(value: str, base: int) -> None:
    r = rules("block", "hand_size=2", f"block_points={value}", "domino_points=one")
    state = match(r, [block_deal(r, 0, 0)])
    play(state, "0:6-6:L")
    res = state.log.results()[0]
    assert res.pips == (1, 14, 6, 17)
    assert (res.end, res.winner, res.base, res.awarded) == (HandEnd.BLOCK, 0, base, base)


# -- finish_bonus -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bonuses",
    [
        '[{name="plus", effect="add:5"}, {name="times", effect="multiply:3"}]',
        '[{name="times", effect="multiply:3"}, {name="plus", effect="add:5"}]',
    ],
)
def test_finish_bonus_additions_before_multiplications(bonuses: str) -> None:
    r = rules("block", "hand_size=3", f"finish_bonus={bonuses}")
    d, moves = finish_deal(r, "distinct")
    state = match(r, [d])
    play(state, *moves)
    res = state.log.results()[0]
    assert res.end is HandEnd.DOMINO
    names = [b.name for b in r.finish_bonus]
    assert list(res.bonuses) == names
    assert res.points == (res.base + 5) * 3


def test_finish_bonus_several_of_each_effect() -> None:
    bonuses = (
        '[{name="a", effect="add:2"}, {name="m", effect="multiply:2"}, '
        '{name="b", effect="add:3"}, {name="n", effect="multiply:5"}]'
    )
    r = rules("block", "hand_size=3", f"finish_bonus={bonuses}")
    d, moves = finish_deal(r, "distinct")
    state = match(r, [d])
    play(state, *moves)
    res = state.log.results()[0]
    assert res.bonuses == ("a", "m", "b", "n")
    assert res.points == (res.base + 5) * 10


@pytest.mark.parametrize(
    ("flags", "applies"),
    [
        ("", {"distinct", "double", "equal"}),
        ("no_double=true", {"distinct", "equal"}),
        ("distinct_ends=true", {"distinct"}),
        ("no_double=true, distinct_ends=true", {"distinct"}),
    ],
)
@pytest.mark.parametrize("case", ["distinct", "double", "equal", "one_end"])
def test_finish_bonus_conditions(flags: str, applies: set[str], case: str) -> None:
    extra = f", {flags}" if flags else ""
    r = rules("block", "hand_size=3", f'finish_bonus=[{{name="b", effect="add:7"{extra}}}]')
    d, moves = finish_deal(r, case)
    state = match(r, [d])
    play(state, *moves)
    res = state.log.results()[0]
    assert res.end is HandEnd.DOMINO and res.seat == 0
    if case in applies:
        assert (res.bonuses, res.points) == (("b",), res.base + 7)
    else:
        assert (res.bonuses, res.points) == ((), res.base)


def test_finish_bonus_needs_a_domino_out() -> None:
    r = rules("block", "hand_size=2", 'finish_bonus=[{name="b", effect="multiply:2"}]')
    # A block right after 6-6 with ends 6 and 6: no bonus.
    state = match(r, [block_deal(r, 0, 0)])
    play(state, "0:6-6:L")
    res = state.log.results()[0]
    assert res.end is HandEnd.BLOCK
    assert (res.bonuses, res.points) == ((), res.base)


# -- reply_resets, all_scored_resets --------------------------------------------------------


@pytest.mark.parametrize("value", [False, True])
def test_reply_resets(value: bool) -> None:
    r = rules("jamaican", "hand_size=2", f"reply_resets={str(value).lower()}")
    # A wins, then B wins while A has 1.
    state = match(r, [block_deal(r, 0, 0), block_deal(r, 0, 1)])
    play(state, "0:6-6:L", "0:6-6:L")
    res = state.log.results()[1]
    assert res.winner == 1
    if value:
        assert (res.awarded, res.reset, res.scores) == (0, Reset.REPLY, (0, 0))
    else:
        assert (res.awarded, res.reset, res.scores) == (1, None, (1, 1))


@pytest.mark.parametrize("value", [False, True])
def test_all_scored_resets(value: bool) -> None:
    r = rules("cutthroat", "hand_size=2", f"all_scored_resets={str(value).lower()}")
    state = match(r, [block_deal(r, 0, 0), block_deal(r, 0, 1), block_deal(r, 1, 2)])
    play(state, "0:6-6:L", "0:6-6:L", "1:6-6:L")
    res = state.log.results()[2]
    assert res.winner == 2 and res.awarded == 1
    if value:
        assert (res.reset, res.scores) == (Reset.ALL_SCORED, (0, 0, 0))
    else:
        assert (res.reset, res.scores) == (None, (1, 1, 1))


@pytest.mark.parametrize("target", [20, 30])
def test_all_scored_resets_skipped_when_the_match_ends(target: int) -> None:
    r = rules(
        "cutthroat",
        "hand_size=2",
        "block_points=opponents_pips",
        "win_needs_zero_opponent=false",
        f"target={target}",
    )
    deals = [
        deal(r, "6-6 0-1", "0-2 1-2", "0-3 1-3"),  # seat 0 wins 5 + 7 = 12
        deal(r, "6-6 2-3", "0-1 0-2", "1-2 0-4"),  # seat 1 wins 5 + 7 = 12
        deal(r, "2-5 3-5", "6-6 3-4", "0-1 0-2"),  # seat 2 wins 15 + 7 = 22
    ]
    state = match(r, deals)
    play(state, "0:6-6:L", "0:6-6:L", "1:6-6:L")
    res = state.log.results()[2]
    assert res.winner == 2 and res.awarded == 22
    if target == 20:  # 22 reaches 20: the match ends, no reset
        assert (res.reset, res.scores) == (None, (12, 12, 22))
        assert state.outcome is not None and state.outcome.winner == 2
        assert state.outcome.scores == (12, 12, 22)
    else:
        assert (res.reset, res.scores) == (Reset.ALL_SCORED, (0, 0, 0))
        assert not state.is_terminal()


# -- target, win_needs_zero_opponent ---------------------------------------------------------


@pytest.mark.parametrize("target", [2, 3])
def test_target(target: int) -> None:
    r = rules("jamaican", "hand_size=2", f"target={target}")
    state = match(r, [block_deal(r, 0, 0)])
    play(state, "0:6-6:L", "0:6-6:L")
    if target == 2:
        assert state.outcome is not None
        assert state.outcome.termination is Termination.NORMAL
        assert (state.outcome.winner, state.outcome.scores) == (0, (2, 0))
    else:
        assert not state.is_terminal() and state.scores == [2, 0]


def test_target_is_reached_not_hit_exactly() -> None:
    r = rules("block", "hand_size=2", "target=10")
    state = match(r, [block_deal(r, 0, 0)])
    play(state, "0:6-6:L")
    assert state.outcome is not None
    assert (state.outcome.winner, state.outcome.scores) == (0, (31, 0))


@pytest.mark.parametrize("value", [False, True])
def test_win_needs_zero_opponent(value: bool) -> None:
    r = rules(
        "cutthroat",
        "hand_size=2",
        "all_scored_resets=false",
        "target=2",
        f"win_needs_zero_opponent={str(value).lower()}",
    )
    # Seats 0, 1, 2 win once each (1-1-1), then seat 0 reaches 2 with no opponent at 0.
    lows = [(0, 0), (0, 1), (1, 2), (2, 0), (0, 0)]
    state = match(r, [block_deal(r, o, low) for o, low in lows])
    play(state, "0:6-6:L", "0:6-6:L", "1:6-6:L", "2:6-6:L")
    assert state.scores == [2, 1, 1]
    if value:
        assert not state.is_terminal()
        play(state, "0:6-6:L")
        assert state.scores == [3, 1, 1] and not state.is_terminal()
    else:
        assert state.outcome is not None and state.outcome.winner == 0


def test_win_needs_zero_opponent_one_opponent_at_zero_is_enough() -> None:
    r = rules("cutthroat", "hand_size=2", "all_scored_resets=false", "target=2")
    lows = [(0, 0), (0, 1), (1, 0)]
    state = match(r, [block_deal(r, o, low) for o, low in lows])
    play(state, "0:6-6:L", "0:6-6:L", "1:6-6:L")
    assert state.outcome is not None
    assert (state.outcome.winner, state.outcome.scores) == (0, (2, 1, 0))


# -- shutout ------------------------------------------------------------------------------------


def test_shutout_multiplies_and_flags() -> None:
    r = rules("iq-1v1-hands", "hand_size=2")
    state = match(r, [block_deal(r, 0, 0)])
    play(state, "0:6-6:L", "0:6-6:L", "0:6-6:L")
    assert state.outcome is not None
    assert state.outcome.shutout == "pollona"
    assert state.outcome.scores == (6, 0)
    assert state.log.results()[-1].scores == (3, 0)


def test_shutout_not_applied_when_a_loser_has_points() -> None:
    r = rules("iq-1v1-hands", "hand_size=2")
    # next_opener is highest_double: the 6-6 holder opens every hand.
    deals = [block_deal(r, 0, 0), block_deal(r, 0, 1), block_deal(r, 0, 0), block_deal(r, 0, 0)]
    state = match(r, deals)
    play(state, "0:6-6:L", "0:6-6:L", "0:6-6:L", "0:6-6:L")
    assert state.outcome is not None
    assert state.outcome.winner == 0
    assert state.outcome.shutout is None
    assert state.outcome.scores == (3, 1)


def test_chiva_times_one_still_flags() -> None:
    r = rules("el-dominito", "hand_size=2", "target=10")
    state = match(r, [block_deal(r, 0, 0)])
    play(state, "0:6-6:L")
    assert state.outcome is not None
    assert state.outcome.shutout == "chiva"
    assert state.outcome.scores == (31, 0)


# -- max_hands ----------------------------------------------------------------------------------


def test_max_hands_leader_wins_without_shutout() -> None:
    r = rules("iq-1v1-hands", "hand_size=2", "max_hands=2")
    state = match(r, [block_deal(r, 0, 0)])
    play(state, "0:6-6:L", "0:6-6:L")
    assert state.outcome is not None
    assert state.outcome.termination is Termination.HAND_LIMIT
    assert state.outcome.winner == 0
    assert state.outcome.shutout is None
    assert state.outcome.scores == (2, 0)
    assert len(state.log.results()) == 2


def test_max_hands_tied_scores_have_no_winner() -> None:
    r = rules("jamaican", "hand_size=2", "max_hands=2")
    state = match(r, [block_deal(r, 0, 0), block_deal(r, 0, 1)])
    play(state, "0:6-6:L", "0:6-6:L")
    assert state.outcome is not None
    assert state.outcome.termination is Termination.HAND_LIMIT
    assert state.outcome.winner is None
    assert state.outcome.scores == (1, 1)


def test_max_hands_counts_hands_without_a_winner() -> None:
    r = rules("block", "hand_size=2", "max_hands=1")
    state = match(r, [deal(r, "0-1 0-2", "6-6 0-3", "3-4 2-5", "4-5 3-5")])
    play(state, "1:6-6:L")
    assert state.outcome is not None
    assert state.outcome.termination is Termination.HAND_LIMIT
    assert (state.outcome.winner, state.outcome.scores) == (None, (0, 0))
