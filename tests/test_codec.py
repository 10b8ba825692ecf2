"""capicua.wire.codec: engine values <-> capicua.v1 protobuf, replay JSON and replay files."""

from __future__ import annotations

import copy
import dataclasses
import gzip
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message

from capicua.engine.actions import End
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
    with_think_times,
)
from capicua.engine.rules import RulesError, Ruleset, load_preset, preset_names
from capicua.engine.tiles import Tile
from capicua.v1 import game_pb2, replay_pb2, rules_pb2, view_pb2
from capicua.wire import codec
from capicua.wire.codec import ReplayError, WireError

T = Tile.parse

# -- rulesets -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", preset_names())
def test_every_preset_round_trips(name: str) -> None:
    rules = load_preset(name)
    assert codec.ruleset_from_proto(codec.ruleset_to_proto(rules)) == rules


@pytest.mark.parametrize(
    ("name", "overrides"),
    [
        ("draw", ["seats=2", "sides=individual"]),
        ("iq-2v2", ["target=200"]),
        ("iq-1v1", ["shutout.multiplier=3", 'shutout.label="¡pollona!"']),
        ("dominican", ["finish_bonus.capicua.effect=multiply:2", "max_hands=7"]),
        ("jamaican", ['finish_bonus=[{name="key_bone", effect="add:1", label="key bone"}]']),
        ("block", ["first_opener=tile:5-6", "no_winner_opener=same_as_first"]),
        ("cuban", ["redeal_min_doubles=4", "turn_order=clockwise", "block_tie=opening_side"]),
        (
            "cutthroat",
            ["hand_size=8", 'exclude=["0-0", "6-6"]', 'shutout={name="chiva", multiplier=1}'],
        ),
        ("el-dominito", ["shutout=none", "block_opener=as_next", "domino_points=one"]),
    ],
)
def test_rulesets_with_overrides_round_trip(name: str, overrides: list[str]) -> None:
    rules = load_preset(name, overrides)
    assert rules.overrides == tuple(overrides)
    pb = codec.ruleset_to_proto(rules)
    assert list(pb.overrides) == overrides
    assert codec.ruleset_from_proto(pb) == rules


def test_ruleset_proto_fields() -> None:
    pb = codec.ruleset_to_proto(load_preset("el-dominito"))
    assert pb.first_opener == rules_pb2.FIRST_OPENER_TILE
    assert pb.opening_tile == "6-6"
    assert pb.shutout.name == "chiva" and pb.shutout.multiplier == 1
    assert pb.block_opener == rules_pb2.BLOCK_OPENER_LOCKER_IF_WON
    pb = codec.ruleset_to_proto(load_preset("dominican"))
    (bonus,) = pb.finish_bonus
    assert (bonus.name, bonus.label, bonus.no_double, bonus.distinct_ends) == (
        "capicua",
        "capicúa",
        True,
        True,
    )
    assert bonus.effect == rules_pb2.Effect(kind=rules_pb2.EFFECT_KIND_ADD, amount=30)
    assert not codec.ruleset_to_proto(load_preset("block")).HasField("shutout")
    assert list(codec.ruleset_to_proto(load_preset("cutthroat")).exclude) == ["0-0"]


def _rules_pb(**changes: Any) -> rules_pb2.Ruleset:
    pb = codec.ruleset_to_proto(load_preset("dominican"))
    for key, value in changes.items():
        if value is None:
            message: Message = pb  # ClearField by a name the stubs cannot check
            message.ClearField(key)
        elif isinstance(value, list):
            del getattr(pb, key)[:]
            getattr(pb, key).extend(value)
        else:
            setattr(pb, key, value)
    return pb


def test_ruleset_defaults_for_unset_optional_knobs() -> None:
    rules = codec.ruleset_from_proto(
        _rules_pb(name=None, max_hands=None, no_winner_opener=None, block_opener=None)
    )
    assert rules.name == "custom"
    assert rules.max_hands == 1000
    assert rules.no_winner_opener.value == "rotate"
    assert rules.block_opener.value == "as_next"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"sides": None}, "sides: missing"),
        ({"max_pip": None}, "max_pip: missing"),
        ({"target": None}, "target: missing"),
        ({"first_opener": None}, "first_opener: missing"),
        ({"sides": 9}, "sides: expected one of teams, individual, got 9"),
        (
            {"domino_points": 42},
            "domino_points: expected one of one, opponents_pips, all_pips, got 42",
        ),
        ({"max_pip": 13}, "max_pip: expected an integer from 1 to 12, got 13"),
        ({"seats": 3}, "sides: 'teams' needs 4 seats"),
        ({"hand_size": 9}, "hand_size: 4 seats x 9 tiles"),
        ({"exclude": ["6-x"]}, "exclude: bad tile '6-x'"),
        ({"exclude": ["6-7"]}, "exclude: tile 6-7 is not in a double-6 set"),
        ({"opening_tile": "6-6"}, "first_opener: 'highest_double:6-6' takes no tile"),
        ({"first_opener": rules_pb2.FIRST_OPENER_TILE}, "first_opener: bad tile ''"),
        ({"redeal_min_doubles": 8}, "redeal_min_doubles: 8 doubles can never be dealt"),
    ],
)
def test_bad_ruleset_proto_names_the_knob(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(RulesError, match="^" + _re(message)):
        codec.ruleset_from_proto(_rules_pb(**changes))


def _re(text: str) -> str:
    return re.escape(text)


def test_bad_nested_ruleset_knobs() -> None:
    pb = _rules_pb()
    pb.finish_bonus[0].effect.kind = rules_pb2.EFFECT_KIND_MULTIPLY
    pb.finish_bonus[0].effect.amount = 0
    with pytest.raises(RulesError, match="^finish_bonus.capicua.effect: a multiplier must be"):
        codec.ruleset_from_proto(pb)
    pb.finish_bonus[0].ClearField("effect")
    with pytest.raises(RulesError, match="^finish_bonus.capicua.effect: missing"):
        codec.ruleset_from_proto(pb)
    pb = _rules_pb()
    pb.finish_bonus[0].test = rules_pb2.BonusTest.ValueType(5)
    expected = "^finish_bonus.capicua.test: expected one of both_ends, got 5$"
    with pytest.raises(RulesError, match=expected):
        codec.ruleset_from_proto(pb)
    pb = _rules_pb()
    pb.finish_bonus[0].name = "cap icua"
    with pytest.raises(RulesError, match=r"^finish_bonus\[0\].name: names are ASCII"):
        codec.ruleset_from_proto(pb)
    pb = _rules_pb()
    pb.shutout.name = "pollona"
    expected = "^shutout.multiplier: expected an integer of at least 1, got 0$"
    with pytest.raises(RulesError, match=expected):
        codec.ruleset_from_proto(pb)


def test_every_proto_enum_value_is_known_to_the_codec() -> None:
    """A value added to a .proto enum without a codec mapping fails here, not in a match."""
    tables = [v for v in vars(codec).values() if isinstance(v, codec.EnumCodec)]
    covered = {t.wire.DESCRIPTOR.full_name: t for t in tables}
    for module in (rules_pb2, game_pb2, view_pb2):
        for enum in module.DESCRIPTOR.enum_types_by_name.values():
            table = covered[enum.full_name]
            for value in enum.values:
                if value.number != 0:
                    assert value.number in table.from_wire, value.name


# -- records --------------------------------------------------------------------------------

EVENTS: list[Event] = [
    Play(0, T("6-6"), End.LEFT),
    Play(3, T("3-6"), End.RIGHT),
    Pass(1),
    Draw(2, T("0-4")),
    Draw(2, None),
    Defer(1),
    RedealChoice(0, True),
    RedealChoice(3, False),
]


@pytest.mark.parametrize("event", EVENTS, ids=repr)
def test_events_round_trip(event: Event) -> None:
    assert codec.event_from_proto(codec.event_to_proto(event)) == event


def test_event_proto_shape() -> None:
    pb = codec.event_to_proto(Play(3, Tile(3, 6), End.RIGHT))
    assert pb.WhichOneof("kind") == "play"
    assert (pb.play.seat, pb.play.tile, pb.play.end) == (3, "3-6", game_pb2.END_RIGHT)
    assert codec.event_to_proto(Draw(1, None)).draw.tile == ""
    assert codec.event_to_proto(Pass(2)).WhichOneof("kind") == "pass_turn"


def test_bad_events() -> None:
    with pytest.raises(WireError, match="^empty event: set one of play, pass_turn"):
        codec.event_from_proto(game_pb2.Event())
    bad_tile = game_pb2.Event(play=game_pb2.Event.Play(tile="3/6", end=game_pb2.END_LEFT))
    with pytest.raises(WireError, match="^play.tile: bad tile '3/6'"):
        codec.event_from_proto(bad_tile)
    no_end = game_pb2.Event(play=game_pb2.Event.Play(tile="3-6"))
    with pytest.raises(WireError, match="^play.end: END_UNSPECIFIED is not one of END_LEFT"):
        codec.event_from_proto(no_end)


def test_tiles_are_read_leniently_but_written_canonically() -> None:
    pb = game_pb2.Event(play=game_pb2.Event.Play(seat=1, tile="6-3", end=game_pb2.END_LEFT))
    event = codec.event_from_proto(pb)
    assert event == Play(1, Tile(3, 6), End.LEFT)
    assert codec.event_to_proto(event).play.tile == "3-6"


DEAL = Deal(
    attempt=1,
    hands=((T("0-0"), T("1-2")), (T("3-4"), T("5-6")), (T("2-2"), T("0-6")), (T("4-4"), T("1-1"))),
    stock=(T("2-5"), T("6-6")),
)


def test_deal_round_trips() -> None:
    pb = codec.deal_to_proto(DEAL)
    assert [list(h.tiles) for h in pb.hands][1] == ["3-4", "5-6"]
    assert codec.deal_from_proto(pb) == DEAL
    assert codec.deal_from_proto(codec.deal_to_proto(Deal(0, ((), ()), ()))) == Deal(
        0, ((), ()), ()
    )


def test_bad_deal_names_the_tile() -> None:
    pb = codec.deal_to_proto(DEAL)
    pb.hands[2].tiles[1] = "x-6"
    with pytest.raises(WireError, match=r"^hands\[2\].tiles\[1\]: bad tile 'x-6'"):
        codec.deal_from_proto(pb)
    pb = codec.deal_to_proto(DEAL)
    pb.stock.append("")
    with pytest.raises(WireError, match=r"^stock\[2\]: bad tile ''"):
        codec.deal_from_proto(pb)


def _result(**changes: Any) -> HandResult:
    base = HandResult(
        hand=3,
        end=HandEnd.DOMINO,
        winner=1,
        seat=3,
        opener=0,
        remaining=((T("1-2"),), (), (T("5-6"), T("0-0")), ()),
        pips=(3, 0, 11, 0),
        base=14,
        bonuses=("capicua",),
        points=28,
        awarded=28,
        reset=None,
        scores=(40, 65),
    )
    return dataclasses.replace(base, **changes)


RESULTS = [
    _result(),
    _result(winner=0, seat=2),  # side 0 must not read as "no winner"
    _result(end=HandEnd.BLOCK, winner=None, base=0, bonuses=(), points=0, awarded=0),
    _result(reset=Reset.REPLY, awarded=0, scores=(0, 0)),
    _result(reset=Reset.ALL_SCORED, scores=(0, 0)),
    _result(bonuses=("capicua", "key_bone")),
]


@pytest.mark.parametrize("result", RESULTS)
def test_hand_results_round_trip(result: HandResult) -> None:
    assert codec.hand_result_from_proto(codec.hand_result_to_proto(result)) == result


def test_hand_result_winner_presence() -> None:
    assert codec.hand_result_to_proto(_result(winner=0)).HasField("winner")
    assert not codec.hand_result_to_proto(_result(winner=None)).HasField("winner")
    assert not codec.hand_result_to_proto(_result()).HasField("reset")


def test_bad_hand_results() -> None:
    pb = codec.hand_result_to_proto(_result())
    pb.end = game_pb2.HAND_END_UNSPECIFIED
    with pytest.raises(WireError, match="^end: HAND_END_UNSPECIFIED is not one of"):
        codec.hand_result_from_proto(pb)
    pb = codec.hand_result_to_proto(_result())
    pb.reset = game_pb2.RESET_UNSPECIFIED
    with pytest.raises(WireError, match="^reset: RESET_UNSPECIFIED is not one of RESET_REPLY"):
        codec.hand_result_from_proto(pb)
    pb = codec.hand_result_to_proto(_result())
    pb.remaining[0].tiles[0] = "12"
    with pytest.raises(WireError, match=r"^remaining\[0\].tiles\[0\]: bad tile '12'"):
        codec.hand_result_from_proto(pb)


@pytest.mark.parametrize("termination", list(Termination))
def test_outcomes_round_trip_for_every_termination(termination: Termination) -> None:
    forfeited = 1 if termination.forfeits else None
    winner = None if termination is Termination.CANCELLED else 0
    outcome = Outcome(termination, winner, (120, 0), (0, 1), None, forfeited, f"{termination}")
    pb = codec.outcome_to_proto(outcome)
    assert game_pb2.Termination.Name(pb.termination) == f"TERMINATION_{termination.name}"
    assert codec.outcome_from_proto(pb) == outcome


@pytest.mark.parametrize(
    "outcome",
    [
        Outcome(Termination.NORMAL, 0, (200, 0), (0, 1), shutout="chiva"),
        Outcome(Termination.NORMAL, 2, (0, 1, 6), (2, 1, 0), shutout=""),
        Outcome(Termination.HAND_LIMIT, None, (50, 50), (0, 1), reason="max_hands 3 reached"),
        Outcome(Termination.FORFEIT, 1, (10, 5), (1, 0), forfeited=0, reason="seat 0 resigned"),
    ],
)
def test_outcome_optional_fields_round_trip(outcome: Outcome) -> None:
    assert codec.outcome_from_proto(codec.outcome_to_proto(outcome)) == outcome


def test_bad_outcome() -> None:
    with pytest.raises(WireError, match="^termination: TERMINATION_UNSPECIFIED is not one of"):
        codec.outcome_from_proto(game_pb2.Outcome())
    with pytest.raises(WireError, match="^termination: 99 is not one of"):
        codec.outcome_from_proto(game_pb2.Outcome(termination=game_pb2.Termination.ValueType(99)))


HANDS = (
    HandRecord(
        hand=0,
        deals=(dataclasses.replace(DEAL, attempt=0), DEAL),
        events=tuple(EVENTS),
        result=RESULTS[0],
    ),
    HandRecord(hand=1, deals=(DEAL,), events=(Play(0, T("1-2"), End.LEFT),), result=RESULTS[2]),
    HandRecord(hand=2, deals=(DEAL,), events=(), result=None),
)


@pytest.mark.parametrize("record", HANDS)
def test_hand_records_round_trip(record: HandRecord) -> None:
    assert codec.hand_record_from_proto(codec.hand_record_to_proto(record)) == record


def test_bad_hand_record_names_the_path() -> None:
    pb = codec.hand_record_to_proto(HANDS[0])
    pb.events[4].draw.tile = "9-10-11"
    with pytest.raises(WireError, match=r"^events\[4\].draw.tile: bad tile '9-10-11'"):
        codec.hand_record_from_proto(pb)
    pb = codec.hand_record_to_proto(HANDS[0])
    pb.result.end = game_pb2.HAND_END_UNSPECIFIED
    with pytest.raises(WireError, match="^result.end: "):
        codec.hand_record_from_proto(pb)


# -- replays --------------------------------------------------------------------------------


def _replay(**changes: Any) -> Replay:
    base = Replay(
        ruleset=load_preset("dominican", ["target=100"]),
        seed=2**64 - 1,
        players=("ana", "bot:greedy", "Zoë", "bot:random"),
        hands=HANDS,
        outcome=Outcome(Termination.NORMAL, 1, (0, 104), (1, 0), reason="side 1 reached 100"),
        match_id="matches/0001",
        tags=("ladder", "round-1"),
    )
    return dataclasses.replace(base, **changes)


REPLAYS = [
    _replay(),
    _replay(seed=0, hands=(), outcome=None, match_id="", tags=()),
    _replay(ruleset=load_preset("el-dominito-2p"), players=("a", "b"), seed=7),
    *(
        _replay(outcome=Outcome(t, None, (1, 2), (1, 0), forfeited=0 if t.forfeits else None))
        for t in Termination
    ),
]


@pytest.mark.parametrize("replay", REPLAYS)
def test_replays_round_trip_through_proto_and_json(replay: Replay) -> None:
    pb = codec.replay_to_proto(replay)
    assert pb.format_version == codec.FORMAT_VERSION == 1
    assert codec.replay_from_proto(pb) == replay
    assert replay_pb2.Replay.FromString(pb.SerializeToString()) == pb
    text = codec.replay_to_json(replay)
    assert "\n" not in text
    assert codec.replay_from_json(text) == replay


def test_replay_json_form() -> None:
    text = codec.replay_to_json(_replay())
    data = json.loads(text)
    assert list(data)[:3] == ["format_version", "match_id", "ruleset"]  # .proto order
    assert data["seed"] == str(2**64 - 1)  # 64-bit integers are strings in the JSON mapping
    assert data["ruleset"]["max_pip"] == 6  # .proto field names
    assert data["ruleset"]["sides"] == "SIDES_TEAMS"
    assert data["hands"][0]["events"][0] == {"play": {"seat": 0, "tile": "6-6", "end": "END_LEFT"}}
    assert data["hands"][0]["events"][4] == {"draw": {"seat": 2, "tile": ""}}
    assert "Zoë" in text and "capicúa" in text  # UTF-8, not \\u escapes
    assert data["hands"][2].get("result") is None
    assert "winner" not in data["hands"][1]["result"]  # a tied block: no winner at all


def _played_replays() -> list[Replay]:
    from random import Random

    from capicua.engine.game import Game

    out = []
    for name in preset_names():
        for seed in range(2):
            state, rng = Game(load_preset(name)).new_match(seed), Random(seed)
            while not state.is_terminal() and len(state.log.hands) < 4:
                legal = state.legal_actions()
                state.apply(legal[rng.randrange(len(legal))])
            if not state.is_terminal() and seed:
                state.cancel("enough")
            elif not state.is_terminal():
                state.forfeit(0, Termination.TIMEOUT, "late")
            out.append(state.log.replay(match_id=f"m{seed}", tags=["t"]))
    return out


def test_replay_json_reads_back_what_it_writes() -> None:
    """The JSON writer reads back what it writes, think_times only when there are some (its
    text is the golden replays' byte for byte: tests/test_golden.py)."""
    replays = [*REPLAYS, *_played_replays()]
    assert {r.outcome.termination for r in replays if r.outcome} >= {
        Termination.NORMAL,
        Termination.CANCELLED,
        Termination.TIMEOUT,
    }
    seats = [e.seat for e in replays[0].hands[0].events]
    timed = with_think_times(
        replays[0], {0: [ThinkTime(0, 7, seats[0]), ThinkTime(1, 2**40, seats[1])]}
    )
    for replay in [*replays, timed]:
        assert codec.replay_from_json(codec.replay_to_json(replay)) == replay
    written = f'"think_times":[{{"event":0,"micros":"7","seat":{seats[0]}}}'
    assert written in codec.replay_to_json(timed)
    assert "think_times" not in codec.replay_to_json(replays[0])


def test_replay_json_alternative_spellings_are_read() -> None:
    replay = _replay()
    pb = codec.replay_to_proto(replay)
    camel = json_format.MessageToJson(pb)  # lowerCamelCase names, pretty-printed
    assert "maxPip" in camel and "\n" in camel
    assert codec.replay_from_json(camel) == replay
    pretty = json.dumps(json.loads(codec.replay_to_json(replay)), indent=2)
    assert codec.replay_from_json(pretty) == replay
    numbers = json_format.MessageToJson(pb, use_integers_for_enums=True)
    assert codec.replay_from_json(numbers) == replay


def test_replay_seed_must_fit() -> None:
    with pytest.raises(ReplayError, match="seed -1 does not fit"):
        codec.replay_to_proto(_replay(seed=-1))
    with pytest.raises(ReplayError, match="does not fit"):
        codec.replay_to_json(_replay(seed=2**64))


def test_replay_from_proto_errors() -> None:
    pb = codec.replay_to_proto(_replay())
    pb.format_version = 2
    with pytest.raises(ReplayError, match="^replay: format_version 2 is not supported"):
        codec.replay_from_proto(pb)
    pb = codec.replay_to_proto(_replay())
    pb.ClearField("ruleset")
    with pytest.raises(ReplayError, match="^replay: ruleset: missing$"):
        codec.replay_from_proto(pb)
    pb = codec.replay_to_proto(_replay())
    pb.ruleset.seats = 5
    expected = "^m.json: ruleset.seats: expected an integer from 2 to 4, got 5$"
    with pytest.raises(ReplayError, match=expected):
        codec.replay_from_proto(pb, source="m.json")
    pb = codec.replay_to_proto(_replay())
    pb.outcome.termination = game_pb2.TERMINATION_UNSPECIFIED
    with pytest.raises(ReplayError, match="^replay: outcome.termination: "):
        codec.replay_from_proto(pb)


# -- replay files ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["match.json", "match.replay.json.gz", "no-suffix"])
def test_replay_files_round_trip(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    replay = _replay()
    codec.write_replay(path, replay)
    raw = path.read_bytes()
    if name.endswith(".gz"):
        assert raw[:2] == b"\x1f\x8b"
        raw = gzip.decompress(raw)
    assert raw.decode("utf-8").count("\n") == 1 and raw.endswith(b"\n")
    assert codec.read_replay(path) == replay
    assert codec.read_replay(str(path)) == replay
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temp file left behind


def test_gzip_output_is_deterministic(tmp_path: Path) -> None:
    codec.write_replay(tmp_path / "a.json.gz", _replay())
    codec.write_replay(tmp_path / "b.json.gz", _replay())
    assert (tmp_path / "a.json.gz").read_bytes() == (tmp_path / "b.json.gz").read_bytes()


def test_read_replay_accepts_either_compression_whatever_the_name(tmp_path: Path) -> None:
    replay = _replay()
    text = codec.replay_to_json(replay)
    (tmp_path / "plain.gz").write_text(text, encoding="utf-8")
    (tmp_path / "zipped.json").write_bytes(gzip.compress(text.encode()))
    pretty = json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    (tmp_path / "pretty.json").write_text(pretty, encoding="utf-8")
    (tmp_path / "bom.json").write_bytes(b"\xef\xbb\xbf" + text.encode())
    for name in ("plain.gz", "zipped.json", "pretty.json", "bom.json"):
        assert codec.read_replay(tmp_path / name) == replay


def test_write_replay_replaces_atomically(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    codec.write_replay(path, _replay(tags=("old",)))
    os.chmod(path, 0o640)
    codec.write_replay(path, _replay(tags=("new",)))
    assert codec.read_replay(path).tags == ("new",)
    assert path.stat().st_mode & 0o777 == 0o640  # an existing file keeps its permissions
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


def test_write_replay_failure_is_a_replay_error(tmp_path: Path) -> None:
    path = tmp_path / "missing-dir" / "m.json"
    with pytest.raises(ReplayError, match=f"^replay {_re(str(path))}: cannot write: "):
        codec.write_replay(path, _replay())


def test_a_failed_write_leaves_the_old_file(tmp_path: Path, monkeypatch: Any) -> None:
    path = tmp_path / "m.json"
    codec.write_replay(path, _replay(tags=("old",)))

    def broken_replace(src: Any, dst: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(ReplayError, match="cannot write: No space left on device$"):
        codec.write_replay(path, _replay(tags=("new",)))
    monkeypatch.undo()
    assert codec.read_replay(path).tags == ("old",)
    assert [p.name for p in tmp_path.iterdir()] == ["m.json"]


# -- corrupt replay files -------------------------------------------------------------------


def _json_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(codec.replay_to_json(_replay()))
    return data


def _edit(change: Callable[[dict[str, Any]], object]) -> str:
    data = copy.deepcopy(_json_data())
    change(data)
    return json.dumps(data)


CORRUPT_JSON: list[tuple[str, str, str]] = [
    ("empty", "", "empty file"),
    ("blank", "  \n", "empty file"),
    ("truncated JSON", codec.replay_to_json(_replay())[:100], "not valid JSON at line 1 column"),
    ("bad JSON", '{"format_version": 1,\n  "seed": x}', "not valid JSON at line 2 column 11"),
    ("not an object", "[1, 2]", "expected a JSON object, got a list"),
    ("unknown field", _edit(lambda d: d.update(foo=1)), "unknown field 'foo'"),
    (
        "nested unknown field",
        _edit(lambda d: d["hands"][0]["events"][0]["play"].update(face="up")),
        "hands[0].events[0].play: unknown field 'face'",
    ),
    ("newer format", _edit(lambda d: d.update(format_version=7)), "format_version 7 is not"),
    ("newer format, new field", _edit(lambda d: d.update(format_version=2, x=1)), "version 2"),
    ("no version", _edit(lambda d: d.pop("format_version")), "format_version: missing"),
    ("no ruleset", _edit(lambda d: d.pop("ruleset")), "ruleset: missing"),
    ("wrong type", _edit(lambda d: d.update(seed=[1])), "seed: expected an integer, got [1]"),
    ("wrong type 2", _edit(lambda d: d.update(players="ana")), "players: expected a list"),
    ("wrong type 3", _edit(lambda d: d.update(hands={})), "hands: expected a list, got an object"),
    (
        "wrong type 4",
        _edit(lambda d: d["outcome"].update(scores=[1, "two"])),
        'outcome.scores[1]: expected an integer, got "two"',
    ),
    (
        "wrong type 5",
        _edit(lambda d: d["ruleset"].update(reply_resets="yes")),
        "ruleset.reply_resets: expected true or false, got a string",
    ),
    ("negative seed", _edit(lambda d: d.update(seed=-3)), "seed: -3 is out of range 0.."),
    (
        "bad enum name",
        _edit(lambda d: d["ruleset"].update(stock="STOCK_BONEYARD")),
        'ruleset.stock: "STOCK_BONEYARD" is not one of STOCK_SLEEPING, STOCK_DRAW',
    ),
    (
        "two event kinds",
        _edit(lambda d: d["hands"][0]["events"][0].update(pass_turn={"seat": 1})),
        "hands[0].events[0]: 'pass_turn' conflicts with 'play'",
    ),
    (
        "bad tile text",
        _edit(lambda d: d["hands"][0]["deals"][1]["hands"][3]["tiles"].__setitem__(1, "1_1")),
        "hands[0].deals[1].hands[3].tiles[1]: bad tile '1_1': expected A-B",
    ),
    (
        "bad played tile",
        _edit(lambda d: d["hands"][1]["events"][0]["play"].update(tile="one-two")),
        "hands[1].events[0].play.tile: bad tile 'one-two'",
    ),
    (
        "invalid ruleset knob",
        _edit(lambda d: d["ruleset"].update(hand_size=20)),
        "ruleset.hand_size: 4 seats x 20 tiles = 80 > 28 tiles",
    ),
    (
        "invalid ruleset enum number",
        _edit(lambda d: d["ruleset"].update(sides=5)),
        "ruleset.sides: expected one of teams, individual, got 5",
    ),
    (
        "invalid nested knob",
        _edit(lambda d: d["ruleset"]["finish_bonus"][0]["effect"].update(amount=-1)),
        "ruleset.finish_bonus[0].effect.amount: -1 is out of range 0..",
    ),
    (
        "camel and snake for one field",
        _edit(lambda d: d["ruleset"].update(maxPip=6)),
        "ruleset: 'maxPip' conflicts with 'max_pip'",
    ),
]


@pytest.mark.parametrize(
    ("text", "message"), [c[1:] for c in CORRUPT_JSON], ids=[c[0] for c in CORRUPT_JSON]
)
def test_corrupt_replay_files_raise_one_clear_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "x.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ReplayError) as info:
        codec.read_replay(path)
    error = str(info.value)
    assert error.startswith(f"replay {path}: ")
    assert message in error
    assert "\n" not in error
    e = info.value
    assert e.__cause__ is None and (e.__context__ is None or e.__suppress_context__)
    gz = tmp_path / "x.json.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    with pytest.raises(ReplayError, match=_re(message)):
        codec.read_replay(gz)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (gzip.compress(b'{"format_version": 1}' * 50)[:40], "corrupt or truncated gzip data"),
        (b"\x1f\x8b\x08\x00garbage", "corrupt or truncated gzip data"),
        (b'{"match_id": "\xff\xfe"}', "not UTF-8 text (bad byte at offset 14)"),
        (gzip.compress(b""), "empty file"),
    ],
    ids=["truncated gzip", "garbage gzip", "not UTF-8", "empty gzip"],
)
def test_corrupt_bytes_raise_replay_error(tmp_path: Path, raw: bytes, message: str) -> None:
    path = tmp_path / "x.json.gz"
    path.write_bytes(raw)
    with pytest.raises(ReplayError, match=f"^replay {_re(str(path))}: {_re(message)}"):
        codec.read_replay(path)


@pytest.mark.parametrize("name", ["match.binpb", "KEY.binpb.gz"])
def test_a_message_is_kept_as_its_protobuf_bytes(tmp_path: Path, name: str) -> None:
    """``*.binpb[.gz]``: a ``capicua.v1.Replay`` message is written as its own bytes (what a
    server serves, not rebuilt through the engine's values), and reads back as the replay."""
    replay = _replay()
    served = codec.replay_to_proto(replay)
    served.tags.append("kept as served")
    path = tmp_path / name
    codec.write_replay(path, served)
    raw = path.read_bytes()
    if name.endswith(".gz"):
        assert raw[:2] == b"\x1f\x8b"
        raw = gzip.decompress(raw)
    assert raw == served.SerializeToString(deterministic=True)
    assert codec.read_replay(path) == dataclasses.replace(
        replay, tags=(*replay.tags, "kept as served")
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # no temp file left behind
    # the engine's replay, too, goes to a .binpb file as its message's bytes
    codec.write_replay(tmp_path / "typed.binpb.gz", replay)
    typed = gzip.decompress((tmp_path / "typed.binpb.gz").read_bytes())
    assert typed == codec.replay_to_proto(replay).SerializeToString(deterministic=True)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "empty file"),
        (gzip.compress(b""), "empty file"),
        (b"\xff\xff\xff", "not a capicua.v1.Replay protobuf message"),
        (b"\x1f\x8b\x08\x00garbage", "corrupt or truncated gzip data"),
        (b'{"format_version": 1}', "not a capicua.v1.Replay protobuf message"),
        (replay_pb2.Replay(format_version=2).SerializeToString(), "format_version 2 is not"),
        (replay_pb2.Replay(format_version=1).SerializeToString(), "ruleset: missing"),
    ],
    ids=["empty", "empty gzip", "not protobuf", "garbage gzip", "JSON", "newer", "no rules"],
)
def test_bad_protobuf_replays_are_one_line(tmp_path: Path, raw: bytes, message: str) -> None:
    path = tmp_path / "x.binpb.gz"
    path.write_bytes(raw)
    with pytest.raises(ReplayError, match=f"^replay {_re(str(path))}: {_re(message)}") as info:
        codec.read_replay(path)
    assert "\n" not in str(info.value)


def test_unreadable_paths(tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match="^replay .*nope.json: cannot read: No such file"):
        codec.read_replay(tmp_path / "nope.json")
    with pytest.raises(ReplayError, match="cannot read: Is a directory"):
        codec.read_replay(tmp_path)


def test_replay_error_is_a_capicua_value_error() -> None:
    from capicua.common.errors import CapicuaError

    assert issubclass(ReplayError, CapicuaError) and issubclass(ReplayError, ValueError)
    assert issubclass(WireError, CapicuaError) and issubclass(WireError, ValueError)


def test_ruleset_type_is_plain() -> None:
    assert isinstance(codec.replay_from_json(codec.replay_to_json(_replay())).ruleset, Ruleset)
