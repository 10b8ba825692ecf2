"""The engine's public rule facts agree with the engine itself, on every preset.

Bots, the display and the tools read plays through these functions instead of re-deriving
the rules; the engine's hot path has its own table-driven version. These tests prove the
two readings are the same.
"""

from __future__ import annotations

import random

import pytest

from capicua.engine.actions import End
from capicua.engine.game import Game, Phase, ends_after_code, plays_on
from capicua.engine.observation import event_for_seat, observe, raw_event_for_seat
from capicua.engine.records import Draw, Play, RedealChoice, ends_after, next_ends, shown_halves
from capicua.engine.rules import load_preset, preset_names
from capicua.engine.tiles import Tile


def test_open_after_is_the_other_half() -> None:
    assert Tile(2, 5).open_after(2) == 5
    assert Tile(2, 5).open_after(5) == 2
    assert Tile(4, 4).open_after(4) == 4


def test_ends_after_the_first_tile_is_low_left() -> None:
    assert ends_after(None, Tile(3, 6), End.LEFT) == (3, 6)
    assert ends_after((1, 6), Tile(3, 6), End.RIGHT) == (1, 3)
    assert ends_after((6, 1), Tile(3, 6), End.LEFT) == (3, 1)
    assert next_ends((6, 1), Play(0, Tile(3, 6), End.LEFT)) == (3, 1)


@pytest.mark.parametrize("preset", preset_names())
def test_ends_after_every_play_are_the_engines(preset: str) -> None:
    game = Game(load_preset(preset))
    rng = random.Random(preset)
    plays = 0
    for seed in range(4):
        state = game.new_match(seed)
        seen = 0  # events of the current hand already checked
        hand = state.hand
        ends: tuple[int, int] | None = None
        while not state.is_over:
            legal = state.legal_actions()
            state.apply(legal[rng.randrange(len(legal))])
            if state.is_over or state.hand != hand:
                hand, seen, ends = state.hand, 0, None
                continue
            events = state.hand_record(hand).events
            for e in events[seen:]:
                if isinstance(e, RedealChoice) and e.redeal:
                    ends = None
                elif isinstance(e, Play):
                    ends = next_ends(ends, e)
                    plays += 1
            seen = len(events)
            assert ends == observe(state, 0).ends, (preset, seed, hand, seen)
    assert plays > 0


@pytest.mark.parametrize("preset", preset_names())
def test_the_raw_code_twins_agree_with_the_engine(preset: str) -> None:
    """plays_on and ends_after_code (the bots' fast versions) give the engine's plays and
    the typed reading's ends at every decision after the opening of random matches."""
    game = Game(load_preset(preset))
    rng = random.Random(f"raw:{preset}")
    checked = 0
    for seed in range(4):
        state = game.new_match(seed)
        while not state.is_over:
            codes = state.legal_actions()
            obs = observe(state, state.current_seat)
            if obs.ends is not None and obs.phase is Phase.PLAY:
                left, right = obs.ends
                mask = game.table.mask_of(obs.tiles)
                assert plays_on(game, mask, left, right) == [c for c in codes if c >= 0]
                for c in codes:
                    tile, end = game.tile(c >> 1), End(c & 1)
                    assert ends_after_code(game, left, right, c) == ends_after(obs.ends, tile, end)
                checked += 1
            state.apply(codes[rng.randrange(len(codes))])
    assert checked > 0


@pytest.mark.parametrize("preset", preset_names())
def test_raw_masking_agrees_with_the_typed_one(preset: str) -> None:
    """raw_event_for_seat (hard's search keys) hides exactly what event_for_seat hides."""
    game = Game(load_preset(preset))
    seats = game.ruleset.seats
    for seed in range(3):
        state = game.new_match(seed)
        state.random_playout(random.Random(seed))
        for hand in range(len(state.logs)):
            for raw in state.logs[hand].events:
                for seat in [*range(seats), None]:
                    typed = event_for_seat(state.event(raw), seat)
                    masked = raw_event_for_seat(raw, seat)
                    if typed is None or masked is None:
                        assert typed is None and masked is None
                    elif masked[2] < 0:
                        assert typed == Draw(masked[1], None)
                    else:
                        assert typed == state.event(masked)


@pytest.mark.parametrize("preset", preset_names())
def test_shown_halves_build_the_engines_chain(preset: str) -> None:
    """Laying each play with shown_halves gives the chain the observation shows."""
    game = Game(load_preset(preset))
    rng = random.Random(f"chain:{preset}")
    for seed in range(3):
        state = game.new_match(seed)
        while not state.is_over:
            chain: list[tuple[int, int]] = []
            ends: tuple[int, int] | None = None
            for e in state.hand_events():
                if isinstance(e, RedealChoice) and e.redeal:
                    chain, ends = [], None
                elif isinstance(e, Play):
                    shown = shown_halves(ends, e.tile, e.end)
                    chain.insert(0 if e.end is End.LEFT else len(chain), shown)
                    ends = next_ends(ends, e)
            assert chain == [(p.left, p.right) for p in observe(state, 0).chain]
            codes = state.legal_actions()
            state.apply(codes[rng.randrange(len(codes))])


@pytest.mark.parametrize("preset", preset_names())
def test_the_games_opening_table_is_opening_method(preset: str) -> None:
    """Game reads opening_method once per ruleset; its table answers as the function does
    for every way the previous hand can end, with a winner or without."""
    from capicua.engine.opening import opening_method
    from capicua.engine.records import HandEnd

    rules = load_preset(preset)
    game = Game(rules)
    assert game.first_opening is opening_method(rules, None)
    for end in HandEnd:
        for winner in (None, 0, 1):
            expected = opening_method(rules, (end, winner))
            assert game.opening_after[end, winner is not None] is expected
