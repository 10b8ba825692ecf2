"""A seat's view as fixed-size tensors and strings, from the engine's per-seat observation
only: what OpenSpiel's observers and the PettingZoo environment hand to a learner. Nothing
here reads another seat's tiles, the stock or a decision hidden from the seat (tests check
it as the server's hidden-information tests do). Also the action ids both frameworks share
and the ``set`` parameter's overrides."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from capicua.bots.inference import infer
from capicua.engine.actions import DEFER, KEEP, REDEAL, Action
from capicua.engine.game import EV_REDEAL, Game, MatchState, Phase
from capicua.engine.observation import Observation, observe, visible_events
from capicua.engine.records import Defer, Draw, Event, Pass, Play, RedealChoice
from capicua.engine.rules import Ruleset, Stock
from capicua.engine.tiles import Tile, TileTable, iter_bits, tile_table

#: The engine's special decisions, in the order their ids follow the plays.
SPECIALS = (DEFER, REDEAL, KEEP)


def overrides_of(text: str) -> list[str]:
    """The knob overrides of the ``set`` parameter: ``target=150;stock=draw`` (or, in an
    OpenSpiel game string, ``target:150;stock:draw``) as ``--set`` items."""
    out = []
    for item in (x.strip() for x in text.split(";")):
        if not item:
            continue
        if "=" not in item:
            knob, colon, value = item.partition(":")
            if not colon:
                raise ValueError(f"capicua: set: expected knob=value (or knob:value), got {item!r}")
            item = f"{knob.strip()}={value.strip()}"
        out.append(item)
    return out


def action_id(code: int, tiles: int) -> int:
    """The OpenSpiel action of engine action ``code`` in a set of ``tiles`` tiles."""
    return code if code >= 0 else 2 * tiles + SPECIALS.index(code)


def engine_code(action: int, tiles: int) -> int:
    """The engine action code of OpenSpiel action ``action`` (inverse of :func:`action_id`)."""
    return action if action < 2 * tiles else SPECIALS[action - 2 * tiles]


def history_lines(
    match: MatchState, seat: int, *, upto: tuple[int, int] | None = None
) -> list[str]:
    """``seat``'s whole history: per hand, its own tiles of every deal and the seat offered
    that deal's opening, the events it saw and, once over, the hand's result. ``upto``
    (hand, attempt): the deal being dealt at a chance node, where the history stops."""
    out = []
    n, tiles = match.rules.hand_size, match.game.table.tiles
    results = {r.hand: r for r in match.log.results()}
    for log in match.log.hands:
        h = log.hand
        if upto is not None and h > upto[0]:
            break
        for attempt, order in log.deals:
            if upto is not None and (h, attempt) >= upto:
                break
            mine = sorted(b.bit_length() - 1 for b in order[seat * n : (seat + 1) * n])
            line = f"h{h}a{attempt} dealt {' '.join(str(tiles[i]) for i in mine)}"
            if attempt < len(log.offered):
                line += f" offered {log.offered[attempt]}"
            out.append(line)
        out.extend(str(e) for e in visible_events(match, seat, h))
        if h in results:
            r = results[h]
            out.append(f"h{h} ended {r.end} winner {r.winner} scores {list(r.scores)}")
    return out


@dataclass(frozen=True)
class DealInProgress:
    """A chance node, as every seat may know it: what is being drawn (``deal``: the tiles
    of a deal, one at a time; ``opener``: the seat that opens), for which hand and deal,
    how many of the set's tiles are dealt so far, the seat's own among them, the scores."""

    kind: str
    hand: int
    attempt: int
    dealt: int
    size: int
    mine: tuple[int, ...]  # tile indices
    scores: tuple[int, ...]

    def text(self, tiles: Sequence[Tile]) -> str:
        mine = " ".join(str(tiles[i]) for i in sorted(self.mine))
        return (
            f"chance: {self.kind} of hand {self.hand} attempt {self.attempt}, dealt "
            f"{self.dealt}/{self.size}, mine {mine}, scores {list(self.scores)}"
        )


def _present(obs: Observation) -> str:
    ends = "-" if obs.ends is None else f"{obs.ends[0]}|{obs.ends[1]}"
    return (
        f"seat {obs.seat} hand {obs.hand} attempt {obs.attempt} {obs.phase.name} "
        f"to_act {obs.to_act} offered {obs.offered} opener {obs.opener} "
        f"tiles {' '.join(str(t) for t in obs.tiles)} ends {ends} "
        f"chain {' '.join(f'{p.left}{p.right}' for p in obs.chain)} "
        f"counts {list(obs.tile_counts)} stock {obs.stock_count} scores {list(obs.scores)}"
    )


def match_text(match: MatchState) -> str:
    """The whole position, every seat's tiles shown (for people debugging, never a
    player's view): OpenSpiel's ``str(state)``, PettingZoo's ``render()``."""
    hands = "; ".join(
        f"seat {s}: {' '.join(str(t) for t in match.hand_of(s))}" for s in range(match.rules.seats)
    )
    return f"hand {match.hand}, scores {list(match.scores)}, ends {match.ends}; {hands}"


#: The events a seat sees, in the order of the one-hot kind of a ``history`` row.
EVENT_KINDS = (Play, Pass, Draw, Defer, RedealChoice)


def max_events(rules: Ruleset, deck: int) -> int:
    """The most events one hand can show a seat: every tile played (those dealt, and the
    stock's when it is drawn from), each play followed by at most one pass of every other
    seat (a round of passes with nobody able to play is a block), every stock tile drawn, a
    defer, and a REDEAL with the seat's own KEEP before it."""
    drawing = rules.stock is Stock.DRAW
    plays = deck if drawing else rules.seats * rules.hand_size
    return plays * rules.seats + (rules.stock_size if drawing else 0) + 3


class SeatEncoder:
    """A seat's view of a match as one flat float32 tensor (with named, shaped views of its
    pieces in ``dict``) and as a string. ``perfect_recall``: the information state (the
    string with the seat's whole history; the tensor with this hand's whole history: its
    own tiles of each deal, who was offered each opening and every event it saw, in
    order) rather than the observation (the present only)."""

    def __init__(self, engine: Game, *, perfect_recall: bool) -> None:
        self.perfect_recall = perfect_recall
        self.table = engine.table
        rules = engine.ruleset
        t, seats, pips = len(engine.table.tiles), rules.seats, rules.max_pip + 1
        # a history row: the kind (one-hot; a REDEAL and a KEEP share RedealChoice's and
        # differ in the answer column), the seat (one-hot), the tile's halves plus one
        # (0: no tile, or one the seat may not see), the end, the redeal answer
        self.row = len(EVENT_KINDS) + seats + 4
        pieces: list[tuple[str, tuple[int, ...]]] = [
            ("player", (seats,)),
            ("tiles", (t,)),  # the player's tiles (at a chance node: of the deal so far)
            ("chain", (t,)),  # tiles on the table
            ("left_end", (pips + 1,)),  # the pip, or the last slot: no tile yet
            ("right_end", (pips + 1,)),
            ("tile_counts", (seats,)),
            ("stock_count", (1,)),
            ("scores", (engine.num_sides,)),
            ("to_act", (seats,)),  # as the player may know it
            ("redeal_offer", (1,)),  # the player is asked a redeal
            ("chance", (3,)),  # a chance node: dealing, drawing the opener, share dealt
        ]
        if perfect_recall:
            pieces += [
                ("played", (seats, t)),  # this hand's tiles each seat played
                ("void", (seats, pips)),  # suits each seat showed it lacks (passes, draws)
                ("drawn", (seats,)),  # tiles each seat drew this hand
                ("hand_index", (1,)),
                ("dealt", (2, t)),  # the player's tiles of the deal, and of a redeal
                ("offered", (2, seats)),  # the seat offered each deal's opening
                ("history", (max_events(rules, len(engine.deck)), self.row)),
            ]
        size = sum(int(np.prod(shape)) for _, shape in pieces)
        self.tensor = np.zeros(size, np.float32)
        self.dict: dict[str, np.ndarray[Any, Any]] = {}
        at = 0
        for name, shape in pieces:
            n = int(np.prod(shape))
            self.dict[name] = self.tensor[at : at + n].reshape(shape)
            at += n

    def fill(self, match: MatchState | None, player: int) -> np.ndarray[Any, Any]:
        """Set :attr:`tensor` to ``player``'s view of ``match`` (None: nothing dealt yet,
        only the player is set) and return it."""
        if match is None:
            self.tensor.fill(0)
            self.dict["player"][player] = 1
            return self.tensor
        self.fill_view(observe(match, player))
        if self.perfect_recall:
            self._fill_redealt(match, player, match.hand)
        return self.tensor

    def fill_view(self, obs: Observation) -> np.ndarray[Any, Any]:
        """Set :attr:`tensor` from a seat's observation alone (what a bot is given: the
        SDK's ``choose(observation, legal_actions)``) and return it: a policy trained on
        these tensors plays from the same numbers in a tournament. A view holds the deal
        being played only: after a redeal, the seat's tiles of the first deal and who was
        offered its opening (in :meth:`fill`'s tensor) are left at 0."""
        assert obs.seat is not None, "a seat's view, not a spectator's"
        self.tensor.fill(0)
        d = self.dict
        d["player"][obs.seat] = 1
        table = tile_table(obs.ruleset.max_pip)
        for tile in obs.tiles:
            d["tiles"][table.index[tile]] = 1
        for placed in obs.chain:
            d["chain"][table.index[placed.tile]] = 1
        last = d["left_end"].shape[0] - 1
        left, right = obs.ends if obs.ends is not None else (last, last)
        d["left_end"][left] = 1
        d["right_end"][right] = 1
        d["tile_counts"][:] = obs.tile_counts
        d["stock_count"][0] = obs.stock_count
        d["scores"][:] = obs.scores
        if obs.to_act is not None:
            d["to_act"][obs.to_act] = 1
        d["redeal_offer"][0] = float(obs.phase is Phase.REDEAL)
        if self.perfect_recall:
            self._fill_history(obs, table)
        return self.tensor

    def fill_chance(self, shown: MatchState | None, player: int, node: DealInProgress) -> None:
        """Set :attr:`tensor` to ``player``'s view at a chance node: the deal so far (its
        own tiles of it), the scores as the last hand left them and, while a redeal is
        dealt, the first deal of the hand (``shown``: the match up to the node, None
        before the first hand)."""
        self.tensor.fill(0)
        d = self.dict
        d["player"][player] = 1
        d["scores"][:] = node.scores
        d["chance"][:] = (node.kind == "deal", node.kind == "opener", node.dealt / node.size)
        for tile in node.mine:
            d["tiles"][tile] = 1
        if not self.perfect_recall:
            return
        d["hand_index"][0] = node.hand
        d["dealt"][min(node.attempt, 1)][list(node.mine)] = 1
        if shown is not None and shown.log.hands_dealt > node.hand:
            self._fill_rows(visible_events(shown, player, node.hand))
            self._fill_redealt(shown, player, node.hand)

    def _fill_history(self, obs: Observation, table: TileTable) -> None:
        d = self.dict
        d["hand_index"][0] = obs.hand
        seat = obs.seat
        assert seat is not None
        for event in _this_deal(obs.events):
            if isinstance(event, Play):
                d["played"][event.seat, table.index[event.tile]] = 1
            elif isinstance(event, Draw):
                d["drawn"][event.seat] += 1
        attempt = min(obs.attempt, 1)
        for tile in iter_bits(own_deal(obs)):
            d["dealt"][attempt, tile] = 1
        d["offered"][attempt, obs.offered] = 1
        self._fill_rows(obs.events)
        knowledge = infer(obs)
        for other in range(obs.ruleset.seats):
            if other != seat:
                voids = knowledge.void_suits(other)
                for pip in range(d["void"].shape[1]):
                    d["void"][other, pip] = voids >> pip & 1

    def _fill_rows(self, events: Sequence[Event]) -> None:
        """One ``history`` row per event, in order."""
        rows = self.dict["history"]
        if len(events) > rows.shape[0]:
            raise AssertionError(f"capicua: {len(events)} events, more than max_events")
        kinds, seats = len(EVENT_KINDS), len(self.dict["player"])
        for row, event in zip(rows, events, strict=False):
            row[EVENT_KINDS.index(type(event))] = 1
            row[kinds + event.seat] = 1
            tile = getattr(event, "tile", None)
            if tile is not None:
                row[kinds + seats] = tile.low + 1
                row[kinds + seats + 1] = tile.high + 1
            if isinstance(event, Play):
                row[kinds + seats + 2] = int(event.end)
            elif isinstance(event, RedealChoice):
                row[kinds + seats + 3] = 1 if event.redeal else 0

    def _fill_redealt(self, match: MatchState, player: int, hand: int) -> None:
        """The first deal of ``hand`` when it was redealt: ``player``'s tiles of it and the
        seat offered its opening, which a view no longer holds."""
        log = match.log.hands[hand]
        if not any(kind == EV_REDEAL for kind, *_ in log.events):
            return
        n = match.rules.hand_size
        _attempt, order = log.deals[0]
        for bit in order[player * n : (player + 1) * n]:
            self.dict["dealt"][0, bit.bit_length() - 1] = 1
        self.dict["offered"][0, log.offered[0]] = 1

    def text(self, match: MatchState | None, player: int) -> str:
        """``player``'s view of ``match`` as a string (None: nothing dealt yet)."""
        if match is None:
            return "dealing the first hand"
        head = _present(observe(match, player, events=False))
        if not self.perfect_recall:
            return head
        return " | ".join([*history_lines(match, player), head])

    def chance_text(self, shown: MatchState | None, player: int, node: DealInProgress) -> str:
        """``player``'s view at a chance node as a string (see :meth:`fill_chance`)."""
        head = node.text(self.table.tiles)
        if not self.perfect_recall or shown is None:
            return head
        upto = (node.hand, node.attempt)
        return " | ".join([*history_lines(shown, player, upto=upto), head])


def own_deal(obs: Observation) -> int:
    """The tiles (mask) a seat was dealt in the deal being played, from its view: those it
    holds and has played, less those it drew."""
    assert obs.seat is not None
    table = tile_table(obs.ruleset.max_pip)
    dealt, drawn = table.mask_of(obs.tiles), 0
    for event in _this_deal(obs.events):
        if isinstance(event, Play) and event.seat == obs.seat:
            dealt |= 1 << table.index[event.tile]
        elif isinstance(event, Draw) and event.seat == obs.seat and event.tile is not None:
            drawn |= 1 << table.index[event.tile]
    return dealt & ~drawn


def _this_deal(events: Sequence[Event]) -> Sequence[Event]:
    """The events of the deal being played: those after a REDEAL, if any."""
    for i in range(len(events) - 1, -1, -1):
        event = events[i]
        if isinstance(event, RedealChoice) and event.redeal:
            return events[i + 1 :]
    return events


def legal_ids(legal_actions: Sequence[Action], ruleset: Ruleset) -> list[int]:
    """The action ids (as OpenSpiel and PettingZoo number them) of a bot's legal actions,
    in their order: what a trained policy's output is matched against in a tournament."""
    table = tile_table(ruleset.max_pip)
    return [action_id(a.code(table), len(table.tiles)) for a in legal_actions]
