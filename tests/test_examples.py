"""RULES.md's five worked examples, played through the engine with crafted deals.

Hand sizes are overridden to keep the deals short; every other knob is the preset's own.
"""

from __future__ import annotations

from capicua.engine.records import HandEnd, Reset
from tests.scenario import deal, legal, match, passed, play, played, rules


def test_example_1_iq_2v2_capicua_doubles_the_opponents_pips() -> None:
    r = rules("iq-2v2", "hand_size=3")
    d = deal(
        r,
        "2-5 0-2 4-9",  # seat 0
        "1-5 0-7 5-9",  # seat 1: keeps 0-7 (7) and 5-9 (14)
        "6-6 1-8 3-6",  # seat 2: highest double, goes out with 3-6
        "2-6 3-8 1-4",  # seat 3: keeps 1-4 (5)
    )
    state = match(r, [d])
    play(state, "2:6-6:L", "3:2-6:L", "0:2-5:L", "1:1-5:L", "2:1-8:L", "3:3-8:L")
    assert state.ends == (3, 6)
    assert legal(state) == {"3-6:L", "3-6:R"}
    play(state, "2:3-6:R")
    events = state.log.events(0)
    assert events[-3:] == [passed(0), passed(1), played(2, "3-6:R")]
    (res,) = state.log.results()
    assert res.end is HandEnd.DOMINO
    assert (res.winner, res.seat) == (0, 2)
    assert res.pips == (15, 21, 0, 5)
    assert res.base == 26
    assert res.bonuses == ("capicua",)
    assert res.points == res.awarded == 52
    assert state.scores == [52, 0]


def test_example_2_dominican_tied_block_goes_to_the_opening_side() -> None:
    r = rules("dominican", "hand_size=2")
    d = deal(
        r,
        "0-2 3-4",  # seat 0: 9
        "6-6 5-5",  # seat 1: opens 6-6, keeps 10
        "0-3 1-2",  # seat 2: 6
        "0-1 0-4",  # seat 3: 5
    )
    state = match(r, [d])
    play(state, "1:6-6:L")  # nobody holds a 6: blocked at once
    (res,) = state.log.results()
    assert res.end is HandEnd.BLOCK
    assert res.opener == 1
    assert res.pips == (9, 10, 6, 5)
    assert res.winner == 1
    assert res.base == res.points == res.awarded == 15
    assert state.scores == [0, 15]


def test_example_3_jamaican_six_love_reply_then_key_bone() -> None:
    r = rules("jamaican-six-love", "hand_size=2")
    # Hands 0-2: seat 0 opens 6-6 and nobody holds a 6; seat 0 keeps the fewest pips.
    a_wins = deal(r, "6-6 0-1", "0-2 3-4", "0-3 2-4", "1-2 0-4")
    # Hand 3: side B (seat 3) goes out while A has 3.
    b_out = deal(r, "6-6 0-1", "0-3 2-4", "0-2 1-3", "5-6 4-5")
    # Hand 4: seat 2 (side A) goes out with 4-5 on ends 4 and 5.
    a_key = deal(r, "1-4 6-6", "0-2 3-6", "2-5 4-5", "1-2 0-3")
    state = match(r, [a_wins, a_wins, a_wins, b_out, a_key])
    play(state, "0:6-6:L", "0:6-6:L", "0:6-6:L")
    assert [h.winner for h in state.log.results()] == [0, 0, 0]
    assert state.scores == [3, 0]

    play(state, "0:6-6:L", "3:5-6:L", "3:4-5:L")  # seats 2, 1, 0 pass in between
    res = state.log.results()[3]
    assert (res.end, res.winner, res.seat) == (HandEnd.DOMINO, 1, 3)
    assert res.bonuses == ()
    assert res.points == 1
    assert res.awarded == 0
    assert res.reset is Reset.REPLY
    assert state.scores == [0, 0]
    assert not state.is_terminal()

    play(state, "3:1-2:L", "2:2-5:R", "0:1-4:L")  # seat 1 passes, then seat 3
    assert state.ends == (4, 5)
    assert legal(state) == {"4-5:L", "4-5:R"}
    play(state, "2:4-5:R")
    res = state.log.results()[4]
    assert (res.winner, res.seat) == (0, 2)
    assert res.base == 1
    assert res.bonuses == ("key_bone",)
    assert res.points == res.awarded == 2
    assert res.reset is None
    assert state.scores == [2, 0]


def test_example_4_cutthroat_everyone_scored_resets() -> None:
    r = rules("cutthroat", "hand_size=2")
    # Each hand the opener plays 6-6, nobody else holds a 6, and the seat holding
    # 0-1 0-2 (or 0-1 alone) has the fewest pips.
    deals = [
        deal(r, "6-6 0-1", "0-2 3-4", "1-2 0-4"),  # seat 0 wins: 1-0-0
        deal(r, "6-6 5-5", "0-1 0-2", "3-4 2-5"),  # seat 1 wins: 1-1-0
        deal(r, "0-1 0-2", "6-6 5-5", "3-4 2-5"),  # seat 0 wins: 2-1-0
        deal(r, "6-6 5-5", "3-4 2-5", "0-1 0-2"),  # seat 2 wins: 2-1-1 -> 0-0-0
    ]
    state = match(r, deals)
    play(state, "0:6-6:L", "0:6-6:L", "1:6-6:L")
    results = state.log.results()
    assert [h.winner for h in results] == [0, 1, 0]
    assert results[-1].scores == (2, 1, 0)
    assert all(h.reset is None for h in results)
    play(state, "0:6-6:L")
    res = state.log.results()[3]
    assert (res.end, res.winner) == (HandEnd.BLOCK, 2)
    assert res.awarded == 1
    assert res.reset is Reset.ALL_SCORED
    assert res.scores == (0, 0, 0)
    assert state.scores == [0, 0, 0]
    assert not state.is_terminal()


def test_example_5_puerto_rican_all_pips_include_the_partner() -> None:
    r = rules("puerto-rican", "hand_size=2")
    d = deal(
        r,
        "6-6 2-6",  # seat 0: opens and goes out
        "0-1 0-3",  # seat 1: 4
        "0-2 1-5",  # seat 2: 8
        "0-4 1-1",  # seat 3: 6
    )
    state = match(r, [d])
    play(state, "0:6-6:L", "0:2-6:L")
    assert state.log.events(0) == [
        played(0, "6-6:L"),
        passed(3),
        passed(2),
        passed(1),
        played(0, "2-6:L"),
    ]
    (res,) = state.log.results()
    assert (res.end, res.winner, res.seat) == (HandEnd.DOMINO, 0, 0)
    assert res.pips == (0, 4, 8, 6)
    assert res.base == res.points == res.awarded == 18
    assert state.scores == [18, 0]
