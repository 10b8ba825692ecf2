"""From the wire to the engine and back: a seat's ``View`` as the engine's
:class:`~capicua.engine.observation.Observation`, ``LegalAction`` as
:class:`~capicua.engine.actions.Action`, and an action back to its id.

This is the reverse of the server's ``capicua.wire.views``: a bot written with the SDK sees
exactly the values an in-process bot sees (``capicua play``), so the same bot class plays
in both. Rulesets, events, hand results and outcomes go through
:mod:`capicua.wire.codec`; a malformed message raises :class:`~capicua.wire.codec.WireError`
(or :class:`~capicua.engine.rules.RulesError` for a ruleset) naming the field.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf import json_format

from capicua.engine.actions import Action, ActionKind, InvalidActionError
from capicua.engine.observation import Observation, PlacedTile
from capicua.engine.records import Event, HandResult
from capicua.engine.rules import Ruleset
from capicua.engine.tiles import Tile, TileError
from capicua.v1 import game_pb2, play_pb2, rules_pb2, view_pb2
from capicua.wire import codec
from capicua.wire.codec import WireError

__all__ = [
    "Known",
    "SeatView",
    "action_from_legal",
    "action_id",
    "actions_from_legal",
    "legal_action_json",
    "observation_from_view",
    "parse_answer",
    "ruleset_from_view",
    "view_json",
]

# the wire -> engine maps of codec's enum codecs (a missing number is the caller's error)
_PHASE = codec.PHASE.from_wire
_KIND = codec.ACTION_KIND.from_wire
_END = codec.END.from_wire

# A match sends the same ruleset in every view: validate it once (keyed by its bytes).
_RULESETS: OrderedDict[bytes, Ruleset] = OrderedDict()
_RULESET_CACHE = 64


def ruleset_from_view(pb: rules_pb2.Ruleset) -> Ruleset:
    """The engine ruleset of a view's ``ruleset`` (cached: a match repeats it every turn)."""
    key = pb.SerializeToString(deterministic=True)
    found = _RULESETS.get(key)
    if found is not None:
        _RULESETS.move_to_end(key)
        return found
    rules = codec.ruleset_from_proto(pb)
    _RULESETS[key] = rules
    while len(_RULESETS) > _RULESET_CACHE:
        _RULESETS.popitem(last=False)
    return rules


def _tile(text: str, field: str) -> Tile:
    try:
        return Tile.parse(text)
    except TileError as e:
        raise WireError(field, str(e)) from None


@dataclass(frozen=True)
class Known:
    """What a client already holds of a seat's view, as engine values: an observation is
    built from these and the changing part of a view, instead of converting it whole."""

    ruleset: Ruleset
    results: tuple[HandResult, ...]
    events: tuple[Event, ...]


class SeatView:
    """One seat's view as a client keeps it between messages (the Play stream's
    CAPABILITY_INCREMENTAL_DECISIONS): from a full view (MatchStarted, or a request in the
    full form) on, the events of EventBatch and of incremental requests and the results of
    HandEnded are added, each converted once. :meth:`complete` turns an incremental
    request's view into the full one and gives the engine values it holds."""

    def __init__(self, view: view_pb2.View) -> None:
        shared = self.shared = view_pb2.View(players=view.players, results=view.results)
        shared.ruleset.CopyFrom(view.ruleset)  # what an incremental view leaves out
        with codec.within("ruleset"):
            self.ruleset = ruleset_from_view(view.ruleset)
        self.results = list(
            codec.convert_each(view.results, "results", codec.hand_result_from_proto)
        )
        self.hand = view.hand
        self.hand_events: list[game_pb2.Event] = list(view.events)
        self.events = list(codec.convert_each(view.events, "events", codec.event_from_proto))

    def add_events(self, hand: int, events: Sequence[game_pb2.Event]) -> tuple[Event, ...]:
        """Add events of ``hand`` (a later hand starts the list over); returns them as
        engine values."""
        if hand != self.hand:
            self.hand, self.hand_events, self.events = hand, [], []
        new = codec.convert_each(events, "events", codec.event_from_proto)
        self.hand_events.extend(events)
        self.events.extend(new)
        return new

    def add_result(self, result: game_pb2.HandResult) -> None:
        """A hand ended (HandEnded): its result, once."""
        if result.hand == len(self.results):
            with codec.within("result"):
                self.results.append(codec.hand_result_from_proto(result))
            self.shared.results.append(result)

    def complete(self, request: play_pb2.DecisionRequest) -> tuple[Known, tuple[Event, ...]]:
        """Fill an incremental request's view in place with what it leaves out (ruleset,
        players, results, the hand's events), after adding its ``events``; returns what is
        known as engine values, and the request's new events."""
        view = request.view
        new = self.add_events(view.hand, request.events)
        view.MergeFrom(self.shared)
        view.events.extend(self.hand_events)
        return self.known(), new

    def known(self) -> Known:
        """What is held now, as engine values."""
        return Known(self.ruleset, tuple(self.results), tuple(self.events))


def observation_from_view(view: view_pb2.View, known: Known | None = None) -> Observation:
    """The engine observation a seat's ``View`` stands for (the exact reverse of the
    server's view builder: ``observation_from_view(view(observe(state, seat)))`` equals
    ``observe(state, seat)``). ``known``: its ruleset, results and events already
    converted (:class:`SeatView`), so that only the rest is."""
    phase = _PHASE.get(view.phase)
    if phase is None:
        raise WireError("phase", f"{view.phase} is not PHASE_REDEAL, PHASE_PLAY or PHASE_OVER")
    if known is None:
        with codec.within("ruleset"):
            ruleset = ruleset_from_view(view.ruleset)
        known = Known(
            ruleset,
            codec.convert_each(view.results, "results", codec.hand_result_from_proto),
            codec.convert_each(view.events, "events", codec.event_from_proto),
        )
    outcome = None
    if view.HasField("outcome"):
        with codec.within("outcome"):
            outcome = codec.outcome_from_proto(view.outcome)
    return Observation(
        seat=view.seat if view.HasField("seat") else None,
        ruleset=known.ruleset,
        hand=view.hand,
        attempt=view.attempt,
        phase=phase,
        to_act=view.to_act if view.HasField("to_act") else None,
        offered=view.offered,
        opener=view.opener if view.HasField("opener") else None,
        tiles=tuple(_tile(t, f"tiles[{i}]") for i, t in enumerate(view.tiles)),
        chain=tuple(
            PlacedTile(_tile(p.tile, f"chain[{i}].tile"), p.left, p.right, p.spinner)
            for i, p in enumerate(view.chain)
        ),
        ends=(view.ends.left, view.ends.right) if view.HasField("ends") else None,
        tile_counts=tuple(view.tile_counts),
        stock_count=view.stock_count,
        events=known.events,
        scores=tuple(view.scores),
        results=known.results,
        outcome=outcome,
    )


def action_from_legal(pb: view_pb2.LegalAction) -> Action:
    """The engine action of one legal action (raises :class:`WireError` if malformed)."""
    kind = _KIND.get(pb.kind)
    if kind is None:
        raise WireError("kind", f"{pb.kind} is not a known ActionKind")
    if kind is not ActionKind.PLAY:
        return Action(kind)
    end = _END.get(pb.end)
    if end is None:
        raise WireError("end", f"{pb.end} is not END_LEFT or END_RIGHT")
    return Action.play(_tile(pb.tile, "tile"), end)


def actions_from_legal(legal: Sequence[view_pb2.LegalAction]) -> list[Action]:
    """The engine actions of a request's legal actions, in id order (ids are positions)."""
    out = []
    for i, pb in enumerate(legal):
        if pb.id != i:
            raise WireError(f"legal_actions[{i}].id", f"expected {i}, got {pb.id}")
        try:
            out.append(action_from_legal(pb))
        except WireError as e:
            raise e.under(f"legal_actions[{i}]") from None
    return out


def action_id(legal: Sequence[Action], action: Action | str) -> int | None:
    """The id of ``action`` (an Action or its text, e.g. ``"3-6:L"``) among ``legal``, or
    None when it is not one of them. A tile without an end (``"3-6"``) names its play when
    that tile fits only one end."""
    if isinstance(action, str):
        text = action.strip()
        try:
            parsed = Action.parse(text)
        except InvalidActionError:
            return None
        if ":" not in text and parsed.kind is ActionKind.PLAY:
            plays = [i for i, a in enumerate(legal) if a.tile == parsed.tile]
            return plays[0] if len(plays) == 1 else None
        action = parsed
    for i, candidate in enumerate(legal):
        if candidate == action:
            return i
    return None


def parse_answer(legal: Sequence[Action], answer: object) -> int | None:
    """An answer given as an id, an :class:`Action` or action text, as an id to send.

    An ``int`` is returned as is (the server is the judge of ids: one out of range comes back
    as ILLEGAL_ACTION and the request is sent again); an action or text that is not legal
    gives None."""
    if isinstance(answer, bool):
        return None
    if isinstance(answer, int):
        return answer
    if isinstance(answer, Action | str):
        return action_id(legal, answer)
    return None


def view_json(view: view_pb2.View) -> dict[str, object]:
    """The protobuf JSON mapping of a view, with the .proto field names and every field
    (defaults included), as plain JSON values."""
    return json_format.MessageToDict(
        view, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


def legal_action_json(pb: view_pb2.LegalAction) -> dict[str, object]:
    """One legal action for the stdio bridge: ``{id, text, kind, tile, end}`` with ``kind``
    one of play/defer/redeal/keep and, for plays, ``tile`` ("3-6") and ``end``
    ("left"/"right"); both null otherwise."""
    action = action_from_legal(pb)
    return {
        "id": pb.id,
        "text": pb.text or str(action),
        "kind": action.kind.value,
        "tile": str(action.tile) if action.tile is not None else None,
        "end": action.end.name.lower() if action.end is not None else None,
    }
