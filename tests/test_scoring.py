"""score_hand: the hand-scoring rules as a pure function, and the engine scoring through it.

The unit cases pin the knobs one at a time (points, block winner and tie, finish bonuses,
resets, target and shutout). The last tests rebuild every finished hand of random matches
of every preset from its typed record (tiles left, plays, the previous hand's scores) and
check that ``score_hand`` gives what the engine recorded, so the function and the engine
cannot drift apart.
"""

from __future__ import annotations

import random
from collections import Counter

import pytest

from capicua.engine.game import Game
from capicua.engine.records import HandEnd, HandRecord, HandResult, Play, Reset, ends_after
from capicua.engine.rules import load_preset, preset_names
from capicua.engine.scoring import HandEnding, HandScore, score_hand
from capicua.engine.tiles import Tile


def domino(
    seat: int,
    pips: tuple[int, ...],
    scores: tuple[int, ...],
    last: Tile | None = None,
    ends: tuple[int, int] | None = None,
) -> HandEnding:
    return HandEnding(HandEnd.DOMINO, seat, 0, pips, scores, last, ends)


def block(seat: int, opener: int, pips: tuple[int, ...], scores: tuple[int, ...]) -> HandEnding:
    return HandEnding(HandEnd.BLOCK, seat, opener, pips, scores)


# -- a domino: the base points --------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "base"),
    [("block", 5 + 7), ("puerto-rican", 5 + 7 + 9), ("jamaican", 1)],
)
def test_a_domino_scores_by_the_points_rule(preset: str, base: int) -> None:
    # Seat 1 (side 1) goes out; seats 0, 2 and 3 keep 5, 7 and 9 pips.
    score = score_hand(load_preset(preset), *domino(1, (5, 0, 7, 9), (0, 0)))
    assert (score.winner, score.winner_seat) == (1, 1)
    assert (score.base, score.points, score.awarded) == (base, base, base)
    assert score.scores == (0, base)
    assert not score.wins_match and score.shutout is None and score.final == score.scores


# -- a block: who wins by pips, and ties ------------------------------------------------------


@pytest.mark.parametrize(
    ("knob", "winner", "seat", "base"),
    [("lowest_seat", 0, 0, 5 + 7), ("lowest_side", 1, 1, 1 + 17)],
)
def test_a_block_goes_by_the_block_winner_rule(
    knob: str, winner: int, seat: int, base: int
) -> None:
    # Seat 0 keeps the fewest pips, but side 0 totals 1 + 17 = 18 against 5 + 7 = 12.
    rules = load_preset("block", [f"block_winner={knob}"])
    score = score_hand(rules, *block(3, 0, (1, 5, 17, 7), (10, 20)))
    assert (score.winner, score.winner_seat, score.base) == (winner, seat, base)
    assert score.scores == ((10 + base, 20) if winner == 0 else (10, 20 + base))


@pytest.mark.parametrize(
    ("tie", "opener", "winner"),
    [("no_winner", 1, None), ("opening_side", 1, 1), ("opening_side", 0, 0)],
)
def test_a_tied_block_goes_by_the_tie_rule(tie: str, opener: int, winner: int | None) -> None:
    # Seats 0 and 1 tie on 3 pips (lowest_seat): one seat of each side.
    rules = load_preset("block", [f"block_tie={tie}"])
    score = score_hand(rules, *block(2, opener, (3, 3, 10, 12), (4, 6)))
    assert score.winner == winner
    if winner is None:
        assert (score.winner_seat, score.base, score.points, score.awarded) == (None, 0, 0, 0)
        assert score.scores == (4, 6)
    else:
        assert score.winner_seat == winner
        assert score.base == (3 + 12 if winner == 0 else 3 + 10)


def test_a_tie_without_the_opening_side_has_no_winner() -> None:
    # Three sides: seats 1 and 2 tie on 4, seat 0 (10 pips) opened.
    rules = load_preset("cutthroat", ["block_tie=opening_side"])
    score = score_hand(rules, *block(1, 0, (10, 4, 4), (0, 0, 0)))
    assert score.winner is None and score.scores == (0, 0, 0)


# -- finish bonuses ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("preset", "last", "ends", "points", "bonuses"),
    [
        ("iq-1v1", Tile(3, 5), (5, 3), 2 * 2, ("capicua",)),  # multiply:2
        ("iq-1v1", Tile(3, 5), (5, 1), 2, ()),  # fits one end only
        ("iq-1v1", Tile(3, 5), None, 2, ()),  # the opening tile went out: no ends to fit
        ("dominican", Tile(3, 5), (5, 3), 2 + 30, ("capicua",)),  # add:30
        ("dominican", Tile(3, 3), (3, 3), 2, ()),  # no_double, distinct_ends
        ("jamaican-six-love", Tile(3, 3), (3, 3), 1 + 1, ("key_bone",)),  # add:1 to one point
    ],
)
def test_a_finish_bonus_applies_to_the_tile_that_went_out(
    preset: str, last: Tile, ends: tuple[int, int] | None, points: int, bonuses: tuple[str, ...]
) -> None:
    rules = load_preset(preset)
    seats = rules.seats
    pips = (0,) + (2,) + (0,) * (seats - 2)  # only seat 1 keeps tiles: 2 pips
    score = score_hand(rules, *domino(0, pips, (0,) * rules.num_sides, last, ends))
    assert (score.points, score.bonuses) == (points, bonuses)
    assert score.scores[0] == points


# -- resets, the target and the shutout -------------------------------------------------------


def test_a_reply_resets_every_score() -> None:
    rules = load_preset("jamaican-six-love")
    score = score_hand(rules, *domino(0, (0, 3, 4, 5), (0, 2)))
    assert (score.points, score.awarded, score.reset, score.scores) == (1, 0, Reset.REPLY, (0, 0))
    # No reply when the other side has nothing: the point counts.
    score = score_hand(rules, *domino(0, (0, 3, 4, 5), (2, 0)))
    assert (score.awarded, score.reset, score.scores) == (1, None, (3, 0))


def test_all_scored_resets_unless_the_hand_wins() -> None:
    rules = load_preset("cutthroat")
    score = score_hand(rules, *domino(2, (3, 4, 0), (1, 2, 0)))
    assert (score.reset, score.scores, score.wins_match) == (Reset.ALL_SCORED, (0, 0, 0), False)
    # Side 0 reaches 6 while side 2 has 0: the match is won, nothing resets.
    score = score_hand(rules, *domino(0, (0, 4, 5), (5, 2, 0)))
    assert (score.reset, score.scores, score.wins_match) == (None, (6, 2, 0), True)


def test_the_target_may_need_an_opponent_at_zero() -> None:
    rules = load_preset("cutthroat", ["all_scored_resets=false"])
    score = score_hand(rules, *domino(0, (0, 4, 5), (5, 2, 1)))
    assert (score.scores, score.wins_match, score.reset) == ((6, 2, 1), False, None)


@pytest.mark.parametrize(
    ("before", "shutout", "final"),
    [((95, 0), "pollona", ((95 + 12) * 2, 0)), ((95, 3), None, (95 + 12, 3))],
)
def test_the_shutout_multiplies_a_winning_score(
    before: tuple[int, int], shutout: str | None, final: tuple[int, int]
) -> None:
    rules = load_preset("iq-1v1")
    score = score_hand(rules, *domino(0, (0, 12), before))
    assert score.scores == (95 + 12, before[1])  # the hand's own scores: no multiplier
    assert (score.wins_match, score.shutout, score.final) == (True, shutout, final)


def test_a_shutout_short_of_the_target_is_no_shutout() -> None:
    score = score_hand(load_preset("iq-1v1"), *domino(0, (0, 12), (10, 0)))
    assert (score.wins_match, score.shutout, score.final) == (False, None, (22, 0))


def test_a_shutout_with_multiplier_one_is_flagged() -> None:
    score = score_hand(load_preset("el-dominito"), *domino(0, (0, 10, 20, 30), (190, 0)))
    assert score.wins_match and score.shutout == "chiva"
    assert score.final == score.scores == (190 + 10 + 20 + 30, 0)


# -- the engine scores every hand with score_hand ---------------------------------------------


def ending_of(record: HandRecord, before: tuple[int, ...]) -> HandEnding:
    """The end of a recorded hand, rebuilt from its tiles and plays, not from the engine's
    own scoring: pips from the tiles left, the last tile and the ends it was laid on."""
    result = record.result
    assert result is not None
    pips = tuple(sum(t.pips for t in tiles) for tiles in result.remaining)
    if result.end is HandEnd.BLOCK:
        return HandEnding(result.end, result.seat, result.opener, pips, before)
    plays = [e for e in record.events if isinstance(e, Play)]
    ends: tuple[int, int] | None = None
    for play in plays[:-1]:
        ends = ends_after(ends, play.tile, play.end)
    assert plays[-1].seat == result.seat
    return HandEnding(result.end, result.seat, result.opener, pips, before, plays[-1].tile, ends)


def assert_recorded(score: HandScore, result: HandResult) -> None:
    got = (score.winner, score.base, score.bonuses, score.points, score.awarded, score.reset)
    want = (result.winner, result.base, result.bonuses, result.points, result.awarded)
    assert got == (*want, result.reset)
    assert score.scores == result.scores


def scored_matches(name: str, seeds: range) -> Counter[str]:
    """Play random matches of preset ``name`` and check every finished hand against
    ``score_hand``; count what the hands showed (so a test can say the cases came up)."""
    rules = load_preset(name)
    game = Game(rules)
    seen: Counter[str] = Counter()
    for seed in seeds:
        state = game.new_match(seed)
        state.random_playout(random.Random(seed))
        assert state.outcome is not None
        before = (0,) * rules.num_sides
        score: HandScore | None = None
        for hand in range(state.log.hands_dealt):
            record = state.log.record(hand)
            if record.result is None:  # cut short by the match's end
                break
            ending = ending_of(record, before)
            assert state.log.ending(hand) == ending
            score = score_hand(rules, *ending)
            assert_recorded(score, record.result)
            before = record.result.scores
            seen[record.result.end.value] += 1
            seen.update(score.bonuses)
            seen["tie" if score.winner is None else "won"] += 1
            seen[score.reset.value if score.reset else "no reset"] += 1
        assert score is not None
        outcome = state.outcome
        assert score.wins_match == (outcome.termination.value == "normal")
        if score.wins_match:
            assert (score.final, score.shutout) == (outcome.scores, outcome.shutout)
            seen["shutout" if score.shutout else "match"] += 1
    return seen


@pytest.mark.parametrize("name", preset_names())
def test_score_hand_gives_what_the_engine_recorded(name: str) -> None:
    seen = scored_matches(name, range(12))
    assert seen["won"] > 0


def test_the_random_matches_cover_the_cases() -> None:
    """The comparison above means something only if the rare cases come up in it."""
    seen: Counter[str] = Counter()
    for name in ("iq-1v1", "iq-1v1-hands", "dominican", "jamaican-six-love", "cutthroat"):
        seen += scored_matches(name, range(12, 40))
    for case in ("domino", "block", "tie", "capicua", "key_bone", "reply", "all_scored"):
        assert seen[case] > 0, (case, seen)
    assert seen["shutout"] > 0, seen


def test_a_search_bot_judges_the_hand_not_the_shutout() -> None:
    """utility scores a simulated hand with score_hand: a shutout's multiplier, applied to
    the match's final score, is not counted as points the hand made."""
    from capicua.bots.evaluation import MATCH_WEIGHT, utility
    from capicua.bots.inference import one_hand_game

    rules = load_preset("iq-1v1")
    state = one_hand_game(rules).new_position(
        seed=0,
        hand=0,
        scores=[95, 0],
        hands=[[Tile(0, 5)], [Tile(6, 6), Tile(0, 0)]],  # 12 pips left with seat 1
        stock=[],
        ends=(5, 2),
        turn=0,
        last=1,
        auto_forced=False,
    )
    state.apply(state.legal_actions()[0])
    assert state.outcome is not None and state.outcome.shutout == "pollona"
    assert state.scores == [(95 + 12) * 2, 0]
    assert utility(state, 0, [95, 0], rules) == pytest.approx(12 / 100 + MATCH_WEIGHT)
