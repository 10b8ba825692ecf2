"""The boundary between the engine's plain values and the ``capicua.v1`` protobuf messages.

Every conversion between :mod:`capicua.engine.rules` / :mod:`capicua.engine.records` values
and protobuf lives here, plus replay files:

- ``*_to_proto`` / ``*_from_proto`` for rulesets, events, deals, hand results, outcomes,
  hand records and replays. Tiles travel as their canonical text ``"a-b"``.
- :func:`replay_to_json` / :func:`replay_from_json`: the protobuf JSON mapping on one line,
  with the .proto field names (``max_pip``), so a replay reads like the rules' knobs.
- :func:`write_replay` / :func:`read_replay`: replay files, in either of two forms chosen by
  the name: ``*.json``, the JSON above, or ``*.binpb``, the ``capicua.v1.Replay`` message's
  protobuf bytes (what the server stores and serves: the arena keeps replays so, as it got
  them); gzipped when the name ends in ``.gz``, written atomically.

Reading is strict and every problem is one line naming the field:
:func:`ruleset_from_proto` raises :class:`~capicua.engine.rules.RulesError` (it goes through
:func:`~capicua.engine.rules.ruleset_from_mapping`, so a wire ruleset is validated exactly
like a preset file), the other ``*_from_proto`` raise :class:`WireError`, and everything about
replays raises :class:`ReplayError`.
"""

from __future__ import annotations

import gzip
import json
import os
import stat
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar, assert_never

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import DecodeError

from capicua.common.errors import CapicuaError
from capicua.engine.actions import ActionKind, End
from capicua.engine.game import Phase
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
    Replay,
    Reset,
    Termination,
    ThinkTime,
)
from capicua.engine.rules import (
    BlockOpener,
    BlockTie,
    BlockWinner,
    BonusTest,
    EffectKind,
    FinishBonus,
    FirstOpener,
    NextOpener,
    NoWinnerOpener,
    Points,
    RulesError,
    Ruleset,
    Shutout,
    Sides,
    Stock,
    TurnOrder,
    ruleset_from_mapping,
)
from capicua.engine.tiles import Tile, TileError
from capicua.v1 import game_pb2, match_pb2, replay_pb2, rules_pb2, view_pb2

if TYPE_CHECKING:
    from google.protobuf.internal.enum_type_wrapper import _EnumTypeWrapper

__all__ = [
    "ACTION_KIND",
    "BINARY_SUFFIXES",
    "END",
    "FORMAT_VERSION",
    "JSON_SUFFIXES",
    "PHASE",
    "EnumCodec",
    "ReplayError",
    "WireError",
    "deal_from_proto",
    "deal_to_proto",
    "event_from_proto",
    "event_to_proto",
    "hand_record_from_proto",
    "hand_record_to_proto",
    "hand_result_from_proto",
    "hand_result_to_proto",
    "outcome_from_proto",
    "outcome_to_proto",
    "read_replay",
    "replay_from_json",
    "replay_from_proto",
    "replay_to_json",
    "replay_to_proto",
    "ruleset_from_proto",
    "ruleset_to_proto",
    "write_replay",
]

FORMAT_VERSION = 1
"""The replay format this module writes and the only one it reads."""

BINARY_SUFFIXES = (".binpb", ".binpb.gz")
"""Names of replay files holding the ``capicua.v1.Replay`` message's protobuf bytes (any
other name holds its JSON)."""
JSON_SUFFIXES = (".json", ".json.gz")
"""Names of replay files holding the protobuf JSON mapping."""

_MAX_SEED = 2**64 - 1


class WireError(CapicuaError, ValueError):
    """A protobuf message holds a value the engine cannot take; the message names the field."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.path = path
        self.problem = problem

    def under(self, prefix: str) -> WireError:
        """The same error seen from the message that holds the field at ``prefix``."""
        return WireError(f"{prefix}.{self.path}" if self.path else prefix, self.problem)


class ReplayError(CapicuaError, ValueError):
    """A replay (file, JSON text or message) is unreadable, corrupt or of another format."""


# -- enums ----------------------------------------------------------------------------------

E = TypeVar("E", bound=Enum)
V = TypeVar("V", bound=int)
P = TypeVar("P")
T = TypeVar("T")


class EnumCodec(Generic[E, V]):
    """An engine enum and its protobuf enum, matched by name (``TEAMS`` -> ``SIDES_TEAMS``):
    the one map between them, for the codec, the server's views and the SDK."""

    def __init__(self, engine: type[E], wire: _EnumTypeWrapper[V], prefix: str) -> None:
        self.wire = wire
        self.to_wire: dict[E, V] = {m: wire.Value(f"{prefix}_{m.name}") for m in engine}
        self.from_wire: dict[int, E] = {int(v): m for m, v in self.to_wire.items()}

    def encode(self, member: E) -> V:
        return self.to_wire[member]

    def decode(self, number: int, field: str) -> E:
        """The engine member of ``number``; UNSPECIFIED and unknown numbers are errors."""
        member = self.from_wire.get(number)
        if member is None:
            names = ", ".join(self.wire.Name(v) for v in self.to_wire.values())
            shown = self.wire.Name(number) if number in self.wire.values() else str(number)
            raise WireError(field, f"{shown} is not one of {names}")
        return member

    def knob(self, number: int) -> Any:
        """The knob text of ``number`` for a ruleset mapping; an unknown number stays as is
        (and fails validation with the knob's name)."""
        member = self.from_wire.get(number)
        return member.value if member is not None else number


_SIDES = EnumCodec(Sides, rules_pb2.Sides, "SIDES")
_STOCK = EnumCodec(Stock, rules_pb2.Stock, "STOCK")
_TURN_ORDER = EnumCodec(TurnOrder, rules_pb2.TurnOrder, "TURN_ORDER")
_FIRST_OPENER = EnumCodec(FirstOpener, rules_pb2.FirstOpener, "FIRST_OPENER")
_NEXT_OPENER = EnumCodec(NextOpener, rules_pb2.NextOpener, "NEXT_OPENER")
_NO_WINNER_OPENER = EnumCodec(NoWinnerOpener, rules_pb2.NoWinnerOpener, "NO_WINNER_OPENER")
_BLOCK_OPENER = EnumCodec(BlockOpener, rules_pb2.BlockOpener, "BLOCK_OPENER")
_BLOCK_WINNER = EnumCodec(BlockWinner, rules_pb2.BlockWinner, "BLOCK_WINNER")
_BLOCK_TIE = EnumCodec(BlockTie, rules_pb2.BlockTie, "BLOCK_TIE")
_POINTS = EnumCodec(Points, rules_pb2.Points, "POINTS")
_BONUS_TEST = EnumCodec(BonusTest, rules_pb2.BonusTest, "BONUS_TEST")
_EFFECT_KIND = EnumCodec(EffectKind, rules_pb2.EffectKind, "EFFECT_KIND")
END = EnumCodec(End, game_pb2.End, "END")
PHASE = EnumCodec(Phase, view_pb2.Phase, "PHASE")
ACTION_KIND = EnumCodec(ActionKind, view_pb2.ActionKind, "ACTION_KIND")
_HAND_END = EnumCodec(HandEnd, game_pb2.HandEnd, "HAND_END")
_RESET = EnumCodec(Reset, game_pb2.Reset, "RESET")
_TERMINATION = EnumCodec(Termination, game_pb2.Termination, "TERMINATION")

#: A CPU seat's level on the wire by the built-in bot it plays, weakest first (``hard``:
#: CPU_LEVEL_HARD). Read from the enum, so that the server and ``capicua match`` need not
#: import the bots to know their names (tests/test_server_wire.py checks they are bots).
CPU_LEVELS: dict[str, match_pb2.CpuLevel.ValueType] = {
    name.removeprefix("CPU_LEVEL_").lower(): value
    for name, value in match_pb2.CpuLevel.items()
    if value != match_pb2.CPU_LEVEL_UNSPECIFIED
}

# The enum knobs of a ruleset that map one to one (first_opener also carries a tile).
_RULE_ENUMS: dict[str, EnumCodec[Any, Any]] = {
    "sides": _SIDES,
    "stock": _STOCK,
    "turn_order": _TURN_ORDER,
    "next_opener": _NEXT_OPENER,
    "no_winner_opener": _NO_WINNER_OPENER,
    "block_opener": _BLOCK_OPENER,
    "block_winner": _BLOCK_WINNER,
    "block_tie": _BLOCK_TIE,
    "domino_points": _POINTS,
    "block_points": _POINTS,
}


# -- paths in error messages ----------------------------------------------------------------


@contextmanager
def within(prefix: str) -> Iterator[None]:
    """Prefix the field path of a :class:`WireError` raised inside with ``prefix``."""
    try:
        yield
    except WireError as e:
        raise e.under(prefix) from None


def convert_each(items: Iterable[P], name: str, convert: Callable[[P], T]) -> tuple[T, ...]:
    """Convert every item of a repeated field, naming ``name[i]`` on errors."""
    out: list[T] = []
    for i, item in enumerate(items):
        try:
            out.append(convert(item))
        except WireError as e:
            raise e.under(f"{name}[{i}]") from None
    return tuple(out)


# -- tiles ----------------------------------------------------------------------------------


def _tile(text: str) -> Tile:
    try:
        return Tile.parse(text)
    except TileError as e:
        raise WireError("", str(e)) from None


def _tiles(texts: Iterable[str], name: str) -> tuple[Tile, ...]:
    return convert_each(texts, name, _tile)


def _texts(tiles: Iterable[Tile]) -> list[str]:
    return [str(t) for t in tiles]


def _seat_tiles(hands: Iterable[Iterable[Tile]]) -> list[game_pb2.SeatTiles]:
    return [game_pb2.SeatTiles(tiles=_texts(h)) for h in hands]


def _seat_tiles_from(pbs: Iterable[game_pb2.SeatTiles], name: str) -> tuple[tuple[Tile, ...], ...]:
    return convert_each(pbs, name, lambda pb: _tiles(pb.tiles, "tiles"))


# -- rulesets -------------------------------------------------------------------------------


def ruleset_to_proto(rules: Ruleset) -> rules_pb2.Ruleset:
    """The protobuf form of ``rules`` (every knob, overrides included)."""
    return rules_pb2.Ruleset(
        name=rules.name,
        summary=rules.summary,
        max_pip=rules.max_pip,
        exclude=_texts(rules.exclude),
        seats=rules.seats,
        sides=_SIDES.encode(rules.sides),
        hand_size=rules.hand_size,
        stock=_STOCK.encode(rules.stock),
        turn_order=_TURN_ORDER.encode(rules.turn_order),
        first_opener=_FIRST_OPENER.encode(rules.first_opener),
        opening_tile=str(rules.opening_tile) if rules.opening_tile is not None else "",
        next_opener=_NEXT_OPENER.encode(rules.next_opener),
        no_winner_opener=_NO_WINNER_OPENER.encode(rules.no_winner_opener),
        block_opener=_BLOCK_OPENER.encode(rules.block_opener),
        redeal_min_doubles=rules.redeal_min_doubles,
        block_winner=_BLOCK_WINNER.encode(rules.block_winner),
        block_tie=_BLOCK_TIE.encode(rules.block_tie),
        domino_points=_POINTS.encode(rules.domino_points),
        block_points=_POINTS.encode(rules.block_points),
        finish_bonus=[_bonus_to_proto(b) for b in rules.finish_bonus],
        reply_resets=rules.reply_resets,
        all_scored_resets=rules.all_scored_resets,
        target=rules.target,
        win_needs_zero_opponent=rules.win_needs_zero_opponent,
        shutout=_shutout_to_proto(rules.shutout),
        max_hands=rules.max_hands,
        overrides=list(rules.overrides),
    )


def _bonus_to_proto(bonus: FinishBonus) -> rules_pb2.FinishBonus:
    return rules_pb2.FinishBonus(
        name=bonus.name,
        label=bonus.label,
        test=_BONUS_TEST.encode(bonus.test),
        no_double=bonus.no_double,
        distinct_ends=bonus.distinct_ends,
        effect=rules_pb2.Effect(
            kind=_EFFECT_KIND.encode(bonus.effect.kind), amount=bonus.effect.amount
        ),
    )


def _shutout_to_proto(shutout: Shutout | None) -> rules_pb2.Shutout | None:
    if shutout is None:
        return None
    return rules_pb2.Shutout(name=shutout.name, label=shutout.label, multiplier=shutout.multiplier)


def ruleset_from_proto(pb: rules_pb2.Ruleset) -> Ruleset:
    """The validated ruleset of ``pb``; raises :class:`RulesError` naming the bad knob.

    Unset proto3 fields mean "missing" for required knobs (so ``max_pip: missing``) and the
    default for optional ones; ``max_hands`` 0 means the default 1000, an empty name "custom".
    """
    return ruleset_from_mapping(_ruleset_mapping(pb))


def _ruleset_mapping(pb: rules_pb2.Ruleset) -> dict[str, Any]:
    """The knob mapping of ``pb``, in the form :func:`ruleset_from_mapping` validates."""
    data: dict[str, Any] = {
        "summary": pb.summary,
        "exclude": list(pb.exclude),
        "redeal_min_doubles": pb.redeal_min_doubles,
        "finish_bonus": [_bonus_mapping(b) for b in pb.finish_bonus],
        "reply_resets": pb.reply_resets,
        "all_scored_resets": pb.all_scored_resets,
        "win_needs_zero_opponent": pb.win_needs_zero_opponent,
        "shutout": _shutout_mapping(pb.shutout) if pb.HasField("shutout") else None,
        "overrides": list(pb.overrides),
    }
    if pb.name:
        data["name"] = pb.name
    for knob in ("max_pip", "seats", "hand_size", "target", "max_hands"):
        if value := getattr(pb, knob):
            data[knob] = value
    for knob, enum_codec in _RULE_ENUMS.items():
        if number := getattr(pb, knob):  # UNSPECIFIED: missing (or the default)
            data[knob] = enum_codec.knob(number)
    if pb.first_opener:
        data["first_opener"] = _first_opener_text(pb)
    return data


def _first_opener_text(pb: rules_pb2.Ruleset) -> str:
    """The knob text ``tile:A-B`` / ``highest_double`` / ... that the mapping form uses."""
    text = str(_FIRST_OPENER.knob(pb.first_opener))
    # A tile given with another kind is kept, so validation says the kind "takes no tile".
    if pb.opening_tile or pb.first_opener == rules_pb2.FIRST_OPENER_TILE:
        return f"{text}:{pb.opening_tile}"
    return text


def _bonus_mapping(pb: rules_pb2.FinishBonus) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": pb.name,
        "no_double": pb.no_double,
        "distinct_ends": pb.distinct_ends,
        "label": pb.label,
    }
    if pb.test:  # unset: the default, both_ends
        data["test"] = _BONUS_TEST.knob(pb.test)
    if pb.HasField("effect") and pb.effect.kind:  # unset: "effect: missing"
        data["effect"] = f"{_EFFECT_KIND.knob(pb.effect.kind)}:{pb.effect.amount}"
    return data


def _shutout_mapping(pb: rules_pb2.Shutout) -> dict[str, Any]:
    return {"name": pb.name, "multiplier": pb.multiplier, "label": pb.label}


# -- events ---------------------------------------------------------------------------------


def event_to_proto(event: Event) -> game_pb2.Event:
    """The protobuf form of one event (a hidden draw has an empty tile)."""
    match event:
        case Play(seat, tile, end):
            play = game_pb2.Event.Play(seat=seat, tile=str(tile), end=END.encode(end))
            return game_pb2.Event(play=play)
        case Pass(seat):
            return game_pb2.Event(pass_turn=game_pb2.Event.Pass(seat=seat))
        case Draw(seat, tile):
            draw = game_pb2.Event.Draw(seat=seat, tile=str(tile) if tile is not None else "")
            return game_pb2.Event(draw=draw)
        case Defer(seat):
            return game_pb2.Event(defer=game_pb2.Event.Defer(seat=seat))
        case RedealChoice(seat, redeal):
            choice = game_pb2.Event.RedealChoice(seat=seat, redeal=redeal)
            return game_pb2.Event(redeal_choice=choice)
        case _:
            assert_never(event)


def event_from_proto(pb: game_pb2.Event) -> Event:
    """The engine event of ``pb``; raises :class:`WireError` naming the bad field."""
    kind = pb.WhichOneof("kind")
    if kind == "play":
        with within("play"):
            return _play_from_proto(pb.play)
    if kind == "pass_turn":
        return Pass(pb.pass_turn.seat)
    if kind == "draw":
        with within("draw"):
            return Draw(pb.draw.seat, _tile_field(pb.draw.tile) if pb.draw.tile else None)
    if kind == "defer":
        return Defer(pb.defer.seat)
    if kind == "redeal_choice":
        return RedealChoice(pb.redeal_choice.seat, pb.redeal_choice.redeal)
    kinds = ", ".join(f.name for f in game_pb2.Event.DESCRIPTOR.oneofs_by_name["kind"].fields)
    raise WireError("", f"empty event: set one of {kinds}")


def _play_from_proto(pb: game_pb2.Event.Play) -> Play:
    tile = _tile_field(pb.tile)
    end = END.decode(pb.end, "end")
    return Play(pb.seat, tile, end)


def _tile_field(text: str, name: str = "tile") -> Tile:
    with within(name):
        return _tile(text)


# -- deals, hand results, outcomes, hand records ----------------------------------------------


def deal_to_proto(deal: Deal) -> game_pb2.Deal:
    """The protobuf form of one deal."""
    return game_pb2.Deal(
        attempt=deal.attempt, hands=_seat_tiles(deal.hands), stock=_texts(deal.stock)
    )


def deal_from_proto(pb: game_pb2.Deal) -> Deal:
    """The engine deal of ``pb``; raises :class:`WireError` naming the bad field."""
    return Deal(
        attempt=pb.attempt,
        hands=_seat_tiles_from(pb.hands, "hands"),
        stock=_tiles(pb.stock, "stock"),
    )


def hand_result_to_proto(result: HandResult) -> game_pb2.HandResult:
    """The protobuf form of a hand result (``winner``/``reset`` absent when None)."""
    return game_pb2.HandResult(
        hand=result.hand,
        end=_HAND_END.encode(result.end),
        winner=result.winner,
        seat=result.seat,
        opener=result.opener,
        remaining=_seat_tiles(result.remaining),
        pips=list(result.pips),
        base=result.base,
        bonuses=list(result.bonuses),
        points=result.points,
        awarded=result.awarded,
        reset=_RESET.encode(result.reset) if result.reset is not None else None,
        scores=list(result.scores),
    )


def hand_result_from_proto(pb: game_pb2.HandResult) -> HandResult:
    """The engine hand result of ``pb``; raises :class:`WireError` naming the bad field."""
    reset = None
    if pb.HasField("reset"):
        reset = _RESET.decode(pb.reset, "reset")
    return HandResult(
        hand=pb.hand,
        end=_HAND_END.decode(pb.end, "end"),
        winner=pb.winner if pb.HasField("winner") else None,
        seat=pb.seat,
        opener=pb.opener,
        remaining=_seat_tiles_from(pb.remaining, "remaining"),
        pips=tuple(pb.pips),
        base=pb.base,
        bonuses=tuple(pb.bonuses),
        points=pb.points,
        awarded=pb.awarded,
        reset=reset,
        scores=tuple(pb.scores),
    )


def outcome_to_proto(outcome: Outcome) -> game_pb2.Outcome:
    """The protobuf form of a match outcome (optional fields absent when None)."""
    return game_pb2.Outcome(
        termination=_TERMINATION.encode(outcome.termination),
        winner=outcome.winner,
        scores=list(outcome.scores),
        ranking=list(outcome.ranking),
        shutout=outcome.shutout,
        forfeited=outcome.forfeited,
        reason=outcome.reason,
    )


def outcome_from_proto(pb: game_pb2.Outcome) -> Outcome:
    """The engine outcome of ``pb``; raises :class:`WireError` naming the bad field."""
    return Outcome(
        termination=_TERMINATION.decode(pb.termination, "termination"),
        winner=pb.winner if pb.HasField("winner") else None,
        scores=tuple(pb.scores),
        ranking=tuple(pb.ranking),
        shutout=pb.shutout if pb.HasField("shutout") else None,
        forfeited=pb.forfeited if pb.HasField("forfeited") else None,
        reason=pb.reason,
    )


def hand_record_to_proto(record: HandRecord) -> game_pb2.HandRecord:
    """The protobuf form of one hand's record."""
    return game_pb2.HandRecord(
        hand=record.hand,
        deals=[deal_to_proto(d) for d in record.deals],
        events=[event_to_proto(e) for e in record.events],
        result=hand_result_to_proto(record.result) if record.result is not None else None,
        think_times=[
            game_pb2.ThinkTime(event=t.event, micros=t.micros, seat=t.seat)
            for t in record.think_times
        ],
    )


def hand_record_from_proto(pb: game_pb2.HandRecord) -> HandRecord:
    """The engine hand record of ``pb``; raises :class:`WireError` naming the bad field."""
    result = None
    if pb.HasField("result"):
        with within("result"):
            result = hand_result_from_proto(pb.result)
    events = convert_each(pb.events, "events", event_from_proto)
    return HandRecord(
        hand=pb.hand,
        deals=convert_each(pb.deals, "deals", deal_from_proto),
        events=events,
        result=result,
        think_times=convert_each(pb.think_times, "think_times", lambda t: _think_time(t, events)),
    )


def _think_time(pb: game_pb2.ThinkTime, events: Sequence[Event]) -> ThinkTime:
    """A think time of a hand with ``events``. Its seat is the seat of its event: a replay
    written before ThinkTime.seat existed lacks it and gets that one; one that names another
    seat contradicts its own events, and is refused as any other bad field."""
    if pb.event >= len(events):
        raise WireError("event", f"{pb.event} is not an event of this hand ({len(events)} events)")
    seat = events[pb.event].seat
    if pb.HasField("seat") and pb.seat != seat:
        raise WireError("seat", f"{pb.seat} is not the seat of event {pb.event} (seat {seat})")
    return ThinkTime(pb.event, pb.micros, seat)


# -- replays --------------------------------------------------------------------------------


def replay_to_proto(replay: Replay) -> replay_pb2.Replay:
    """The protobuf form of a replay; raises :class:`ReplayError` if the seed does not fit."""
    if not 0 <= replay.seed <= _MAX_SEED:
        raise ReplayError(f"replay: seed {replay.seed} does not fit in 0..2**64-1")
    return replay_pb2.Replay(
        format_version=FORMAT_VERSION,
        match_id=replay.match_id,
        ruleset=ruleset_to_proto(replay.ruleset),
        seed=replay.seed,
        players=list(replay.players),
        tags=list(replay.tags),
        hands=[hand_record_to_proto(h) for h in replay.hands],
        outcome=outcome_to_proto(replay.outcome) if replay.outcome is not None else None,
    )


def replay_from_proto(pb: replay_pb2.Replay, *, source: str = "replay") -> Replay:
    """The engine replay of ``pb``; raises :class:`ReplayError` ``"{source}: {problem}"``."""
    _check_version(pb.format_version, source)
    if not pb.HasField("ruleset"):
        raise ReplayError(f"{source}: ruleset: missing")
    try:
        ruleset = ruleset_from_proto(pb.ruleset)
    except RulesError as e:
        raise ReplayError(f"{source}: ruleset.{e}") from None
    try:
        hands = convert_each(pb.hands, "hands", hand_record_from_proto)
        outcome = None
        if pb.HasField("outcome"):
            with within("outcome"):
                outcome = outcome_from_proto(pb.outcome)
    except WireError as e:
        raise ReplayError(f"{source}: {e}") from None
    return Replay(
        ruleset=ruleset,
        seed=pb.seed,
        players=tuple(pb.players),
        hands=hands,
        outcome=outcome,
        match_id=pb.match_id,
        tags=tuple(pb.tags),
    )


def _check_version(version: object, source: str) -> None:
    if version == FORMAT_VERSION:
        return
    if version in (0, None):
        raise ReplayError(f"{source}: format_version: missing")
    raise ReplayError(
        f"{source}: format_version {version} is not supported (this version reads {FORMAT_VERSION})"
    )


def replay_to_json(replay: Replay) -> str:
    """The replay in the protobuf JSON mapping, on one line, .proto field names, UTF-8 text:
    ``json_format.MessageToDict(preserving_proto_field_name=True,
    always_print_fields_with_no_presence=True)`` with the keys in .proto order (the replay
    file format; the server stores and serves replays as protobuf bytes instead)."""
    return _message_json(replay_to_proto(replay))


def _message_json(pb: replay_pb2.Replay) -> str:
    """:func:`replay_to_json` of a message."""
    data = json_format.MessageToDict(
        pb, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    ordered = _in_field_order(data, pb.DESCRIPTOR)
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":"))


#: Repeated fields added to format 1 later, written only when they hold something: a
#: replay without them (played in-process, or before they existed) keeps the same bytes,
#: so the golden replays and anything hashed from a file do not change.
_OMITTED_WHEN_EMPTY = frozenset({"capicua.v1.HandRecord.think_times"})


def _in_field_order(data: dict[str, Any], desc: Descriptor) -> dict[str, Any]:
    """``data`` (a message as MessageToDict gives it) with its keys in .proto order, and
    without the later repeated fields that are empty."""
    out: dict[str, Any] = {}
    for field in desc.fields:
        if field.name not in data:
            continue
        value, sub = data[field.name], field.message_type
        if field.full_name in _OMITTED_WHEN_EMPTY and value == []:
            continue
        if sub is not None:
            if field.is_repeated:
                value = [_in_field_order(v, sub) for v in value]
            else:
                value = _in_field_order(value, sub)
        out[field.name] = value
    return out


def replay_from_json(text: str, *, source: str = "replay") -> Replay:
    """Parse a JSON replay (one-line or pretty; .proto or lowerCamelCase field names).

    Raises :class:`ReplayError` ``"{source}: {problem}"`` for anything wrong with it.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise ReplayError(
            f"{source}: not valid JSON at line {e.lineno} column {e.colno} ({e.msg})"
        ) from None
    except (ValueError, RecursionError) as e:  # e.g. an integer with too many digits
        raise ReplayError(f"{source}: not valid JSON ({e})") from None
    if not isinstance(data, dict):
        raise ReplayError(f"{source}: expected a JSON object, got {_json_kind(data)}")
    version = data.get("format_version", data.get("formatVersion"))
    if isinstance(version, int) and not isinstance(version, bool):
        _check_version(version, source)  # before field checks: a newer format has new fields
    pb = replay_pb2.Replay()
    try:
        _check_json(data, pb.DESCRIPTOR, "")
        json_format.ParseDict(data, pb)
    except WireError as e:
        raise ReplayError(f"{source}: {e}") from None
    except json_format.ParseError as e:  # not expected after _check_json; keep it one line
        raise ReplayError(f"{source}: {str(e).splitlines()[0]}") from None
    return replay_from_proto(pb, source=source)


def is_binary(path: str | os.PathLike[str]) -> bool:
    """Whether the replay file ``path`` is, by its name, protobuf bytes (else JSON)."""
    return Path(path).name.endswith(BINARY_SUFFIXES)


def write_replay(path: str | os.PathLike[str], replay: Replay | replay_pb2.Replay) -> None:
    """Write ``replay`` in the form ``path`` names: the message's protobuf bytes for
    ``*.binpb``, one-line JSON otherwise; gzipped if ``path`` ends in ``.gz``; atomically.

    A message (``capicua.v1.Replay``, e.g. as a server served it) is written as it is, not
    rebuilt through the engine's values: its bytes are the bytes it was served with.

    The bytes go to a temporary file in the same directory that then replaces ``path``, so
    no reader ever sees a half-written replay. Raises :class:`ReplayError` if it cannot.
    """
    target = Path(path)
    data = replay_bytes(replay, target.name)
    try:
        _write_atomic(target, data)
    except OSError as e:
        raise ReplayError(f"replay {os.fspath(path)}: cannot write: {_os_reason(e)}") from None


def _write_atomic(target: Path, data: bytes) -> None:
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        mode = 0o644
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def read_replay(path: str | os.PathLike[str]) -> Replay:
    """Read a replay file: gzip or plain; protobuf bytes (``*.binpb``), or one-line or
    pretty JSON (any other name).

    Raises :class:`ReplayError` with one line ``"replay PATH: problem"`` for anything wrong.
    """
    source = f"replay {os.fspath(path)}"
    try:
        raw = Path(path).read_bytes()
    except OSError as e:
        raise ReplayError(f"{source}: cannot read: {_os_reason(e)}") from None
    return replay_from_bytes(raw, Path(path).name, source)


def replay_bytes(replay: Replay | replay_pb2.Replay, name: str) -> bytes:
    """The bytes :func:`write_replay` writes for ``replay`` to a file named ``name`` (a store
    that keeps replays elsewhere than in files keeps the same bytes)."""
    pb = replay if isinstance(replay, replay_pb2.Replay) else replay_to_proto(replay)
    if is_binary(name):
        data = pb.SerializeToString(deterministic=True)
    else:
        data = (_message_json(pb) + "\n").encode("utf-8")
    if name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)  # no timestamp: the same replay, the same bytes
    return data


def replay_from_bytes(raw: bytes, name: str, source: str) -> Replay:
    """The replay of the bytes of a file named ``name`` (:func:`read_replay`'s reading);
    its errors are :class:`ReplayError` lines that begin with ``source``."""
    if is_binary(name):
        return replay_from_proto(_message(_gunzip(raw, source), source), source=source)
    return replay_from_json(_decode(raw, source, gz_name=name.endswith(".gz")), source=source)


def _message(raw: bytes, source: str) -> replay_pb2.Replay:
    """The ``capicua.v1.Replay`` message of a ``*.binpb`` file's (gunzipped) bytes."""
    if not raw:
        raise ReplayError(f"{source}: empty file")
    try:
        return replay_pb2.Replay.FromString(raw)
    except DecodeError as e:
        raise ReplayError(f"{source}: not a capicua.v1.Replay protobuf message ({e})") from None


def _gunzip(raw: bytes, source: str) -> bytes:
    """``raw`` gunzipped when it starts with the gzip magic (the content decides, not the
    name), else as it is."""
    if raw[:2] != b"\x1f\x8b":
        return raw
    try:
        return gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:
        raise ReplayError(f"{source}: corrupt or truncated gzip data ({e})") from None


#: What a replay's JSON text can start with (after a byte order mark and blanks).
_JSON_START = (b"{", b"[")


def _decode(raw: bytes, source: str, *, gz_name: bool = False) -> str:
    """The text of a replay file's bytes, gunzipped when they start with the gzip magic.

    ``gz_name``: the file is named ``*.gz``. Such a file holding plain JSON text is read
    (the content decides, not the name), but one holding neither gzip nor JSON text is
    called what it is, "not a gzip file", rather than by the first symptom its bytes
    give ("not UTF-8 text", "not JSON")."""
    if raw[:2] == b"\x1f\x8b":
        raw = _gunzip(raw, source)
    elif (
        gz_name
        and raw.strip()
        and not raw.removeprefix(b"\xef\xbb\xbf").lstrip().startswith(_JSON_START)
    ):
        raise ReplayError(
            f"{source}: not a gzip file (it does not start with the gzip header 1f 8b), nor "
            "JSON text"
        )
    if not raw.strip():
        raise ReplayError(f"{source}: empty file")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ReplayError(f"{source}: not UTF-8 text (bad byte at offset {e.start})") from None


def _os_reason(e: OSError) -> str:
    return e.strerror or str(e)


# -- strict JSON checks (one clear line with the field path, before json_format) -------------

_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}


def _json_kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"


def _shown(value: object, limit: int = 40) -> str:
    """A JSON value for an error message, cut short if long."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _check_json(data: object, desc: Descriptor, path: str) -> None:
    """Check a JSON value against message ``desc``: known fields, right JSON types, ranges."""
    if not isinstance(data, dict):
        raise WireError(path, f"expected an object, got {_json_kind(data)}")
    fields = {f.name: f for f in desc.fields} | {f.json_name: f for f in desc.fields}
    seen: dict[str, str] = {}  # field name or oneof name -> key it was given as
    for key, value in data.items():
        field = fields.get(key)
        if field is None:
            raise WireError(path, f"unknown field {key!r}")
        for slot in _slots(field):
            if slot in seen:
                raise WireError(path, f"{key!r} conflicts with {seen[slot]!r}")
            seen[slot] = key
        if value is not None:  # JSON null is the field's default
            _check_field(value, field, _join(path, field.name))


def _slots(field: FieldDescriptor) -> tuple[str, ...]:
    """Names that at most one key of an object may claim (the field, and a real oneof)."""
    oneof = field.containing_oneof
    if oneof is not None and len(oneof.fields) > 1:
        return (field.name, f"oneof {oneof.name}")
    return (field.name,)


def _check_field(value: object, field: FieldDescriptor, path: str) -> None:
    if not field.is_repeated:
        _check_single(value, field, path)
        return
    if not isinstance(value, list):
        raise WireError(path, f"expected a list, got {_json_kind(value)}")
    for i, item in enumerate(value):
        _check_single(item, field, f"{path}[{i}]")


def _check_single(value: object, field: FieldDescriptor, path: str) -> None:
    if field.message_type is not None:
        _check_json(value, field.message_type, path)
    elif field.enum_type is not None:
        _check_enum(value, field, path)
    elif field.type == FieldDescriptor.TYPE_STRING:
        if not isinstance(value, str):
            raise WireError(path, f"expected a string, got {_json_kind(value)}")
    elif field.type == FieldDescriptor.TYPE_BOOL:
        if not isinstance(value, bool):
            raise WireError(path, f"expected true or false, got {_json_kind(value)}")
    elif field.type in _INT_RANGES:
        _check_int(value, field, path)


def _check_enum(value: object, field: FieldDescriptor, path: str) -> None:
    assert field.enum_type is not None
    names = field.enum_type.values_by_name
    if isinstance(value, str) and value in names:
        return
    if isinstance(value, int) and not isinstance(value, bool):
        return  # proto3 enums are open: an unknown number is checked by the conversion
    choices = ", ".join(n for n in names if not n.endswith("_UNSPECIFIED"))
    raise WireError(path, f"{_shown(value)} is not one of {choices}")


def _check_int(value: object, field: FieldDescriptor, path: str) -> None:
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and value == value.strip():  # the JSON mapping allows quotes
        number = _int_text(value)
    if number is None:
        raise WireError(path, f"expected an integer, got {_shown(value)}")
    lo, hi = _INT_RANGES[field.type]
    if not lo <= number <= hi:
        raise WireError(path, f"{number} is out of range {lo}..{hi}")


def _int_text(text: str) -> int | None:
    """The integer a quoted JSON number stands for ("12", "1e3"), or None."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number.is_integer() else None
