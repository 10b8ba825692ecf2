"""The engine's match state as its callers use it: its record is one value (``state.log``),
read the same way for a match, a clone and a position set up mid-match; bad input to the
state is refused with one clear line."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from capicua.engine.actions import End, IllegalActionError, InvalidActionError
from capicua.engine.game import EV_PLAY, Game, MatchState
from capicua.engine.records import Pass, Play, Termination
from capicua.engine.rules import load_preset
from capicua.engine.tiles import Tile


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
