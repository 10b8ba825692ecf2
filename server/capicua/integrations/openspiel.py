"""Every capicua ruleset as an OpenSpiel game: ``pyspiel.load_game("capicua", {...})``.

Importing this module registers the Python game ``capicua`` with OpenSpiel. Its parameters:

- ``preset`` (default ``block``): any preset of ``capicua rules list``;
- ``set``: knob overrides, as ``--set`` takes them, separated by ``;``
  (``{"preset": "cuban", "set": "target=150;stock=draw"}``). In a game string, where
  OpenSpiel splits a parameter at its last ``=``, write ``set=target=150,set=stock=draw``
  (one parameter per knob: :data:`KNOB_PARAMS`) or ``set=target:150;stock:draw``;
- ``ask_forced`` (default false): whether a seat with a single legal action is asked for it
  (false: the engine applies it, as the server does unless a bot asks).

**The game is the engine.** A state holds an engine match (:class:`MatchState`), replayed
from the state's own chance outcomes and decisions; legality, scoring, who acts and when a
hand or the match ends are the engine's. **Chance is explicit**: every deal is dealt one
tile at a time by a chance node (uniform over the tiles not yet dealt: seat 0's tiles
first, then seat 1's..., then the stock in drawing order), a redeal deals again, and under
``first_opener = random_side`` a chance node draws the opening seat (a random side, then a
random seat of it). So the probabilities are exact and a match *is* its action list.

**Actions.** A play is ``2 * tile + end`` (``tile``: the tile's index in the set's canonical
order, 0-0, 0-1, ..., ``end`` 0 for the left end, 1 for the right); then ``DEFER``,
``REDEAL`` and ``KEEP`` follow the plays (:func:`action_id`). Passes and draws are not
decisions: the engine applies them, and they show as events. Chance outcomes are tile
indices (a deal) or seats (the opener).

**What a player sees** is built from the engine's per-seat observation
(:func:`capicua.engine.observation.observe` and the events as that seat may see them), so
nothing hidden reaches a string or a tensor: not another seat's tiles, not the stock, not a
redeal offer to another seat. ``information_state_string`` holds the player's whole history
(every hand: its own dealt tiles, the events it saw, each finished hand's result);
``observation_string`` only the present.

**Returns** are the match's result (:meth:`MatchState.returns`): 1 for every seat of the
winning side, ``-1 / (sides - 1)`` for every other seat, 0 for all when the match ends
without a winner; zero-sum, given at the end of the match only.
"""

from __future__ import annotations

import dataclasses
import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyspiel

from capicua.bots.inference import WorldSampler, infer
from capicua.common.errors import CapicuaError
from capicua.engine.actions import DEFER, KEEP, Action
from capicua.engine.game import EV_DRAW, EV_PLAY, Game, MatchState, Phase
from capicua.engine.observation import Observation, observe, visible_events
from capicua.engine.records import Defer, Draw, Event, HandResult, Play, RedealChoice
from capicua.engine.replay import decision_code
from capicua.engine.rules import Ruleset, load_preset
from capicua.engine.tiles import Tile, iter_bits, tile_table
from capicua.integrations.views import (
    SPECIALS,
    SeatEncoder,
    action_id,
    engine_code,
    legal_ids,
    match_text,
    overrides_of,
)

SHORT_NAME = "capicua"


class NeedChance(Exception):
    """Raised from inside the engine when it needs a chance outcome the state has not drawn
    yet: the state is then at a chance node. ``kind`` is ``deal`` (of ``hand``, ``attempt``)
    or ``opener`` (of ``hand``)."""

    def __init__(self, kind: str, hand: int, attempt: int = 0) -> None:
        super().__init__(kind, hand, attempt)
        self.kind, self.hand, self.attempt = kind, hand, attempt


#: ``set=KNOB=VALUE`` in a game string: OpenSpiel splits a parameter at its last ``=``, so
#: ``capicua(preset=cuban,set=target=150)`` reaches the game as the parameter ``set=target``.
#: One such parameter per knob with a plain value, each typed as the knob is; its default
#: means "not set" (-1, "", false: a boolean knob is set to false with ``set=KNOB:false``).
#: Knobs with lists or tables (exclude, finish_bonus, shutout) go in ``set``.
KNOB_PARAMS: dict[str, Any] = {
    f"set={knob}": {int: -1, str: "", bool: False}[type(value)]
    for knob, value in load_preset("block").knobs().items()
    if knob not in ("name", "summary", "shutout") and type(value) in (int, str, bool)
}


def _knob_overrides(params: Mapping[str, Any]) -> list[str]:
    """The ``set=KNOB`` parameters that are set, as ``--set`` items."""
    out = []
    for key, unset in KNOB_PARAMS.items():
        value = params.get(key, unset)
        if value != unset:
            text = str(value).lower() if isinstance(value, bool) else str(value)
            out.append(f"{key.removeprefix('set=')}={text}")
    return out


_GAME_TYPE = pyspiel.GameType(
    short_name=SHORT_NAME,
    long_name="capicua dominoes (any capicua ruleset)",
    dynamics=pyspiel.GameType.Dynamics.SEQUENTIAL,
    chance_mode=pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
    information=pyspiel.GameType.Information.IMPERFECT_INFORMATION,
    utility=pyspiel.GameType.Utility.ZERO_SUM,
    reward_model=pyspiel.GameType.RewardModel.TERMINAL,
    max_num_players=4,
    min_num_players=2,
    provides_information_state_string=True,
    provides_information_state_tensor=True,
    provides_observation_string=True,
    provides_observation_tensor=True,
    parameter_specification={"preset": "block", "set": "", "ask_forced": False, **KNOB_PARAMS},
)


class CapicuaGame(pyspiel.Game):  # type: ignore[misc]
    """One capicua ruleset (a preset and its overrides), immutable, as an OpenSpiel game."""

    def __init__(
        self, params: Mapping[str, Any] | None = None, *, ruleset: Ruleset | None = None
    ) -> None:
        """From OpenSpiel's parameters, or (a bot's game, never loaded by name) from a
        ``ruleset`` as the server sent it, its name and overrides kept as the parameters."""
        params = dict(params or {})
        if ruleset is not None:
            params.setdefault("preset", ruleset.name)
            params.setdefault("set", ";".join(ruleset.overrides))
        preset = str(params.get("preset", "block"))
        given = overrides_of(str(params.get("set", "")))
        overrides = given + _knob_overrides(params)
        try:
            self.engine = Game(ruleset) if ruleset else Game.from_preset(preset, overrides)
        except CapicuaError as e:
            raise ValueError(f"capicua: {e}") from None
        # kept in the form a game string can carry (OpenSpiel splits at the last "="), so
        # that str(game) loads the same game again: serialised states need it
        params["set"] = ";".join(o.replace("=", ":", 1) for o in given)
        self.ask_forced = bool(params.get("ask_forced", False))
        rules = self.engine.ruleset
        self.tiles = len(self.engine.table.tiles)
        self.deck: tuple[int, ...] = self.engine.deck  # tile indices in canonical order
        # per hand at most: two deals, an opener, every seat asked a redeal, a defer and a
        # play per tile
        per_hand = 2 * len(self.deck) + 1 + rules.seats + 1 + len(self.deck)
        info = pyspiel.GameInfo(
            num_distinct_actions=2 * self.tiles + len(SPECIALS),
            max_chance_outcomes=max(self.tiles, rules.seats),
            num_players=rules.seats,
            min_utility=-1.0,
            max_utility=1.0,
            utility_sum=0.0,
            max_game_length=per_hand * rules.max_hands,
        )
        super().__init__(_GAME_TYPE, info, params)

    def new_initial_state(self) -> CapicuaState:
        return CapicuaState(self)

    def make_py_observer(
        self, iig_obs_type: Any = None, params: Mapping[str, Any] | None = None
    ) -> CapicuaObserver:
        if params:
            raise ValueError(f"capicua: observation parameters are not supported: {params}")
        obs_type = iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False)
        return CapicuaObserver(self, perfect_recall=bool(obs_type.perfect_recall))


class _Chance:
    """A state's chance outcomes so far, handed to the engine in place of its seeded
    shuffle and opener draw; asking for one not drawn yet raises :class:`NeedChance`."""

    def __init__(self, game: CapicuaGame) -> None:
        self.game = game
        self.deals: dict[tuple[int, int], list[int]] = {}  # (hand, attempt) -> tile indices
        self.openers: dict[int, int] = {}  # hand -> seat

    def copy(self) -> _Chance:
        other = _Chance(self.game)
        other.deals = {k: list(v) for k, v in self.deals.items()}
        other.openers = dict(self.openers)
        return other

    def deal(self, hand: int, attempt: int) -> Sequence[Tile]:
        order = self.deals.get((hand, attempt), ())
        if len(order) < len(self.game.deck):
            raise NeedChance("deal", hand, attempt)
        tiles = self.game.engine.table.tiles
        return [tiles[i] for i in order]

    def opener(self, hand: int) -> int:
        if hand not in self.openers:
            raise NeedChance("opener", hand)
        return self.openers[hand]


@dataclass(frozen=True)
class _Position:
    """Where a state rebuilt from one seat's view begins: the start of that view's hand, as
    hand 0 of a match that starts with the view's scores (its deal is the chance outcome
    of hand 0), the opening offered to ``offered``."""

    scores: tuple[int, ...]
    offered: int
    can_defer: bool
    hand: int  # the view's hand and finished hands: what the engine's inference reads
    results: tuple[HandResult, ...]  # (who opens a later hand, and with what) from them

    def start(self, core: _Core, auto_forced: bool) -> MatchState:
        engine = core.game.engine
        rules, tiles = engine.ruleset, engine.table.tiles
        order = core.chance.deals[(0, 0)]
        n = rules.hand_size
        return engine.new_position(
            seed=0,
            hand=0,
            scores=self.scores,
            hands=[[tiles[i] for i in order[s * n : (s + 1) * n]] for s in range(rules.seats)],
            stock=[tiles[i] for i in order[rules.seats * n :]],
            ends=None,
            turn=self.offered,
            can_defer=self.can_defer,
            auto_forced=auto_forced,
            dealer=core.chance.deal,
            chance_opener=core.chance.opener,
            as_dealt=True,
        )


class _Core:
    """What a state is, kept in one attribute: OpenSpiel clones a Python state by deep-copying
    its attributes, and this copies cheaply (the game shared, the engine's match cloned).

    ``match`` is the engine at the last complete position; at a chance node it is the
    position before the decision that needs the outcome (``pending``, applied again once
    the outcomes are drawn), or None while the first hand is dealt."""

    def __init__(self, game: CapicuaGame, chance: _Chance) -> None:
        self.game = game
        self.chance = chance
        self.need: NeedChance | None = None  # the chance node we are at, if any
        self.pending: int | None = None  # the decision waiting for it
        self.match: MatchState | None = None
        self.position: _Position | None = None  # a state rebuilt from a view starts there

    @classmethod
    def start(cls, game: CapicuaGame) -> _Core:
        core = cls(game, _Chance(game))
        core._resume()
        return core

    def __deepcopy__(self, memo: dict[int, Any]) -> _Core:
        other = _Core(self.game, self.chance.copy())
        other.need, other.pending, other.position = self.need, self.pending, self.position
        if self.match is not None:
            other.match = self.match.clone(dealer=other.chance.deal, opener=other.chance.opener)
        return other

    def decide(self, code: int) -> None:
        match = self.match
        assert match is not None and self.need is None
        before = match.clone()
        try:
            match.apply(code)
        except NeedChance as need:  # a new deal: the engine stopped half-way, go back
            self.need, self.pending, self.match = need, code, before

    def chance_outcome(self, outcome: int) -> None:
        need = self.need
        assert need is not None
        if need.kind == "deal":
            order = self.chance.deals.setdefault((need.hand, need.attempt), [])
            order.append(outcome)
            if len(order) < len(self.game.deck):
                return
        else:
            self.chance.openers[need.hand] = outcome
        self._resume()

    def new_match(self, auto_forced: bool | None = None) -> MatchState:
        """The match's start: its first deal, or (a state rebuilt from a view) the
        position its hand started from."""
        g = self.game
        auto = not g.ask_forced if auto_forced is None else auto_forced
        if self.position is None:
            return g.engine.new_match(
                0, auto_forced=auto, dealer=self.chance.deal, opener=self.chance.opener
            )
        return self.position.start(self, auto)

    def _resume(self) -> None:
        """Go on from the chance node: the first hand, or the pending decision again, now
        that its outcomes are drawn (it may need another: an opener after a deal)."""
        try:
            if self.match is None:
                match = self.new_match()
            else:
                assert self.pending is not None
                match = self.match.clone()
                match.apply(self.pending)
        except NeedChance as need:
            self.need = need
            return
        self.need, self.pending, self.match = None, None, match

    def chance_outcomes(self) -> list[tuple[int, float]]:
        need = self.need
        assert need is not None
        if need.kind == "deal":
            dealt = set(self.chance.deals.get((need.hand, need.attempt), ()))
            left = [t for t in self.game.deck if t not in dealt]
            p = 1.0 / len(left)
            return [(t, p) for t in sorted(left)]
        sides = self.game.engine.side_seats
        odds = {s: 1.0 / len(sides) / len(seats) for seats in sides for s in seats}
        return sorted(odds.items())


class CapicuaState(pyspiel.State):  # type: ignore[misc]
    """A capicua match in progress as an OpenSpiel state (see the module doc)."""

    def __init__(self, game: CapicuaGame) -> None:
        super().__init__(game)
        self._core = _Core.start(game)

    @property
    def match(self) -> MatchState | None:
        """The engine's match at the last complete position (None before the first deal)."""
        return self._core.match

    def current_player(self) -> int:
        core = self._core
        if core.need is not None:
            return int(pyspiel.PlayerId.CHANCE)
        assert core.match is not None
        if core.match.is_terminal():
            return int(pyspiel.PlayerId.TERMINAL)
        seat = core.match.current_seat
        assert seat is not None
        return seat

    def _legal_actions(self, player: int) -> list[int]:
        match = self._core.match
        if match is None or self._core.need is not None or match.current_seat != player:
            return []
        tiles = self._core.game.tiles
        return sorted(action_id(code, tiles) for code in match.legal_actions())

    def chance_outcomes(self) -> list[tuple[int, float]]:
        return self._core.chance_outcomes()

    def _apply_action(self, action: int) -> None:
        core = self._core
        if core.need is not None:
            core.chance_outcome(action)
        else:
            core.decide(engine_code(action, core.game.tiles))

    def _action_to_string(self, player: int, action: int) -> str:
        game = self._core.game
        if player == pyspiel.PlayerId.CHANCE:
            need = self._core.need
            if need is not None and need.kind == "opener":
                return f"opener:seat{action}"
            return f"deal:{game.engine.table.tiles[action]}"
        return str(Action.from_code(engine_code(action, game.tiles), game.engine.table))

    def is_terminal(self) -> bool:
        match = self._core.match
        return self._core.need is None and match is not None and match.is_terminal()

    def returns(self) -> list[float]:
        match = self._core.match
        if match is None or not self.is_terminal():
            return [0.0] * self._core.game.engine.ruleset.seats
        return list(match.returns())

    def resample_from_infostate(self, player_id: int, probability_sampler: Any) -> CapicuaState:
        """A state ``player_id`` cannot tell from this one, its hidden tiles drawn anew
        (:func:`resample`), for IS-MCTS. ``probability_sampler`` (OpenSpiel's) seeds the
        draw."""
        seed = int(float(probability_sampler()) * 2**53)
        return resample(self, player_id, random.Random(seed))

    def __str__(self) -> str:
        match = self._core.match
        need = self._core.need
        if match is None:
            return "dealing the first hand"
        text = match_text(match)
        if need is not None:
            text += f"; dealing ({need.kind}, hand {need.hand})"
        return text


class CapicuaObserver:
    """OpenSpiel's observer (PyObserver) of a capicua game: :class:`SeatEncoder`'s tensor
    and string of the engine's match, and at a chance node what is being dealt (with the
    player's own tiles of the deal so far)."""

    def __init__(self, game: CapicuaGame, *, perfect_recall: bool) -> None:
        self.encoder = SeatEncoder(game.engine, perfect_recall=perfect_recall)
        self.tensor = self.encoder.tensor
        self.dict = self.encoder.dict

    def set_from(self, state: CapicuaState, player: int) -> None:
        self.encoder.fill(state.match, player)

    def string_from(self, state: CapicuaState, player: int) -> str:
        text = self.encoder.text(state.match, player)
        need = state._core.need
        if need is None:
            return text
        text += f" | chance: {need.kind} of hand {need.hand}"
        if need.kind == "deal":
            text += " mine " + _dealt_so_far(state, player, need)
        return text


def _dealt_so_far(state: CapicuaState, seat: int, need: NeedChance) -> str:
    """The tiles of the deal in progress that went to ``seat`` (its own: it sees them)."""
    core = state._core
    n = core.game.engine.ruleset.hand_size
    order = core.chance.deals.get((need.hand, need.attempt), [])
    tiles = core.game.engine.table.tiles
    return " ".join(str(tiles[i]) for i in sorted(order[seat * n : (seat + 1) * n]))


# -- resampling for IS-MCTS -------------------------------------------------------------------


def resample(
    state: CapicuaState, player: int, rng: random.Random, *, tries: int = 200
) -> CapicuaState:
    """A state with ``player``'s information state and this hand's hidden tiles drawn anew:
    the other seats' tiles and the stock's order, from the worlds the engine's own
    inference allows (:class:`capicua.bots.inference.WorldSampler`, as the Hard bot samples
    them). Each candidate is replayed by the engine and kept only if ``player`` sees
    exactly the same history in it (rejection: the draw is from the worlds consistent with
    everything ``player`` observed); after ``tries`` misses it raises ``RuntimeError``
    rather than hand back the true state (which would leak every hidden tile). Earlier
    hands keep their outcomes: they ended face up and cannot change what is to come."""
    core = state._core
    match = core.match
    if match is None or core.need is not None or match.is_terminal():
        raise ValueError("capicua: resample_from_infostate needs a player's decision")
    observer = CapicuaObserver(core.game, perfect_recall=True)
    want = observer.string_from(state, player)
    sampler = WorldSampler(infer(_seen_by(core, match, player)))
    for _ in range(tries):
        candidate = _with_world(state, player, sampler.sample(rng), rng)
        if candidate is None:
            continue
        # the same seat to act too: a world where another seat holds a redeal offer now
        # looks the same to ``player`` but is not its decision
        if candidate.current_player() != state.current_player():
            continue
        if observer.string_from(candidate, player) == want:
            return candidate
    raise RuntimeError(
        f"capicua: no world consistent with seat {player}'s information in {tries} tries"
    )


RawSeen = tuple[int, int, int]  # (EV_PLAY or EV_DRAW, seat, tile index or -1: hidden)


def _start_order(
    game: CapicuaGame, world: Any, seen: Sequence[RawSeen], player: int, rng: random.Random
) -> list[int] | None:
    """The deal that puts ``world``'s tiles back where this hand started: each seat's tiles
    now plus those it played this hand, minus those it drew (the stock's drawn tiles in the
    order drawn, then ``world``'s stock). Another seat's drawn tiles are hidden from the
    player: they are guessed among that seat's tiles (held or played). None when that is
    no deal."""
    rules = game.engine.ruleset
    played = [0] * rules.seats
    drawn: list[tuple[int, int]] = []
    for kind, who, tile in seen:
        if kind == EV_PLAY:
            played[who] |= 1 << tile
        elif kind == EV_DRAW:
            drawn.append((who, tile))
    start = [world.hands[s] | played[s] for s in range(rules.seats)]
    stock_drawn: list[int] = []
    for who, tile in drawn:
        if who == player:
            bit = 1 << tile
        else:
            candidates = [i for i in iter_bits(start[who]) if i not in stock_drawn]
            if not candidates:
                return None
            bit = 1 << rng.choice(candidates)
        start[who] &= ~bit
        stock_drawn.append(bit.bit_length() - 1)
    order: list[int] = []
    for s in range(rules.seats):
        mine = list(iter_bits(start[s]))
        if len(mine) != rules.hand_size:
            return None
        order += mine
    rest = list(world.stock) if world.stock else list(iter_bits(world.stock_mask))
    order += stock_drawn + [t for t in rest if t not in stock_drawn]
    return order if sorted(order) == sorted(game.deck) else None


def _seen_by(core: _Core, match: MatchState, player: int) -> Observation:
    """``player``'s observation of ``match``; for a state rebuilt from a view, with the
    view's own hand number and finished hands, which the inference needs (a later hand's
    opening says other things than a first hand's)."""
    obs = observe(match, player)
    position = core.position
    if position is None:
        return obs
    return dataclasses.replace(obs, hand=position.hand, results=position.results)


def _with_world(
    state: CapicuaState, player: int, world: Any, rng: random.Random
) -> CapicuaState | None:
    """``state`` with its current deal replaced by :func:`_start_order` of ``world`` and
    played again as ``player`` saw it; None when the world could not have led there."""
    core = state._core
    match = core.match
    assert match is not None
    seen = [(kind, who, tile) for kind, who, tile, _end in match.logs[-1].events]
    order = _start_order(core.game, world, seen, player, rng)
    if order is None:
        return None
    clone: CapicuaState = state.clone()
    core = clone._core
    core.chance.deals[(match.hand, match.logs[-1].deals[-1][0])] = order
    events = [visible_events(match, player, h) for h in range(match.hands_dealt)]
    try:
        core.match = _replayed_as_seen(core, events, player, match.auto_forced)
    except (NeedChance, CapicuaError):  # the guess is no deal these events could follow
        return None
    return clone


def _replayed_as_seen(
    core: _Core, hands: Sequence[Sequence[Event]], player: int, auto_forced: tuple[bool, ...]
) -> MatchState:
    """The match of ``core``'s chance outcomes (a guessed world) played again with the
    decisions ``player`` saw (``hands``: each hand's events as it saw them): every seat's
    plays, defers and REDEALs, its own KEEPs; another seat asked a redeal in the world
    answers KEEP (a REDEAL would have been seen), so the world's hidden offers are its own.
    Forced moves are decisions here (the world may force what the truth did not); from
    the present on ``auto_forced`` applies again. Raises when the world cannot have led to
    what ``player`` saw (an illegal decision, a deal still owed)."""
    match = core.new_match(auto_forced=False)

    def keep_hidden_offers() -> None:
        while match.phase is Phase.REDEAL and match.current_seat != player:
            match.apply(KEEP)

    for events in hands:
        for event in events:
            keep_hidden_offers()
            code = decision_code(match, event)
            if code is not None:
                match.apply(code)
    keep_hidden_offers()
    match.auto_forced = auto_forced
    return match


# -- a state from one seat's view (a bot's decision) --------------------------------------


def from_view(
    game: CapicuaGame,
    obs: Observation,
    rng: random.Random,
    *,
    may_defer: bool = False,
    tries: int = 200,
) -> CapicuaState:
    """A state at ``obs``'s decision rebuilt from that seat's view alone, for a search bot:
    this hand from its start (the seat's own tiles as dealt; the others' and the stock's
    drawn from the worlds the engine's inference allows), the hand's events as the seat
    saw them played again, and the view's scores. It begins at that hand (hand 0 of a
    match starting with those scores), so hands after it are dealt by chance nodes and
    opened by the first hand's rules; nothing the seat did not see is in it. The opening
    is open to any tile; ``may_defer``: the rules let this hand's opener defer (DEFER is
    among the seat's legal actions now, or it was played). Raises ``RuntimeError`` when no
    world fits in ``tries``."""
    seat = obs.seat
    assert seat is not None and obs.to_act == seat, "a seat's view at its own decision"
    index = game.engine.table.index
    seen: list[RawSeen] = []
    events: list[Event] = []
    for e in obs.events:
        if isinstance(e, RedealChoice):
            continue  # the hand starts at the deal it is played with
        events.append(e)
        if isinstance(e, Play):
            seen.append((EV_PLAY, e.seat, index[e.tile]))
        elif isinstance(e, Draw):
            seen.append((EV_DRAW, e.seat, -1 if e.tile is None else index[e.tile]))
    may_defer = may_defer or any(isinstance(e, Defer) for e in events)
    sampler = WorldSampler(infer(obs))
    for _ in range(tries):
        order = _start_order(game, sampler.sample(rng), seen, seat, rng)
        if order is None:
            continue
        state = CapicuaState(game)
        core = state._core
        core.position = _Position(
            tuple(obs.scores), obs.offered, may_defer, obs.hand, tuple(obs.results)
        )
        core.chance.deals[(0, 0)] = order
        auto = (not game.ask_forced,) * game.engine.ruleset.seats
        try:
            core.match = _replayed_as_seen(core, [events], seat, auto)
        except (NeedChance, CapicuaError):
            continue
        core.need = core.pending = None
        if core.match.current_seat == seat and visible_events(core.match, seat) == tuple(events):
            return state
    raise RuntimeError(f"capicua: no world fits seat {seat}'s view in {tries} tries")


class _SearchBot:
    """What OpenSpiel's search bots share as capicua bots: a game per ruleset, a state per
    decision rebuilt from the seat's view (:func:`from_view`), the seat's legal actions
    matched to the search's. The SDK runs decisions of different matches in threads at
    once, so each decision gets a search of its own (OpenSpiel's bots keep their tree in
    the bot), seeded from this bot's generator."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self._lock = threading.Lock()
        self._games: dict[Ruleset, CapicuaGame] = {}

    def _game(self, ruleset: Ruleset) -> CapicuaGame:
        with self._lock:
            if ruleset not in self._games:
                self._games[ruleset] = CapicuaGame(ruleset=ruleset)
            return self._games[ruleset]

    def _fork(self) -> tuple[random.Random, np.random.RandomState]:
        """Generators for one decision, drawn from the bot's own (one at a time)."""
        with self._lock:
            seed = self.rng.getrandbits(63)
        return random.Random(seed), np.random.RandomState(seed % 2**32)

    def choose(self, observation: Observation, legal_actions: Sequence[Action]) -> Action:
        if len(legal_actions) == 1:
            return legal_actions[0]
        table = tile_table(observation.ruleset.max_pip)
        if observation.phase is Phase.REDEAL:
            return next(a for a in legal_actions if a.code(table) == KEEP)
        game = self._game(observation.ruleset)
        rng, np_rng = self._fork()
        may_defer = any(a.code(table) == DEFER for a in legal_actions)
        weights = self.search(game, observation, may_defer, rng, np_rng)
        # the search's weights over the seat's legal actions (a rebuilt opening may offer
        # more than the rules' forced tile)
        ids = legal_ids(legal_actions, observation.ruleset)
        best = max(range(len(ids)), key=lambda i: weights.get(ids[i], 0.0))
        return legal_actions[best]

    def search(
        self,
        game: CapicuaGame,
        obs: Observation,
        may_defer: bool,
        rng: random.Random,
        np_rng: np.random.RandomState,
    ) -> dict[int, float]:
        """A weight per action id (higher: better)."""
        raise NotImplementedError


class ISMCTS(_SearchBot):
    """OpenSpiel's IS-MCTS (``open_spiel.python.algorithms.ismcts``) as a capicua bot:
    ``capicua bot run capicua.integrations.openspiel:ISMCTS``, or ``openspiel:ismcts`` in
    an arena file. Each decision is searched from a state rebuilt from the seat's view
    only (:func:`from_view`), with random rollouts; ``simulations`` per decision, ``seed``
    for its draws. A redeal offer is kept (KEEP) without a search."""

    def __init__(
        self, simulations: int = 100, seed: int = 0, uct_c: float = 2.0, rollouts: int = 1
    ) -> None:
        if simulations < 1 or rollouts < 1:
            raise ValueError("simulations and rollouts must be at least 1")
        super().__init__(seed)
        self.simulations, self.uct_c, self.rollouts = simulations, uct_c, rollouts

    def search(
        self,
        game: CapicuaGame,
        obs: Observation,
        may_defer: bool,
        rng: random.Random,
        np_rng: np.random.RandomState,
    ) -> dict[int, float]:
        from open_spiel.python.algorithms import ismcts, mcts

        evaluator = mcts.RandomRolloutEvaluator(self.rollouts, np_rng)
        bot = ismcts.ISMCTSBot(game, evaluator, self.uct_c, self.simulations, random_state=np_rng)
        return dict(bot.run_search(from_view(game, obs, rng, may_defer=may_defer)))


class MCTS(_SearchBot):
    """OpenSpiel's MCTS over sampled worlds (determinized, or perfect-information Monte
    Carlo) as a capicua bot: ``openspiel:mcts`` in an arena file. Each decision, ``worlds``
    states are rebuilt from the seat's view (:func:`from_view`, each with its own guess of
    the hidden tiles), OpenSpiel's ``MCTSBot`` searches each with ``simulations //
    worlds`` simulations as if the guess were true, and the action most explored over all
    of them is played. Cheaper per simulation than IS-MCTS, but it plans as if it could
    see the guessed tiles (strategy fusion). A redeal offer is kept without a search."""

    def __init__(
        self, simulations: int = 100, worlds: int = 4, seed: int = 0, uct_c: float = 2.0
    ) -> None:
        if simulations < worlds or worlds < 1:
            raise ValueError("worlds must be at least 1 and at most simulations")
        super().__init__(seed)
        self.simulations, self.worlds, self.uct_c = simulations, worlds, uct_c

    def search(
        self,
        game: CapicuaGame,
        obs: Observation,
        may_defer: bool,
        rng: random.Random,
        np_rng: np.random.RandomState,
    ) -> dict[int, float]:
        from open_spiel.python.algorithms import mcts

        evaluator = mcts.RandomRolloutEvaluator(1, np_rng)
        bot = mcts.MCTSBot(
            game, self.uct_c, self.simulations // self.worlds, evaluator,
            solve=False, random_state=np_rng,
        )  # fmt: skip
        visits: dict[int, float] = {}
        for _ in range(self.worlds):
            root = bot.mcts_search(from_view(game, obs, rng, may_defer=may_defer))
            for child in root.children:
                visits[child.action] = visits.get(child.action, 0.0) + child.explore_count
        return visits


pyspiel.register_game(_GAME_TYPE, CapicuaGame)


__all__ = [
    "SHORT_NAME",
    "CapicuaGame",
    "CapicuaObserver",
    "CapicuaState",
    "action_id",
    "engine_code",
    "overrides_of",
    "resample",
]
