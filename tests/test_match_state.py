"""The engine's match state as its callers use it: its record is one value (``state.log``),
read the same way for a match, a clone and a position set up mid-match; bad input to the
state is refused with one clear line."""

from __future__ import annotations

import dataclasses
import pickle
import random
from collections import Counter

import pytest

from capicua.engine.actions import End, IllegalActionError, InvalidActionError
from capicua.engine.game import EV_PLAY, Game, MatchState
from capicua.engine.records import Outcome, Pass, Play, Termination
from capicua.engine.rules import load_preset
from capicua.engine.tiles import Tile, iter_bits, tile_table


def _played(name: str, seed: int, overrides: list[str] | None = None) -> MatchState:
    """A match of preset ``name`` played to its end with random legal actions."""
    state = Game(load_preset(name, overrides or [])).new_match(seed, auto_forced=False)
    rng = random.Random(seed)
    while not state.is_terminal():
        state.apply(rng.choice(state.legal_actions()))
    return state


@pytest.mark.parametrize(("name", "seed"), [("iq-2v2", 3), ("el-dominito-2p", 1), ("cuban", 8)])
def test_the_log_reads_one_record_of_the_match(name: str, seed: int) -> None:
    """Every read of ``state.log`` (events raw and typed, records, endings, summaries,
    results, the outcome) is a view of the one replay it gives."""
    state = _played(name, seed, ["max_hands=5"])
    log = state.log
    replay = log.replay(["a", "b", "c", "d"][: state.rules.seats], match_id="m", tags=["t"])
    assert (replay.seed, replay.ruleset, replay.match_id, replay.tags) == (
        seed,
        state.rules,
        "m",
        ("t",),
    )
    assert log.outcome == state.outcome == replay.outcome and log.outcome is not None
    assert log.hands_dealt == len(replay.hands) == len(log.hands) >= 2
    assert log.results() == [h.result for h in replay.hands if h.result is not None]
    for hand, record in enumerate(replay.hands):
        assert log.record(hand) == record
        assert log.events(hand) == list(record.events)
        assert [log.event(raw) for raw in log.raw_events(hand)] == list(record.events)
        assert log.hand_over(hand) is (record.result is not None)
        ending, summary = log.ending(hand), log.summary(hand)
        if record.result is None:
            assert ending is None and summary is None
            continue
        assert ending is not None and summary is not None
        assert (ending.end, ending.seat, ending.opener) == (
            record.result.end,
            record.result.seat,
            record.result.opener,
        )
        kinds = Counter(type(e) for e in record.events)
        assert (summary.plays, summary.passes) == (kinds[Play], kinds[Pass])
    # with no hand named, the current (last) hand is read
    assert log.events() == log.events(log.hands_dealt - 1)
    assert log.raw_events() is log.hands[-1].events


def test_a_clone_keeps_its_own_log() -> None:
    """A clone shares the finished hands' logs but plays on in a log of its own: neither
    match's record shows the other's moves."""
    state = Game(load_preset("iq-1v1")).new_match(4, auto_forced=False)
    rng = random.Random(4)
    while state.hand < 1:
        state.apply(rng.choice(state.legal_actions()))
    before = state.log.replay()
    copy = state.clone()
    assert copy.log is not state.log and copy.log.replay() == before
    copy.random_playout(random.Random(1))
    assert copy.is_terminal() and copy.log.outcome is not None
    assert state.log.replay() == before and state.log.outcome is None
    assert copy.log.hands[0] is state.log.hands[0]  # finished: never changed again


def test_a_position_later_in_the_match_reads_its_own_hand() -> None:
    """A position set up in hand 3 of a match reads its hand with no hand named: the
    current hand is the one the state dealt last, whatever its number in the match."""
    game = Game(load_preset("iq-1v1"))
    state = game.new_position(
        seed=0,
        hand=2,
        scores=[10, 20],
        hands=[[Tile(0, 5), Tile(1, 1)], [Tile(6, 6), Tile(0, 0)]],
        stock=[],
        ends=(5, 2),
        turn=0,
        auto_forced=False,
    )
    assert state.hand == 2 and state.log.hands_dealt == 1
    assert state.log.events() == [] and state.log.ending() is None
    state.apply_action(state.parse("0-5:L"))
    assert state.log.events() == [Play(0, Tile(0, 5), End.LEFT)]
    assert state.log.raw_events()[0][0] == EV_PLAY
    assert state.log.results() == [] and state.log.record(0).hand == 2


def test_hand_results_is_deprecated_for_the_log() -> None:
    """``state.hand_results()`` (how the bot guide read a local match's hands) still works,
    with a DeprecationWarning naming its replacement."""
    state = _played("block", 7)
    with pytest.warns(DeprecationWarning, match=r"state\.log\.results\(\)"):
        results = state.hand_results()
    assert results == state.log.results() and results


def test_a_dealer_may_give_tiles_either_way_round() -> None:
    """A dealer hook's tiles are looked up as the set lists them (low half first) or the
    other way round: both deal the same hands."""
    game = Game(load_preset("block"))
    order = list(game.table.tiles)
    random.Random(4).shuffle(order)
    listed = game.new_match(0, auto_forced=False, dealer=lambda hand, attempt: order)
    flipped = game.new_match(
        0, auto_forced=False, dealer=lambda hand, attempt: [Tile(t.high, t.low) for t in order]
    )
    assert [flipped.hand_of(s) for s in range(4)] == [listed.hand_of(s) for s in range(4)]
    assert listed.hand_of(0) == tuple(sorted(order[:7]))


def test_the_state_refuses_bad_input_with_one_clear_line() -> None:
    """Each refusal of the state's API is one line naming what is wrong."""
    game = Game(load_preset("block"))
    with pytest.raises(ValueError, match=r"^seed must be a non-negative integer$"):
        game.new_match(-1)

    def short_dealer(hand: int, attempt: int) -> list[Tile]:
        return [Tile(0, 0)] * 28

    with pytest.raises(ValueError, match=r"^dealer: must return every tile of the set exactly"):
        game.new_match(1, dealer=short_dealer)
    state = game.new_match(1, auto_forced=False)
    seat = state.current_seat
    legal = ", ".join(str(a) for a in state.legal())
    illegal = next(c for c in range(0, 56, 2) if c not in state.legal_actions())
    with pytest.raises(IllegalActionError, match=rf"is not legal for seat {seat} now \(legal: "):
        state.apply(illegal)
    with pytest.raises(IllegalActionError) as refused:
        state.parse("keep")
    assert str(refused.value) == f"keep is not legal for seat {seat} now (legal: {legal})"
    with pytest.raises(IllegalActionError, match=r"^7-7 is not in a double-6 set$"):
        state.parse("7-7:L")
    with pytest.raises(InvalidActionError, match=r"^bad action 'x-y'"):
        state.parse("x-y")
    with pytest.raises(InvalidActionError, match=r"^no such action code 999$"):
        state.apply(999)
    with pytest.raises(ValueError, match=r"^normal is not a forfeit$"):
        state.forfeit(1, Termination.NORMAL)
    with pytest.raises(ValueError, match=r"^no side 2$"):
        state.forfeit(2)
    outcome = state.forfeit(1, Termination.TIMEOUT)
    assert (outcome.winner, outcome.forfeited, outcome.reason) == (
        0,
        1,
        "side 1 forfeits (timeout)",
    )
    for refused_call in (lambda: state.apply(illegal), state.cancel, lambda: state.forfeit(0)):
        with pytest.raises(IllegalActionError, match=r"^the match is over$"):
            refused_call()


def _split_deal(game: Game, seed: int) -> tuple[list[int], list[int]]:
    """The set's tiles shuffled by ``seed`` into every seat's hand (as tile masks) and the
    rest as a stock in drawing order (tile indices)."""
    order = list(range(len(game.table.tiles)))
    random.Random(seed).shuffle(order)
    size = game.ruleset.hand_size
    seats = game.ruleset.seats
    masks = [sum(1 << i for i in order[s * size : (s + 1) * size]) for s in range(seats)]
    return masks, order[seats * size :]


@pytest.mark.parametrize(
    ("name", "seed"), [("iq-1v1", 1), ("block", 2), ("draw", 3), ("iq-2v2", 4), ("cuban", 5)]
)
def test_a_position_of_masks_is_the_position_of_its_tiles(name: str, seed: int) -> None:
    """``new_position_of_masks`` makes the state ``new_position`` makes of the same tiles:
    the same legal actions, and the same random playout to the match's end (events and
    outcome), the deal recorded alike."""
    game = Game(load_preset(name))
    masks, stock = _split_deal(game, seed)
    tiles = game.table.tiles
    scores = [0] * game.num_sides
    of_masks = game.new_position_of_masks(
        seed=seed,
        hand=0,
        scores=scores,
        hands=masks,
        stock=stock,
        ends=None,
        turn=1,
        as_dealt=True,
        auto_forced=False,
    )
    of_tiles = game.new_position(
        seed=seed,
        hand=0,
        scores=scores,
        hands=[game.table.tiles_of(m) for m in masks],
        stock=[tiles[i] for i in stock],
        ends=None,
        turn=1,
        as_dealt=True,
        auto_forced=False,
    )
    assert of_masks.legal_actions() == of_tiles.legal_actions()
    of_masks.random_playout(random.Random(seed))
    of_tiles.random_playout(random.Random(seed))
    assert of_masks.log.events() and of_masks.log.events() == of_tiles.log.events()
    assert of_masks.log.replay() == of_tiles.log.replay()
    assert of_masks.outcome is not None and of_masks.outcome == of_tiles.outcome


@pytest.mark.parametrize(
    ("hands", "stock", "message"),
    [
        ([0b011, 0b110], [], "a tile is in two places"),
        ([0b001, 0b010], [1], "a tile is in two places"),
        ([0b001, 0b010], [3, 3], "a tile is in two places"),
        ([0b001, 1 << 28], [], r"a tile index is not in the set's 0\.\.27"),
        ([0b001, 0b010], [28], r"a tile index is not in the set's 0\.\.27"),
        ([0b001, 0b010], [-1], r"a tile index is not in the set's 0\.\.27"),
        ([0b001, -2], [], r"a tile index is not in the set's 0\.\.27"),
        ([0b001], [], "needs 2 hands and 2 scores"),
    ],
)
def test_a_position_of_masks_refuses_impossible_tiles(
    hands: list[int], stock: list[int], message: str
) -> None:
    """A tile in two places, or outside the set, is refused with one line."""
    game = Game(load_preset("el-dominito-2p"))  # two seats, the 28 tiles of double six
    with pytest.raises(ValueError, match=f"^new_position: {message}"):
        game.new_position_of_masks(
            seed=0, hand=0, scores=[0, 0], hands=hands, stock=stock, ends=None, turn=0
        )


def test_an_outcome_is_a_frozen_value() -> None:
    """``Outcome`` (its own ``__init__``, for speed) keeps the dataclass's behaviour:
    positional and keyword construction alike, equality, hashing, repr, ``replace``,
    pickling, and no field can be set."""
    made = Outcome.ended(Termination.NORMAL, 1, [40, 101], "side 1 reached 101 of 100")
    keyword = Outcome(
        termination=Termination.NORMAL,
        winner=1,
        scores=(40, 101),
        ranking=(1, 0),
        reason="side 1 reached 101 of 100",
    )
    assert made == keyword and hash(made) == hash(keyword)
    assert made.shutout is None and made.forfeited is None
    assert repr(made) == (
        "Outcome(termination=<Termination.NORMAL: 'normal'>, winner=1, scores=(40, 101), "
        "ranking=(1, 0), shutout=None, forfeited=None, reason='side 1 reached 101 of 100')"
    )
    assert dataclasses.replace(made, winner=None) != made
    assert dataclasses.replace(made, winner=None).winner is None
    assert pickle.loads(pickle.dumps(made)) == made
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.winner = 0  # type: ignore[misc]


@pytest.mark.parametrize("max_pip", [6, 9])
def test_play_codes_of_every_suit_subset(max_pip: int) -> None:
    # the play-code caches are filled from per-byte tables (the right end's codes apart):
    # every subset of a suit, on either end, gives its tiles' codes in tile order
    table = tile_table(max_pip)
    for suit in table.suit:
        tiles = list(iter_bits(suit))
        for pick in range(1 << len(tiles)):
            mask = sum(1 << t for k, t in enumerate(tiles) if pick >> k & 1)
            for end in (0, 1):
                expected = tuple((t << 1) | end for t in iter_bits(mask))
                assert table.play_codes(mask, end) == expected
                assert (table.right_codes if end else table.left_codes)[mask] == expected
