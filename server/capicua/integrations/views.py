"""A seat's view as fixed-size tensors and strings, from the engine's per-seat observation
only: what OpenSpiel's observers and the PettingZoo environment hand to a learner. Nothing
here reads another seat's tiles, the stock or a decision hidden from the seat (tests check
it as the server's hidden-information tests do). Also the action ids both frameworks share
and the ``set`` parameter's overrides."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from capicua.bots.inference import infer
from capicua.engine.actions import DEFER, KEEP, REDEAL, Action
from capicua.engine.game import Game, MatchState, Phase
from capicua.engine.observation import Observation, observe, visible_events
from capicua.engine.records import Draw, Play
from capicua.engine.rules import Ruleset
from capicua.engine.tiles import TileTable, tile_table

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


def _history(match: MatchState, seat: int) -> list[str]:
    """``seat``'s whole history: per hand, its own dealt tiles (every deal of the hand), the
    events it saw and, once over, the hand's result."""
    out = []
    n, tiles = match.rules.hand_size, match.game.table.tiles
    results = {r.hand: r for r in match.hand_results()}
    for log in match.logs:
        h = log.hand
        for attempt, order in log.deals:
            mine = sorted(b.bit_length() - 1 for b in order[seat * n : (seat + 1) * n])
            out.append(f"h{h}a{attempt} dealt {' '.join(str(tiles[i]) for i in mine)}")
        out.extend(str(e) for e in visible_events(match, seat, h))
        if h in results:
            r = results[h]
            out.append(f"h{h} ended {r.end} winner {r.winner} scores {list(r.scores)}")
    return out


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


class SeatEncoder:
    """A seat's view of a match as one flat float32 tensor (with named, shaped views of its
    pieces in ``dict``) and as a string. ``perfect_recall``: the information state (the
    string with the seat's whole history; the tensor with this hand's plays, draws and
    the suits each seat showed it lacks) rather than the observation (the present only)."""

    def __init__(self, engine: Game, *, perfect_recall: bool) -> None:
        self.perfect_recall = perfect_recall
        rules = engine.ruleset
        t, seats, pips = len(engine.table.tiles), rules.seats, rules.max_pip + 1
        pieces: list[tuple[str, tuple[int, ...]]] = [
            ("player", (seats,)),
            ("tiles", (t,)),  # the player's tiles
            ("chain", (t,)),  # tiles on the table
            ("left_end", (pips + 1,)),  # the pip, or the last slot: no tile yet
            ("right_end", (pips + 1,)),
            ("tile_counts", (seats,)),
            ("stock_count", (1,)),
            ("scores", (engine.num_sides,)),
            ("to_act", (seats,)),  # as the player may know it
            ("redeal_offer", (1,)),  # the player is asked a redeal
        ]
        if perfect_recall:
            pieces += [
                ("played", (seats, t)),  # this hand's tiles each seat played
                ("void", (seats, pips)),  # suits each seat showed it lacks (passes, draws)
                ("drawn", (seats,)),  # tiles each seat drew this hand
                ("hand_index", (1,)),
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
        return self.fill_view(observe(match, player))

    def fill_view(self, obs: Observation) -> np.ndarray[Any, Any]:
        """Set :attr:`tensor` from a seat's observation alone (what a bot is given: the
        SDK's ``choose(observation, legal_actions)``) and return it: a policy trained on
        these tensors plays from the same numbers in a tournament."""
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

    def _fill_history(self, obs: Observation, table: TileTable) -> None:
        d = self.dict
        d["hand_index"][0] = obs.hand
        for event in obs.events:
            if isinstance(event, Play):
                d["played"][event.seat, table.index[event.tile]] = 1
            elif isinstance(event, Draw):
                d["drawn"][event.seat] += 1
        knowledge = infer(obs)
        for seat in range(obs.ruleset.seats):
            if seat != obs.seat:
                voids = knowledge.void_suits(seat)
                for pip in range(d["void"].shape[1]):
                    d["void"][seat, pip] = voids >> pip & 1

    def text(self, match: MatchState | None, player: int) -> str:
        """``player``'s view of ``match`` as a string (None: nothing dealt yet)."""
        if match is None:
            return "dealing the first hand"
        head = _present(observe(match, player, events=False))
        if not self.perfect_recall:
            return head
        return " | ".join([*_history(match, player), head])


def legal_ids(legal_actions: Sequence[Action], ruleset: Ruleset) -> list[int]:
    """The action ids (as OpenSpiel and PettingZoo number them) of a bot's legal actions,
    in their order: what a trained policy's output is matched against in a tournament."""
    table = tile_table(ruleset.max_pip)
    return [action_id(a.code(table), len(table.tiles)) for a in legal_actions]
