"""``capicua.engine.replay.verify``: every way a match can end verifies, tampering does not.

Every accepted replay also goes through a replay file (``.json`` and ``.json.gz``) first, the
way ``capicua replay verify`` reads it. Every rejection must be a
:class:`~capicua.engine.replay.ReplayMismatch` whose message names the first difference.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from capicua.engine.actions import End
from capicua.engine.game import Game, MatchState
from capicua.engine.records import (
    Deal,
    Draw,
    Event,
    HandRecord,
    Pass,
    Play,
    Replay,
    Termination,
)
from capicua.engine.replay import ReplayMismatch, verify
from capicua.engine.rules import load_preset
from capicua.engine.tiles import Tile
from capicua.wire import codec

# -- matches ------------------------------------------------------------------------------------


def new(name: str, seed: int, overrides: list[str] | None = None, auto: bool = True) -> MatchState:
    return Game(load_preset(name, overrides or [])).new_match(seed, auto_forced=auto)


def advance(state: MatchState, rng: random.Random, until: Callable[[MatchState], bool]) -> None:
    for _ in range(100_000):
        if state.is_terminal() or until(state):
            return
        state.apply(rng.choice(state.legal_actions()))
    raise AssertionError("the match did not end")


def finished(
    name: str, seed: int, overrides: list[str] | None = None, auto: bool = True
) -> MatchState:
    state = new(name, seed, overrides, auto)
    advance(state, random.Random(seed), lambda s: False)
    return state


def midway(name: str, seed: int, hand: int = 1, decisions: int = 5) -> MatchState:
    """A match stopped ``decisions`` decisions into hand ``hand`` (still going)."""
    state = new(name, seed)
    rng = random.Random(seed)
    advance(state, rng, lambda s: s.hand >= hand)
    for _ in range(decisions):
        advance(state, rng, lambda s: True)
        if state.is_terminal():
            break
        state.apply(rng.choice(state.legal_actions()))
    assert not state.is_terminal(), "pick another seed: the match ended"
    return state


FORFEITS = [
    Termination.TIMEOUT,
    Termination.DISCONNECT,
    Termination.ILLEGAL_ACTIONS,
    Termination.FORFEIT,
]


def ended(kind: Termination, name: str = "iq-2v2", seed: int = 5) -> MatchState:
    """A match of ``name`` ending with termination ``kind``."""
    if kind is Termination.NORMAL:
        state = finished(name, seed)
    elif kind is Termination.HAND_LIMIT:
        state = finished(name, seed, ["max_hands=2"])
    elif kind is Termination.CANCELLED:
        state = midway(name, seed)
        state.cancel("the host stopped the match")
    else:
        state = midway(name, seed)
        state.forfeit(1, kind, f"side 1: {kind.value}")
    assert state.outcome is not None and state.outcome.termination is kind
    return state


def through_file(replay: Replay, path: Path) -> Replay:
    codec.write_replay(path, replay)
    back = codec.read_replay(path)
    assert back == replay
    return back


# -- every termination kind verifies --------------------------------------------------------


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
@pytest.mark.parametrize("kind", list(Termination))
def test_every_termination_kind_verifies(kind: Termination, suffix: str, tmp_path: Path) -> None:
    state = ended(kind)
    replay = through_file(state.log.replay(["a", "b", "c", "d"]), tmp_path / f"match{suffix}")
    again = verify(replay)
    assert again.outcome == state.outcome == replay.outcome
    assert again.is_terminal()
    assert again.log.replay(replay.players) == replay
    out = replay.outcome
    assert out is not None
    if kind is Termination.HAND_LIMIT:
        assert len(replay.hands) == 2 and all(h.result for h in replay.hands)
    if kind.forfeits:
        assert out.forfeited == 1 and out.winner == 0
        assert replay.hands[-1].result is None  # the hand in progress when it stopped
    if kind is Termination.CANCELLED:
        assert out.winner is None and out.forfeited is None


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("el-dominito-2p", []),  # draws
        ("cuban", ["redeal_min_doubles=3"]),  # redeal answers and deferrals
        ("cutthroat", ["max_hands=5"]),  # three seats, excluded tile
        ("jamaican-six-love", ["max_hands=8"]),  # resets and a finish bonus
        ("iq-1v1", []),  # shutout
        ("el-dominito", []),  # locker opens
    ],
)
@pytest.mark.parametrize("auto", [True, False])
def test_varied_matches_verify(name: str, overrides: list[str], auto: bool, tmp_path: Path) -> None:
    for seed in range(4):
        state = finished(name, seed, overrides, auto)
        replay = through_file(state.log.replay(), tmp_path / f"{name}-{seed}.json.gz")
        assert verify(replay).outcome == state.outcome


@pytest.mark.parametrize("kind", [*FORFEITS, Termination.CANCELLED])
def test_a_match_stopped_before_any_decision_verifies(kind: Termination) -> None:
    state = new("cuban", 1)
    if kind is Termination.CANCELLED:
        state.cancel()
    else:
        state.forfeit(0, kind)
    replay = state.log.replay()
    assert len(replay.hands) == 1 and replay.hands[0].result is None
    assert verify(replay).outcome == state.outcome


def test_a_forfeit_between_decisions_of_a_later_hand_verifies() -> None:
    state = midway("el-dominito-2p", 2, hand=2, decisions=3)
    state.forfeit(0, Termination.DISCONNECT, "seat 0 went away")
    assert verify(state.log.replay()).outcome == state.outcome


# -- tampering ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base() -> Replay:
    """A normal iq-2v2 match, recorded with every forced step (auto_forced off)."""
    state = finished("iq-2v2", 5, auto=False)
    replay = state.log.replay()
    assert len(replay.hands) >= 2
    return replay


def with_hand(replay: Replay, index: int, **changes: Any) -> Replay:
    hands = list(replay.hands)
    hands[index] = dataclasses.replace(hands[index], **changes)
    return dataclasses.replace(replay, hands=tuple(hands))


def with_events(replay: Replay, index: int, events: list[Event]) -> Replay:
    return with_hand(replay, index, events=tuple(events))


def mismatch(replay: Replay) -> str:
    with pytest.raises(ReplayMismatch) as info:
        verify(replay)
    return str(info.value)


def holder(record: HandRecord, tile: Tile) -> int:
    return next(s for s, h in enumerate(record.deals[-1].hands) if tile in h)


def test_the_untouched_base_verifies(base: Replay) -> None:
    verify(base)


def test_a_changed_play_to_a_tile_the_seat_does_not_hold(base: Replay) -> None:
    record = base.hands[0]
    i, play = next((i, e) for i, e in enumerate(record.events) if isinstance(e, Play) and i > 3)
    other = next(t for s, h in enumerate(record.deals[0].hands) if s != play.seat for t in h)
    bad = Play(play.seat, other, play.end)
    message = mismatch(with_events(base, 0, [*record.events[:i], bad, *record.events[i + 1 :]]))
    assert message.startswith(f"hand 1, event {i + 1}: {bad} is illegal")


def test_a_changed_end_of_a_play(base: Replay) -> None:
    record = base.hands[1]
    events = list(record.events)
    for i, e in enumerate(events):
        if isinstance(e, Play) and i > 0:
            flipped = Play(e.seat, e.tile, End(1 - e.end))
            events[i] = flipped
            try:
                verify(with_events(base, 1, events))
            except ReplayMismatch as err:
                message = str(err)
                assert message.startswith(f"hand 2, event {i + 1}:")
                assert str(flipped) in message
                return
            events[i] = e  # the tile fits both ends; try the next play
    raise AssertionError("no play could be flipped")


def test_a_changed_deal_tile(base: Replay) -> None:
    record = base.hands[1]
    deal = record.deals[0]
    hands = [list(h) for h in deal.hands]
    hands[0][0], hands[1][0] = hands[1][0], hands[0][0]
    tampered = Deal(deal.attempt, tuple(tuple(h) for h in hands), deal.stock)
    message = mismatch(with_hand(base, 1, deals=(tampered,)))
    assert message == "hand 2: deal attempt 0 differs from the seed's"


def test_a_changed_redealt_deal() -> None:
    """A deal made after a REDEAL answer is checked too (the engine checks each deal as it
    comes, not the hand's record after every event)."""
    replay = finished("cuban", 1, ["redeal_min_doubles=3"]).log.replay()
    record = replay.hands[0]
    first, redealt = record.deals
    hands = [list(h) for h in redealt.hands]
    hands[0][0], hands[1][0] = hands[1][0], hands[0][0]
    tampered = Deal(redealt.attempt, tuple(tuple(h) for h in hands), redealt.stock)
    message = mismatch(with_hand(replay, 0, deals=(first, tampered)))
    assert message == "hand 1: deal attempt 1 differs from the seed's"


def test_a_changed_stock_tile_of_a_draw_game() -> None:
    replay = finished("el-dominito-2p", 3).log.replay()
    deal = replay.hands[0].deals[0]
    stock = list(deal.stock)
    stock[-1], stock[-2] = stock[-2], stock[-1]
    tampered = Deal(deal.attempt, deal.hands, tuple(stock))
    message = mismatch(with_hand(replay, 0, deals=(tampered,)))
    assert message == "hand 1: deal attempt 0 differs from the seed's"


def test_a_changed_draw() -> None:
    replay = finished("el-dominito-2p", 3).log.replay()
    for h, record in enumerate(replay.hands):
        for i, e in enumerate(record.events):
            if isinstance(e, Draw):
                fake = Draw(e.seat, next(t for t in record.deals[0].hands[e.seat]))
                message = mismatch(
                    with_events(replay, h, [*record.events[:i], fake, *record.events[i + 1 :]])
                )
                assert message.startswith(
                    f"hand {h + 1}, event {i + 1}: replay has {fake}, engine has {e}; open ends "
                )
                return
    raise AssertionError("no draw in the match")


@pytest.mark.parametrize("delta", [1, 2, 3, 1000])
def test_a_changed_seed(base: Replay, delta: int) -> None:
    message = mismatch(dataclasses.replace(base, seed=base.seed + delta))
    # The seed changes the deal: the first recorded decision no longer fits it.
    assert message.startswith("hand 1")
    assert "event 1:" in message or "deal" in message


def test_changed_points_of_a_hand(base: Replay) -> None:
    record = base.hands[0]
    assert record.result is not None
    result = dataclasses.replace(record.result, points=record.result.points + 1)
    message = mismatch(with_hand(base, 0, result=result))
    assert message.startswith(
        f"hand 1: result points: replay {record.result.points + 1}, engine {record.result.points}"
        f"; at the end of the hand (after {len(record.events)} events), open ends "
    )


def test_changed_scores_after_a_hand(base: Replay) -> None:
    record = base.hands[0]
    assert record.result is not None
    scores = tuple(s + 10 for s in record.result.scores)
    message = mismatch(with_hand(base, 0, result=dataclasses.replace(record.result, scores=scores)))
    assert message.startswith(
        f"hand 1: result scores: replay {scores}, engine {record.result.scores}; at the end "
    )


def test_changed_final_scores(base: Replay) -> None:
    assert base.outcome is not None
    scores = (base.outcome.scores[0] + 1, base.outcome.scores[1])
    message = mismatch(
        dataclasses.replace(base, outcome=dataclasses.replace(base.outcome, scores=scores))
    )
    assert message == f"outcome scores: replay {scores}, engine {base.outcome.scores}"


def test_a_removed_decision(base: Replay) -> None:
    record = base.hands[0]
    i = next(i for i, e in enumerate(record.events) if isinstance(e, Play) and i > 2)
    message = mismatch(with_events(base, 0, [*record.events[:i], *record.events[i + 1 :]]))
    assert message.startswith(f"hand 1, event {i + 1}: replay has {record.events[i + 1]}")


def test_a_removed_pass() -> None:
    replay = finished("iq-2v2", 5, auto=False).log.replay()
    for h, record in enumerate(replay.hands):
        for i, e in enumerate(record.events):
            if isinstance(e, Pass):
                message = mismatch(
                    with_events(replay, h, [*record.events[:i], *record.events[i + 1 :]])
                )
                assert message.startswith(
                    f"hand {h + 1}, event {i + 1}: replay has {record.events[i + 1]}, "
                    f"engine has {e}; "
                )
                return
    raise AssertionError("no pass in the match")


def test_an_extra_pass_in_the_middle(base: Replay) -> None:
    record = base.hands[0]
    i = 4
    extra = Pass(record.events[i].seat)
    message = mismatch(with_events(base, 0, [*record.events[:i], extra, *record.events[i:]]))
    assert message.startswith(f"hand 1, event {i + 1}: replay has {extra}")


def test_an_extra_event_after_a_finished_hand_is_named(base: Replay) -> None:
    record = base.hands[0]
    n = len(record.events)
    message = mismatch(with_events(base, 0, [*record.events, Pass(0)]))
    assert message.startswith(f"hand 1, event {n + 1}: replay has {Pass(0)}")


def test_a_replay_whose_last_events_were_cut_off() -> None:
    """Removing a forced event at the end of a hand: the engine still produces it."""
    replay = finished("el-dominito-2p", 0, auto=False).log.replay()
    for h, record in enumerate(replay.hands):
        if record.events and isinstance(record.events[-1], Draw):
            message = mismatch(with_events(replay, h, list(record.events[:-1])))
            n = len(record.events) - 1
            assert message.startswith(
                f"hand {h + 1}, event {n + 1}: replay ends, engine has {record.events[-1]}; "
                "open ends "
            )
            return
    pytest.skip("no hand of this match ends with a draw")


def test_an_extra_decision_after_a_finished_hand(base: Replay) -> None:
    first = base.hands[0]
    following = base.hands[1].events[0]  # the opening play of hand 1: legal there
    assert isinstance(following, Play)
    n = len(first.events)
    message = mismatch(with_events(base, 0, [*first.events, following]))
    assert message.startswith(f"hand 1, event {n + 1}:")


@pytest.mark.parametrize("extra", [Pass(0), Play(0, Tile(0, 0), End.LEFT)], ids=["pass", "play"])
def test_an_extra_event_after_the_match_is_over(base: Replay, extra: Event) -> None:
    last = len(base.hands) - 1
    events = [*base.hands[last].events, extra]
    message = mismatch(with_events(base, last, events))
    assert message.startswith(f"hand {last + 1}, event {len(events)}:")
    assert "None" not in message


def test_a_removed_final_play_is_named(base: Replay) -> None:
    record = base.hands[0]
    assert isinstance(record.events[-1], Play)
    n = len(record.events) - 1
    message = mismatch(with_events(base, 0, list(record.events[:-1])))
    assert message.startswith(f"hand 1, event {n + 1}:")


def test_a_removed_hand_of_a_normal_match(base: Replay) -> None:
    message = mismatch(dataclasses.replace(base, hands=base.hands[:-1]))
    assert message.startswith("outcome: replay says normal, but the engine's match goes on")


@pytest.mark.parametrize("kind", [Termination.TIMEOUT, Termination.CANCELLED])
def test_a_removed_hand_in_progress_is_rejected(kind: Termination) -> None:
    replay = ended(kind).log.replay()
    assert replay.hands[-1].result is None and replay.hands[-1].events
    message = mismatch(dataclasses.replace(replay, hands=replay.hands[:-1]))
    assert f"hand {len(replay.hands)}" in message


def test_a_wrong_hand_number(base: Replay) -> None:
    message = mismatch(with_hand(base, 1, hand=7))
    assert message == "hand 8: the engine is at hand 2"


def test_a_wrong_outcome_winner(base: Replay) -> None:
    assert base.outcome is not None and base.outcome.winner is not None
    wrong = 1 - base.outcome.winner
    message = mismatch(
        dataclasses.replace(base, outcome=dataclasses.replace(base.outcome, winner=wrong))
    )
    assert message == f"outcome winner: replay {wrong}, engine {base.outcome.winner}"


def test_a_wrong_ranking(base: Replay) -> None:
    assert base.outcome is not None
    ranking = tuple(reversed(base.outcome.ranking))
    message = mismatch(
        dataclasses.replace(base, outcome=dataclasses.replace(base.outcome, ranking=ranking))
    )
    assert message == f"outcome ranking: replay {ranking}, engine {base.outcome.ranking}"


@pytest.mark.parametrize("kind", FORFEITS)
def test_a_forfeit_without_a_forfeited_side(kind: Termination) -> None:
    replay = ended(kind).log.replay()
    assert replay.outcome is not None
    outcome = dataclasses.replace(replay.outcome, forfeited=None)
    message = mismatch(dataclasses.replace(replay, outcome=outcome))
    assert message == f"outcome: {kind.value} names no forfeited side"


def test_a_forfeit_by_a_side_that_does_not_exist() -> None:
    replay = ended(Termination.FORFEIT).log.replay()
    assert replay.outcome is not None
    outcome = dataclasses.replace(replay.outcome, forfeited=5)
    assert mismatch(dataclasses.replace(replay, outcome=outcome)) == "outcome: no side 5"


def test_the_wrong_side_forfeited() -> None:
    replay = ended(Termination.TIMEOUT).log.replay()
    assert replay.outcome is not None
    outcome = dataclasses.replace(replay.outcome, forfeited=0)
    message = mismatch(dataclasses.replace(replay, outcome=outcome))
    # forfeiting side 0 instead of 1 makes side 1 the winner: the first field that differs
    assert message == "outcome winner: replay 0, engine 1"


def test_a_normal_match_claimed_as_a_forfeit(base: Replay) -> None:
    assert base.outcome is not None
    outcome = dataclasses.replace(base.outcome, termination=Termination.TIMEOUT, forfeited=0)
    message = mismatch(dataclasses.replace(base, outcome=outcome))
    assert message == "outcome: replay says timeout, but the match ended normally"


def test_a_forfeit_claimed_as_a_normal_end() -> None:
    replay = ended(Termination.FORFEIT).log.replay()
    assert replay.outcome is not None
    outcome = dataclasses.replace(replay.outcome, termination=Termination.NORMAL, forfeited=None)
    message = mismatch(dataclasses.replace(replay, outcome=outcome))
    assert message.startswith("outcome: replay says normal, but the engine's match goes on")


def test_a_missing_outcome(base: Replay) -> None:
    message = mismatch(dataclasses.replace(base, outcome=None))
    assert message == "outcome: missing (the match was not finished)"


def test_a_changed_reason(base: Replay) -> None:
    assert base.outcome is not None
    outcome = dataclasses.replace(base.outcome, reason="made up")
    message = mismatch(dataclasses.replace(base, outcome=outcome))
    assert message == f"outcome reason: replay made up, engine {base.outcome.reason}"


def test_too_few_player_names(base: Replay) -> None:
    message = mismatch(dataclasses.replace(base, players=base.players[:3]))
    assert message == "players: 3 names for 4 seats"


def test_a_changed_ruleset_knob(base: Replay) -> None:
    rules = base.ruleset.with_overrides(["target=1000"])
    message = mismatch(dataclasses.replace(base, ruleset=rules))
    # the same decisions under target=1000: the recorded end is not the engine's
    assert message.startswith("outcome: replay says normal, but the engine's match goes on")


def test_tampering_in_the_file_is_found(tmp_path: Path, base: Replay) -> None:
    """Edit the JSON of a written replay: read_replay reads it, verify rejects it."""
    path = tmp_path / "match.json.gz"
    codec.write_replay(path, base)
    record = base.hands[0]
    i, play = next((i, e) for i, e in enumerate(record.events) if isinstance(e, Play) and i > 0)
    other = next(t for t in record.deals[0].hands[(play.seat + 1) % 4])
    data = json.loads(gzip.decompress(path.read_bytes()))
    assert data["hands"][0]["events"][i]["play"]["tile"] == str(play.tile)
    data["hands"][0]["events"][i]["play"]["tile"] = str(other)
    path.write_bytes(gzip.compress(json.dumps(data).encode()))
    tampered = codec.read_replay(path)
    assert tampered.hands[0].events[i] == Play(play.seat, other, play.end)
    with pytest.raises(ReplayMismatch, match=rf"^hand 1, event {i + 1}: "):
        verify(tampered)
