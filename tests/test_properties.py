"""Random matches over every preset, checked step by step against an independent model.

The model below is written from the rules contract alone (the deal formula, the opening
rules, legal moves, forced draws and passes, block detection, scoring): it never calls the
engine's helpers. Each match is played by choosing uniformly among ``state.legal_actions()``;
after every decision the engine's state, legal actions, every finished hand's record and
result, and every seat's observation are compared with the model.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, fields
from hashlib import sha256
from typing import TYPE_CHECKING

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from capicua.engine.actions import Action, ActionKind, End
from capicua.engine.game import Game, MatchState, Phase
from capicua.engine.observation import Observation, observe
from capicua.engine.records import (
    Deal,
    Defer,
    Draw,
    Event,
    HandEnd,
    HandRecord,
    HandResult,
    Outcome,
    Pass,
    Play,
    RedealChoice,
    Reset,
    Termination,
)
from capicua.engine.replay import verify
from capicua.engine.rules import (
    BlockOpener,
    BlockTie,
    BlockWinner,
    EffectKind,
    FirstOpener,
    NextOpener,
    NoWinnerOpener,
    Points,
    Ruleset,
    Sides,
    Stock,
    TurnOrder,
    load_preset,
    preset_names,
)
from capicua.engine.tiles import Tile
from capicua.wire import codec

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

PRESETS = preset_names()

# -- the rules, written out independently -----------------------------------------------------


def the_set(r: Ruleset) -> list[Tile]:
    """Every tile of the set in canonical order (low half, then high half), minus exclude."""
    return [
        Tile(a, b)
        for a in range(r.max_pip + 1)
        for b in range(a, r.max_pip + 1)
        if Tile(a, b) not in r.exclude
    ]


def _rng(text: str) -> random.Random:
    return random.Random(int.from_bytes(sha256(text.encode()).digest()[:8], "big"))


def reference_deal(r: Ruleset, seed: int, hand: int, attempt: int) -> Deal:
    tiles = the_set(r)
    _rng(f"{seed}:{hand}:{attempt}").shuffle(tiles)
    n = r.hand_size
    hands = tuple(tuple(tiles[s * n : (s + 1) * n]) for s in range(r.seats))
    return Deal(attempt, hands, tuple(tiles[r.seats * n :]))


def teams(r: Ruleset) -> bool:
    return r.sides is Sides.TEAMS


def num_sides(r: Ruleset) -> int:
    return 2 if teams(r) else r.seats


def side(r: Ruleset, seat: int) -> int:
    return seat % 2 if teams(r) else seat


def seats_of(r: Ruleset, sd: int) -> tuple[int, ...]:
    return (sd, sd + 2) if teams(r) else (sd,)


def next_seat(r: Ruleset, seat: int) -> int:
    step = 1 if r.turn_order is TurnOrder.CLOCKWISE else -1
    return (seat + step) % r.seats


def partner(r: Ruleset, seat: int) -> int:
    assert teams(r)
    return (seat + 2) % 4


def fits(tile: Tile, pip: int) -> bool:
    return pip in (tile.low, tile.high)


def other_half(tile: Tile, pip: int) -> int:
    assert fits(tile, pip)
    return tile.high if tile.low == pip else tile.low


def pips(tiles: list[Tile] | tuple[Tile, ...]) -> int:
    return sum(t.low + t.high for t in tiles)


def text(tile: Tile, end: str = "L") -> str:
    return f"{tile.low}-{tile.high}:{end}"


@dataclass(frozen=True)
class Opening:
    seat: int
    forced: Tile | None
    can_defer: bool


def highest_double_opening(dealt: list[list[Tile]]) -> Opening:
    every = [t for h in dealt for t in h]
    doubles = [t for t in every if t.low == t.high]
    # no double dealt: the highest tile, by pips, then the larger half (decision 10)
    tile = max(doubles) if doubles else max(every, key=lambda t: (t.low + t.high, t.high))
    holder = next(s for s, h in enumerate(dealt) if tile in h)
    return Opening(holder, tile, False)


def first_opening(r: Ruleset, seed: int, hand: int, dealt: list[list[Tile]]) -> Opening:
    if r.first_opener is FirstOpener.RANDOM_SIDE:
        rng = _rng(f"{seed}:opener:{hand}")
        sd = rng.randrange(num_sides(r))
        return Opening(rng.choice(seats_of(r, sd)), None, teams(r))
    if r.first_opener is FirstOpener.TILE:
        assert r.opening_tile is not None
        for s, h in enumerate(dealt):
            if r.opening_tile in h:
                return Opening(s, r.opening_tile, False)
    return highest_double_opening(dealt)


def winner_seat(r: Ruleset, res: HandResult) -> int:
    """The seat that won the last hand (RULES, opening ``winner``)."""
    if res.end is HandEnd.DOMINO:
        return res.seat
    assert res.winner is not None
    return min(seats_of(r, res.winner), key=lambda s: (res.pips[s], s))


def opening(
    r: Ruleset, seed: int, hand: int, dealt: list[list[Tile]], prev: HandResult | None
) -> Opening:
    if prev is None:
        return first_opening(r, seed, hand, dealt)
    if prev.winner is None:
        if r.no_winner_opener is NoWinnerOpener.ROTATE:
            return Opening(next_seat(r, prev.opener), None, False)
        return first_opening(r, seed, hand, dealt)
    if prev.end is HandEnd.BLOCK and r.block_opener is BlockOpener.LOCKER_IF_WON:
        locker = prev.seat
        won = side(r, locker) == prev.winner
        return Opening(locker if won else next_seat(r, locker), None, False)
    if r.next_opener is NextOpener.WINNER:
        return Opening(winner_seat(r, prev), None, False)
    if r.next_opener is NextOpener.WINNING_SIDE:
        return Opening(winner_seat(r, prev), None, teams(r))
    return highest_double_opening(dealt)


class HandModel:
    """One hand re-played by the rules from its seed; every event is asserted legal."""

    def __init__(self, r: Ruleset, seed: int, hand: int, prev: HandResult | None) -> None:
        self.r = r
        self.seed = seed
        self.hand = hand
        self.prev = prev
        self.deals: list[Deal] = []
        self._deal(0)
        self.queue: list[int] = []
        if r.redeal_min_doubles:
            order = [self.open.seat]
            while len(order) < r.seats:
                order.append(next_seat(r, order[-1]))
            self.queue = [
                s
                for s in order
                if sum(t.low == t.high for t in self.hands[s]) >= r.redeal_min_doubles
            ]
        self.phase = Phase.REDEAL if self.queue else Phase.PLAY
        self.turn = self.queue[0] if self.queue else self.open.seat
        self.deferred = False
        self.over: HandEnd | None = None
        self.draws = 0
        self.keeps: list[int] = []

    def _deal(self, attempt: int) -> None:
        deal = reference_deal(self.r, self.seed, self.hand, attempt)
        self.deals.append(deal)
        self.hands = [list(h) for h in deal.hands]
        self.stock = list(deal.stock)
        self.open = opening(self.r, self.seed, self.hand, self.hands, self.prev)
        self.ends: tuple[int, int] | None = None
        self.played: list[Tile] = []
        self.opener: int | None = None
        self.last: int | None = None
        self.final: tuple[Tile, tuple[int, int] | None] | None = None  # last tile, ends before

    # -- facts --

    def playable(self, seat: int) -> list[Tile]:
        assert self.ends is not None
        left, right = self.ends
        return [t for t in self.hands[seat] if fits(t, left) or fits(t, right)]

    def anyone_can_play(self) -> bool:
        return any(self.playable(s) for s in range(self.r.seats))

    def can_draw(self) -> bool:
        return self.r.stock is Stock.DRAW and bool(self.stock)

    def legal(self) -> set[str]:
        """The legal actions of the seat to act, in the actions' text form."""
        assert self.over is None
        if self.phase is Phase.REDEAL:
            return {"redeal", "keep"}
        seat = self.turn
        hand = self.hands[seat]
        if self.ends is None:
            if self.deferred:
                return {text(t) for t in hand}
            if self.open.forced is not None:
                return {text(self.open.forced)}
            return {text(t) for t in hand} | ({"defer"} if self.open.can_defer else set())
        left, right = self.ends
        out = {text(t, "L") for t in hand if fits(t, left)}
        if left != right:  # equal ends: both placements are one move, offered on the left
            out |= {text(t, "R") for t in hand if fits(t, right)}
        return out

    # -- events --

    def step(self, ev: Event) -> None:
        r = self.r
        assert self.over is None, f"{ev} after the hand ended ({self.over})"
        if isinstance(ev, RedealChoice):
            assert self.phase is Phase.REDEAL and self.queue, ev
            assert ev.seat == self.queue[0], (ev, self.queue)
            self.queue.pop(0)
            if ev.redeal:
                self.queue = []
                self._deal(1)
            else:
                self.keeps.append(ev.seat)
            if self.queue:
                self.turn = self.queue[0]
            else:
                self.phase = Phase.PLAY
                self.turn = self.open.seat
            return
        assert self.phase is Phase.PLAY, ev
        if isinstance(ev, Defer):
            assert self.ends is None and not self.deferred and self.open.can_defer, ev
            assert ev.seat == self.turn == self.open.seat, ev
            self.deferred = True
            self.turn = partner(r, ev.seat)
            return
        assert ev.seat == self.turn, f"{ev}: seat {self.turn} is to act"
        hand = self.hands[ev.seat]
        if isinstance(ev, Play):
            assert ev.tile in hand, f"{ev}: seat {ev.seat} holds {hand}"
            assert text(ev.tile, ev.end.letter) in self.legal(), (ev, self.legal())
            before = self.ends
            if before is None:
                assert ev.end is End.LEFT
                self.ends = (ev.tile.low, ev.tile.high)
                self.opener = ev.seat
            elif ev.end is End.LEFT:
                self.ends = (other_half(ev.tile, before[0]), before[1])
            else:
                assert before[0] != before[1], "a right play on equal ends"
                self.ends = (before[0], other_half(ev.tile, before[1]))
            hand.remove(ev.tile)
            self.played.append(ev.tile)
            self.last = ev.seat
            self.final = (ev.tile, before)
            if not hand:
                self.over = HandEnd.DOMINO
            elif not self.anyone_can_play() and not self.can_draw():
                self.over = HandEnd.BLOCK
            else:
                self.turn = next_seat(r, ev.seat)
        elif isinstance(ev, Draw):
            assert r.stock is Stock.DRAW and self.ends is not None, ev
            assert not self.playable(ev.seat), f"{ev}: seat could play {self.playable(ev.seat)}"
            assert self.stock, f"{ev}: the stock is empty"
            assert ev.tile == self.stock[0], f"{ev}: the stock's front is {self.stock[0]}"
            hand.append(self.stock.pop(0))
            self.draws += 1
            if not self.stock and not self.anyone_can_play():
                self.over = HandEnd.BLOCK  # the draws emptied the stock: blocked at once
        elif isinstance(ev, Pass):
            assert self.ends is not None, ev
            assert not self.playable(ev.seat), f"{ev}: seat could play {self.playable(ev.seat)}"
            assert not self.can_draw(), f"{ev}: the seat should have drawn"
            assert self.anyone_can_play(), f"{ev}: the hand is blocked; no pass is recorded"
            self.turn = next_seat(r, ev.seat)
        else:  # pragma: no cover
            raise AssertionError(f"unknown event {ev!r}")

    def at_decision(self) -> None:
        """After the recorded events the engine waits for a decision: make sure it must."""
        assert self.over is None
        if self.phase is Phase.PLAY and self.ends is not None:
            assert self.playable(self.turn), "a seat with nothing playable was asked to decide"

    # -- the result --

    def result(self, scores: list[int]) -> tuple[HandResult, bool]:
        """The hand's result from the order of scoring; updates ``scores``; True if the
        match ends here by target."""
        r = self.r
        assert self.over is not None and self.last is not None and self.opener is not None
        seat_pips = tuple(pips(h) for h in self.hands)
        if self.over is HandEnd.DOMINO:
            winner: int | None = side(r, self.last)
            rule = r.domino_points
        else:
            rule = r.block_points
            if r.block_winner is BlockWinner.LOWEST_SEAT:
                low = min(seat_pips)
                tied = {side(r, s) for s, p in enumerate(seat_pips) if p == low}
            else:
                totals = [sum(seat_pips[s] for s in seats_of(r, sd)) for sd in range(num_sides(r))]
                tied = {sd for sd, tot in enumerate(totals) if tot == min(totals)}
            if len(tied) == 1:
                winner = tied.pop()
            elif r.block_tie is BlockTie.OPENING_SIDE and side(r, self.opener) in tied:
                winner = side(r, self.opener)
            else:
                winner = None
        base = 0
        if winner is not None:
            if rule is Points.ONE:
                base = 1
            elif rule is Points.ALL_PIPS:
                base = sum(seat_pips)
            else:
                base = sum(p for s, p in enumerate(seat_pips) if side(r, s) != winner)
        bonuses: list[str] = []
        add, mult = 0, 1
        if self.over is HandEnd.DOMINO and self.final is not None and self.final[1] is not None:
            tile, (left, right) = self.final[0], self.final[1]  # (item by item: narrowed)
            # equal ends: the tile shows that number; else it shows both numbers
            both = fits(tile, left) if left == right else {tile.low, tile.high} == {left, right}
            for b in r.finish_bonus:
                if not both:
                    continue
                if b.no_double and tile.low == tile.high:
                    continue
                if b.distinct_ends and left == right:
                    continue
                bonuses.append(b.name)
                if b.effect.kind is EffectKind.ADD:
                    add += b.effect.amount
                else:
                    mult *= b.effect.amount
        points = (base + add) * mult
        awarded = points
        reset: Reset | None = None
        ended = False
        if winner is not None:
            if r.reply_resets and any(sc > 0 for sd, sc in enumerate(scores) if sd != winner):
                scores[:] = [0] * len(scores)
                awarded = 0
                reset = Reset.REPLY
            scores[winner] += awarded
            ended = scores[winner] >= r.target and (
                not r.win_needs_zero_opponent
                or any(sc == 0 for sd, sc in enumerate(scores) if sd != winner)
            )
        if not ended and r.all_scored_resets and all(sc > 0 for sc in scores):
            scores[:] = [0] * len(scores)
            reset = Reset.ALL_SCORED
        result = HandResult(
            hand=self.hand,
            end=self.over,
            winner=winner,
            seat=self.last,
            opener=self.opener,
            remaining=tuple(tuple(sorted(h)) for h in self.hands),
            pips=seat_pips,
            base=base,
            bonuses=tuple(bonuses),
            points=points,
            awarded=awarded,
            reset=reset,
            scores=tuple(scores),
        )
        return result, ended


def first_field_difference(a: DataclassInstance, b: DataclassInstance) -> str:
    for f in fields(a):
        if getattr(a, f.name) != getattr(b, f.name):
            return f"{f.name}: engine {getattr(a, f.name)!r}, model {getattr(b, f.name)!r}"
    return "equal"


# -- checking a match in progress -------------------------------------------------------------


class MatchChecker:
    """Compares a match in progress with the model after every decision."""

    def __init__(self, state: MatchState) -> None:
        self.state = state
        self.r = state.rules
        self.scores = [0] * num_sides(self.r)
        self.prev: HandResult | None = None
        self.checked = 0  # hands whose record and result were checked
        self.expected: Outcome | None = None  # set when a hand ends the match

    def check(self) -> None:
        st_ = self.state
        while self.checked <= st_.hand:
            record = st_.log.record(self.checked)
            if record.result is None:
                break
            self._check_finished(record)
            self.checked += 1
        if st_.is_terminal():
            # the shutout multiplier applies to the final match score
            final = self.expected.scores if self.expected is not None else tuple(self.scores)
            assert tuple(st_.scores) == final
            self._check_end()
        else:
            assert self.expected is None, "the match should have ended"
            record = st_.log.record(st_.hand)
            assert record.hand == st_.hand == self.checked
            self._check_current(record)
        check_observations(st_)

    def _model(self, record: HandRecord) -> HandModel:
        model = HandModel(self.r, self.state.seed, record.hand, self.prev)
        for ev in record.events:
            model.step(ev)
        assert record.deals == tuple(model.deals), f"hand {record.hand}: deals differ"
        return model

    def _check_finished(self, record: HandRecord) -> None:
        assert self.expected is None, f"hand {record.hand} played after the match ended"
        assert record.hand == self.checked
        assert record.hand < self.r.max_hands
        model = self._model(record)
        assert model.over is not None, f"hand {record.hand} has a result but goes on"
        # at the hand's end: every seat's remaining tiles + the chain + the undrawn stock
        assert record.result is not None
        drawn = [e.tile for e in record.events if isinstance(e, Draw)]
        left_in_stock = list(record.deals[-1].stock[len(drawn) :])
        everywhere = Counter(t for h in record.result.remaining for t in h)
        everywhere.update(e.tile for e in record.events if isinstance(e, Play))
        everywhere.update(left_in_stock)
        assert everywhere == Counter(the_set(self.r)), f"hand {record.hand}: tiles not conserved"
        assert left_in_stock == model.stock
        expected, ended = model.result(self.scores)
        assert record.result == expected, first_field_difference(record.result, expected)
        assert record.result.end is model.over
        self.prev = expected
        if ended:
            winner = expected.winner
            assert winner is not None
            scores = list(self.scores)
            shutout = None
            sh = self.r.shutout
            if sh is not None and all(sc == 0 for sd, sc in enumerate(scores) if sd != winner):
                scores[winner] *= sh.multiplier
                shutout = sh.name
            self.expected = Outcome(Termination.NORMAL, winner, tuple(scores), (), shutout)
        elif record.hand + 1 == self.r.max_hands:
            top = max(self.scores)
            leaders = [sd for sd, sc in enumerate(self.scores) if sc == top]
            winner = leaders[0] if len(leaders) == 1 else None
            self.expected = Outcome(Termination.HAND_LIMIT, winner, tuple(self.scores), ())

    def _check_end(self) -> None:
        out = self.state.outcome
        assert out is not None and self.expected is not None
        exp = self.expected
        assert (out.termination, out.winner, out.scores, out.shutout, out.forfeited) == (
            exp.termination,
            exp.winner,
            exp.scores,
            exp.shutout,
            None,
        )
        check_ranking(out)
        assert len(self.state.legal_actions()) == 0
        assert self.state.current_seat is None
        # OpenSpiel-style returns: +1 per seat of the winning side, the rest share -1 each.
        if exp.winner is None:
            expected_returns = [0.0] * self.r.seats
        else:
            lose = -1.0 / (num_sides(self.r) - 1)
            expected_returns = [
                1.0 if side(self.r, s) == exp.winner else lose for s in range(self.r.seats)
            ]
        assert self.state.returns() == pytest.approx(expected_returns)
        assert sum(self.state.returns()) == pytest.approx(0.0)

    def _check_current(self, record: HandRecord) -> None:
        st_ = self.state
        r = self.r
        model = self._model(record)
        model.at_decision()
        assert record.deals == tuple(model.deals)
        # the engine's position is the model's
        assert st_.phase is model.phase
        assert not st_.is_terminal() and st_.returns() == (0.0,) * r.seats
        assert st_.current_seat == model.turn
        assert st_.ends == model.ends
        assert st_.opener == model.opener
        assert st_.offered == model.open.seat
        assert st_.attempt == len(model.deals) - 1
        for s in range(r.seats):
            assert st_.hand_of(s) == tuple(sorted(model.hands[s])), f"seat {s}"
        assert st_.stock() == tuple(model.stock)
        assert st_.stock_count == len(model.stock)
        assert st_.tile_counts() == tuple(len(h) for h in model.hands)
        # tile conservation: hands + chain + stock is the set, each tile exactly once
        plays = [ev.tile for ev in record.events if isinstance(ev, Play)]
        everywhere = Counter(t for s in range(r.seats) for t in st_.hand_of(s))
        everywhere.update(plays)
        everywhere.update(st_.stock())
        assert everywhere == Counter(the_set(r))
        # legal actions are exactly the rules' (tile, end) pairs, each offered once
        codes = st_.legal_actions()
        assert len(codes) == len(set(codes))
        legal = {str(Action.from_code(c, st_.game.table)) for c in codes}
        assert legal == model.legal(), f"engine {sorted(legal)}, rules {sorted(model.legal())}"
        assert {str(a) for a in st_.legal()} == legal
        # a single option is applied for a seat with auto_forced; the others are asked
        if len(codes) == 1:
            assert not st_.auto_forced[model.turn]
        if model.phase is Phase.PLAY:
            assert st_.can_defer == ("defer" in legal)


def check_ranking(out: Outcome) -> None:
    n = len(out.scores)
    assert sorted(out.ranking) == list(range(n))
    rest = list(out.ranking)
    if out.forfeited is not None:
        assert rest.pop() == out.forfeited
    if out.winner is not None:
        assert rest.pop(0) == out.winner
    assert [out.scores[sd] for sd in rest] == sorted((out.scores[sd] for sd in rest), reverse=True)


def event_tiles(events: tuple[Event, ...] | list[Event]) -> set[Tile]:
    return {e.tile for e in events if isinstance(e, (Play, Draw)) and e.tile is not None}


def check_observations(state: MatchState) -> None:
    """What each seat and a spectator may know (RULES: "What a seat may know")."""
    r = state.rules
    full = state.log.events()
    played = [e.tile for e in full if isinstance(e, Play)]
    stock = set(state.stock())
    results = tuple(state.log.results())
    views: list[int | None] = [*range(r.seats), None]
    for seat in views:
        obs = observe(state, seat)
        assert obs.seat == seat
        own = set(state.hand_of(seat)) if seat is not None else set()
        assert obs.tiles == (state.hand_of(seat) if seat is not None else ())
        # the events: every public one; own draws and KEEPs; others' draws masked
        expected: list[Event] = []
        for e in full:
            if isinstance(e, RedealChoice) and not e.redeal and e.seat != seat:
                continue
            if isinstance(e, Draw) and e.seat != seat:
                expected.append(Draw(e.seat, None))
                continue
            expected.append(e)
        assert list(obs.events) == expected
        for e in obs.events:
            if isinstance(e, Draw):
                assert (e.tile is None) == (e.seat != seat)
            if isinstance(e, RedealChoice) and not e.redeal:
                assert e.seat == seat
        assert sorted(p.tile for p in obs.chain) == sorted(played)
        # nothing of another seat's hand or of the stock, anywhere in the current hand's view
        seen = set(obs.tiles) | {p.tile for p in obs.chain} | event_tiles(obs.events)
        assert seen <= own | set(played)
        hidden = stock | {t for s in range(r.seats) if s != seat for t in state.hand_of(s)}
        assert not seen & hidden
        # the public counts and positions
        assert obs.ends == state.ends
        assert obs.tile_counts == state.tile_counts()
        assert obs.stock_count == len(stock)
        assert obs.scores == tuple(state.scores)
        if state.phase is Phase.REDEAL and seat != state.current_seat:
            # who is asked about a redeal would reveal its doubles: everyone else sees the
            # opening due, as with no offer
            assert (obs.phase, obs.to_act) == (Phase.PLAY, state.offered)
        else:
            assert (obs.phase, obs.to_act) == (state.phase, state.current_seat)
        assert obs.hand == state.hand
        assert obs.results == results  # finished hands are turned face up
        assert obs.outcome == state.outcome
        assert obs.is_spectator == (seat is None)
    assert not {"seed", "stock", "hands"} & {f.name for f in fields(Observation)}
    assert not {"stock", "seed"} & {f.name for f in fields(HandResult)}


# -- the property -------------------------------------------------------------------------------


def play_checked(
    name: str,
    seed: int,
    choice_seed: int,
    auto: bool | tuple[bool, ...],
    overrides: list[str],
) -> MatchState:
    rules = load_preset(name, overrides)
    if not isinstance(auto, bool):
        auto = auto[: rules.seats]
    state = Game(rules).new_match(seed, auto_forced=auto)
    checker = MatchChecker(state)
    checker.check()
    rng = random.Random(choice_seed)
    per_hand = len(the_set(rules)) + rules.seats + 2  # plays, redeal answers, a deferral
    for _ in range(rules.max_hands * per_hand):
        if state.is_terminal():
            break
        state.apply(rng.choice(state.legal_actions()))
        checker.check()
    assert state.is_terminal(), "the match did not end within max_hands hands"
    assert len(state.log.results()) <= rules.max_hands
    assert state.hand + 1 <= rules.max_hands
    return state


def check_replay(state: MatchState) -> None:
    replay = state.log.replay()
    again = verify(replay)
    assert again.outcome == state.outcome
    assert again.log.replay(replay.players) == replay
    text_form = codec.replay_to_json(replay)
    back = codec.replay_from_json(text_form)
    assert back == replay
    assert codec.replay_to_json(back) == text_form
    assert verify(back).outcome == state.outcome


AUTO = st.one_of(st.booleans(), st.tuples(*[st.booleans()] * 4))


@pytest.mark.parametrize("preset", PRESETS)
@settings(deadline=None, max_examples=6, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**64 - 1),
    choice_seed=st.integers(0, 2**32 - 1),
    auto=AUTO,
    max_hands=st.one_of(st.none(), st.integers(1, 4)),
)
def test_random_matches_follow_the_rules(
    preset: str,
    seed: int,
    choice_seed: int,
    auto: bool | tuple[bool, ...],
    max_hands: int | None,
) -> None:
    overrides = [] if max_hands is None else [f"max_hands={max_hands}"]
    state = play_checked(preset, seed, choice_seed, auto, overrides)
    check_replay(state)


# Knob values no preset combines, from RULES' knob table (each checked with the same model).
VARIANTS = [
    ("draw", ["seats=2", "sides=individual"]),
    ("draw", ["seats=3", "sides=individual", "hand_size=5"]),
    ("el-dominito-2p", ["hand_size=3", "target=40"]),
    ("cuban", ["redeal_min_doubles=3"]),
    ("cuban", ["redeal_min_doubles=2", "first_opener=highest_double"]),
    ("iq-2v2", ["first_opener=random_side", "no_winner_opener=same_as_first"]),
    ("iq-ffa", ["first_opener=random_side", "next_opener=highest_double"]),
    ("block", ["next_opener=winning_side", "block_tie=opening_side"]),
    ("jamaican", ["block_winner=lowest_side", "block_opener=locker_if_won"]),
    ("cutthroat", ["first_opener=tile:1-2", "turn_order=clockwise", "stock=draw", "hand_size=6"]),
    ("iq-1v1", ["reply_resets=true", "win_needs_zero_opponent=true", "target=150"]),
    ("iq-ffa", ["all_scored_resets=true", "domino_points=all_pips", "target=200"]),
    (
        "dominican",
        [
            'finish_bonus=[{name="a", effect="add:5"}, {name="b", effect="multiply:3", '
            'no_double=true}, {name="c", effect="add:2", distinct_ends=true}]',
            'shutout={name="zero", multiplier=3}',
        ],
    ),
]


@settings(deadline=None, max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(
    variant=st.sampled_from(VARIANTS),
    seed=st.integers(0, 2**64 - 1),
    choice_seed=st.integers(0, 2**32 - 1),
    auto=AUTO,
)
def test_random_matches_with_other_knob_values_follow_the_rules(
    variant: tuple[str, list[str]],
    seed: int,
    choice_seed: int,
    auto: bool | tuple[bool, ...],
) -> None:
    name, overrides = variant
    state = play_checked(name, seed, choice_seed, auto, [*overrides, "max_hands=6"])
    check_replay(state)


@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(
    preset=st.sampled_from(PRESETS),
    seed=st.integers(0, 2**64 - 1),
    choice_seed=st.integers(0, 2**32 - 1),
    auto=AUTO,
    stop=st.integers(0, 60),
    ending=st.sampled_from([t for t in Termination if t.forfeits] + [Termination.CANCELLED]),
    loser=st.integers(0, 3),
)
def test_matches_stopped_midway_replay(
    preset: str,
    seed: int,
    choice_seed: int,
    auto: bool | tuple[bool, ...],
    stop: int,
    ending: Termination,
    loser: int,
) -> None:
    """A forfeit or cancellation after any number of decisions still verifies."""
    rules = load_preset(preset)
    state = Game(rules).new_match(seed, auto_forced=auto if isinstance(auto, bool) else False)
    rng = random.Random(choice_seed)
    for _ in range(stop):
        if state.is_terminal():
            break
        state.apply(rng.choice(state.legal_actions()))
    if state.is_terminal():
        return
    if ending is Termination.CANCELLED:
        out = state.cancel("host stopped it")
        assert out.winner is None and out.forfeited is None
    else:
        sd = loser % num_sides(rules)
        out = state.forfeit(sd, ending, "gone")
        assert out.forfeited == sd and out.winner != sd
        others = [o for o in range(num_sides(rules)) if o != sd]
        top = max(state.scores[o] for o in others)
        leaders = [o for o in others if state.scores[o] == top]
        assert out.winner == (leaders[0] if len(leaders) == 1 else None)
    assert out.termination is ending
    check_ranking(out)
    check_observations(state)
    check_replay(state)


def test_action_text_matches_the_model_notation() -> None:
    """The model names actions as the engine's text form does (a sanity check)."""
    assert str(Action.play(Tile(3, 6), End.RIGHT)) == text(Tile(3, 6), "R")
    assert str(Action(ActionKind.DEFER)) == "defer"
    assert {str(Action(ActionKind.REDEAL)), str(Action(ActionKind.KEEP))} == {"redeal", "keep"}
