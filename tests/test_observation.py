"""What a seat (or a spectator) may know: targeted hidden-information tests.

RULES "What a seat may know": a seat sees its own tiles, the chain, tile counts, the stock
count and the public events (plays, passes, how many tiles were drawn, REDEALs, deferrals);
never another seat's tiles or the stock. A KEEP is not announced, since it would reveal the
doubles. When a hand ends every hand is turned face up, but not the stock.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable, Iterator

import pytest

from capicua.engine.actions import KEEP, REDEAL
from capicua.engine.game import Game, MatchState, Phase
from capicua.engine.line import Line
from capicua.engine.observation import Observation, PlacedTile, TileCounts, chain_of, observe
from capicua.engine.records import Defer, Draw, Event, Pass, Play, RedealChoice
from capicua.engine.rules import load_preset, preset_names
from capicua.engine.tiles import Tile, full_set
from tests.scenario import phase

# -- helpers ------------------------------------------------------------------------------------


def play_until(state: MatchState, rng: random.Random, done: Callable[[MatchState], bool]) -> bool:
    """Random legal actions until ``done(state)`` (True) or the match ends (False)."""
    for _ in range(100_000):
        if done(state):
            return True
        if state.is_terminal():
            return False
        state.apply(rng.choice(state.legal_actions()))
    raise AssertionError("the match did not end")


def decisions(state: MatchState, rng: random.Random) -> Iterator[MatchState]:
    """Yield the state at every decision of a random match, then once at its end."""
    for _ in range(100_000):
        yield state
        if state.is_terminal():
            return
        state.apply(rng.choice(state.legal_actions()))
    raise AssertionError("the match did not end")


def tiles_in(value: object) -> Iterator[Tile]:
    """Every Tile inside a value made of dataclasses, tuples and lists."""
    if isinstance(value, Tile):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from tiles_in(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from tiles_in(getattr(value, f.name))


def current_hand_tiles(obs: Observation) -> set[Tile]:
    """Tiles an observation shows about the hand in progress (not the ruleset or the results
    of finished hands, which are a different deal)."""
    return set(tiles_in((obs.tiles, obs.chain, obs.events)))


def public(events: tuple[Event, ...], seat: int) -> list[Event]:
    """A seat's events with its own private ones made public: own KEEPs out, draws masked."""
    out: list[Event] = []
    for e in events:
        if isinstance(e, RedealChoice) and not e.redeal and e.seat == seat:
            continue
        out.append(Draw(e.seat, None) if isinstance(e, Draw) else e)
    return out


def state_with_draws(seed_from: int = 0) -> MatchState:
    """An el-dominito-2p match stopped at a decision after some seat has drawn."""
    game = Game.from_preset("el-dominito-2p")
    for seed in range(seed_from, seed_from + 200):
        state = game.new_match(seed)
        rng = random.Random(seed)
        if play_until(state, rng, lambda s: any(isinstance(e, Draw) for e in s.log.events())):
            return state
    raise AssertionError("no draw in 200 matches")


# -- draws --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed_from", [0, 50, 100])
def test_only_the_drawer_sees_a_drawn_tile(seed_from: int) -> None:
    state = state_with_draws(seed_from)
    full = state.log.events()
    draws = [e for e in full if isinstance(e, Draw)]
    assert draws and all(d.tile is not None for d in draws)
    for seat in range(2):
        obs = observe(state, seat)
        seen = [e for e in obs.events if isinstance(e, Draw)]
        assert [d.seat for d in seen] == [d.seat for d in draws]  # how many: public
        for mine, real in zip(seen, draws, strict=True):
            assert mine == (real if real.seat == seat else Draw(real.seat, None))
        # own drawn tiles are in the seat's hand or on the chain; nobody else's are shown
        drawn_by_me = {d.tile for d in draws if d.seat == seat}
        assert drawn_by_me <= set(obs.tiles) | {p.tile for p in obs.chain}
        others = {d.tile for d in draws if d.seat != seat} - {p.tile for p in obs.chain}
        assert not others & current_hand_tiles(obs)
    spectator = observe(state, None)
    assert [e for e in spectator.events if isinstance(e, Draw)] == [
        Draw(d.seat, None) for d in draws
    ]
    for obs in (observe(state, 0), observe(state, 1), spectator):
        assert obs.stock_count == state.stock_count == len(state.stock())
        assert obs.tile_counts == tuple(len(state.hand_of(s)) for s in range(2))


def test_draw_counts_add_up_in_the_tile_counts() -> None:
    state = state_with_draws()
    obs = observe(state, None)
    for seat in range(2):
        drawn = sum(1 for e in obs.events if isinstance(e, Draw) and e.seat == seat)
        played = sum(1 for e in obs.events if isinstance(e, Play) and e.seat == seat)
        assert obs.tile_counts[seat] == 7 + drawn - played
    assert obs.stock_count == 28 - 14 - sum(1 for e in obs.events if isinstance(e, Draw))


# -- redeal answers -----------------------------------------------------------------------------

DOUBLES = [Tile(p, p) for p in range(10)]
SINGLES = [t for t in full_set(9) if not t.is_double]


def cuban_with_two_redeal_offers(seed: int = 3) -> MatchState:
    """Cuban with seats 1 and 2 dealt five doubles each (a crafted deal), so two seats are
    asked in turn whether to redeal."""

    def dealer(hand: int, attempt: int) -> list[Tile]:
        if attempt == 1 or hand > 0:
            tiles = list(full_set(9))
            random.Random(hand * 10 + attempt).shuffle(tiles)
            return tiles
        s = list(SINGLES)
        return s[0:10] + DOUBLES[:5] + s[10:15] + DOUBLES[5:] + s[15:20] + s[20:30] + s[30:]

    return Game(load_preset("cuban")).new_match(seed, auto_forced=False, dealer=dealer)


def test_a_keep_is_seen_only_by_the_seat_that_kept() -> None:
    state = cuban_with_two_redeal_offers()
    assert state.phase is Phase.REDEAL
    first = state.current_seat
    assert first in (1, 2)
    state.apply(KEEP)
    second = state.current_seat
    assert {first, second} == {1, 2} and state.phase is Phase.REDEAL
    assert state.log.events() == [RedealChoice(first, False)]
    for seat in range(4):
        shown = observe(state, seat).events
        assert shown == ((RedealChoice(first, False),) if seat == first else ())
    assert observe(state, None).events == ()
    # the second seat keeps too: still nobody else sees either answer
    state.apply(KEEP)
    assert phase(state) is Phase.PLAY
    for seat in range(4):
        keeps = [e for e in observe(state, seat).events if isinstance(e, RedealChoice)]
        assert keeps == ([RedealChoice(seat, False)] if seat in (1, 2) else [])
    assert not [e for e in observe(state, None).events if isinstance(e, RedealChoice)]


def test_a_redeal_is_public_and_the_new_deal_is_shown_as_attempt_1() -> None:
    state = cuban_with_two_redeal_offers()
    first = state.current_seat
    assert first is not None
    state.apply(KEEP)
    second = state.current_seat
    assert second is not None
    state.apply(REDEAL)
    assert state.attempt == 1 and state.phase is Phase.PLAY
    for seat in [*range(4), None]:
        obs = observe(state, seat)
        assert obs.attempt == 1
        assert RedealChoice(second, True) in obs.events
        assert (RedealChoice(first, False) in obs.events) == (seat == first)
        assert obs.chain == () and obs.ends is None
        if seat is not None:
            assert obs.tiles == state.hand_of(seat)


def _without_own_keeps(obs: Observation) -> Observation:
    seat = obs.seat
    kept = tuple(e for e in obs.events if not (isinstance(e, RedealChoice) and e.seat == seat))
    return dataclasses.replace(obs, events=kept)


def test_other_seats_see_a_pending_redeal_offer_as_no_offer_at_all() -> None:
    """Being asked reveals at least redeal_min_doubles doubles (and moving on without a
    REDEAL, a KEEP). While a seat is asked, every other seat and a spectator see exactly
    what they see once every offer is kept (their own KEEP aside): the opening due, by the
    seat offered it. Nothing in the view (phase, to_act, anything else) tells an offer."""
    state = cuban_with_two_redeal_offers()
    during: list[tuple[int | None, Observation]] = []
    for _ in range(2):
        asked = state.current_seat
        assert state.phase is Phase.REDEAL and asked is not None
        mine = observe(state, asked)
        assert (mine.phase, mine.to_act) == (Phase.REDEAL, asked)
        during += [(s, observe(state, s)) for s in [*range(4), None] if s != asked]
        state.apply(KEEP)
    assert phase(state) is Phase.PLAY
    for seat, obs in during:
        assert _without_own_keeps(obs) == _without_own_keeps(observe(state, seat)), seat
        assert (obs.phase, obs.to_act) == (Phase.PLAY, state.offered)


OFFERS = load_preset("cuban", ["redeal_min_doubles=3", "max_hands=2"])
OFFER_SEEDS = [seed for seed in range(200) if Game(OFFERS).new_match(seed).phase is Phase.REDEAL][
    :20
]


@pytest.mark.parametrize("seed", OFFER_SEEDS)
def test_seeded_redeal_offers_look_like_no_offer(seed: int) -> None:
    """The same with seeded deals (offers made common), whoever is offered the opening."""
    state = Game(OFFERS).new_match(seed, auto_forced=False)
    during: list[tuple[int | None, Observation]] = []
    while state.phase is Phase.REDEAL:
        during += [(s, observe(state, s)) for s in [*range(4), None] if s != state.current_seat]
        state.apply(KEEP)
    for seat, obs in during:
        assert _without_own_keeps(obs) == _without_own_keeps(observe(state, seat)), seat


def test_a_keep_changes_nothing_the_other_seats_see() -> None:
    """Seats 0 and 3 (never asked) and a spectator see exactly the same before and after
    the first KEEP."""
    state = cuban_with_two_redeal_offers()
    before = {s: observe(state, s) for s in (0, 3, None)}
    state.apply(KEEP)
    assert state.phase is Phase.REDEAL  # the second seat is asked now
    for s, obs in before.items():
        assert observe(state, s) == obs


@pytest.mark.parametrize("seed", range(40))
def test_natural_cuban_redeal_offers_hide_keeps(seed: int) -> None:
    """With the seeded deal (redeal_min_doubles lowered so offers are common)."""
    rules = load_preset("cuban", ["redeal_min_doubles=3", "max_hands=3"])
    state = Game(rules).new_match(seed, auto_forced=False)
    rng = random.Random(seed)
    for st in decisions(state, rng):
        full = st.log.events()
        for seat in [*range(4), None]:
            keeps = [
                e for e in observe(st, seat).events if isinstance(e, RedealChoice) and not e.redeal
            ]
            assert keeps == [
                e for e in full if isinstance(e, RedealChoice) and not e.redeal and e.seat == seat
            ]


# -- the stock and the hands of others ------------------------------------------------------


def final_stocks(state: MatchState) -> list[set[Tile]]:
    """Each hand's undrawn stock at its end, from the full record."""
    out = []
    for record in state.log.replay().hands:
        drawn = {e.tile for e in record.events if isinstance(e, Draw)}
        out.append(set(record.deals[-1].stock) - drawn)
    return out


@pytest.mark.parametrize("name", preset_names())
def test_the_stock_never_appears_in_any_observation(name: str) -> None:
    for seed in range(3):
        state = Game(load_preset(name, ["max_hands=4"])).new_match(seed, auto_forced=seed == 0)
        rng = random.Random(seed)
        for st in decisions(state, rng):
            stock = set(st.stock())
            for seat in [*range(st.rules.seats), None]:
                obs = observe(st, seat)
                shown = current_hand_tiles(obs)
                assert not shown & stock
                hidden = {t for s in range(st.rules.seats) if s != seat for t in st.hand_of(s)}
                assert not shown & hidden
                if seat is None:
                    assert obs.tiles == ()
                    assert all(e.tile is None for e in obs.events if isinstance(e, Draw))
        # finished hands are revealed without their stock
        stocks = final_stocks(state)
        for seat in [*range(state.rules.seats), None]:
            obs = observe(state, seat)
            for result in obs.results:
                assert not set(tiles_in(result)) & stocks[result.hand]


def test_the_stock_stays_hidden_in_a_draw_game() -> None:
    """el-dominito-2p keeps 14 tiles in the stock: none ever shows, not even at the end."""
    for seed in range(10):
        state = Game.from_preset("el-dominito-2p").new_match(seed)
        rng = random.Random(seed)
        seen: dict[int | None, set[Tile]] = {0: set(), 1: set(), None: set()}
        for st in decisions(state, rng):
            stock = set(st.stock())
            for seat in seen:
                shown = current_hand_tiles(observe(st, seat))
                assert not shown & stock
        stocks = final_stocks(state)
        for seat in seen:
            obs = observe(state, seat)
            assert not current_hand_tiles(obs) & stocks[-1]
            for result in obs.results:
                assert not set(tiles_in(result)) & stocks[result.hand]


def test_observations_carry_no_seed_no_stock_and_no_other_hands() -> None:
    names = {f.name for f in dataclasses.fields(Observation)}
    assert not names & {"seed", "stock", "hands", "deal", "deals"}
    state = Game.from_preset("iq-2v2").new_match(12345)
    obs = observe(state, 0)
    assert "12345" not in repr(obs)
    with pytest.raises(ValueError):
        observe(state, 4)
    with pytest.raises(ValueError):
        observe(state, -1)


# -- results reveal every hand ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["iq-2v2", "el-dominito-2p", "cutthroat", "draw"])
def test_a_finished_hand_is_shown_face_up(name: str) -> None:
    for seed in range(5):
        state = Game.from_preset(name).new_match(seed)
        rng = random.Random(seed)
        assert play_until(state, rng, lambda s: s.hand >= 1) or state.is_terminal()
        record = state.log.replay().hands[0]
        assert record.result is not None
        # every seat's tiles at the end: dealt + drawn - played
        held = [list(h) for h in record.deals[-1].hands]
        for e in record.events:
            if isinstance(e, Draw):
                assert e.tile is not None
                held[e.seat].append(e.tile)
            elif isinstance(e, Play):
                held[e.seat].remove(e.tile)
        for seat in [*range(state.rules.seats), None]:
            obs = observe(state, seat)
            assert obs.results[0] == record.result
            assert obs.results[0].remaining == tuple(tuple(sorted(h)) for h in held)
            assert obs.results[0].pips == tuple(sum(t.pips for t in h) for h in held)


def test_during_a_hand_no_result_reveals_it() -> None:
    state = Game.from_preset("iq-2v2").new_match(4)
    rng = random.Random(4)
    for st in decisions(state, rng):
        if st.is_terminal():
            break
        obs = observe(st, 0)
        assert len(obs.results) == st.hand
        assert all(r.hand < st.hand for r in obs.results)


# -- the chain ----------------------------------------------------------------------------------


def reference_chain(events: list[Event]) -> list[Tile]:
    """The chain's tiles left to right from the plays: left plays go in front."""
    chain: list[Tile] = []
    for e in events:
        if isinstance(e, Play):
            if not chain or e.end.letter == "R":
                chain.append(e.tile)
            else:
                chain.insert(0, e.tile)
    return chain


def check_chain(state: MatchState, chain: tuple[PlacedTile, ...]) -> None:
    events = state.log.events()
    plays = [e for e in events if isinstance(e, Play)]
    assert [p.tile for p in chain] == reference_chain(events)
    if not plays:
        assert chain == () and state.ends is None
        return
    for p in chain:
        assert sorted((p.left, p.right)) == [p.tile.low, p.tile.high]
    for a, b in zip(chain, chain[1:], strict=False):
        assert a.right == b.left, f"{a} does not touch {b}"
    assert (chain[0].left, chain[-1].right) == state.ends
    first = next(p for p in chain if p.tile == plays[0].tile)
    assert (first.left, first.right) == (plays[0].tile.low, plays[0].tile.high)
    doubles = [e.tile for e in plays if e.tile.is_double]
    spinners = [p.tile for p in chain if p.spinner]
    assert spinners == doubles[:1]


@pytest.mark.parametrize("name", ["iq-2v2", "jamaican", "el-dominito-2p", "cutthroat", "cuban"])
def test_chain_of_is_the_chain_left_to_right(name: str) -> None:
    """...and the line the engine folds from its raw events as it goes is the one the
    typed events make from scratch (Line.of), granted redeals included."""
    for seed in range(4):
        state = Game(load_preset(name, ["max_hands=3"])).new_match(seed, auto_forced=False)
        rng = random.Random(seed)
        for st in decisions(state, rng):
            chain = chain_of(st)
            check_chain(st, chain)
            assert st.line == Line.of(st.log.events())
            for seat in [*range(st.rules.seats), None]:
                assert observe(st, seat).chain == chain


def test_the_line_after_a_granted_redeal_is_the_new_deals() -> None:
    state = cuban_with_two_redeal_offers()
    state.apply(REDEAL)
    assert state.attempt == 1
    for st in decisions(state, random.Random(5)):
        assert st.line == Line.of(st.log.events())
        check_chain(st, chain_of(st))


def test_only_the_first_double_played_is_the_spinner() -> None:
    """A hand with two doubles on the chain marks only the first one played."""
    for seed in range(300):
        state = Game.from_preset("jamaican").new_match(seed, auto_forced=False)
        rng = random.Random(seed)

        def two_doubles(s: MatchState) -> bool:
            return sum(1 for e in s.log.events() if isinstance(e, Play) and e.tile.is_double) >= 2

        if play_until(state, rng, two_doubles) and state.hand == 0:
            chain = chain_of(state)
            check_chain(state, chain)
            assert sum(p.spinner for p in chain) == 1
            return
    raise AssertionError("no hand with two doubles")


# -- spectators ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", preset_names())
def test_tile_counts_folded_from_public_events_are_the_engines(name: str) -> None:
    """What a spectator's board folds from the events it is sent (``capicua match watch``)
    is what the engine counts, at every decision of every preset (redeals included)."""
    overrides = ["max_hands=3"] + (["redeal_min_doubles=3"] if name == "cuban" else [])
    rules = load_preset(name, overrides)
    for seed in range(3):
        state = Game(rules).new_match(seed, auto_forced=seed % 2 == 0)
        for st in decisions(state, random.Random(seed)):
            spectator = observe(st, None)
            counts = TileCounts.dealt(rules)
            for event in spectator.events:
                counts = counts.after(event, rules)
            assert counts == TileCounts(spectator.tile_counts, spectator.stock_count)


@pytest.mark.parametrize("name", ["el-dominito-2p", "cuban", "iq-ffa", "jamaican"])
def test_spectators_see_the_public_part_of_every_seat_view(name: str) -> None:
    rules = load_preset(
        name, ["max_hands=3"] + (["redeal_min_doubles=3"] if name == "cuban" else [])
    )
    for seed in range(4):
        state = Game(rules).new_match(seed, auto_forced=seed % 2 == 0)
        rng = random.Random(seed)
        for st in decisions(state, rng):
            spectator = observe(st, None)
            assert spectator.tiles == ()
            for e in spectator.events:
                assert not (isinstance(e, Draw) and e.tile is not None)
                assert not (isinstance(e, RedealChoice) and not e.redeal)
            for seat in range(rules.seats):
                obs = observe(st, seat)
                assert public(obs.events, seat) == list(spectator.events)
                same = ("chain", "ends", "tile_counts", "stock_count", "scores", "results")
                for name_ in same + ("hand", "attempt", "opener", "outcome"):
                    assert getattr(obs, name_) == getattr(spectator, name_), name_


def test_passes_and_deferrals_are_public() -> None:
    """Events without hidden content are shown alike in every view."""
    seen: set[type] = set()
    for seed in range(30):
        state = Game.from_preset("cuban").new_match(seed, auto_forced=False)
        rng = random.Random(seed)
        for st in decisions(state, rng):
            full = st.log.events()
            open_events = [e for e in full if not isinstance(e, (Draw, RedealChoice))]
            seen |= {type(e) for e in open_events}
            for seat in [*range(4), None]:
                shown = [
                    e for e in observe(st, seat).events if not isinstance(e, (Draw, RedealChoice))
                ]
                assert shown == open_events
        if {Pass, Defer} <= seen:
            return
    raise AssertionError(f"not every kind of public event was seen: {seen}")
