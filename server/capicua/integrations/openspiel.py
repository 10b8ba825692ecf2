"""Every capicua ruleset as an OpenSpiel game: ``pyspiel.load_game("capicua", {...})``.

Importing this module registers the Python game ``capicua`` with OpenSpiel. Its parameters:

- ``preset`` (default ``block``): any preset of ``capicua rules list``;
- ``set``: knob overrides, as ``--set`` takes them, separated by ``;``
  (``{"preset": "cuban", "set": "target=150;stock=draw"}``). In a game string, where
  OpenSpiel splits a parameter at its last ``=``, write ``set=target=150,set=stock=draw``
  (one parameter per knob with a number or a word: :data:`KNOB_PARAMS`) or
  ``set=target:150;stock:draw``; a knob given twice is refused;
- ``ask_forced`` (default false): whether a seat with a single legal action is asked for it
  (false: the engine applies it, as the server does unless a bot asks).

**The game is the engine.** A state holds an engine match (:class:`MatchState`), replayed
from the state's own chance outcomes and decisions; legality, scoring, who acts and when a
hand or the match ends are the engine's. **Chance is explicit**: every deal is dealt one
tile at a time by a chance node (uniform over the tiles not yet dealt: seat 0's tiles
first, then seat 1's..., then the stock in drawing order), a redeal deals again, and under
``first_opener = random_side`` a chance node draws the opening seat (a random side, then a
random seat of it). So the probabilities are exact and a match *is* its action list: a
state is serialised (and pickled) as its game string and actions, and played again when
it is loaded.

**Actions.** A play is ``2 * tile + end`` (``tile``: the tile's index in the set's canonical
order, 0-0, 0-1, ..., ``end`` 0 for the left end, 1 for the right); then ``DEFER``,
``REDEAL`` and ``KEEP`` follow the plays (:func:`action_id`). Passes and draws are not
decisions: the engine applies them, and they show as events. Chance outcomes are tile
indices (a deal) or seats (the opener).

**What a player sees** is built from the engine's per-seat observation
(:func:`capicua.engine.observation.observe` and the events as that seat may see them), so
nothing hidden reaches a string or a tensor: not another seat's tiles, not the stock, not a
redeal offer to another seat. ``information_state_string`` holds the player's whole history
(every hand: its own tiles of each deal and who was offered its opening, the events it saw,
each finished hand's result); ``observation_string`` only the present. At a chance node
both show the deal so far (the player's own tiles of it) after everything before it,
the last hand's end included.

**Resampling** (IS-MCTS): :func:`resample` draws every deal of the match anew among those
the player cannot tell from the true ones, uniformly and directly
(:mod:`capicua.integrations.worlds`), and plays them again with the decisions the player
saw: the state it returns is reached by its own actions, which its ``history()`` lists.

**Returns** are the match's result (:meth:`MatchState.returns`): 1 for every seat of the
winning side, ``-1 / (sides - 1)`` for every other seat, 0 for all when the match ends
without a winner; zero-sum, given at the end of the match only.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import pyspiel

from capicua.common.errors import CapicuaError
from capicua.engine.actions import DEFER, KEEP, REDEAL, Action
from capicua.engine.game import (
    EV_DEFER,
    EV_DRAW,
    EV_PASS,
    EV_PLAY,
    EV_REDEAL,
    Game,
    MatchState,
    Phase,
)
from capicua.engine.handlog import HandLog
from capicua.engine.observation import Observation, raw_event_for_seat
from capicua.engine.opening import OpeningMethod, opening_method
from capicua.engine.records import (
    Defer,
    Draw,
    Event,
    HandResult,
    Pass,
    Play,
    RedealChoice,
)
from capicua.engine.rules import Ruleset, load_preset
from capicua.engine.tiles import Tile, iter_bits, tile_table
from capicua.integrations.views import (
    SPECIALS,
    DealInProgress,
    SeatEncoder,
    action_id,
    engine_code,
    legal_ids,
    match_text,
    overrides_of,
    own_deal,
)
from capicua.integrations.worlds import DealSampler, DealView, NoWorld, Seen

SHORT_NAME = "capicua"
_CHANCE = int(pyspiel.PlayerId.CHANCE)
_TERMINAL = int(pyspiel.PlayerId.TERMINAL)


class NeedChance(Exception):
    """Raised from inside the engine when it needs a chance outcome the state has not drawn
    yet: the state is then at a chance node. ``kind`` is ``deal`` (of ``hand``, ``attempt``)
    or ``opener`` (of ``hand``)."""

    def __init__(self, kind: str, hand: int, attempt: int = 0) -> None:
        super().__init__(kind, hand, attempt)
        self.kind, self.hand, self.attempt = kind, hand, attempt


#: ``set=KNOB=VALUE`` in a game string: OpenSpiel splits a parameter at its last ``=``, so
#: ``capicua(preset=cuban,set=target=150)`` reaches the game as the parameter ``set=target``.
#: One such parameter per knob with a number or a word, typed as the knob is; its default
#: means "not set" (-1, ""). OpenSpiel hands every parameter over with its default filled
#: in, so a yes/no knob could not tell "false" from "not set": those (reply_resets,
#: all_scored_resets, win_needs_zero_opponent) go in ``set`` (``set=reply_resets:false``),
#: and ``set=reply_resets=false`` is refused as an unknown parameter. Knobs with lists or
#: tables (exclude, finish_bonus, shutout) go in ``set`` too.
KNOB_PARAMS: dict[str, Any] = {
    f"set={knob}": {int: -1, str: ""}[type(value)]
    for knob, value in load_preset("block").knobs().items()
    if knob not in ("name", "summary", "shutout") and type(value) in (int, str)
}


def _knob_overrides(params: Mapping[str, Any]) -> list[str]:
    """The ``set=KNOB`` parameters that are set, as ``--set`` items."""
    out = []
    for key, unset in KNOB_PARAMS.items():
        value = params.get(key, unset)
        if value != unset:
            out.append(f"{key.removeprefix('set=')}={value}")
    return out


def _refuse_repeats(overrides: Sequence[str]) -> None:
    """One value per knob: a knob given twice (in ``set`` and as ``set=KNOB``, or twice in
    ``set``) would honour only the last."""
    seen: set[str] = set()
    for item in overrides:
        knob = item.partition("=")[0].strip()
        if knob in seen:
            raise ValueError(f"capicua: set: knob {knob!r} is given more than once")
        seen.add(knob)


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
        try:
            given = overrides_of(str(params.get("set", "")))
            overrides = given + _knob_overrides(params)
            _refuse_repeats(overrides)
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
        # A chance node's outcomes as its states hand them out, made once per game instead
        # of at every node: deal_odds[k][tile] is (tile, 1/k) when k tiles are left to deal;
        # an opening seat is a random side, then a random seat of it.
        self.deal_odds: list[list[tuple[int, float]]] = [
            [(t, 1.0 / k) for t in range(self.tiles)] if k else []
            for k in range(len(self.deck) + 1)
        ]
        sides = self.engine.side_seats
        opener_odds = {s: 1.0 / len(sides) / len(seats) for seats in sides for s in seats}
        self.opener_odds: tuple[tuple[int, float], ...] = tuple(sorted(opener_odds.items()))
        self._initial: _Core | None = None
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

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        # pyspiel pickles a game as its C++ part only (a Python subclass comes back without
        # its attributes): load it again from its string instead
        return _load, (str(self),)

    def new_initial_state(self) -> CapicuaState:
        return CapicuaState(self)

    def initial_core(self) -> _Core:
        """A new match's core (dealing its first tile), copied from one made once: pyspiel
        makes a new initial state for every clone too, and making one runs the engine up to
        its first deal."""
        if self._initial is None:  # (two threads may both make it: either will do)
            self._initial = _Core.start(self)
        return self._initial.copy()

    def make_py_observer(
        self, iig_obs_type: Any = None, params: Mapping[str, Any] | None = None
    ) -> CapicuaObserver:
        if params:
            raise ValueError(f"capicua: observation parameters are not supported: {params}")
        obs_type = iig_obs_type or pyspiel.IIGObservationType(perfect_recall=False)
        return CapicuaObserver(self, perfect_recall=bool(obs_type.perfect_recall))


@lru_cache(maxsize=32)
def _load(text: str) -> CapicuaGame:
    """The game of a game string, loaded once (unpickled states share it)."""
    game: CapicuaGame = pyspiel.load_game(text)
    return game


class _Chance:
    """A state's chance outcomes so far, handed to the engine in place of its seeded
    shuffle and opener draw; asking for one not drawn yet raises :class:`NeedChance`."""

    def __init__(self, game: CapicuaGame) -> None:
        self.game = game
        self.deals: dict[tuple[int, int], list[int]] = {}  # (hand, attempt) -> tile indices
        self.openers: dict[int, int] = {}  # hand -> seat

    def copy(self, dealing: tuple[int, int] | None) -> _Chance:
        """An independent copy; ``dealing``: the deal being dealt, the one list of outcomes
        that grows (a finished deal never changes again, so copies share it)."""
        other = _Chance(self.game)
        other.deals = dict(self.deals)
        if dealing in other.deals:
            other.deals[dealing] = list(other.deals[dealing])
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
    hand: int  # the view's hand and finished hands: how the hand was opened (a later
    results: tuple[HandResult, ...]  # hand's opening says other things than a first's)

    def start(self, core: _Core, auto_forced: bool) -> MatchState:
        engine = core.game.engine
        rules = engine.ruleset
        dealt = core.chance.deal(0, 0)  # (raises NeedChance until it is dealt)
        n = rules.hand_size
        return engine.new_position(
            seed=0,
            hand=0,
            scores=self.scores,
            hands=[dealt[s * n : (s + 1) * n] for s in range(rules.seats)],
            stock=dealt[rules.seats * n :],
            ends=None,
            turn=self.offered,
            can_defer=self.can_defer,
            auto_forced=auto_forced,
            dealer=core.chance.deal,
            chance_opener=core.chance.opener,
            as_dealt=True,
            begin=False,
        )


class _Core:
    """What a state is, kept in one attribute: OpenSpiel clones a Python state by deep-copying
    its attributes, and this copies cheaply (the game shared, the engine's match cloned).

    ``match`` is the engine at the last complete position; at a chance node it is the
    position before the decision that needs the outcome (``pending``, applied again once
    the outcomes are drawn), or None while the first hand is dealt. ``shown`` is then the
    match as far as the engine got before asking (the hand just finished with its result,
    or the REDEAL): what the players' views show there. ``actions`` are every action
    applied since the start (or since ``position``): what a pickled state keeps.

    Kept because every step asks for them (pyspiel's calls and OpenSpiel's algorithms):
    ``player``, OpenSpiel's current player; ``undealt``, the tiles the deal being dealt
    has not dealt yet (None: not worked out yet for this deal). And, so that a
    decision need not copy the match before it in case it ends the hand (most do not),
    ``anchor``, a match never changed again (shared by copies; None: the match's start,
    as :meth:`new_match` makes it and :meth:`MatchState.begin` deals it) and ``since``,
    the engine codes decided after it: ``match`` is ``anchor`` with ``since`` applied, and
    so is the match before a decision that stops for chance."""

    def __init__(self, game: CapicuaGame, chance: _Chance) -> None:
        self.game = game
        self.chance = chance
        self.need: NeedChance | None = None  # the chance node we are at, if any
        self.pending: int | None = None  # the decision waiting for it
        self.match: MatchState | None = None
        self.shown: MatchState | None = None  # read only: shared by copies
        self.position: _Position | None = None  # a state rebuilt from a view starts there
        self.actions: list[int] = []
        self.worlds: dict[int, _Worlds] = {}  # per player, for resampling this state
        self.player = _CHANCE
        self.undealt: list[int] | None = None
        self.anchor: MatchState | None = None
        self.since: list[int] = []

    @classmethod
    def start(cls, game: CapicuaGame, position: _Position | None = None) -> _Core:
        core = cls(game, _Chance(game))
        core.position = position
        core._resume()
        return core

    def copy(self) -> _Core:
        """An independent copy (what a state's clone holds): the match cloned, its chance
        hooks this copy's."""
        need = self.need
        dealing = (need.hand, need.attempt) if need is not None and need.kind == "deal" else None
        other = _Core(self.game, self.chance.copy(dealing))
        other.need, other.pending, other.position = need, self.pending, self.position
        other.shown, other.actions = self.shown, list(self.actions)
        other.player, other.anchor, other.since = self.player, self.anchor, list(self.since)
        if self.undealt is not None:
            other.undealt = list(self.undealt)
        if self.match is not None:
            other.match = self.match.clone(dealer=other.chance.deal, opener=other.chance.opener)
        return other

    def __deepcopy__(self, memo: dict[int, Any]) -> _Core:
        return self.copy()

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return _Core.replayed, (str(self.game), self.position, tuple(self.actions))

    @classmethod
    def replayed(cls, game_text: str, position: _Position | None, actions: Sequence[int]) -> _Core:
        """The core of a game string's state after ``actions`` (from ``position``)."""
        core = cls.start(_load(game_text), position)
        for action in actions:
            core.apply(action)
        return core

    def apply(self, action: int) -> None:
        if self.worlds:
            self.worlds = {}
        if self.need is not None:
            self.chance_outcome(action)
        else:
            self.decide(engine_code(action, self.game.tiles))
        self.actions.append(action)

    def _settle(self) -> None:
        """Work out ``player`` again, after the engine moved (a decision, or a chance node
        left): a deal's outcomes before its last change nothing but the deal."""
        match = self.match
        if self.need is not None:
            self.player = _CHANCE
        else:
            assert match is not None
            seat = match.current_seat
            self.player = _TERMINAL if seat is None else seat

    def decide(self, code: int) -> None:
        match = self.match
        assert match is not None and self.need is None
        try:
            match.apply(code)
        except NeedChance as need:  # a new deal: the engine stopped half-way, go back
            before = self._before_decision()
            self.need, self.pending, self.shown, self.match = need, code, match, before
            self.undealt = None
        else:
            self.since.append(code)
        self._settle()

    def _before_decision(self) -> MatchState:
        """The match before the decision being applied: ``anchor`` with ``since`` applied
        again (the engine is deterministic, and the chance outcomes are drawn)."""
        if self.anchor is None:
            match = self.new_match()
            match.begin()
        else:
            match = self.anchor.clone(dealer=self.chance.deal, opener=self.chance.opener)
        for code in self.since:
            match.apply(code)
        return match

    def chance_outcome(self, outcome: int) -> None:
        need = self.need
        assert need is not None
        if need.kind == "deal":
            undealt = self.undealt
            if undealt is None:
                undealt = self._undealt(need)
            try:
                undealt.remove(outcome)
            except ValueError:
                raise ValueError(
                    f"capicua: {outcome} is not a chance outcome of this deal"
                ) from None
            self.chance.deals.setdefault((need.hand, need.attempt), []).append(outcome)
            if undealt:
                return
        else:
            self.chance.openers[need.hand] = outcome
        self._resume()

    def _undealt(self, need: NeedChance) -> list[int]:
        """The tiles deal ``need`` has not dealt yet, in order, worked out and kept as
        ``undealt`` (read from there while it is not None)."""
        dealt = set(self.chance.deals.get((need.hand, need.attempt), ()))
        undealt = self.undealt = [t for t in sorted(self.game.deck) if t not in dealt]
        return undealt

    def new_match(self, auto_forced: bool | None = None) -> MatchState:
        """The match's start before its first deal (:meth:`MatchState.begin` deals it), or
        (a state rebuilt from a view) the position its hand started from, not yet run."""
        g = self.game
        auto = not g.ask_forced if auto_forced is None else auto_forced
        if self.position is None:
            return g.engine.new_match(
                0, auto_forced=auto, dealer=self.chance.deal, opener=self.chance.opener,
                begin=False,
            )  # fmt: skip
        return self.position.start(self, auto)

    def _resume(self) -> None:
        """Go on from the chance node: the first hand, or the pending decision again, now
        that its outcomes are drawn (it may need another: an opener after a deal)."""
        match: MatchState | None = None
        before = self.match
        try:
            if before is None:
                match = self.new_match()
                match.begin()
            else:
                assert self.pending is not None
                match = before.clone()
                match.apply(self.pending)
        except NeedChance as need:  # the engine stopped where it asked: shown as it is
            self.need, self.shown, self.undealt = need, match, None
            return
        # the match before the decision, left as it was, is where ``match`` comes from
        self.anchor, self.since = before, [] if self.pending is None else [self.pending]
        self.need, self.pending, self.shown, self.match = None, None, None, match
        self._settle()

    def chance_outcomes(self) -> list[tuple[int, float]]:
        need = self.need
        assert need is not None
        if need.kind == "deal":
            undealt = self.undealt
            if undealt is None:
                undealt = self._undealt(need)
            odds = self.game.deal_odds[len(undealt)]
            return [odds[t] for t in undealt]
        return list(self.game.opener_odds)

    def legal_ids(self) -> list[int]:
        """The current seat's legal actions as OpenSpiel numbers them, in order."""
        match = self.match
        assert match is not None
        codes = match.legal_actions()
        ids = sorted(codes)
        if ids and ids[0] < 0:  # DEFER, REDEAL or KEEP (negative codes): numbered after plays
            tiles = self.game.tiles
            ids = sorted(action_id(code, tiles) for code in codes)
        return ids

    def deal_in_progress(self, player: int) -> DealInProgress:
        """The chance node as ``player`` may know it."""
        need = self.need
        assert need is not None
        engine = self.game.engine
        order = self.chance.deals.get((need.hand, need.attempt), [])
        if need.kind == "opener":
            order = self.chance.deals[(need.hand, need.attempt)]
        n = engine.ruleset.hand_size
        if self.shown is not None:
            scores = tuple(self.shown.scores)
        elif self.position is not None:
            scores = self.position.scores
        else:
            scores = (0,) * engine.num_sides
        return DealInProgress(
            kind=need.kind,
            hand=need.hand,
            attempt=need.attempt,
            dealt=len(order),
            size=len(self.game.deck),
            mine=tuple(order[player * n : (player + 1) * n]),
            scores=scores,
        )


class CapicuaState(pyspiel.State):  # type: ignore[misc]
    """A capicua match in progress as an OpenSpiel state (see the module doc)."""

    def __init__(self, game: CapicuaGame) -> None:
        super().__init__(game)
        self._core = game.initial_core()

    @property
    def match(self) -> MatchState | None:
        """The engine's match at the last complete position (None before the first deal)."""
        return self._core.match

    # current_player, is_terminal, is_chance_node and legal_actions are what an algorithm
    # asks at every step: each answers from what the state keeps. The last two are
    # pyspiel's own methods answered here in Python as pyspiel's C++ would answer them
    # (which asks current_player and is_terminal through C++ up to four times a call);
    # pyspiel's C++ code still calls its own, which ask the methods below.

    def current_player(self) -> int:
        return self._core.player

    def is_chance_node(self) -> bool:
        return self._core.player == _CHANCE

    def legal_actions(self, player: int | None = None) -> list[int]:
        core = self._core
        current = core.player
        if current >= 0 and (player is None or player == current):
            return core.legal_ids()
        if current == _CHANCE:  # (for any player, as pyspiel's)
            return [outcome for outcome, _ in core.chance_outcomes()]
        if current == _TERMINAL or (player is not None and player >= 0):
            return []
        return list(super().legal_actions(player))  # pyspiel's error for a pseudo-player

    def _legal_actions(self, player: int) -> list[int]:
        core = self._core
        return core.legal_ids() if player == core.player else []

    def chance_outcomes(self) -> list[tuple[int, float]]:
        return self._core.chance_outcomes()

    def _apply_action(self, action: int) -> None:
        self._core.apply(action)

    def _action_to_string(self, player: int, action: int) -> str:
        game = self._core.game
        if player == pyspiel.PlayerId.CHANCE:
            need = self._core.need
            if need is not None and need.kind == "opener":
                return f"opener:seat{action}"
            return f"deal:{game.engine.table.tiles[action]}"
        return str(Action.from_code(engine_code(action, game.tiles), game.engine.table))

    def is_terminal(self) -> bool:
        return self._core.player == _TERMINAL

    def returns(self) -> list[float]:
        match = self._core.match
        if match is None or not self.is_terminal():
            return [0.0] * self._core.game.engine.ruleset.seats
        return list(match.returns())

    def resample_from_infostate(self, player_id: int, probability_sampler: Any) -> CapicuaState:
        """A state ``player_id`` cannot tell from this one, every deal drawn anew among
        those it allows (:func:`resample`), for IS-MCTS. ``probability_sampler``
        (OpenSpiel's) seeds the draw."""
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
    and string of the engine's match, and at a chance node of the deal so far after
    everything before it (:class:`DealInProgress`)."""

    def __init__(self, game: CapicuaGame, *, perfect_recall: bool) -> None:
        self.encoder = SeatEncoder(game.engine, perfect_recall=perfect_recall)
        self.tensor = self.encoder.tensor
        self.dict = self.encoder.dict

    def set_from(self, state: CapicuaState, player: int) -> None:
        core = state._core
        if core.need is None:
            self.encoder.fill(core.match, player)
        else:
            self.encoder.fill_chance(core.shown, player, core.deal_in_progress(player))

    def string_from(self, state: CapicuaState, player: int) -> str:
        core = state._core
        if core.need is None:
            return self.encoder.text(core.match, player)
        return self.encoder.chance_text(core.shown, player, core.deal_in_progress(player))


# -- resampling for IS-MCTS -------------------------------------------------------------------


class WorldMismatch(RuntimeError):
    """A drawn world did not play again to the player's view: a bug, never a retry."""


@dataclass
class _Worlds:
    """What resampling a state for one player needs, built once per state: a sampler per
    deal of the match, the openers drawn (public), each hand's events as it saw them."""

    deals: list[tuple[tuple[int, int], DealSampler]]
    seen: list[list[Seen]]


def resample(state: CapicuaState, player: int, rng: random.Random) -> CapicuaState:
    """A state ``player`` cannot tell from ``state``: every deal of the match drawn anew,
    uniformly among those consistent with everything ``player`` saw
    (:class:`~capicua.integrations.worlds.DealSampler`, no rejection), and played again
    with the decisions it saw (another seat's hidden redeal offer in the world is answered
    KEEP: a REDEAL would have been seen). The new state is reached by its own actions: its
    ``history()`` and ``serialize()`` describe the drawn world, never the true one."""
    core = state._core
    match = core.match
    if match is None or core.need is not None or match.is_terminal():
        raise ValueError("capicua: resample_from_infostate needs a player's decision")
    if match.phase is Phase.REDEAL and match.current_seat != player:
        raise ValueError(
            f"capicua: resample_from_infostate: seat {player} cannot see the redeal offer "
            "being answered"
        )
    worlds = core.worlds.get(player)
    if worlds is None:
        worlds = core.worlds[player] = _worlds_of(core, match, player)
    deals = {key: sampler.sample(rng) for key, sampler in worlds.deals}
    target = match.current_seat
    assert target is not None
    world = _play_world(
        core.game, core.position, deals, core.chance.openers, worlds.seen, player, target
    )
    after = world._core.match
    assert after is not None
    if after.log.results() != match.log.results() or after.scores != match.scores:
        raise WorldMismatch("capicua: a drawn world ended a hand otherwise")
    return world


def _worlds_of(core: _Core, match: MatchState, player: int) -> _Worlds:
    engine = core.game.engine
    n = engine.ruleset.hand_size
    deals: list[tuple[tuple[int, int], DealSampler]] = []
    seen: list[list[Seen]] = []
    for log in match.log.hands:
        events = _seen_in(log, player)
        seen.append(events)
        method = _opening_of(core.game.engine.ruleset, _previous(core, match, log.hand))
        result = log.result
        parts = _by_deal(events, len(log.deals))
        for (attempt, order), (part, redealer) in zip(log.deals, parts, strict=True):
            final = deciding = None
            if attempt == log.deals[-1][0] and result is not None:
                final = tuple(engine.table.mask_of(h) for h in result.remaining)
            elif attempt == log.deals[-1][0]:
                deciding = match.current_seat  # being asked says what it can play
            view = DealView(
                seat=player,
                mine=tuple(b.bit_length() - 1 for b in order[player * n : (player + 1) * n]),
                events=tuple(part),
                offered=log.offered[attempt],
                method=method,
                redealt_by=redealer,
                final=final,
                deciding=deciding,
                choices=1 if core.game.ask_forced else 2,
            )
            deals.append(((log.hand, attempt), DealSampler(engine, view)))
    return _Worlds(deals, seen)


def _seen_in(log: HandLog, player: int) -> list[Seen]:
    """A hand's raw events as ``player`` saw them."""
    out = []
    for raw in log.events:
        seen = raw_event_for_seat(raw, player)
        if seen is not None:
            out.append(seen)
    return out


def _by_deal(events: Sequence[Seen], deals: int) -> list[tuple[list[Seen], int | None]]:
    """A hand's events split by deal (a REDEAL ends the first), each with the seat that
    asked for the redeal that ended it."""
    if deals == 1:
        return [(list(events), None)]
    at = next(i for i, e in enumerate(events) if e[0] == EV_REDEAL)
    return [(list(events[: at + 1]), events[at][1]), (list(events[at + 1 :]), None)]


def _previous(core: _Core, match: MatchState, hand: int) -> HandResult | None:
    """The result of the hand before ``hand`` (a state rebuilt from a view: before the
    view's own hand, not the rebuilt match's hand 0)."""
    position = core.position
    if hand > 0:
        return match.log.hands[hand - 1].result
    if position is not None and 0 < position.hand <= len(position.results):
        return position.results[position.hand - 1]
    return None


def _opening_of(rules: Ruleset, previous: HandResult | None) -> OpeningMethod:
    """How a hand after ``previous`` (None: the first) is opened: the engine's rule."""
    return opening_method(rules, None if previous is None else (previous.end, previous.winner))


def _play_world(
    game: CapicuaGame,
    position: _Position | None,
    deals: Mapping[tuple[int, int], Sequence[int]],
    openers: Mapping[int, int],
    seen: Sequence[Sequence[Seen]],
    player: int,
    target: int,
) -> CapicuaState:
    """The state dealt ``deals`` (openers as ``openers``) and played with the decisions of
    ``seen`` (each hand's events as ``player`` saw them) up to the decision of ``target``
    after the last of them, by applying its actions. Raises :class:`WorldMismatch` when the
    world cannot lead there."""
    state = CapicuaState(game)
    core = state._core
    if position is not None:
        core.position = position
    produced = _Produced(seen, player)
    while True:
        need = core.need
        if need is not None:
            state.apply_action(_outcome(core, need, deals, openers))
            continue
        match = core.match
        assert match is not None
        code = produced.next_decision(match, target)
        if code is None:
            return state
        if code not in match.legal_actions():
            raise WorldMismatch("capicua: a drawn world cannot make a decision the player saw")
        state.apply_action(action_id(code, game.tiles))


def _outcome(
    core: _Core,
    need: NeedChance,
    deals: Mapping[tuple[int, int], Sequence[int]],
    openers: Mapping[int, int],
) -> int:
    """The world's outcome at chance node ``need``."""
    try:
        if need.kind == "deal":
            dealt = len(core.chance.deals.get((need.hand, need.attempt), ()))
            return deals[need.hand, need.attempt][dealt]
        return openers[need.hand]
    except KeyError:  # a deal or a draw the player never saw
        raise WorldMismatch("capicua: a drawn world ended a hand the player saw go on") from None


class _Produced:
    """How far a world being played again got in the events one player saw, and the
    decision that comes next."""

    def __init__(self, seen: Sequence[Sequence[Seen]], player: int) -> None:
        self.seen, self.player = seen, player
        self.player_view: list[list[Seen]] = [[] for _ in seen]
        self.scanned = [0] * len(seen)

    def next_decision(self, match: MatchState, target: int) -> int | None:
        """The engine code of the next decision, None once at ``target``'s decision."""
        hand = match.hand
        if match.is_terminal() or hand >= len(self.seen):
            raise WorldMismatch("capicua: a drawn world ended before the player's decision")
        self._catch_up(match)
        want, got = self.seen[hand], self.player_view[hand]
        if got != want[: len(got)] or any(self.player_view[h] != self.seen[h] for h in range(hand)):
            raise WorldMismatch("capicua: a drawn world showed the player something else")
        seat = match.current_seat
        if len(got) == len(want):
            if hand != len(self.seen) - 1:
                raise WorldMismatch("capicua: a drawn world asks for a decision never seen")
            if match.phase is Phase.REDEAL and seat != target:
                return KEEP  # another seat's hidden offer in this world
            if seat != target:
                raise WorldMismatch("capicua: a drawn world has another seat to act")
            return None
        kind, who, tile, end = want[len(got)]
        if match.phase is Phase.REDEAL:
            if who == seat and kind == EV_REDEAL:
                return REDEAL
            return KEEP  # the seat's own answer, or a hidden offer in this world
        if who != seat or kind not in (EV_PLAY, EV_DEFER):
            raise WorldMismatch("capicua: a drawn world has another seat to act")
        return tile * 2 + end if kind == EV_PLAY else DEFER

    def _catch_up(self, match: MatchState) -> None:
        """Add the events the engine applied since the last look, as the player sees them:
        ``player_view`` of every hand so far."""
        for hand in range(match.log.hands_dealt):
            raw = match.log.raw_events(hand)
            for event in raw[self.scanned[hand] :]:
                shown = raw_event_for_seat(event, self.player)
                if shown is not None:
                    self.player_view[hand].append(shown)
            self.scanned[hand] = len(raw)


# -- a state from one seat's view (a bot's decision) --------------------------------------


def from_view(
    game: CapicuaGame, obs: Observation, rng: random.Random, *, may_defer: bool = False
) -> CapicuaState:
    """A state at ``obs``'s decision rebuilt from that seat's view alone, for a search bot:
    this hand's deal drawn uniformly among those the view allows (the seat's own tiles as
    dealt; :class:`~capicua.integrations.worlds.DealSampler`), its events played again,
    the view's scores. It begins at that deal (hand 0 of a match starting with those
    scores), so hands after it are dealt by chance nodes and opened by the first hand's
    rules; nothing the seat did not see is in it. The opening is open to any tile;
    ``may_defer``: the rules let this hand's opener defer (DEFER is among the seat's legal
    actions now, or it was played)."""
    seat = obs.seat
    assert seat is not None and obs.to_act == seat, "a seat's view at its own decision"
    index = game.engine.table.index
    # the hand starts at the deal it is played with: a redeal's answers came before
    seen = [_raw(e, index) for e in obs.events if not isinstance(e, RedealChoice)]
    may_defer = may_defer or any(kind == EV_DEFER for kind, *_ in seen)
    previous = obs.results[obs.hand - 1] if 0 < obs.hand <= len(obs.results) else None
    view = DealView(
        seat=seat,
        mine=tuple(iter_bits(own_deal(obs))),
        events=tuple(seen),
        offered=obs.offered,
        method=_opening_of(obs.ruleset, previous),
    )
    order = DealSampler(game.engine, view).sample(rng)
    position = _Position(tuple(obs.scores), obs.offered, may_defer, obs.hand, tuple(obs.results))
    return _play_world(game, position, {(0, 0): order}, {}, [seen], seat, seat)


def _raw(event: Event, index: Mapping[Tile, int]) -> Seen:
    """A typed event as the engine's raw tuple (a hidden draw's tile: -1)."""
    if isinstance(event, Play):
        return (EV_PLAY, event.seat, index[event.tile], int(event.end))
    if isinstance(event, Draw):
        return (EV_DRAW, event.seat, -1 if event.tile is None else index[event.tile], 0)
    if isinstance(event, Pass):
        return (EV_PASS, event.seat, 0, 0)
    if isinstance(event, Defer):
        return (EV_DEFER, event.seat, 0, 0)
    raise ValueError(f"capicua: not an event of a deal in play: {event}")


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
    "NoWorld",
    "WorldMismatch",
    "action_id",
    "engine_code",
    "from_view",
    "overrides_of",
    "resample",
]
