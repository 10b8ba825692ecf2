"""The engine's public rule facts agree with the engine itself, on every preset.

Bots, the display and the tools read plays through these functions instead of re-deriving
the rules; the engine's hot path has its own table-driven version. These tests prove the
two readings are the same.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capicua.engine.actions import ActionKind, End
from capicua.engine.game import EV_PLAY, Game, Phase, ends_after_code, plays_on
from capicua.engine.line import EMPTY as EMPTY_LINE
from capicua.engine.line import Line, LineError, PlacedTile
from capicua.engine.observation import event_for_seat, observe, raw_event_for_seat
from capicua.engine.records import (
    Defer,
    Draw,
    Event,
    Outcome,
    Pass,
    Play,
    RedealChoice,
    Termination,
    ends_after,
    shown_halves,
)
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
        while not state.is_terminal():
            legal = state.legal_actions()
            state.apply(legal[rng.randrange(len(legal))])
            if state.is_terminal() or state.hand != hand:
                hand, seen, ends = state.hand, 0, None
                continue
            events = state.log.record(hand).events
            for e in events[seen:]:
                if isinstance(e, RedealChoice) and e.redeal:
                    ends = None
                elif isinstance(e, Play):
                    ends = ends_after(ends, e.tile, e.end)
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
        while not state.is_terminal():
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
        for hand in range(len(state.log.hands)):
            for raw in state.log.hands[hand].events:
                for seat in [*range(seats), None]:
                    typed = event_for_seat(state.log.event(raw), seat)
                    masked = raw_event_for_seat(raw, seat)
                    if typed is None or masked is None:
                        assert typed is None and masked is None
                    elif masked[2] < 0:
                        assert typed == Draw(masked[1], None)
                    else:
                        assert typed == state.log.event(masked)


@pytest.mark.parametrize("preset", preset_names())
def test_shown_halves_build_the_engines_chain(preset: str) -> None:
    """Laying each play with shown_halves gives the chain the observation shows."""
    game = Game(load_preset(preset))
    rng = random.Random(f"chain:{preset}")
    for seed in range(3):
        state = game.new_match(seed)
        while not state.is_terminal():
            chain: list[tuple[int, int]] = []
            ends: tuple[int, int] | None = None
            for e in state.log.events():
                if isinstance(e, RedealChoice) and e.redeal:
                    chain, ends = [], None
                elif isinstance(e, Play):
                    shown = shown_halves(ends, e.tile, e.end)
                    chain.insert(0 if e.end is End.LEFT else len(chain), shown)
                    ends = ends_after(ends, e.tile, e.end)
            assert chain == [(p.left, p.right) for p in observe(state, 0).chain]
            codes = state.legal_actions()
            state.apply(codes[rng.randrange(len(codes))])


# -- the line of play -------------------------------------------------------------------------


def test_the_first_tile_is_laid_low_left() -> None:
    line = EMPTY_LINE.play(Tile(3, 6), End.RIGHT)
    assert line.chain == (PlacedTile(Tile(3, 6), 3, 6),)
    assert line.ends == (3, 6) and line.spinner is None and len(line) == 1


def test_a_tile_shows_the_pip_it_covers_inside() -> None:
    line = Line.of(
        [
            Play(0, Tile(3, 6), End.LEFT),
            Play(1, Tile(6, 1), End.RIGHT),
            Pass(2),
            Play(3, Tile(2, 3), End.LEFT),
            Draw(0, None),
            Play(0, Tile(1, 1), End.RIGHT),
        ]
    )
    assert str(line) == "[2|3][3|6][6|1][1|1]"
    assert line.ends == (2, 1)
    assert line.spinner == Tile(1, 1)
    assert [p.spinner for p in line] == [False, False, False, True]


def test_only_the_first_double_laid_is_the_spinner() -> None:
    line = Line.of([Play(0, Tile(4, 4), End.LEFT), Play(1, Tile(4, 6), End.RIGHT)])
    line = line.play(Tile(6, 6), End.RIGHT)
    assert line.spinner == Tile(4, 4)
    assert [p.spinner for p in line] == [True, False, False]


def test_a_line_is_a_value() -> None:
    """Laying a tile gives a new line; equal chains are equal lines, whatever their past."""
    first = EMPTY_LINE.play(Tile(3, 6), End.LEFT)
    second = first.play(Tile(6, 6), End.RIGHT)
    assert first.chain == (PlacedTile(Tile(3, 6), 3, 6),) and len(second) == 2
    assert second == Line(second.chain) and hash(second) == hash(Line(second.chain))
    assert second != first and Line() == EMPTY_LINE and str(EMPTY_LINE) == ""
    assert repr(second) == "<Line [3|6][6|6]>" and repr(EMPTY_LINE) == "<Line (empty)>"


def test_a_granted_redeal_starts_an_empty_line() -> None:
    line = EMPTY_LINE.play(Tile(3, 6), End.LEFT)
    assert line.apply(RedealChoice(1, redeal=False)) is line
    assert line.apply(RedealChoice(1, redeal=True)) == EMPTY_LINE
    assert line.apply(Defer(0)) is line


def test_a_tile_that_does_not_fit_is_refused() -> None:
    line = EMPTY_LINE.play(Tile(3, 6), End.LEFT)
    with pytest.raises(LineError, match="does not fit the right end 6"):
        line.play(Tile(1, 2), End.RIGHT)
    with pytest.raises(LineError, match="does not fit the left end 3"):
        line.placed(Tile(6, 6), End.LEFT)


def test_a_chain_whose_tiles_do_not_touch_is_no_line() -> None:
    with pytest.raises(LineError, match=r"\[3\|6\] does not touch \[1\|6\]"):
        Line([PlacedTile(Tile(3, 6), 3, 6), PlacedTile(Tile(1, 6), 1, 6)])
    with pytest.raises(LineError, match="cannot show"):
        Line([PlacedTile(Tile(3, 6), 3, 5)])
    with pytest.raises(LineError, match="spinner"):
        Line([PlacedTile(Tile(3, 6), 3, 6, spinner=True)])


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(
    preset=st.sampled_from(preset_names()),
    seed=st.integers(0, 2**64 - 1),
    choice_seed=st.integers(0, 2**32 - 1),
)
def test_the_line_folded_from_events_is_the_engines(
    preset: str, seed: int, choice_seed: int
) -> None:
    """At every decision of a random match, the line folded from the typed events is the
    engine's own (``MatchState.line``, folded from raw events, from where it left off): its
    ends are the engine's, its chain is what every seat observes and a view's chain makes
    the same line again; its spinner is the deal's first double and each tile lies as
    shown_halves reads it."""
    game = Game(load_preset(preset, ["max_hands=3"]))
    state = game.new_match(seed, auto_forced=False)
    rng = random.Random(choice_seed)
    while not state.is_terminal():
        events = state.log.events()
        line = Line.of(events)
        assert line == state.line and line.ends == state.ends
        assert line.chain == observe(state, state.current_seat).chain
        assert Line(line.chain) == line
        deal = events[_last_redeal(events) :]
        doubles = [e.tile for e in deal if isinstance(e, Play) and e.tile.is_double]
        assert line.spinner == (doubles[0] if doubles else None)
        relaid = EMPTY_LINE
        for e in deal:
            if isinstance(e, Play):
                placed = relaid.placed(e.tile, e.end)
                assert (placed.left, placed.right) == shown_halves(relaid.ends, e.tile, e.end)
                relaid = relaid.play(e.tile, e.end)
        assert relaid == line
        codes = state.legal_actions()
        state.apply(codes[rng.randrange(len(codes))])


@settings(deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(
    preset=st.sampled_from(preset_names()),
    seed=st.integers(0, 2**64 - 1),
    choice_seed=st.integers(0, 2**32 - 1),
    every=st.integers(2, 40),
)
def test_the_engines_line_is_right_however_seldom_it_is_asked(
    preset: str, seed: int, choice_seed: int, every: int
) -> None:
    """MatchState.line folds on from where its last call left off: asked now and then
    (across redeals, hands and a position set up by new_position), it is still the fold
    of the current deal's events."""
    game = Game(load_preset(preset, ["max_hands=3"]))
    state = game.new_match(seed, auto_forced=False)
    rng = random.Random(choice_seed)
    while not state.is_terminal():
        if rng.randrange(every) == 0:
            assert state.line == Line.of(state.log.events())
        codes = state.legal_actions()
        state.apply(codes[rng.randrange(len(codes))])
    assert state.line == Line.of(state.log.events())


def test_a_position_starts_its_own_line() -> None:
    """A state set up mid-hand (new_position) has no events: the tiles laid before it are
    not known, so its line starts empty and holds the tiles laid from then on."""
    game = Game(load_preset("iq-1v1"))
    state = game.new_position(
        seed=1,
        hand=0,
        scores=(0, 0),
        hands=[[Tile(6, 6), Tile(1, 2)], [Tile(2, 6), Tile(0, 0)]],
        stock=[],
        ends=(3, 6),
        turn=0,
        auto_forced=False,
    )
    assert state.line == EMPTY_LINE
    state.apply_action(state.parse("6-6:R"))
    assert state.line == Line([PlacedTile(Tile(6, 6), 6, 6, spinner=True)])


def _last_redeal(events: list[Event]) -> int:
    """Where the current deal's events start (after the last granted redeal)."""
    starts = [i + 1 for i, e in enumerate(events) if isinstance(e, RedealChoice) and e.redeal]
    return starts[-1] if starts else 0


# -- how a match ends -------------------------------------------------------------------------


def test_only_a_match_ended_by_the_rules_is_counted() -> None:
    counted = {t for t in Termination if t.counted}
    assert counted == {Termination.NORMAL, Termination.HAND_LIMIT}
    assert not any(t.counted and t.forfeits for t in Termination)
    assert not Termination.CANCELLED.counted and not Termination.CANCELLED.forfeits


@pytest.mark.parametrize("preset", ["iq-2v2", "iq-ffa", "el-dominito-2p"])
def test_a_match_cancelled_before_its_first_decision_is_outcome_cancelled(preset: str) -> None:
    """What a server records for a match cancelled before it starts is what the engine's
    own cancel gives at the first decision (no score yet)."""
    game = Game(load_preset(preset))
    sides = game.num_sides
    state = game.new_match(1, auto_forced=False)
    outcome = state.cancel("host left")
    assert outcome == Outcome.cancelled((0,) * sides, "host left")
    assert outcome.ranking == tuple(range(sides)) and outcome.winner is None
    assert state.is_terminal() and state.returns() == (0.0,) * game.ruleset.seats


@pytest.mark.parametrize(
    ("preset", "returns"),
    [
        ("iq-2v2", (-1.0, 1.0, -1.0, 1.0)),
        ("iq-ffa", (0.0, 0.0, 0.0, 0.0)),  # three other sides tied at 0: no winner
        ("el-dominito-2p", (-1.0, 1.0)),
    ],
)
def test_a_forfeit_returns_one_to_the_winning_sides_seats(
    preset: str, returns: tuple[float, ...]
) -> None:
    """Side 0 forfeits at the first decision with every score 0: the one other side wins
    (+1 to its seats, -1 to the forfeiter's); with several other sides tied, nobody does."""
    state = Game(load_preset(preset)).new_match(1, auto_forced=False)
    outcome = state.forfeit(0, Termination.DISCONNECT, "gone")
    assert outcome.winner == (None if preset == "iq-ffa" else 1)
    assert state.returns() == pytest.approx(returns)


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


@pytest.mark.parametrize("preset", preset_names())
def test_forced_order_is_the_choice_a_forced_opening_makes(preset: str) -> None:
    """Under a forced opening (tile:A-B, highest double) the engine opens with the first
    dealt tile of opening.forced_order, whatever the deal: what a seat reads from an
    opening (every tile before it was not dealt) is the engine's own rule."""
    from capicua.engine.opening import OpeningMethod, forced_order, open_hand

    top = load_preset(preset).max_pip
    rng = random.Random(preset)
    for opener in ("highest_double", f"tile:{top - 1}-{top}"):
        game = Game(load_preset(preset, [f"first_opener={opener}"]))
        order = forced_order(game, game.first_opening)
        assert sorted(order) == sorted(game.deck)
        n, seats = game.ruleset.hand_size, game.ruleset.seats
        for _ in range(200):
            deck = list(game.deck)
            rng.shuffle(deck)
            hands = [sum(1 << t for t in deck[s * n : (s + 1) * n]) for s in range(seats)]
            held = sum(hands)
            seat, tile, _ = open_hand(game, hands, held, 0, 0, None)
            assert tile == next(t for t in order if held >> t & 1)
            assert hands[seat] >> tile & 1
    with pytest.raises(ValueError, match="does not force a tile"):
        forced_order(game, OpeningMethod.ROTATE)
    assert game.first_opening is OpeningMethod.TILE


def test_the_hand_log_keeps_the_seat_offered_each_deal() -> None:
    """Every deal's opening offer is logged, a redealt deal's too (every seat saw it, no
    record keeps it): cuban with a REDEAL answered at the first offer."""
    game = Game(load_preset("cuban", ["redeal_min_doubles=1"]))
    for seed in range(40):
        state = game.new_match(seed, auto_forced=False)
        offered = [state.offered]
        if state.phase is not Phase.REDEAL:
            continue
        state.apply_action(next(a for a in state.legal() if a.kind is ActionKind.REDEAL))
        offered.append(state.offered)
        assert state.log.hands[0].offered == offered and len(state.log.hands[0].deals) == 2
        copy = state.clone()
        assert copy.log.hands[-1].offered == offered
        assert copy.log.hands[-1].offered is not state.log.hands[-1].offered
        return
    raise AssertionError("no redeal offer in 40 deals")


def test_a_match_begins_when_asked_and_stops_where_its_dealer_does() -> None:
    """``new_match(begin=False)`` then ``begin()`` is ``new_match()``; a dealer that raises
    at the next hand's deal leaves the match readable where it stopped: the hand just
    played over, with its result and the scores it left (what OpenSpiel's chance nodes
    show every seat)."""
    from capicua.engine.dealing import shuffled

    game = Game(load_preset("block"))
    now, later = game.new_match(5), game.new_match(5, begin=False)
    assert not later.log.hands and not later.legal_actions()
    later.begin()
    assert (
        later.legal_actions() == now.legal_actions()
        and later.log.hands[0].deals == now.log.hands[0].deals
    )

    class Stop(Exception):
        pass

    def dealer(hand: int, attempt: int) -> list[Tile]:
        if hand > 0:
            raise Stop
        return [game.tile(b.bit_length() - 1) for b in shuffled(game.deck_bits, 5, 0, attempt)]

    state = game.new_match(5, dealer=dealer, begin=False)
    rng = random.Random(5)
    with pytest.raises(Stop):
        state.begin()
        while True:
            state.apply(rng.choice(state.legal_actions()))
    first = state.log.results()[0]
    assert state.log.hands[0].result == first and list(state.scores) == list(first.scores)
    assert state.log.hands[0].events[-1][0] == EV_PLAY  # the last play is there
